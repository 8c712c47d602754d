//! Tombstones of customers deleted with their data kept: the name stays held (with the former
//! owners and what was kept) until a platform operator re-attaches it.

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;

use opencrane_db::Result;

/// A held name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TombstoneRow {
    /// The former customer's name.
    pub name: String,
    /// Its owners (subjects) when the teardown ended.
    pub former_owners: Vec<String>,
    /// What the teardown kept.
    pub retained: serde_json::Value,
    /// When the teardown ended.
    pub deleted_at: DateTime<Utc>,
    /// The Zitadel organisation the teardown kept, if any (a re-attach takes it back).
    pub zitadel_org_id: Option<String>,
}

/// Records the tombstone of `name` (before its row and memberships go): its current owners,
/// what was kept and the Zitadel organisation kept with it. Recording again replaces it.
pub async fn record(
    db: impl PgExecutor<'_>,
    name: &str,
    retained: &serde_json::Value,
    zitadel_org_id: Option<&str>,
) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"INSERT INTO cluster_tenant_tombstones (name, former_owners, retained, zitadel_org_id)
           SELECT $1, coalesce(array_agg(subject ORDER BY subject) FILTER (WHERE role = 'owner'), '{}'), $2, $3
           FROM org_memberships WHERE cluster_tenant = $1
           ON CONFLICT (name) DO UPDATE
             SET former_owners = EXCLUDED.former_owners, retained = EXCLUDED.retained,
                 zitadel_org_id = EXCLUDED.zitadel_org_id, deleted_at = now()"#,
        name,
        retained,
        zitadel_org_id,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The tombstone holding `name`, if any.
pub async fn get(db: impl PgExecutor<'_>, name: &str) -> Result<Option<TombstoneRow>> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        TombstoneRow,
        r#"SELECT name, former_owners, retained, deleted_at, zitadel_org_id
           FROM cluster_tenant_tombstones WHERE name = $1"#,
        name,
    )
    .fetch_optional(db)
    .await?;
    Ok(row)
}

/// Releases `name` (an operator re-attached its data); returns whether it was held.
pub async fn remove(db: impl PgExecutor<'_>, name: &str) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM cluster_tenant_tombstones WHERE name = $1", name).execute(db).await?;
    Ok(done.rows_affected() > 0)
}
