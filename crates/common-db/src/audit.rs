//! The `audit_log` of either role: append entries, and page through them newest first with
//! filters. Text from users is stored with control characters escaped, so an entry cannot forge
//! a second line in a log viewer or a terminal.

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
    /// The actor's role when they did it (`operator`, `owner`, `admin`, `member`, `token`, …).
    pub actor_role: String,
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
    /// The actor's role.
    pub actor_role: &'a str,
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

/// Replaces control characters (CR, LF, ESC, …) with `\u{…}` escapes.
pub fn escape_control(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Appends an entry and returns its id.
pub async fn append(db: impl PgExecutor<'_>, entry: &NewAuditEntry<'_>) -> Result<i64> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO audit_log (actor, actor_role, action, target, outcome, request_id, metadata)
           VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id"#,
        escape_control(entry.actor),
        entry.actor_role,
        entry.action,
        escape_control(entry.target),
        entry.outcome,
        entry.request_id,
        entry.metadata,
    )
    .fetch_one(db)
    .await?)
}

/// Which entries to list.
#[derive(Clone, Debug, Default)]
pub struct AuditFilter {
    /// Exact actor.
    pub actor: Option<String>,
    /// Action prefix, e.g. `auth.` or `cluster_tenant.`.
    pub action_prefix: Option<String>,
    /// Exact outcome.
    pub outcome: Option<String>,
}

/// Up to `limit` entries older than the `before` id (all when `None`), newest first.
pub async fn list(
    db: impl PgExecutor<'_>,
    filter: &AuditFilter,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<AuditRow>> {
    let prefix = filter
        .action_prefix
        .as_deref()
        .map(|p| format!("{}%", p.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")));
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        AuditRow,
        r#"SELECT id, occurred_at, actor, actor_role, action, target, outcome, request_id, metadata
           FROM audit_log
           WHERE ($1::bigint IS NULL OR id < $1)
             AND ($2::text IS NULL OR actor = $2)
             AND ($3::text IS NULL OR action LIKE $3)
             AND ($4::text IS NULL OR outcome = $4)
           ORDER BY id DESC LIMIT $5"#,
        before,
        filter.actor,
        prefix,
        filter.outcome,
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
