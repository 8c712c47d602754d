//! Provisioning bookkeeping: which ClusterTenants need a reconcile, the per-step rows the console's
//! checklist shows, the observed status, retries with backoff, and the two-phase deletion (the row
//! is marked, the teardown runs, then the row goes).
//!
//! A change that needs the reconciler is announced with `NOTIFY opencrane_provisioning` (payload:
//! the name) inside the writing transaction, so the reconciler never sees a change before it is
//! committed; it also polls, so a lost notification only delays work.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::PgExecutor;

/// The channel the reconciler listens on.
pub const CHANNEL: &str = "opencrane_provisioning";

/// One step of one ClusterTenant, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepRow {
    /// The step id (`namespace`, `quota`, …).
    pub step: String,
    /// `pending`, `running`, `done`, `failed`, `skipped`, `removing`, `removed` or `retained`.
    pub state: String,
    /// CamelCase reason.
    pub reason: String,
    /// A sentence for people.
    pub message: String,
    /// What to do about a failure.
    pub action: Option<String>,
    /// When the step last started.
    pub started_at: Option<DateTime<Utc>>,
    /// When it last finished.
    pub finished_at: Option<DateTime<Utc>>,
    /// The generation it describes.
    pub generation: i64,
}

/// The reconciler's view of one ClusterTenant that needs work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Due {
    /// The name.
    pub name: String,
    /// The generation to converge to.
    pub generation: i64,
    /// Whether deletion was asked for.
    pub deleting: bool,
    /// Consecutive failed reconciles (drives the backoff).
    pub failed_attempts: i32,
}

/// Announces that `name` needs the reconciler (delivered when the transaction commits).
pub async fn notify(db: impl PgExecutor<'_>, name: &str) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!("SELECT pg_notify('opencrane_provisioning', $1)", name).execute(db).await?;
    Ok(())
}

/// Every ClusterTenant that is not converged and whose backoff has passed: a deletion in
/// progress, a generation not yet observed, or a phase that is not a resting one. Oldest first.
pub async fn due(db: impl PgExecutor<'_>) -> Result<Vec<Due>> {
    due_first(db, i64::MAX).await
}

/// The first `limit` of [`due`]: what the reconciler reads when it has that many free slots (a
/// fleet with 10,000 failing customers is not read whole on every notification). The partial
/// index `cluster_tenants_unconverged` holds exactly the rows this condition admits, so a settled
/// fleet's read touches none of its converged rows.
pub async fn due_first(db: impl PgExecutor<'_>, limit: i64) -> Result<Vec<Due>> {
    // language=PostgreSQL
    let rows = sqlx::query_as!(
        Due,
        r#"SELECT name, generation, deletion_requested_at IS NOT NULL AS "deleting!", failed_attempts
           FROM cluster_tenants
           WHERE (deletion_requested_at IS NOT NULL
                  OR observed_generation IS DISTINCT FROM generation
                  OR phase NOT IN ('ready', 'suspended'))
             AND (next_attempt_at IS NULL OR next_attempt_at <= now())
           ORDER BY created_at, name
           LIMIT $1"#,
        limit
    )
    .fetch_all(db)
    .await?;
    Ok(rows)
}

/// The reconciler's queue, for the metrics: how many ClusterTenants are not converged (due now or
/// waiting out a backoff), and how long the oldest one due now has been due.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Queue {
    /// Not converged.
    pub depth: i64,
    /// Of those whose backoff has passed, seconds since the oldest became due (0 when none).
    pub oldest_due_seconds: f64,
}

/// See [`Queue`].
pub async fn queue(db: impl PgExecutor<'_>) -> Result<Queue> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"SELECT count(*) AS "depth!",
                  COALESCE(EXTRACT(EPOCH FROM now() - min(COALESCE(next_attempt_at, updated_at))
                           FILTER (WHERE next_attempt_at IS NULL OR next_attempt_at <= now())), 0)::float8 AS "oldest!"
           FROM cluster_tenants
           WHERE deletion_requested_at IS NOT NULL
              OR observed_generation IS DISTINCT FROM generation
              OR phase NOT IN ('ready', 'suspended')"#
    )
    .fetch_one(db)
    .await?;
    Ok(Queue { depth: row.depth, oldest_due_seconds: row.oldest.max(0.0) })
}

/// The names of every ClusterTenant whose silo should be running (not being deleted), for a
/// backend that must restore its runtime after a restart.
pub async fn live_names(db: impl PgExecutor<'_>) -> Result<Vec<String>> {
    // language=PostgreSQL
    let names =
        sqlx::query_scalar!("SELECT name FROM cluster_tenants WHERE deletion_requested_at IS NULL ORDER BY name")
            .fetch_all(db)
            .await?;
    Ok(names)
}

