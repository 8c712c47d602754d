//! Each customer's silo credential for the fleet's internal API, stored only as its SHA-256: the
//! provisioner records a newly minted one, the fleet's authentication finds the customer a
//! presented credential belongs to, and a rotation revokes it.

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;

use opencrane_db::Result;

/// The stored credential of a customer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuedCredential {
    /// SHA-256 (hex) of the credential.
    pub sha256: String,
    /// When it was minted.
    pub issued_at: DateTime<Utc>,
}

/// The credential issued to `name`'s silo, if one is in force.
pub async fn issued(db: impl PgExecutor<'_>, name: &str) -> Result<Option<IssuedCredential>> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"SELECT silo_credential_sha256 AS "sha256?", silo_credential_issued_at AS "issued_at?"
           FROM cluster_tenants WHERE name = $1"#,
        name
    )
    .fetch_optional(db)
    .await?;
    Ok(row.and_then(|r| Some(IssuedCredential { sha256: r.sha256?, issued_at: r.issued_at? })))
}

/// Records a newly minted credential of `name` (replacing, and so revoking, the one before).
pub async fn record(db: impl PgExecutor<'_>, name: &str, sha256: &str) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE cluster_tenants SET silo_credential_sha256 = $2, silo_credential_issued_at = now() WHERE name = $1",
        name,
        sha256
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Revokes `name`'s credential; returns whether one was in force.
pub async fn revoke(db: impl PgExecutor<'_>, name: &str) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        r#"UPDATE cluster_tenants SET silo_credential_sha256 = NULL, silo_credential_issued_at = NULL
           WHERE name = $1 AND silo_credential_sha256 IS NOT NULL"#,
        name
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// The customer whose silo holds the credential with this SHA-256, unless its deletion was
/// requested (a customer being deleted has no voice on the internal API) — with
/// `while_deleting`, also then (its silo's last usage report).
pub async fn holder(db: impl PgExecutor<'_>, sha256: &str, while_deleting: bool) -> Result<Option<String>> {
    // language=PostgreSQL
    let name = sqlx::query_scalar!(
        "SELECT name FROM cluster_tenants
         WHERE silo_credential_sha256 = $1 AND (deletion_requested_at IS NULL OR $2)",
        sha256,
        while_deleting
    )
    .fetch_optional(db)
    .await?;
    Ok(name)
}
