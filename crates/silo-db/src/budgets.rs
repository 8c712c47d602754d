//! Spending limits, the spend ledger LiteLLM's logs fill, and threshold notices.
//!
//! Amounts cross this boundary as `i64` millionths of the currency unit (`numeric` in the
//! database, exact in both places).

use chrono::{DateTime, NaiveDate, Utc};
use opencrane_db::Result;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

/// A limit, with its group's name for group limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetRow {
    /// Limit id.
    pub id: Uuid,
    /// `silo`, `group`, `user`.
    pub level: String,
    /// The group, for group limits.
    pub group_id: Option<Uuid>,
    /// The group's name.
    pub group_name: Option<String>,
    /// The user, for user limits.
    pub tenant: Option<String>,
    /// ISO 4217.
    pub currency: String,
    /// Millionths.
    pub amount: i64,
    /// `day`, `week`, `month`.
    pub period: String,
    /// Alert thresholds (percent).
    pub thresholds: Vec<i16>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// A limit to set on a target (one per target: setting again replaces it).
#[derive(Clone, Debug)]
pub struct BudgetFields<'a> {
    /// `silo`, `group`, `user`.
    pub level: &'a str,
    /// For group limits.
    pub group_id: Option<Uuid>,
    /// For user limits.
    pub tenant: Option<&'a str>,
    /// ISO 4217.
    pub currency: &'a str,
    /// Millionths.
    pub amount: i64,
    /// `day`, `week`, `month`.
    pub period: &'a str,
    /// Alert thresholds.
    pub thresholds: &'a [i16],
}

/// Every limit: silo, then groups, then users.
pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<BudgetRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        BudgetRow,
        r#"SELECT b.id, b.level, b.group_id, g.name AS "group_name?", b.tenant, b.currency AS "currency!",
                  (b.amount * 1000000)::bigint AS "amount!", b.period, b.thresholds, b.updated_at
           FROM budgets b LEFT JOIN groups g ON g.id = b.group_id
           ORDER BY array_position(ARRAY['silo', 'group', 'user'], b.level), g.name, b.tenant"#
    )
    .fetch_all(db)
    .await?)
}

/// Sets the limit of a target, replacing any it had; returns its id.
pub async fn put(db: &mut PgConnection, f: &BudgetFields<'_>) -> Result<Uuid> {
    // language=PostgreSQL
    let existing = sqlx::query_scalar!(
        r#"SELECT id FROM budgets
           WHERE level = $1 AND group_id IS NOT DISTINCT FROM $2 AND tenant IS NOT DISTINCT FROM $3"#,
        f.level,
        f.group_id,
        f.tenant,
    )
    .fetch_optional(&mut *db)
    .await?;
    if let Some(id) = existing {
        // language=PostgreSQL
        sqlx::query!(
            r#"UPDATE budgets SET currency = $2, amount = $3::bigint / 1000000.0, period = $4, thresholds = $5,
                      updated_at = now()
               WHERE id = $1"#,
            id,
            f.currency,
            f.amount,
            f.period,
            f.thresholds,
        )
        .execute(&mut *db)
        .await?;
        return Ok(id);
    }
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO budgets (level, group_id, tenant, currency, amount, period, thresholds)
           VALUES ($1, $2, $3, $4, $5::bigint / 1000000.0, $6, $7) RETURNING id"#,
        f.level,
        f.group_id,
        f.tenant,
        f.currency,
        f.amount,
        f.period,
        f.thresholds,
    )
    .fetch_one(&mut *db)
    .await?)
}

/// Removes a limit.
pub async fn delete(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM budgets WHERE id = $1", id).execute(db).await?;
    Ok(done.rows_affected() == 1)
}

/// One logged request's cost and tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpendEvent {
    /// LiteLLM's request id.
    pub request_id: String,
    /// The user whose key paid, if known.
    pub tenant: Option<String>,
    /// The public model name.
    pub model: String,
    /// Millionths.
    pub amount: i64,
    /// When.
    pub occurred_at: DateTime<Utc>,
    /// Prompt tokens.
    pub input_tokens: i64,
    /// Completion tokens.
    pub output_tokens: i64,
}

/// Adds events not seen before; returns how many were new. Events of users who no longer exist
/// are kept, unattributed.
pub async fn record_spend(db: impl PgExecutor<'_>, events: &[SpendEvent]) -> Result<u64> {
    let ids: Vec<&str> = events.iter().map(|e| e.request_id.as_str()).collect();
    let tenants: Vec<Option<&str>> = events.iter().map(|e| e.tenant.as_deref()).collect();
    let models: Vec<&str> = events.iter().map(|e| e.model.as_str()).collect();
    let amounts: Vec<i64> = events.iter().map(|e| e.amount).collect();
    let times: Vec<DateTime<Utc>> = events.iter().map(|e| e.occurred_at).collect();
    let inputs: Vec<i64> = events.iter().map(|e| e.input_tokens.max(0)).collect();
    let outputs: Vec<i64> = events.iter().map(|e| e.output_tokens.max(0)).collect();
    // language=PostgreSQL
    let done = sqlx::query!(
        r#"INSERT INTO spend_events (request_id, tenant, model, amount, occurred_at, input_tokens, output_tokens)
           SELECT e.request_id, t.name, e.model, e.amount / 1000000.0, e.occurred_at, e.input_tokens, e.output_tokens
           FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::timestamptz[], $6::bigint[], $7::bigint[])
                AS e(request_id, tenant, model, amount, occurred_at, input_tokens, output_tokens)
           LEFT JOIN tenants t ON t.name = e.tenant
           ON CONFLICT (request_id) DO NOTHING"#,
        &ids as &[&str],
        &tenants as &[Option<&str>],
        &models as &[&str],
        &amounts,
        &times,
        &inputs,
        &outputs,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}

