//! The migration from the original's shared database, per customer: the phase it reached, why
//! it stopped, what the source looked like when its copy began and what the last verification
//! found (`opencrane migrate-shared` and the `/migrations` page).

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;

use opencrane_db::Result;

/// One customer's migration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrationRow {
    /// The customer.
    pub cluster_tenant: String,
    /// `host:port/database` of the source.
    pub source: String,
    /// `planned`, `provisioned`, `copied`, `verified` or `cut-over`.
    pub phase: String,
    /// Why the next phase did not happen.
    pub problem: Option<String>,
    /// Per table: rows and newest change in the source when the copy began.
    pub watermarks: serde_json::Value,
    /// The last verification, per table.
    pub checks: serde_json::Value,
    /// When the copy began.
    pub copy_started_at: Option<DateTime<Utc>>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// Every migration, by customer.
pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<MigrationRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MigrationRow,
        r#"SELECT cluster_tenant, source, phase, problem, watermarks, checks, copy_started_at, updated_at
           FROM shared_migrations ORDER BY cluster_tenant"#
    )
    .fetch_all(db)
    .await?)
}

/// The migration of `name`, if one began.
pub async fn get(db: impl PgExecutor<'_>, name: &str) -> Result<Option<MigrationRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MigrationRow,
        r#"SELECT cluster_tenant, source, phase, problem, watermarks, checks, copy_started_at, updated_at
           FROM shared_migrations WHERE cluster_tenant = $1 FOR UPDATE"#,
        name,
    )
    .fetch_optional(db)
    .await?)
}

/// Starts the migration of `name` in phase `planned`.
pub async fn begin(db: impl PgExecutor<'_>, name: &str, source: &str) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "INSERT INTO shared_migrations (cluster_tenant, source, phase) VALUES ($1, $2, 'planned')",
        name,
        source
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Moves `name` to `phase` (clearing its problem).
pub async fn set_phase(db: impl PgExecutor<'_>, name: &str, phase: &str) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE shared_migrations SET phase = $2, problem = NULL, updated_at = now() WHERE cluster_tenant = $1",
        name,
        phase,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Records why `name` did not get further (its phase stays).
pub async fn set_problem(db: impl PgExecutor<'_>, name: &str, problem: &str) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE shared_migrations SET problem = $2, updated_at = now() WHERE cluster_tenant = $1",
        name,
        problem,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Records the source's watermarks when the copy of `name` begins (once: a resumed copy keeps
/// the first).
pub async fn copy_started(db: impl PgExecutor<'_>, name: &str, watermarks: &serde_json::Value) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE shared_migrations SET watermarks = $2, copy_started_at = now(), updated_at = now()
         WHERE cluster_tenant = $1 AND copy_started_at IS NULL",
        name,
        watermarks,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Records the last verification of `name`.
pub async fn set_checks(db: impl PgExecutor<'_>, name: &str, checks: &serde_json::Value) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE shared_migrations SET checks = $2, updated_at = now() WHERE cluster_tenant = $1",
        name,
        checks,
    )
    .execute(db)
    .await?;
    Ok(())
}
