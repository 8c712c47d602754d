//! The silo's read-model of its own ClusterTenant: what the fleet (or the custom resource) says
//! about the customer this silo serves. Written by the silo's sync loop, read by its pages.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::PgExecutor;

/// The silo's own ClusterTenant, as last learnt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnClusterTenant {
    /// Its name.
    pub name: String,
    /// Display name.
    pub display_name: String,
    /// Lifecycle phase (fleet spelling).
    pub phase: String,
    /// Whether it is suspended.
    pub suspended: bool,
    /// The vanity host.
    pub vanity_domain: Option<String>,
    /// `resource` or `fleet`.
    pub source: String,
    /// When it was last learnt.
    pub updated_at: DateTime<Utc>,
}

/// Stores what was learnt (replacing any other ClusterTenant's row: the silo serves one).
pub async fn store(db: &mut sqlx::PgConnection, own: &OwnClusterTenant) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!("DELETE FROM own_cluster_tenant WHERE name <> $1", own.name).execute(&mut *db).await?;
    // language=PostgreSQL
    sqlx::query!(
        r#"INSERT INTO own_cluster_tenant (name, display_name, phase, suspended, vanity_domain, source)
           VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (name) DO UPDATE
           SET display_name = EXCLUDED.display_name, phase = EXCLUDED.phase, suspended = EXCLUDED.suspended,
               vanity_domain = EXCLUDED.vanity_domain, source = EXCLUDED.source, updated_at = now()
           WHERE (own_cluster_tenant.display_name, own_cluster_tenant.phase, own_cluster_tenant.suspended,
                  own_cluster_tenant.vanity_domain, own_cluster_tenant.source)
                 IS DISTINCT FROM (EXCLUDED.display_name, EXCLUDED.phase, EXCLUDED.suspended,
                                   EXCLUDED.vanity_domain, EXCLUDED.source)"#,
        own.name,
        own.display_name,
        own.phase,
        own.suspended,
        own.vanity_domain,
        own.source,
    )
    .execute(&mut *db)
    .await?;
    Ok(())
}

/// The row for `name`, if learnt yet.
pub async fn get(db: impl PgExecutor<'_>, name: &str) -> Result<Option<OwnClusterTenant>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        OwnClusterTenant,
        "SELECT name, display_name, phase, suspended, vanity_domain, source, updated_at
         FROM own_cluster_tenant WHERE name = $1",
        name
    )
    .fetch_optional(db)
    .await?)
}
