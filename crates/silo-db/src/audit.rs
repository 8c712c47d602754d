//! The silo's `audit_log`: append and page through entries, newest first.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::PgExecutor;

/// One audit entry as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditRow {
    /// Monotonic id; also the paging cursor.
    pub id: i64,
    /// When it happened (UTC).
    pub occurred_at: DateTime<Utc>,
    /// Who did it (subject or token name).
    pub actor: String,
    /// What was done, e.g. `membership.update`.
    pub action: String,
    /// What it was done to.
    pub target: String,
    /// `success`, `failure` or `denied`.
    pub outcome: String,
    /// The request id of the HTTP request that did it.
    pub request_id: Option<String>,
    /// Extra structured detail (never secrets).
    pub metadata: serde_json::Value,
}

/// A new audit entry.
#[derive(Clone, Debug)]
pub struct NewAuditEntry<'a> {
    /// Who did it.
    pub actor: &'a str,
    /// What was done.
    pub action: &'a str,
    /// What it was done to.
    pub target: &'a str,
    /// `success`, `failure` or `denied`.
    pub outcome: &'a str,
    /// The request id.
    pub request_id: Option<&'a str>,
    /// Extra structured detail.
    pub metadata: &'a serde_json::Value,
}

/// Appends an entry and returns its id.
pub async fn append(db: impl PgExecutor<'_>, entry: &NewAuditEntry<'_>) -> Result<i64> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO audit_log (actor, action, target, outcome, request_id, metadata)
           VALUES ($1, $2, $3, $4, $5, $6) RETURNING id"#,
        entry.actor,
        entry.action,
        entry.target,
        entry.outcome,
        entry.request_id,
        entry.metadata,
    )
    .fetch_one(db)
    .await?)
}

/// Up to `limit` entries older than the `before` id (all when `None`), newest first.
pub async fn list(db: impl PgExecutor<'_>, before: Option<i64>, limit: i64) -> Result<Vec<AuditRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        AuditRow,
        r#"SELECT id, occurred_at, actor, action, target, outcome, request_id, metadata
           FROM audit_log WHERE ($1::bigint IS NULL OR id < $1)
           ORDER BY id DESC LIMIT $2"#,
        before,
        limit,
    )
    .fetch_all(db)
    .await?)
}

/// Number of entries.
pub async fn count(db: impl PgExecutor<'_>) -> Result<i64> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(r#"SELECT count(*) AS "n!" FROM audit_log"#).fetch_one(db).await?)
}