/// The step rows of `name`, in no particular order (the caller orders by its step list).
pub async fn steps(db: impl PgExecutor<'_>, name: &str) -> Result<Vec<StepRow>> {
    // language=PostgreSQL
    let rows = sqlx::query_as!(
        StepRow,
        r#"SELECT step, state, reason, message, action, started_at, finished_at, generation
           FROM provisioning_steps WHERE cluster_tenant = $1"#,
        name
    )
    .fetch_all(db)
    .await?;
    Ok(rows)
}

/// Writes one step's row. A row whose content would not change is left alone (no write, so a
/// converged reconcile writes nothing); `started_at` is kept while a step stays in the same state.
pub async fn put_step(db: impl PgExecutor<'_>, name: &str, row: &StepRow) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        r#"INSERT INTO provisioning_steps
               (cluster_tenant, step, state, reason, message, action, started_at, finished_at, generation)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (cluster_tenant, step) DO UPDATE
           SET state = EXCLUDED.state, reason = EXCLUDED.reason, message = EXCLUDED.message,
               action = EXCLUDED.action,
               started_at = CASE WHEN provisioning_steps.state = EXCLUDED.state
                                 THEN coalesce(provisioning_steps.started_at, EXCLUDED.started_at)
                                 ELSE EXCLUDED.started_at END,
               finished_at = EXCLUDED.finished_at, generation = EXCLUDED.generation
           WHERE (provisioning_steps.state, provisioning_steps.reason, provisioning_steps.message,
                  provisioning_steps.action, provisioning_steps.generation)
                 IS DISTINCT FROM (EXCLUDED.state, EXCLUDED.reason, EXCLUDED.message, EXCLUDED.action,
                                   EXCLUDED.generation)"#,
        name,
        row.step,
        row.state,
        row.reason,
        row.message,
        row.action,
        row.started_at,
        row.finished_at,
        row.generation,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// The observed status a reconcile ends with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed<'a> {
    /// The generation the reconcile worked on.
    pub generation: i64,
    /// The resulting phase.
    pub phase: &'a str,
    /// A sentence for people.
    pub message: Option<&'a str>,
    /// The silo's namespace (or, locally, its database).
    pub bound_namespace: Option<&'a str>,
    /// Where the silo answers.
    pub silo_url: Option<&'a str>,
    /// Which backend provisioned it.
    pub provisioner: &'a str,
    /// How the reconcile stands.
    pub progress: Progress,
}

/// Where a reconcile stands when it writes the status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Still working: attempts and the schedule are left alone.
    Working,
    /// Reached the desired state: `observed_generation` moves, the failure count resets.
    Converged,
    /// Failed: one more failed attempt, the next one in this many seconds.
    Failed {
        /// Seconds until the next automatic attempt.
        retry_in_seconds: i64,
    },
    /// Waiting for something that takes time (a database starting): look again in this many
    /// seconds; not a failure.
    Waiting {
        /// Seconds until the next look.
        retry_in_seconds: i64,
    },
}

