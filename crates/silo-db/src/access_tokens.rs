//! `ocp_` access tokens: principals with a role, acting for the member who created them. Only the
//! SHA-256 of a secret is stored; a revoked or expired token stops working on its next use.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::PgExecutor;
use uuid::Uuid;

/// A token as listed (never its secret).
#[derive(Clone, Debug, PartialEq)]
pub struct AccessTokenRow {
    /// Token id.
    pub id: Uuid,
    /// What it is for.
    pub name: String,
    /// The member it acts for.
    pub owner_subject: String,
    /// `admin` or `member`.
    pub role: String,
    /// The first characters of the secret, to recognise it.
    pub prefix: String,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Expiry, if any.
    pub expires_at: Option<DateTime<Utc>>,
    /// Last use (recorded at most once a minute).
    pub last_used_at: Option<DateTime<Utc>>,
    /// Revocation time.
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A token to store.
#[derive(Clone, Debug)]
pub struct NewAccessToken<'a> {
    /// What it is for.
    pub name: &'a str,
    /// The member it acts for.
    pub owner_subject: &'a str,
    /// `admin` or `member`.
    pub role: &'a str,
    /// SHA-256 of the secret.
    pub token_hash: &'a [u8],
    /// First characters of the secret.
    pub prefix: &'a str,
    /// Optional expiry.
    pub expires_at: Option<DateTime<Utc>>,
}

/// Stores a new token.
pub async fn insert(db: impl PgExecutor<'_>, token: &NewAccessToken<'_>) -> Result<AccessTokenRow> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        AccessTokenRow,
        r#"INSERT INTO access_tokens (name, owner_subject, role, token_hash, prefix, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6)
           RETURNING id, name, owner_subject, role, prefix, created_at, expires_at, last_used_at, revoked_at"#,
        token.name,
        token.owner_subject,
        token.role,
        token.token_hash,
        token.prefix,
        token.expires_at,
    )
    .fetch_one(db)
    .await?)
}

/// The usable (unrevoked, unexpired) token with this hash, recording its use.
pub async fn authenticate(db: impl PgExecutor<'_> + Copy, token_hash: &[u8]) -> Result<Option<AccessTokenRow>> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        AccessTokenRow,
        r#"SELECT id, name, owner_subject, role, prefix, created_at, expires_at, last_used_at, revoked_at
           FROM access_tokens
           WHERE token_hash = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())"#,
        token_hash,
    )
    .fetch_optional(db)
    .await?;
    if let Some(row) = &row
        && row.last_used_at.is_none_or(|t| Utc::now() - t > chrono::Duration::minutes(1))
    {
        // language=PostgreSQL
        sqlx::query!("UPDATE access_tokens SET last_used_at = now() WHERE id = $1", row.id).execute(db).await?;
    }
    Ok(row)
}

/// Every token, newest first.
pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<AccessTokenRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        AccessTokenRow,
        r#"SELECT id, name, owner_subject, role, prefix, created_at, expires_at, last_used_at, revoked_at
           FROM access_tokens ORDER BY created_at DESC"#,
    )
    .fetch_all(db)
    .await?)
}

/// Revokes a token; `None` when no such token exists, `Some(false)` when it was already revoked.
pub async fn revoke(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<AccessTokenRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        AccessTokenRow,
        r#"UPDATE access_tokens SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1
           RETURNING id, name, owner_subject, role, prefix, created_at, expires_at, last_used_at, revoked_at"#,
        id,
    )
    .fetch_optional(db)
    .await?)
}
