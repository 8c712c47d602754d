//! Final statements: a closed month's lines and total, frozen.

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgExecutor;

use opencrane_db::Result;

/// A final statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinalRow {
    /// The month's first day.
    pub month: NaiveDate,
    /// Its currency.
    pub currency: Option<String>,
    /// Millionths.
    pub total: i64,
    /// The lines as they were frozen.
    pub lines: serde_json::Value,
    /// Who finalised it.
    pub finalised_by: String,
    /// When.
    pub finalised_at: DateTime<Utc>,
}

/// The final statement of `name` for `month`, if it was finalised.
pub async fn get(db: impl PgExecutor<'_>, name: &str, month: NaiveDate) -> Result<Option<FinalRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        FinalRow,
        r#"SELECT month, currency, (total * 1000000)::bigint AS "total!", lines, finalised_by, finalised_at
           FROM statements WHERE cluster_tenant = $1 AND month = $2"#,
        name,
        month
    )
    .fetch_optional(db)
    .await?)
}

/// Freezes a statement; `false` when the month was already final (nothing changes then).
pub async fn finalise(
    db: impl PgExecutor<'_>,
    name: &str,
    month: NaiveDate,
    currency: Option<&str>,
    total: i64,
    lines: &serde_json::Value,
    by: &str,
) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "INSERT INTO statements (cluster_tenant, month, currency, total, lines, finalised_by)
         VALUES ($1, $2, $3, $4::bigint / 1000000.0, $5, $6) ON CONFLICT (cluster_tenant, month) DO NOTHING",
        name,
        month,
        currency,
        total,
        lines,
        by,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A final statement's total, for overviews.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinalTotal {
    /// The customer.
    pub cluster_tenant: String,
    /// The month's first day.
    pub month: NaiveDate,
    /// Its currency.
    pub currency: Option<String>,
    /// Millionths.
    pub total: i64,
    /// When it was finalised.
    pub finalised_at: DateTime<Utc>,
}

/// The totals of the final statements of the months `[from, to]` (first days) of `name`, or of
/// every customer (`None`), in one statement.
pub async fn totals(
    db: impl PgExecutor<'_>,
    name: Option<&str>,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<Vec<FinalTotal>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        FinalTotal,
        r#"SELECT cluster_tenant, month, currency, (total * 1000000)::bigint AS "total!", finalised_at
           FROM statements WHERE month BETWEEN $2 AND $3 AND ($1::text IS NULL OR cluster_tenant = $1)
           ORDER BY cluster_tenant, month"#,
        name,
        from,
        to
    )
    .fetch_all(db)
    .await?)
}
