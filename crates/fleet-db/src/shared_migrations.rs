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

/// Records a delta copy of `name`: the source's watermarks now, back to `copied` (verification
/// follows); never once it is cut over.
pub async fn copied_again(db: impl PgExecutor<'_>, name: &str, watermarks: &serde_json::Value) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE shared_migrations SET watermarks = $2, copy_started_at = now(), phase = 'copied', problem = NULL,
                updated_at = now()
         WHERE cluster_tenant = $1 AND phase <> 'cut-over'",
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

/// The advisory lock a fleet-manager holds (on a connection of its own) while it runs the
/// migration: one run at a time across replicas, released when that process ends.
pub const RUN_LOCK: i64 = 0x0053_4d52; // "SMR"

/// A run started from the `/migrations` page.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    /// Its id.
    pub id: i64,
    /// The last phase asked for.
    pub until: String,
    /// Only these customers (every one when empty).
    pub customers: Vec<String>,
    /// Who started it.
    pub started_by: String,
    /// When.
    pub started_at: DateTime<Utc>,
    /// The last progress line.
    pub progress: Option<String>,
    /// When it ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// Its report.
    pub report: Option<serde_json::Value>,
    /// Why it stopped as a whole.
    pub error: Option<String>,
}

/// Records a run starting; returns its id.
pub async fn start_run(db: impl PgExecutor<'_>, until: &str, customers: &[String], started_by: &str) -> Result<i64> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        "INSERT INTO shared_migration_runs (until, customers, started_by) VALUES ($1, $2, $3) RETURNING id",
        until,
        customers,
        started_by,
    )
    .fetch_one(db)
    .await?)
}

/// The run's last progress line.
pub async fn run_progress(db: impl PgExecutor<'_>, id: i64, line: &str) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!("UPDATE shared_migration_runs SET progress = $2 WHERE id = $1 AND finished_at IS NULL", id, line)
        .execute(db)
        .await?;
    Ok(())
}

/// Records the run's end: its report, or why it stopped.
pub async fn finish_run(
    db: impl PgExecutor<'_>,
    id: i64,
    report: Option<&serde_json::Value>,
    error: Option<&str>,
) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE shared_migration_runs SET finished_at = now(), report = $2, error = $3 WHERE id = $1",
        id,
        report,
        error,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The latest run, if any; with `reported`, the latest that got as far as a report; with
/// `whole` too, the latest such over every customer (the plan the page shows: a run for some
/// customers reports only those).
pub async fn latest_run(db: impl PgExecutor<'_>, reported: bool, whole: bool) -> Result<Option<RunRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        RunRow,
        r#"SELECT id, until, customers, started_by, started_at, progress, finished_at, report, error
           FROM shared_migration_runs
           WHERE (NOT $1 OR report IS NOT NULL) AND (NOT $2 OR cardinality(customers) = 0)
           ORDER BY id DESC LIMIT 1"#,
        reported,
        whole,
    )
    .fetch_optional(db)
    .await?)
}

/// Whether some fleet-manager holds [`RUN_LOCK`] (a run is under way).
pub async fn run_lock_held(db: impl PgExecutor<'_>) -> Result<bool> {
    // A bigint advisory key below 2^32 is classid 0, objid the key, objsubid 1.
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 0
                           AND objid = $1::bigint::oid AND objsubid = 1 AND granted) AS "held!""#,
        RUN_LOCK,
    )
    .fetch_one(db)
    .await?)
}

/// Stages a delivery for `name`'s silo manager (the relayed migration): `delivery` (its
/// manifest, with its `generation`) replaces any earlier one, with its `parcels` in order; the
/// silo's last report stays until it reports this one. Call in a transaction.
pub async fn stage(
    conn: &mut sqlx::PgConnection,
    name: &str,
    generation: &str,
    delivery: &serde_json::Value,
    parcels: &[serde_json::Value],
) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!("DELETE FROM shared_migration_parcels WHERE cluster_tenant = $1", name).execute(&mut *conn).await?;
    // language=PostgreSQL
    sqlx::query!(
        "INSERT INTO shared_migration_parcels (cluster_tenant, generation, seq, body)
         SELECT $1, $2, seq::integer - 1, body FROM unnest($3::jsonb[]) WITH ORDINALITY AS p(body, seq)",
        name,
        generation,
        parcels,
    )
    .execute(&mut *conn)
    .await?;
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE shared_migrations SET delivery = $2, updated_at = now() WHERE cluster_tenant = $1",
        name,
        delivery,
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The delivery staged for `name`'s silo that it has not reported yet, if any.
pub async fn pending_delivery(db: impl PgExecutor<'_>, name: &str) -> Result<Option<serde_json::Value>> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"SELECT delivery AS "delivery!" FROM shared_migrations
           WHERE cluster_tenant = $1 AND delivery IS NOT NULL
             AND (delivered IS NULL OR delivered->>'generation' IS DISTINCT FROM delivery->>'generation')"#,
        name,
    )
    .fetch_optional(db)
    .await?)
}

/// Parcel `seq` of `name`'s delivery `generation` (none once it was reported, or replaced).
pub async fn parcel(
    db: impl PgExecutor<'_>,
    name: &str,
    generation: &str,
    seq: i32,
) -> Result<Option<serde_json::Value>> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        "SELECT body FROM shared_migration_parcels WHERE cluster_tenant = $1 AND generation = $2 AND seq = $3",
        name,
        generation,
        seq,
    )
    .fetch_optional(db)
    .await?)
}

/// Records the silo's report on delivery `generation` and drops its parcels; `false` (nothing
/// recorded) when that is not the delivery staged now.
pub async fn record_delivered(
    db: impl PgExecutor<'_>,
    name: &str,
    generation: &str,
    report: &serde_json::Value,
) -> Result<bool> {
    // One statement: the report and the parcels' removal commit together.
    // language=PostgreSQL
    let recorded = sqlx::query_scalar!(
        r#"WITH reported AS (
               UPDATE shared_migrations SET delivered = $3, updated_at = now()
               WHERE cluster_tenant = $1 AND delivery->>'generation' = $2
               RETURNING cluster_tenant
           ), dropped AS (
               DELETE FROM shared_migration_parcels p USING reported r WHERE p.cluster_tenant = r.cluster_tenant
           )
           SELECT count(*) AS "n!" FROM reported"#,
        name,
        generation,
        report,
    )
    .fetch_one(db)
    .await?;
    Ok(recorded > 0)
}

/// The silo's last report on a delivery of `name`, if any.
pub async fn delivered(db: impl PgExecutor<'_>, name: &str) -> Result<Option<serde_json::Value>> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"SELECT delivered AS "delivered!" FROM shared_migrations WHERE cluster_tenant = $1 AND delivered IS NOT NULL"#,
        name,
    )
    .fetch_optional(db)
    .await?)
}