/// Spend per user in `[from, to)` (users without spend are absent; unattributed spend is under
/// `None`).
pub async fn spend_by_tenant(
    db: impl PgExecutor<'_>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<(Option<String>, i64)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"SELECT tenant, (sum(amount) * 1000000)::bigint AS "spent!"
           FROM spend_events WHERE occurred_at >= $1 AND occurred_at < $2
           GROUP BY tenant ORDER BY tenant"#,
        from,
        to,
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.tenant, r.spent)).collect())
}

/// Tokens and cost of one user in a period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenUsageRow {
    /// The user (`None`: spend of users since deleted).
    pub tenant: Option<String>,
    /// Prompt tokens.
    pub input_tokens: i64,
    /// Completion tokens.
    pub output_tokens: i64,
    /// Millionths.
    pub cost: i64,
    /// Requests.
    pub requests: i64,
}

/// Tokens and cost per user in `[from, to)`, by user (unattributed last).
pub async fn token_usage(
    db: impl PgExecutor<'_>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<TokenUsageRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        TokenUsageRow,
        r#"SELECT tenant, sum(input_tokens)::bigint AS "input_tokens!", sum(output_tokens)::bigint AS "output_tokens!",
                  (sum(amount) * 1000000)::bigint AS "cost!", count(*) AS "requests!"
           FROM spend_events WHERE occurred_at >= $1 AND occurred_at < $2
           GROUP BY tenant ORDER BY tenant NULLS LAST"#,
        from,
        to,
    )
    .fetch_all(db)
    .await?)
}

/// Spend per model in `[from, to)`, largest first.
pub async fn spend_by_model(
    db: impl PgExecutor<'_>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<Vec<(String, i64)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"SELECT model, (sum(amount) * 1000000)::bigint AS "spent!"
           FROM spend_events WHERE occurred_at >= $1 AND occurred_at < $2
           GROUP BY model ORDER BY 2 DESC, model"#,
        from,
        to,
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.model, r.spent)).collect())
}

/// Spend per local calendar day (in `time_zone`) in `[from, to)`.
pub async fn spend_by_day(
    db: impl PgExecutor<'_>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    time_zone: &str,
) -> Result<Vec<(NaiveDate, i64)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"SELECT (occurred_at AT TIME ZONE $3)::date AS "day!", (sum(amount) * 1000000)::bigint AS "spent!"
           FROM spend_events WHERE occurred_at >= $1 AND occurred_at < $2
           GROUP BY 1 ORDER BY 1"#,
        from,
        to,
        time_zone,
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.day, r.spent)).collect())
}

/// A threshold notice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoticeRow {
    /// Notice id.
    pub id: i64,
    /// The limit.
    pub budget_id: Uuid,
    /// The period it belongs to.
    pub period_start: DateTime<Utc>,
    /// Percent crossed.
    pub threshold: i16,
    /// What it says.
    pub message: String,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// Records a notice unless this limit already has one for this period and threshold; true when
/// it is new.
pub async fn notify(
    db: impl PgExecutor<'_>,
    budget_id: Uuid,
    period_start: DateTime<Utc>,
    threshold: i16,
    spent: i64,
    message: &str,
) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        r#"INSERT INTO budget_notices (budget_id, period_start, threshold, spent, message)
           VALUES ($1, $2, $3, $4::bigint / 1000000.0, $5)
           ON CONFLICT ON CONSTRAINT budget_notices_once_per_period DO NOTHING"#,
        budget_id,
        period_start,
        threshold,
        spent,
        message,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Notices not dismissed, newest first.
pub async fn open_notices(db: impl PgExecutor<'_>) -> Result<Vec<NoticeRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        NoticeRow,
        r#"SELECT id, budget_id, period_start, threshold, message, created_at
           FROM budget_notices WHERE dismissed_at IS NULL ORDER BY created_at DESC, id DESC LIMIT 100"#
    )
    .fetch_all(db)
    .await?)
}

/// Dismisses a notice.
pub async fn dismiss(db: impl PgExecutor<'_>, id: i64) -> Result<bool> {
    // language=PostgreSQL
    let done =
        sqlx::query!("UPDATE budget_notices SET dismissed_at = now() WHERE id = $1 AND dismissed_at IS NULL", id)
            .execute(db)
            .await?;
    Ok(done.rows_affected() == 1)
}