/// Records a reconcile's status. `observed_generation` moves only when the reconcile converged
/// on the generation it read; a failure counts an attempt and schedules the next one. Returns
/// whether anything changed (a converged reconcile of a converged row changes nothing).
pub async fn observe(db: impl PgExecutor<'_>, name: &str, status: &Observed<'_>) -> Result<bool> {
    let (converged, failed, schedule_in) = match status.progress {
        Progress::Working => (false, false, None),
        Progress::Converged => (true, false, None),
        Progress::Failed { retry_in_seconds } => (false, true, Some(retry_in_seconds as f64)),
        Progress::Waiting { retry_in_seconds } => (false, false, Some(retry_in_seconds as f64)),
    };
    // language=PostgreSQL
    let done = sqlx::query!(
        r#"UPDATE cluster_tenants
           SET phase = $3, message = $4, bound_namespace = $5, silo_url = $6, provisioner = $7,
               observed_generation = CASE WHEN $8 THEN $2 ELSE observed_generation END,
               failed_attempts = CASE WHEN $8 THEN 0 WHEN $9 THEN failed_attempts + 1 ELSE failed_attempts END,
               next_attempt_at = CASE WHEN $8 THEN NULL
                                      WHEN $10::float8 IS NOT NULL THEN now() + make_interval(secs => $10::float8)
                                      ELSE next_attempt_at END
           WHERE name = $1
             -- A reconcile that began before a deletion was asked for never writes over it.
             AND (deletion_requested_at IS NULL OR $3 = 'deleting')
             AND ((phase, message, bound_namespace, silo_url, provisioner) IS DISTINCT FROM ($3, $4, $5, $6, $7)
                  OR $10::float8 IS NOT NULL
                  OR ($8 AND (observed_generation IS DISTINCT FROM $2 OR failed_attempts <> 0
                              OR next_attempt_at IS NOT NULL)))"#,
        name,
        status.generation,
        status.phase,
        status.message,
        status.bound_namespace,
        status.silo_url,
        status.provisioner,
        converged,
        failed,
        schedule_in,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// Asks for another attempt now. With `step`, that step's row goes back to `pending` first (the
/// checklist shows it queued); without, every failed step does and earlier steps are re-checked.
pub async fn request_retry(db: impl PgExecutor<'_>, name: &str, step: Option<&str>) -> Result<()> {
    // language=PostgreSQL
    let done = sqlx::query!(
        r#"WITH reset AS (
               UPDATE provisioning_steps
               SET state = 'pending', reason = 'RetryRequested', message = 'Queued for another attempt.',
                   action = NULL, started_at = NULL, finished_at = NULL
               WHERE cluster_tenant = $1 AND state = 'failed' AND ($2::text IS NULL OR step = $2)
           )
           UPDATE cluster_tenants
           SET next_attempt_at = now(), failed_attempts = 0,
               observed_generation = CASE WHEN $2::text IS NULL THEN NULL ELSE observed_generation END
           WHERE name = $1"#,
        name,
        step,
    )
    .execute(db)
    .await?;
    if done.rows_affected() == 0 {
        return Err(opencrane_db::Error::NotFound);
    }
    Ok(())
}

/// Runs `step` again on the next reconcile even though it converged (its row goes back to
/// `pending` and the customer is due): what changed is outside the desired state (e.g. the
/// identity step's ids, which the release carries).
pub async fn rerun_step(db: impl PgExecutor<'_>, name: &str, step: &str) -> Result<()> {
    // language=PostgreSQL
    let done = sqlx::query!(
        r#"WITH requeue AS (
               UPDATE provisioning_steps
               SET state = 'pending', reason = 'Requeued', message = 'Queued to run again.',
                   action = NULL, started_at = NULL, finished_at = NULL
               WHERE cluster_tenant = $1 AND step = $2
           )
           UPDATE cluster_tenants SET next_attempt_at = now(), observed_generation = NULL
           WHERE name = $1 AND deletion_requested_at IS NULL"#,
        name,
        step,
    )
    .execute(db)
    .await?;
    if done.rows_affected() == 0 {
        return Err(opencrane_db::Error::NotFound);
    }
    Ok(())
}

/// Marks `name` for deletion: phase `deleting`, the teardown is the reconciler's. Idempotent.
pub async fn request_deletion(db: impl PgExecutor<'_>, name: &str) -> Result<()> {
    // language=PostgreSQL
    // A step that failed or was waiting while the silo was provisioned is queued for the teardown,
    // so a failure shown during a deletion is always the teardown's own.
    let marked = sqlx::query_scalar!(
        r#"WITH marked AS (
               UPDATE cluster_tenants
               SET deletion_requested_at = coalesce(deletion_requested_at, now()), phase = 'deleting',
                   message = 'Deletion requested; tearing the silo down.', next_attempt_at = NULL,
                   failed_attempts = 0
               WHERE name = $1
               RETURNING name),
           queued AS (
               UPDATE provisioning_steps
               SET state = 'pending', reason = 'Queued', message = 'Waits for the teardown.', action = NULL,
                   started_at = NULL, finished_at = NULL
               WHERE cluster_tenant IN (SELECT name FROM marked) AND state IN ('failed', 'running')
               RETURNING 1)
           SELECT count(*) AS "marked!" FROM marked"#,
        name,
    )
    .fetch_one(db)
    .await?;
    if marked == 0 {
        return Err(opencrane_db::Error::NotFound);
    }
    Ok(())
}

/// Records what the teardown kept.
pub async fn set_retained(db: impl PgExecutor<'_>, name: &str, retained: &serde_json::Value) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!("UPDATE cluster_tenants SET retained = $2 WHERE name = $1", name, retained).execute(db).await?;
    Ok(())
}

/// Removes the row (and, by cascade, its steps and memberships) once the teardown is complete.
/// Only a row marked for deletion goes.
pub async fn finish_deletion(db: impl PgExecutor<'_>, name: &str) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM cluster_tenants WHERE name = $1 AND deletion_requested_at IS NOT NULL", name)
        .execute(db)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Changes what the teardown does with the database (the delete dialog's choice).
pub async fn set_termination_policy(db: impl PgExecutor<'_>, name: &str, policy: &str) -> Result<()> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "UPDATE cluster_tenants SET termination_policy = $2, generation = generation + 1 WHERE name = $1",
        name,
        policy
    )
    .execute(db)
    .await?;
    if done.rows_affected() == 0 {
        return Err(opencrane_db::Error::NotFound);
    }
    Ok(())
}
