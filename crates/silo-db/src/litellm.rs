//! What the LiteLLM reconciler knows: each user's key as last applied and observed, and the
//! state of its last pass.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use serde_json::Value;
use sqlx::PgExecutor;

use crate::models::Sealed;

/// A user's key record.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRow {
    /// The user.
    pub tenant: String,
    /// `opencrane-<tenant>`.
    pub key_alias: String,
    /// LiteLLM's token id.
    pub token_id: String,
    /// The start of the user-limit period `spend_before_period` belongs to.
    pub period_start: Option<DateTime<Utc>>,
    /// The key's LiteLLM spend before that period (millionths).
    pub spend_before_period: i64,
    /// What was last applied.
    pub applied: Value,
    /// LiteLLM's last reported total spend (millionths).
    pub observed_spend: i64,
    /// Differences found on the last pass, if any.
    pub drift: Option<String>,
    /// Last pass over this key.
    pub synced_at: Option<DateTime<Utc>>,
    /// When this key was issued (a revocation issues a new one).
    pub issued_at: DateTime<Utc>,
    /// An admin revoked it and the reconciler has not deleted it yet.
    pub revoke_requested_at: Option<DateTime<Utc>>,
}

/// The key records of the users named in `only`, or every one.
pub async fn keys(db: impl PgExecutor<'_>, only: Option<&[String]>) -> Result<Vec<KeyRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        KeyRow,
        r#"SELECT tenant, key_alias, token_id, period_start,
                  (spend_before_period * 1000000)::bigint AS "spend_before_period!", applied,
                  (observed_spend * 1000000)::bigint AS "observed_spend!", drift, synced_at,
                  created_at AS issued_at, revoke_requested_at
           FROM litellm_keys WHERE $1::text[] IS NULL OR tenant = ANY($1) ORDER BY tenant"#,
        only,
    )
    .fetch_all(db)
    .await?)
}

/// Records a newly generated key.
pub async fn insert_key(
    db: impl PgExecutor<'_>,
    tenant: &str,
    alias: &str,
    token_id: &str,
    secret: &Sealed,
) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"INSERT INTO litellm_keys (tenant, key_alias, token_id, nonce, ciphertext, key_version)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (tenant) DO UPDATE SET key_alias = $2, token_id = $3, nonce = $4, ciphertext = $5, key_version = $6,
               applied = '{}'::jsonb, period_start = NULL, spend_before_period = 0, drift = NULL,
               created_at = now(), revoke_requested_at = NULL"#,
        tenant,
        alias,
        token_id,
        &secret.nonce,
        &secret.ciphertext,
        secret.key_version,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// A key's sealed secret.
pub async fn key_secret(db: impl PgExecutor<'_>, tenant: &str) -> Result<Option<Sealed>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(Sealed, "SELECT nonce, ciphertext, key_version FROM litellm_keys WHERE tenant = $1", tenant)
        .fetch_optional(db)
        .await?)
}

/// Records a pass over one key.
pub async fn record_pass(
    db: impl PgExecutor<'_>,
    tenant: &str,
    applied: &Value,
    observed_spend: i64,
    period_start: Option<DateTime<Utc>>,
    spend_before_period: i64,
    drift: Option<&str>,
) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"UPDATE litellm_keys SET applied = $2, observed_spend = $3::bigint / 1000000.0, period_start = $4,
                  spend_before_period = $5::bigint / 1000000.0, drift = $6, synced_at = now()
           WHERE tenant = $1"#,
        tenant,
        applied,
        observed_spend,
        period_start,
        spend_before_period,
        drift,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Asks for a user's key to be revoked (the reconciler deletes it in LiteLLM and issues a new
/// one); `false` when the user has no key. Asking again keeps the first request's time.
pub async fn request_revocation(db: impl PgExecutor<'_>, tenant: &str) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "UPDATE litellm_keys SET revoke_requested_at = coalesce(revoke_requested_at, now()) WHERE tenant = $1",
        tenant
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Forgets a key (after LiteLLM deleted it).
pub async fn delete_key(db: impl PgExecutor<'_>, tenant: &str) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM litellm_keys WHERE tenant = $1", tenant).execute(db).await?;
    Ok(done.rows_affected() == 1)
}

/// The last pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncRow {
    /// When it finished.
    pub finished_at: Option<DateTime<Utc>>,
    /// Whether LiteLLM answered.
    pub ok: bool,
    /// What happened, for people.
    pub message: String,
    /// Objects repaired.
    pub repaired: i32,
}

/// The last pass.
pub async fn sync_state(db: impl PgExecutor<'_>) -> Result<SyncRow> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(SyncRow, "SELECT finished_at, ok, message, repaired FROM litellm_sync").fetch_one(db).await?)
}

/// Records a pass.
pub async fn record_sync(db: impl PgExecutor<'_>, ok: bool, message: &str, repaired: i32) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE litellm_sync SET finished_at = now(), ok = $1, message = $2, repaired = $3",
        ok,
        message,
        repaired,
    )
    .execute(db)
    .await?;
    Ok(())
}
