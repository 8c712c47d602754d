//! The credentials key's bookkeeping: the fingerprint of each version of the key (`credentials_keys`),
//! and every sealed value with the version that sealed it, for the start-up check and for
//! `opencrane rotate-credentials-key`, which re-seals them all in one transaction.

use sqlx::PgExecutor;
use uuid::Uuid;

use opencrane_db::Result;

use crate::models::Sealed;

/// One version of the credentials key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyVersion {
    /// 1, 2, …
    pub version: i16,
    /// SHA-256 of the key material, hex.
    pub fingerprint: String,
}

/// The newest version recorded, if any.
pub async fn current(db: impl PgExecutor<'_>) -> Result<Option<KeyVersion>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(KeyVersion, "SELECT version, fingerprint FROM credentials_keys ORDER BY version DESC LIMIT 1")
        .fetch_optional(db)
        .await?)
}

/// Records a version; false when it was recorded already (by a concurrent replica).
pub async fn record(db: impl PgExecutor<'_>, version: i16, fingerprint: &str) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "INSERT INTO credentials_keys (version, fingerprint) VALUES ($1, $2) ON CONFLICT (version) DO NOTHING",
        version,
        fingerprint
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Serialises rotations and first records (a transaction-scoped advisory lock).
pub async fn lock(db: impl PgExecutor<'_>) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!("SELECT pg_advisory_xact_lock(hashtext('opencrane.credentials_keys'))").execute(db).await?;
    Ok(())
}

/// Blocks every write to the sealed tables until the transaction ends (a rotation re-seals them
/// all; a value written meanwhile under the old key would be lost to the new one).
pub async fn lock_sealed_tables(db: impl PgExecutor<'_>) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!("LOCK TABLE provider_credentials, litellm_keys IN SHARE ROW EXCLUSIVE MODE").execute(db).await?;
    Ok(())
}

/// Where a sealed value lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A provider credential (sealed for `credential:<name>`).
    Credential { id: Uuid, name: String },
    /// A user's LiteLLM key (sealed for `litellm-key:<tenant>`).
    LitellmKey { tenant: String },
}

impl Owner {
    /// The associated data the value was sealed with.
    pub fn context(&self) -> String {
        match self {
            Self::Credential { name, .. } => format!("credential:{name}"),
            Self::LitellmKey { tenant } => format!("litellm-key:{tenant}"),
        }
    }
}

/// Every sealed value.
pub async fn sealed_values(db: impl PgExecutor<'_>) -> Result<Vec<(Owner, Sealed)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"SELECT 'credential' AS "kind!", id::text AS "id!", name AS "name!", nonce AS "nonce!",
                  ciphertext AS "ciphertext!", key_version AS "key_version!"
           FROM provider_credentials WHERE nonce IS NOT NULL AND ciphertext IS NOT NULL
           UNION ALL
           SELECT 'litellm-key', tenant, tenant, nonce, ciphertext, key_version FROM litellm_keys
           ORDER BY 1, 3"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            let owner = match r.kind.as_str() {
                "credential" => Owner::Credential { id: r.id.parse().ok()?, name: r.name },
                _ => Owner::LitellmKey { tenant: r.name },
            };
            Some((owner, Sealed { nonce: r.nonce, ciphertext: r.ciphertext, key_version: r.key_version }))
        })
        .collect())
}

/// Replaces one sealed value in place (only its nonce, ciphertext and key version change).
pub async fn reseal(db: impl PgExecutor<'_>, owner: &Owner, sealed: &Sealed) -> Result<bool> {
    let done = match owner {
        // language=PostgreSQL
        Owner::Credential { id, .. } => sqlx::query!(
            "UPDATE provider_credentials SET nonce = $2, ciphertext = $3, key_version = $4 WHERE id = $1 AND nonce IS NOT NULL",
            id,
            &sealed.nonce,
            &sealed.ciphertext,
            sealed.key_version
        )
        .execute(db)
        .await?,
        // language=PostgreSQL
        Owner::LitellmKey { tenant } => sqlx::query!(
            "UPDATE litellm_keys SET nonce = $2, ciphertext = $3, key_version = $4 WHERE tenant = $1",
            tenant,
            &sealed.nonce,
            &sealed.ciphertext,
            sealed.key_version
        )
        .execute(db)
        .await?,
    };
    Ok(done.rows_affected() == 1)
}
