//! Model routing: provider credentials (encrypted), model deployments, fallback chains and
//! default models.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

/// A credential, without its secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CredentialRow {
    /// Id.
    pub id: Uuid,
    /// DNS-label name.
    pub name: String,
    /// Provider.
    pub provider: String,
    /// Custom API base.
    pub api_base: Option<String>,
    /// Last four characters of the key (empty for a Secret reference).
    pub hint: String,
    /// Deployments using it.
    pub used_by: i64,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// A Kubernetes Secret of the silo's namespace holding the key (`name` or `name/key`),
    /// instead of a sealed key.
    pub secret_ref: Option<String>,
    /// Why the referenced Secret could not be read on the last pass (`None`: it was, or no pass
    /// has tried yet).
    pub secret_status: Option<String>,
    /// When a pass last tried to read it.
    pub secret_checked_at: Option<DateTime<Utc>>,
}

/// Where a credential's key is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource<'a> {
    /// Sealed here, with the key's last four characters.
    Sealed(&'a Sealed, &'a str),
    /// In a Kubernetes Secret of the silo's namespace: `name` or `name/key`.
    SecretRef(&'a str),
}

/// A [`KeySource`] as the row's columns.
struct Columns<'a> {
    nonce: Option<&'a [u8]>,
    ciphertext: Option<&'a [u8]>,
    key_version: i16,
    hint: &'a str,
    secret_ref: Option<&'a str>,
}

impl KeySource<'_> {
    fn columns(&self) -> Columns<'_> {
        match self {
            Self::Sealed(sealed, hint) => Columns {
                nonce: Some(&sealed.nonce),
                ciphertext: Some(&sealed.ciphertext),
                key_version: sealed.key_version,
                hint,
                secret_ref: None,
            },
            Self::SecretRef(reference) => {
                Columns { nonce: None, ciphertext: None, key_version: 1, hint: "", secret_ref: Some(reference) }
            }
        }
    }
}

/// An encrypted secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealed {
    /// AES-GCM nonce.
    pub nonce: Vec<u8>,
    /// Ciphertext with tag.
    pub ciphertext: Vec<u8>,
    /// The version of the credentials key that sealed it (see `credentials_keys`).
    pub key_version: i16,
}

/// Every credential, by name.
pub async fn credentials(db: impl PgExecutor<'_>) -> Result<Vec<CredentialRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        CredentialRow,
        r#"SELECT c.id, c.name, c.provider, c.api_base, c.hint, c.updated_at, c.secret_ref, c.secret_status,
                  c.secret_checked_at,
                  (SELECT count(*) FROM model_definitions d WHERE d.credential_id = c.id) AS "used_by!"
           FROM provider_credentials c ORDER BY c.name"#
    )
    .fetch_all(db)
    .await?)
}

/// Stores a credential.
pub async fn insert_credential(
    db: impl PgExecutor<'_>,
    name: &str,
    provider: &str,
    api_base: Option<&str>,
    source: &KeySource<'_>,
) -> Result<Uuid> {
    let Columns { nonce, ciphertext, key_version, hint, secret_ref } = source.columns();
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO provider_credentials (name, provider, api_base, nonce, ciphertext, hint, secret_ref, key_version)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id"#,
        name,
        provider,
        api_base,
        nonce,
        ciphertext,
        hint,
        secret_ref,
        key_version,
    )
    .fetch_one(db)
    .await?)
}

/// Replaces where a credential's key is (rotation, or a move between a sealed key and a Secret
/// reference); false when there is none.
pub async fn rotate_credential(db: impl PgExecutor<'_>, id: Uuid, source: &KeySource<'_>) -> Result<bool> {
    let Columns { nonce, ciphertext, key_version, hint, secret_ref } = source.columns();
    // language=PostgreSQL
    let done = sqlx::query!(
        "UPDATE provider_credentials
         SET nonce = $2, ciphertext = $3, hint = $4, secret_ref = $5, secret_status = NULL, secret_checked_at = NULL,
             key_version = $6, updated_at = now()
         WHERE id = $1",
        id,
        nonce,
        ciphertext,
        hint,
        secret_ref,
        key_version,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records what the last pass found reading a credential's Secret (`None`: it was read).
pub async fn set_secret_status(db: impl PgExecutor<'_>, id: Uuid, problem: Option<&str>) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE provider_credentials SET secret_status = $2, secret_checked_at = now() WHERE id = $1",
        id,
        problem
    )
    .execute(db)
    .await?;
    Ok(())
}

/// A credential's sealed secret.
pub async fn credential_secret(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<Sealed>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        Sealed,
        r#"SELECT nonce AS "nonce!", ciphertext AS "ciphertext!", key_version FROM provider_credentials
           WHERE id = $1 AND nonce IS NOT NULL AND ciphertext IS NOT NULL"#,
        id
    )
    .fetch_optional(db)
    .await?)
}

/// Deletes a credential; one still used by a deployment fails with a foreign-key violation.
pub async fn delete_credential(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM provider_credentials WHERE id = $1", id).execute(db).await?;
    Ok(done.rows_affected() == 1)
}

/// A deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefinitionRow {
    /// Id (also LiteLLM's `model_info.id`).
    pub id: Uuid,
    /// The name users ask for.
    pub public_name: String,
    /// Upstream model.
    pub upstream_model: String,
    /// API base override.
    pub api_base: Option<String>,
    /// Credential.
    pub credential_id: Option<Uuid>,
    /// Credential name.
    pub credential_name: Option<String>,
    /// Traffic weight.
    pub weight: i32,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// Deployment fields.
