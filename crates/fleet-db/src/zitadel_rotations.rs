//! The `zitadel_key_rotations` table: the phases of each rotation of the fleet's Zitadel
//! service-account key (ids and dates only; the key itself lives in the Kubernetes Secret). At
//! most one rotation is under way (`prepared` or `active`), which the schema enforces.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::PgExecutor;
use uuid::Uuid;

/// A rotation as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RotationRow {
    /// Id.
    pub id: Uuid,
    /// `upload` or `minted`.
    pub method: String,
    /// `prepared`, `active`, `done` or `cancelled`.
    pub state: String,
    /// The new key.
    pub key_id: String,
    /// The key it replaces.
    pub previous_key_id: Option<String>,
    /// When the new key expires.
    pub key_expires_at: Option<DateTime<Utc>>,
    /// When it was prepared.
    pub prepared_at: DateTime<Utc>,
    /// When the new key went into use.
    pub activated_at: Option<DateTime<Utc>>,
    /// When the old key is revoked.
    pub revoke_after: Option<DateTime<Utc>>,
    /// When the old key was revoked.
    pub revoked_at: Option<DateTime<Utc>>,
    /// Who started it.
    pub actor: String,
}

/// A new rotation.
#[derive(Clone, Debug)]
pub struct NewRotation<'a> {
    /// `upload` or `minted`.
    pub method: &'a str,
    /// `prepared` (minted) or `done` (an upload, in use at once).
    pub state: &'a str,
    /// The new key.
    pub key_id: &'a str,
    /// The key in use before.
    pub previous_key_id: Option<&'a str>,
    /// When the new key expires.
    pub key_expires_at: Option<DateTime<Utc>>,
    /// Who.
    pub actor: &'a str,
}

/// Records a rotation; a second one under way is refused
/// ([`opencrane_db::Error::UniqueViolation`] on `zitadel_key_rotations_one_open`).
pub async fn insert(db: impl PgExecutor<'_>, new: &NewRotation<'_>) -> Result<RotationRow> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        RotationRow,
        r#"INSERT INTO zitadel_key_rotations (method, state, key_id, previous_key_id, key_expires_at, actor,
                                             activated_at)
           VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $2 = 'done' THEN now() END)
           RETURNING id, method, state, key_id, previous_key_id, key_expires_at, prepared_at, activated_at,
                     revoke_after, revoked_at, actor"#,
        new.method,
        new.state,
        new.key_id,
        new.previous_key_id,
        new.key_expires_at,
        new.actor,
    )
    .fetch_one(db)
    .await?)
}

/// The rotation under way, if any.
pub async fn open(db: impl PgExecutor<'_>) -> Result<Option<RotationRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        RotationRow,
        r#"SELECT id, method, state, key_id, previous_key_id, key_expires_at, prepared_at, activated_at,
                  revoke_after, revoked_at, actor
           FROM zitadel_key_rotations WHERE state IN ('prepared', 'active')"#,
    )
    .fetch_optional(db)
    .await?)
}

/// The latest `limit` rotations, newest first.
pub async fn recent(db: impl PgExecutor<'_>, limit: i64) -> Result<Vec<RotationRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        RotationRow,
        r#"SELECT id, method, state, key_id, previous_key_id, key_expires_at, prepared_at, activated_at,
                  revoke_after, revoked_at, actor
           FROM zitadel_key_rotations ORDER BY prepared_at DESC LIMIT $1"#,
        limit,
    )
    .fetch_all(db)
    .await?)
}

/// `prepared` → `active`: the new key is in use; the old one is revoked after `revoke_after`.
pub async fn activate(
    db: impl PgExecutor<'_>,
    id: Uuid,
    previous_key_id: &str,
    revoke_after: DateTime<Utc>,
) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "UPDATE zitadel_key_rotations
         SET state = 'active', activated_at = now(), previous_key_id = $2, revoke_after = $3
         WHERE id = $1 AND state = 'prepared'",
        id,
        previous_key_id,
        revoke_after,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// `active` → `done`: the old key was revoked.
pub async fn finish(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "UPDATE zitadel_key_rotations SET state = 'done', revoked_at = now() WHERE id = $1 AND state = 'active'",
        id,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// `prepared` → `cancelled`.
pub async fn cancel(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool> {
    // language=PostgreSQL
    let done =
        sqlx::query!("UPDATE zitadel_key_rotations SET state = 'cancelled' WHERE id = $1 AND state = 'prepared'", id)
            .execute(db)
            .await?;
    Ok(done.rows_affected() == 1)
}
