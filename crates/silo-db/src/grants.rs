//! Grants: allow or deny a payload to a tenant, a person or a group.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::PgExecutor;
use uuid::Uuid;

/// A grant as stored, with the group's name when it is for a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantRow {
    /// Grant id.
    pub id: Uuid,
    /// `model`, `mcp-server`, `skill-bundle`.
    pub payload_type: String,
    /// Payload name or `*`.
    pub payload_id: String,
    /// `tenant`, `user`, `group`.
    pub subject_type: String,
    /// Tenant name, subject, or group id.
    pub subject_id: String,
    /// The group's name, for group grants.
    pub group_name: Option<String>,
    /// `allow` or `deny`.
    pub access: String,
    /// Higher wins.
    pub priority: i32,
    /// Why it exists.
    pub note: String,
    /// Who made it.
    pub created_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// A grant to store.
#[derive(Clone, Debug)]
pub struct NewGrant<'a> {
    /// Payload type.
    pub payload_type: &'a str,
    /// Payload name or `*`.
    pub payload_id: &'a str,
    /// `tenant`, `user`, `group`.
    pub subject_type: &'a str,
    /// Tenant name, subject or group id.
    pub subject_id: &'a str,
    /// `allow` or `deny`.
    pub access: &'a str,
    /// Priority.
    pub priority: i32,
    /// Note.
    pub note: &'a str,
    /// Creator.
    pub created_by: &'a str,
}

/// Every grant, newest first.
pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<GrantRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        GrantRow,
        r#"SELECT x.id, x.payload_type, x.payload_id, x.subject_type, x.subject_id, g.name AS "group_name?",
                  x.access, x.priority, x.note, x.created_by, x.created_at
           FROM grants x LEFT JOIN groups g ON g.id = x.group_id
           ORDER BY x.created_at DESC, x.id"#
    )
    .fetch_all(db)
    .await?)
}

/// Stores a grant; a group grant names an existing group (else a foreign-key violation).
pub async fn insert(db: impl PgExecutor<'_>, g: &NewGrant<'_>) -> Result<Uuid> {
    let group_id = if g.subject_type == "group" { Uuid::parse_str(g.subject_id).ok() } else { None };
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO grants (payload_type, payload_id, subject_type, subject_id, group_id, access, priority, note, created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id"#,
        g.payload_type,
        g.payload_id,
        g.subject_type,
        g.subject_id,
        group_id,
        g.access,
        g.priority,
        g.note,
        g.created_by,
    )
    .fetch_one(db)
    .await?)
}

/// Deletes a grant.
pub async fn delete(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM grants WHERE id = $1", id).execute(db).await?;
    Ok(done.rows_affected() == 1)
}