#[derive(Clone, Debug)]
pub struct DefinitionFields<'a> {
    /// Public name.
    pub public_name: &'a str,
    /// Upstream model.
    pub upstream_model: &'a str,
    /// API base.
    pub api_base: Option<&'a str>,
    /// Credential.
    pub credential_id: Option<Uuid>,
    /// Weight.
    pub weight: i32,
}

/// Every deployment, by public name.
pub async fn definitions(db: impl PgExecutor<'_>) -> Result<Vec<DefinitionRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        DefinitionRow,
        r#"SELECT d.id, d.public_name, d.upstream_model, d.api_base, d.credential_id, c.name AS "credential_name?",
                  d.weight, d.updated_at
           FROM model_definitions d LEFT JOIN provider_credentials c ON c.id = d.credential_id
           ORDER BY d.public_name, d.upstream_model"#
    )
    .fetch_all(db)
    .await?)
}

/// Adds a deployment.
pub async fn insert_definition(db: impl PgExecutor<'_>, f: &DefinitionFields<'_>) -> Result<Uuid> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"INSERT INTO model_definitions (public_name, upstream_model, api_base, credential_id, weight)
           VALUES ($1, $2, $3, $4, $5) RETURNING id"#,
        f.public_name,
        f.upstream_model,
        f.api_base,
        f.credential_id,
        f.weight,
    )
    .fetch_one(db)
    .await?)
}

/// Changes a deployment; false when there is none.
pub async fn update_definition(db: impl PgExecutor<'_>, id: Uuid, f: &DefinitionFields<'_>) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        r#"UPDATE model_definitions SET public_name = $2, upstream_model = $3, api_base = $4, credential_id = $5,
                  weight = $6, updated_at = now()
           WHERE id = $1"#,
        id,
        f.public_name,
        f.upstream_model,
        f.api_base,
        f.credential_id,
        f.weight,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Removes a deployment.
pub async fn delete_definition(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM model_definitions WHERE id = $1", id).execute(db).await?;
    Ok(done.rows_affected() == 1)
}

/// Every fallback chain: (public name, fallbacks in order).
pub async fn fallbacks(db: impl PgExecutor<'_>) -> Result<Vec<(String, Vec<String>)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"SELECT public_name, array_agg(fallback_name ORDER BY position) AS "chain!"
           FROM model_fallbacks GROUP BY public_name ORDER BY public_name"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.public_name, r.chain)).collect())
}

/// Replaces the fallback chain of a public name (empty removes it). Two statements: run it in a
/// transaction so that a refused chain changes nothing.
pub async fn set_fallbacks(db: &mut PgConnection, public_name: &str, chain: &[String]) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!("DELETE FROM model_fallbacks WHERE public_name = $1", public_name).execute(&mut *db).await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"INSERT INTO model_fallbacks (public_name, position, fallback_name)
           SELECT $1, (n - 1)::smallint, f FROM unnest($2::text[]) WITH ORDINALITY AS x(f, n)"#,
        public_name,
        chain,
    )
    .execute(&mut *db)
    .await?;
    Ok(())
}

/// A default model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefaultRow {
    /// Id.
    pub id: Uuid,
    /// `silo`, `group`, `user`.
    pub scope: String,
    /// For group defaults.
    pub group_id: Option<Uuid>,
    /// The group's name.
    pub group_name: Option<String>,
    /// For user defaults.
    pub tenant: Option<String>,
    /// The public model name.
    pub model: String,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// Every default: silo, then groups by name, then users.
pub async fn defaults(db: impl PgExecutor<'_>) -> Result<Vec<DefaultRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        DefaultRow,
        r#"SELECT d.id, d.scope, d.group_id, g.name AS "group_name?", d.tenant, d.model, d.updated_at
           FROM model_defaults d LEFT JOIN groups g ON g.id = d.group_id
           ORDER BY array_position(ARRAY['silo', 'group', 'user'], d.scope), g.name, d.tenant"#
    )
    .fetch_all(db)
    .await?)
}

/// Sets the default of a target, replacing any; returns its id.
pub async fn put_default(
    db: &mut PgConnection,
    scope: &str,
    group_id: Option<Uuid>,
    tenant: Option<&str>,
    model: &str,
) -> Result<Uuid> {
    // language=PostgreSQL
    let existing = sqlx::query_scalar!(
        r#"SELECT id FROM model_defaults
           WHERE scope = $1 AND group_id IS NOT DISTINCT FROM $2 AND tenant IS NOT DISTINCT FROM $3"#,
        scope,
        group_id,
        tenant,
    )
    .fetch_optional(&mut *db)
    .await?;
    if let Some(id) = existing {
        // language=PostgreSQL
        sqlx::query!("UPDATE model_defaults SET model = $2, updated_at = now() WHERE id = $1", id, model)
            .execute(&mut *db)
            .await?;
        return Ok(id);
    }
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        "INSERT INTO model_defaults (scope, group_id, tenant, model) VALUES ($1, $2, $3, $4) RETURNING id",
        scope,
        group_id,
        tenant,
        model,
    )
    .fetch_one(&mut *db)
    .await?)
}

/// Removes a default.
pub async fn delete_default(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM model_defaults WHERE id = $1", id).execute(db).await?;
    Ok(done.rows_affected() == 1)
}
