//! Usage reported by each silo for billing: per customer and day, the active seats and the LLM
//! spend per model and currency. Recording is idempotent per (customer, day): the same report
//! again changes nothing; a different one replaces the day, bumps its revision and keeps what it
//! replaced in `usage_revisions`.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;

use opencrane_db::Result;

/// One model's spend on a day (millionths of the currency).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SpendLine {
    /// Public model name.
    pub model: String,
    /// ISO 4217 code.
    pub currency: String,
    /// Millionths.
    pub amount: i64,
}

/// One day as a silo reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayUsage {
    /// Active seats (members holding a seat).
    pub active_seats: i32,
    /// Spend per model and currency, in a stable order.
    pub spend: Vec<SpendLine>,
}

impl DayUsage {
    /// The same usage with its lines in one order (reports may list them in any).
    pub fn normalised(mut self) -> Self {
        self.spend.sort();
        self
    }
}

/// One stored day.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DayRow {
    /// The day.
    pub day: NaiveDate,
    /// What it holds.
    pub usage: DayUsage,
    /// 1, then +1 per change.
    pub revision: i32,
    /// The first report of the day.
    pub first_reported_at: DateTime<Utc>,
    /// The last report that changed it.
    pub reported_at: DateTime<Utc>,
}

/// What recording a report did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// The day's revision now.
    pub revision: i32,
    /// Whether the report changed anything.
    pub changed: bool,
}

/// Records `usage` for `name` on `day` in the caller's transaction (the day's row is locked, so
/// concurrent reports of one day serialise).
pub async fn record(conn: &mut PgConnection, name: &str, day: NaiveDate, usage: DayUsage) -> Result<Recorded> {
    let usage = usage.normalised();
    // language=PostgreSQL
    let inserted = sqlx::query!(
        "INSERT INTO usage_days (cluster_tenant, day, active_seats) VALUES ($1, $2, $3)
         ON CONFLICT (cluster_tenant, day) DO NOTHING",
        name,
        day,
        usage.active_seats,
    )
    .execute(&mut *conn)
    .await?
    .rows_affected()
        == 1;
    if inserted {
        insert_spend(conn, name, day, &usage.spend).await?;
        return Ok(Recorded { revision: 1, changed: true });
    }
    // language=PostgreSQL
    let held = sqlx::query!(
        "SELECT active_seats, revision FROM usage_days WHERE cluster_tenant = $1 AND day = $2 FOR UPDATE",
        name,
        day
    )
    .fetch_one(&mut *conn)
    .await?;
    let before = DayUsage { active_seats: held.active_seats, spend: spend_of(&mut *conn, name, day).await? };
    if before == usage {
        return Ok(Recorded { revision: held.revision, changed: false });
    }
    let replaced = serde_json::to_value(&before).unwrap_or_default();
    // language=PostgreSQL
    sqlx::query!(
        "INSERT INTO usage_revisions (cluster_tenant, day, revision, replaced) VALUES ($1, $2, $3, $4)",
        name,
        day,
        held.revision,
        replaced,
    )
    .execute(&mut *conn)
    .await?;
    // language=PostgreSQL
    let revision = sqlx::query_scalar!(
        "UPDATE usage_days SET active_seats = $3, revision = revision + 1, reported_at = now()
         WHERE cluster_tenant = $1 AND day = $2 RETURNING revision",
        name,
        day,
        usage.active_seats,
    )
    .fetch_one(&mut *conn)
    .await?;
    // language=PostgreSQL
    sqlx::query!("DELETE FROM usage_spend WHERE cluster_tenant = $1 AND day = $2", name, day)
        .execute(&mut *conn)
        .await?;
    insert_spend(conn, name, day, &usage.spend).await?;
    Ok(Recorded { revision, changed: true })
}

async fn insert_spend(conn: &mut PgConnection, name: &str, day: NaiveDate, lines: &[SpendLine]) -> Result<()> {
    let models: Vec<&str> = lines.iter().map(|l| l.model.as_str()).collect();
    let currencies: Vec<&str> = lines.iter().map(|l| l.currency.as_str()).collect();
    let amounts: Vec<i64> = lines.iter().map(|l| l.amount).collect();
    // language=PostgreSQL
    sqlx::query!(
        "INSERT INTO usage_spend (cluster_tenant, day, model, currency, amount)
         SELECT $1, $2, l.model, l.currency, l.amount / 1000000.0
         FROM unnest($3::text[], $4::text[], $5::bigint[]) AS l(model, currency, amount)",
        name,
        day,
        &models as &[&str],
        &currencies as &[&str],
        &amounts,
    )
    .execute(conn)
    .await?;
    Ok(())
}

async fn spend_of(conn: &mut PgConnection, name: &str, day: NaiveDate) -> Result<Vec<SpendLine>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        SpendLine,
        r#"SELECT model, currency, (amount * 1000000)::bigint AS "amount!"
           FROM usage_spend WHERE cluster_tenant = $1 AND day = $2 ORDER BY model, currency, amount"#,
        name,
        day
    )
    .fetch_all(conn)
    .await?)
}

/// The latest day held for `name` (where a silo's catch-up starts).
pub async fn latest_day(conn: &mut PgConnection, name: &str) -> Result<Option<NaiveDate>> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!("SELECT max(day) FROM usage_days WHERE cluster_tenant = $1", name).fetch_one(conn).await?)
}

/// The days of `name` in `[from, to]`, oldest first, each with its spend (two statements,
/// whatever the number of days).
pub async fn days(conn: &mut PgConnection, name: &str, from: NaiveDate, to: NaiveDate) -> Result<Vec<DayRow>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        "SELECT day, active_seats, revision, first_reported_at, reported_at FROM usage_days
         WHERE cluster_tenant = $1 AND day BETWEEN $2 AND $3 ORDER BY day",
        name,
        from,
        to
    )
    .fetch_all(&mut *conn)
    .await?;
    // language=PostgreSQL
    let lines = sqlx::query!(
        r#"SELECT day, model, currency, (amount * 1000000)::bigint AS "amount!" FROM usage_spend
           WHERE cluster_tenant = $1 AND day BETWEEN $2 AND $3 ORDER BY day, model, currency"#,
        name,
        from,
        to
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| DayRow {
            day: r.day,
            usage: DayUsage {
                active_seats: r.active_seats,
                spend: lines
                    .iter()
                    .filter(|l| l.day == r.day)
                    .map(|l| SpendLine { model: l.model.clone(), currency: l.currency.clone(), amount: l.amount })
                    .collect(),
            },
            revision: r.revision,
            first_reported_at: r.first_reported_at,
            reported_at: r.reported_at,
        })
        .collect())
}
