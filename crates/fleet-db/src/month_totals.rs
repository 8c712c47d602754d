//! `billing_month_totals`: each customer's month as last priced, kept in step with the changes
//! that price it (see the migration), so overviews read a row per customer and month.

use chrono::NaiveDate;
use sqlx::{PgConnection, PgExecutor};

use opencrane_db::Result;

/// A month's figures (millionths).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MonthTotal {
    /// The customer.
    pub cluster_tenant: String,
    /// The month's first day.
    pub month: NaiveDate,
    /// The statement's currency (`None`: no plan).
    pub currency: Option<String>,
    /// The draft's total.
    pub total: i64,
    /// Its seat and spend lines.
    pub usage_amount: i64,
    /// Its corrections of an earlier month.
    pub corrections: i64,
    /// The minimum of the plan in force on the month's last day.
    pub minimum: Option<i64>,
    /// Seats on the latest reported day.
    pub last_seats: Option<i32>,
}

/// Stores a month's figures, replacing what was there.
pub async fn upsert(conn: &mut PgConnection, row: &MonthTotal) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "INSERT INTO billing_month_totals
             (cluster_tenant, month, currency, total, usage_amount, corrections, minimum, last_seats)
         VALUES ($1, $2, $3, $4::bigint / 1000000.0, $5::bigint / 1000000.0, $6::bigint / 1000000.0,
                 $7::bigint / 1000000.0, $8)
         ON CONFLICT (cluster_tenant, month) DO UPDATE
           SET currency = EXCLUDED.currency, total = EXCLUDED.total, usage_amount = EXCLUDED.usage_amount,
               corrections = EXCLUDED.corrections, minimum = EXCLUDED.minimum,
               last_seats = EXCLUDED.last_seats, priced_at = now()",
        row.cluster_tenant,
        row.month,
        row.currency,
        row.total,
        row.usage_amount,
        row.corrections,
        row.minimum,
        row.last_seats,
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Every customer's figures for the months `[from, to]` (first days), one statement.
pub async fn in_months(db: impl PgExecutor<'_>, from: NaiveDate, to: NaiveDate) -> Result<Vec<MonthTotal>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MonthTotal,
        r#"SELECT cluster_tenant, month, currency, (total * 1000000)::bigint AS "total!",
                  (usage_amount * 1000000)::bigint AS "usage_amount!", (corrections * 1000000)::bigint AS "corrections!",
                  (minimum * 1000000)::bigint AS minimum, last_seats
           FROM billing_month_totals WHERE month BETWEEN $1 AND $2 ORDER BY cluster_tenant, month"#,
        from,
        to
    )
    .fetch_all(db)
    .await?)
}

/// The (customer, month) pairs since `from` that have usage but were never priced (usage held
/// before the table existed, or written around the fleet), oldest first.
pub async fn unpriced(db: impl PgExecutor<'_>, from: NaiveDate) -> Result<Vec<(String, NaiveDate)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"SELECT DISTINCT d.cluster_tenant, date_trunc('month', d.day)::date AS "month!"
           FROM usage_days d
           WHERE d.day >= $1
             AND NOT EXISTS (SELECT 1 FROM billing_month_totals t
                             WHERE t.cluster_tenant = d.cluster_tenant AND t.month = date_trunc('month', d.day)::date)
           ORDER BY 2, 1"#,
        from
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.cluster_tenant, r.month)).collect())
}

/// Serialises the pricing of `cluster_tenant`'s months until the transaction ends, so two
/// changes committed at once each price what the other wrote (the later one waits, then reads it).
pub async fn lock(conn: &mut PgConnection, cluster_tenant: &str) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!("SELECT pg_advisory_xact_lock(hashtextextended('billing-month:' || $1, 0))", cluster_tenant)
        .execute(conn)
        .await?;
    Ok(())
}
