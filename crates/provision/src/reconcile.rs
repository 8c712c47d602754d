//! The reconciler: observe (read the row) → validate ([`Desired`]) → for each step, in order,
//! ask the [`Backend`] to converge it → record each step's row and the observed status.
//!
//! Deletion runs the steps' teardowns in [`StepId::TEARDOWN`] order and removes the row only
//! when all of them finished; what the termination policy kept is recorded. A step that fails
//! stops the pipeline there: its row says why and what to do, the later rows say what they wait
//! for, and the next attempt comes after an exponential backoff (or at once on Retry).
//!
//! Writes happen only on change: a reconcile of a converged ClusterTenant writes nothing.

use std::time::Duration;

use chrono::Utc;
use opencrane_db::PgPool;
use opencrane_fleet_db::{
    cluster_tenants::{self, ZitadelIds},
    provisioning::{self, Observed, Progress, StepRow},
    silo_credentials,
};

use crate::{
    StepId, StepState,
    identity::{self, IdentityPlane},
    spec::{Desired, SiloIdentity},
};

/// A step converged, does not apply, or is under way and needs another look later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepSuccess {
    /// `Done`, `Skipped`, or `Running` (waiting for something that takes time).
    pub state: StepState,
    /// CamelCase reason.
    pub reason: String,
    /// What was done, for people.
    pub message: String,
}

impl StepSuccess {
    /// A converged step.
    pub fn done(reason: &str, message: impl Into<String>) -> Self {
        Self { state: StepState::Done, reason: reason.into(), message: message.into() }
    }

    /// A converged step that found nothing to do on a re-check: its row keeps the message of
    /// the pass that did the work (only with `done_before`, when there is one).
    pub fn unchanged(reason: &str) -> Self {
        Self::done(reason, String::new())
    }

    /// A step that does not apply.
    pub fn skipped(reason: &str, message: impl Into<String>) -> Self {
        Self { state: StepState::Skipped, reason: reason.into(), message: message.into() }
    }

    /// A step that is under way (e.g. a database starting): the pipeline stops here without a
    /// failure and looks again after [`WAIT`].
    pub fn waiting(reason: &str, message: impl Into<String>) -> Self {
        Self { state: StepState::Running, reason: reason.into(), message: message.into() }
    }
}

/// How long a waiting step waits before the next look.
pub const WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a step may wait in total before it counts as failed.
pub const WAIT_LIMIT: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// A step failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {message}")]
pub struct StepFailure {
    /// CamelCase reason.
    pub reason: String,
    /// What went wrong, for people (never a secret).
    pub message: String,
    /// What a person can do about it.
    pub action: String,
}

impl StepFailure {
    /// A failure with its suggested action.
    pub fn new(reason: &str, message: impl Into<String>, action: impl Into<String>) -> Self {
        Self { reason: reason.into(), message: message.into(), action: action.into() }
    }
}

/// What a step's teardown did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Teardown {
    /// Removed (or there was nothing to remove).
    Removed(String),
    /// Kept on purpose (the termination policy); the sentence says what and where.
    Retained(String),
    /// Under way (e.g. a namespace terminating); look again after [`WAIT`].
    Waiting(String),
}

/// What a backend answers for [`StepId::Identity`], which the reconciler runs itself (it talks
/// to Zitadel, not to the cluster): the reconciler never asks a backend for it.
pub fn not_a_backend_step() -> StepSuccess {
    StepSuccess::skipped("NotABackendStep", "The identity step talks to Zitadel, not to the cluster.")
}

/// Where the steps happen: the Kubernetes cluster, or the local machine in `dev`.
#[async_trait::async_trait]
pub trait Backend: Send + Sync {
    /// `kubernetes` or `local` (stored as the ClusterTenant's provisioner).
    fn name(&self) -> &'static str;

    /// Converges one step for `desired`. Must be idempotent: called again on a converged step it
    /// changes nothing. `done_before` says the step already converged on this generation, so an
    /// expensive action (a Helm upgrade) may be skipped for a cheap check.
    async fn converge(&self, step: StepId, desired: &Desired, done_before: bool) -> Result<StepSuccess, StepFailure>;

    /// Tears one step down for the ClusterTenant `name`; `delete_database` is the termination
    /// policy. Idempotent: tearing down what is gone succeeds.
    async fn teardown(&self, step: StepId, name: &str, delete_database: bool) -> Result<Teardown, StepFailure>;

    /// Whether the silo of `name` holds the credential whose SHA-256 is `fingerprint` (the one in
    /// force; the release step then installs none). A backend that cannot tell says yes.
    async fn holds_credential(&self, _name: &str, _fingerprint: &str) -> Result<bool, StepFailure> {
        Ok(true)
    }

    /// Where the silo answers, once the release runs.
    fn silo_url(&self, desired: &Desired) -> Option<String>;

    /// What `status.boundNamespace` shows.
    fn bound_to(&self, desired: &Desired) -> String;

    /// Called after every reconcile of `name` (also once its row is gone): a backend may publish
    /// the outcome elsewhere — the Kubernetes backend mirrors it onto the ClusterTenant resource.
    async fn publish(&self, _pool: &PgPool, _name: &str) -> Result<(), crate::Error> {
        Ok(())
    }
}

/// Why a reconcile could not even run (as opposed to a step failing, which is recorded).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The fleet database failed.
    #[error("fleet database: {0}")]
    Db(#[from] opencrane_db::Error),
}

/// What a reconcile did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every step converged (phase `Ready` or `Suspended`).
    Converged,
    /// A step failed; the next attempt is scheduled.
    Failed(StepId),
    /// A step is under way; the next look is scheduled.
    Waiting(StepId),
    /// The row was invalid; nothing was attempted.
    Invalid,
    /// The teardown finished and the row is gone.
    Deleted,
    /// The row does not exist (deleted meanwhile).
    Gone,
}

impl Outcome {
    /// The `result` label of `opencrane_reconcile_runs_total`.
    pub fn as_label(&self) -> &'static str {
        match self {
            Self::Converged => "converged",
            Self::Failed(_) => "failed",
            Self::Waiting(_) => "waiting",
            Self::Invalid => "invalid",
            Self::Deleted => "deleted",
            Self::Gone => "gone",
        }
    }
}

/// The delay before the `attempt`-th retry: 2 s doubling to at most 5 minutes.
pub fn backoff(failed_attempts: i32) -> Duration {
    let exponent = u32::try_from(failed_attempts.clamp(0, 8)).unwrap_or(8);
    Duration::from_secs((2u64 << exponent).min(300))
}

/// The delay before `name`'s next attempt: [`backoff`] shortened by up to a quarter, by an amount
/// fixed per customer and attempt, so customers that failed together (a fleet started with an
/// unset setting) do not all come back in the same second.
pub fn retry_after(name: &str, failed_attempts: i32) -> Duration {
    use sha2::{Digest as _, Sha256};
    let full = backoff(failed_attempts);
    let hash = Sha256::digest(format!("{name}/{failed_attempts}").as_bytes());
    let spread = u64::from(u16::from_be_bytes([hash[0], hash[1]]));
    let cut = full.as_secs() / 4 * spread / u64::from(u16::MAX);
    full - Duration::from_secs(cut)
}

fn row(step: StepId, state: StepState, reason: &str, message: &str, generation: i64) -> StepRow {
    let now = Utc::now();
    let finished = !matches!(state, StepState::Running | StepState::Removing | StepState::Pending);
    StepRow {
        step: step.as_str().into(),
        state: state.as_str().into(),
        reason: reason.into(),
        message: message.into(),
        action: None,
        started_at: (state != StepState::Pending).then_some(now),
        finished_at: finished.then_some(now),
        generation,
    }
}

/// The credential the release step must install, if any: a fresh one when the customer has none
/// in force (new, or rotated) or its silo does not hold the one in force (lost, or an install
/// that failed); none while suspended (nothing runs).
async fn credential_to_install(
    pool: &PgPool,
    backend: &dyn Backend,
    step: StepId,
    desired: &Desired,
) -> Result<Option<opencrane_deploy::Secret>, StepFailure> {
    if step != StepId::Release || desired.suspended {
        return Ok(None);
    }
    let issued = silo_credentials::issued(pool, &desired.name).await.map_err(|e| {
        StepFailure::new("DatabaseError", format!("reading the silo credential failed: {e}"), "Retry the step.")
    })?;
    if let Some(issued) = issued
        && backend.holds_credential(&desired.name, &issued.sha256).await?
    {
        return Ok(None);
    }
    crate::credential::mint().map(Some).map_err(|e| {
        StepFailure::new("NoRandomness", format!("minting the silo credential failed: {e}"), "Retry the step.")
    })
}

/// Reconciles the ClusterTenant `name` once, with no Zitadel configured (the identity step is
/// skipped).
pub async fn reconcile(pool: &PgPool, backend: &dyn Backend, name: &str) -> Result<Outcome, Error> {
    reconcile_with(pool, backend, None, name).await
}

/// Converges the identity step: with Zitadel, the customer's organisation; without, skipped.
/// Answers the outcome and the ids now stored.
async fn converge_identity(
    pool: &PgPool,
    identity: Option<&IdentityPlane>,
    desired: &Desired,
    stored: &ZitadelIds,
) -> (Result<StepSuccess, StepFailure>, ZitadelIds) {
    let Some(plane) = identity else { return (Ok(identity::not_configured()), stored.clone()) };
    match plane.converge(pool, desired, stored).await {
        Ok(converged) => (Ok(converged.success), converged.ids),
        // What is stored now (a failure may have stored or cleared ids on the way).
        Err(failure) => {
            let now = cluster_tenants::get(pool, &desired.name).await.map(|r| ZitadelIds::of(&r)).unwrap_or_default();
            (Err(failure), now)
        }
    }
}

/// Reconciles the ClusterTenant `name` once; `identity` is the fleet's Zitadel, if configured.
/// Counts the run in `opencrane_reconcile_runs_total{result}` and times it.
pub async fn reconcile_with(
    pool: &PgPool,
    backend: &dyn Backend,
    identity: Option<&IdentityPlane>,
    name: &str,
) -> Result<Outcome, Error> {
    let started = std::time::Instant::now();
    let result = run(pool, backend, identity, name).await;
    let label = result.as_ref().map_or("error", Outcome::as_label);
    metrics::counter!("opencrane_reconcile_runs_total", "result" => label).increment(1);
    metrics::histogram!("opencrane_reconcile_duration_seconds", "result" => label)
        .record(started.elapsed().as_secs_f64());
    result
}

async fn run(
    pool: &PgPool,
    backend: &dyn Backend,
    identity: Option<&IdentityPlane>,
    name: &str,
) -> Result<Outcome, Error> {
    let current = match cluster_tenants::get(pool, name).await {
        Ok(row) => row,
        Err(opencrane_db::Error::NotFound) => return Ok(Outcome::Gone),
        Err(other) => return Err(other.into()),
    };
    let stored: std::collections::HashMap<String, StepRow> =
        provisioning::steps(pool, name).await?.into_iter().map(|r| (r.step.clone(), r)).collect();
    if current.deletion_requested_at.is_some() {
        return tear_down(pool, backend, identity, &current, &stored).await;
    }
    let mut desired = match Desired::from_row(&current) {
        Ok(desired) => desired,
        Err(invalid) => {
            let message = format!("The desired state is invalid: {invalid}. Edit the customer to fix it.");
            provisioning::observe(
                pool,
                name,
                &Observed {
                    generation: current.generation,
                    phase: "failed",
                    message: Some(&message),
                    bound_namespace: current.bound_namespace.as_deref(),
                    silo_url: current.silo_url.as_deref(),
                    provisioner: backend.name(),
                    progress: Progress::Failed { retry_in_seconds: 300 },
                },
            )
            .await?;
            return Ok(Outcome::Invalid);
        }
    };
    let bound = backend.bound_to(&desired);
    let generation = desired.generation;
    let unchanged = |step: StepId| {
        stored
            .get(step.as_str())
            .is_some_and(|r| r.generation == generation && (r.state == "done" || r.state == "skipped"))
    };
    let phase_while_running =
        if current.phase == "ready" || current.phase == "suspended" { current.phase.as_str() } else { "provisioning" };
    if phase_while_running == "provisioning" && current.phase != "provisioning" {
        provisioning::observe(
            pool,
            name,
            &Observed {
                generation,
                phase: "provisioning",
                message: Some("Provisioning the silo."),
                bound_namespace: Some(&bound),
                silo_url: current.silo_url.as_deref(),
                provisioner: backend.name(),
                progress: Progress::Working,
            },
        )
        .await?;
    }
    // Set when the identity step changed the ids the release carries: the release runs again.
    let mut identity_changed = false;
    for (index, step) in StepId::ALL.into_iter().enumerate() {
        let began = Utc::now();
        // The release step installs a new silo credential when none is in force or the silo lost it.
        let (minted, step_desired) = match credential_to_install(pool, backend, step, &desired).await {
            Ok(Some(secret)) => {
                let print = crate::credential::fingerprint(secret.expose());
                (Some(print), std::borrow::Cow::Owned(Desired { silo_credential: Some(secret), ..desired.clone() }))
            }
            Ok(None) => (None, std::borrow::Cow::Borrowed(&desired)),
            Err(failure) => return fail(pool, backend, &current, &bound, step, index, &failure, began).await,
        };
        let unchanged =
            |step: StepId| minted.is_none() && unchanged(step) && !(step == StepId::Release && identity_changed);
        if !unchanged(step) {
            provisioning::put_step(
                pool,
                name,
                &row(step, StepState::Running, "InProgress", "Working on it.", generation),
            )
            .await?;
        }
        let started = std::time::Instant::now();
        // When this step began waiting, if it already was on an earlier pass.
        let waiting_since = stored
            .get(step.as_str())
            .filter(|r| r.state == "running" && r.generation == generation)
            .and_then(|r| r.started_at);
        // Recorded before the install, so the silo is accepted from its very first call; an
        // install that fails leaves a hash no silo holds, and the next pass mints again.
        if let Some(print) = &minted {
            silo_credentials::record(pool, name, print).await?;
            tracing::info!(cluster_tenant = name, "silo credential issued");
        }
        let mut identity_now = None;
        let result = if step == StepId::Identity {
            let (result, ids) = converge_identity(pool, identity, &desired, &ZitadelIds::of(&current)).await;
            identity_now = Some(SiloIdentity::of(ids.org_id.as_deref(), ids.client_id.as_deref()));
            result
        } else {
            backend.converge(step, &step_desired, unchanged(step)).await
        };
        let label = match &result {
            Ok(success) if success.state == StepState::Running => "running",
            Ok(_) => "ok",
            Err(_) => "failed",
        };
        metrics::histogram!("opencrane_reconcile_step_duration_seconds", "step" => step.as_str(), "result" => label)
            .record(started.elapsed().as_secs_f64());
        match result {
            Ok(success)
                if success.state == StepState::Running
                    && waiting_since.is_some_and(|since| Utc::now() - since > WAIT_LIMIT) =>
            {
                // A wait that never ends is a failure, with what it was waiting for.
                let failure = StepFailure::new(
                    "StillWaiting",
                    format!("{} (for more than {} minutes)", success.message, WAIT_LIMIT.num_minutes()),
                    "Check what the step waits for (the message says), then Retry the step.",
                );
                return fail(pool, backend, &current, &bound, step, index, &failure, began).await;
            }
            Ok(success) if success.state == StepState::Running => {
                let mut waiting = row(step, StepState::Running, &success.reason, &success.message, generation);
                waiting.started_at = waiting_since.or(Some(began));
                provisioning::put_step(pool, name, &waiting).await?;
                for later in &StepId::ALL[index + 1..] {
                    let message = format!("Waits for the {} step.", step.as_str());
                    provisioning::put_step(
                        pool,
                        name,
                        &row(*later, StepState::Pending, "Waiting", &message, generation),
                    )
                    .await?;
                }
                provisioning::observe(
                    pool,
                    name,
                    &Observed {
                        generation,
                        phase: "provisioning",
                        message: Some(&success.message),
                        bound_namespace: Some(&bound),
                        silo_url: current.silo_url.as_deref(),
                        provisioner: backend.name(),
                        progress: Progress::Waiting { retry_in_seconds: i64::try_from(WAIT.as_secs()).unwrap_or(5) },
                    },
                )
                .await?;
                return Ok(Outcome::Waiting(step));
            }
            Ok(success) => {
                let mut done = row(step, success.state, &success.reason, &success.message, generation);
                done.started_at = Some(began);
                if let Some(stored) = stored.get(step.as_str()).filter(|_| unchanged(step)) {
                    done.started_at = stored.started_at;
                    done.finished_at = stored.finished_at;
                    // A re-check that found nothing to do keeps what was done when it was done:
                    // the row, and the resource's status mirrored from it, stay as they are.
                    if success.message.is_empty() && stored.reason == done.reason {
                        done.message.clone_from(&stored.message);
                    }
                }
                provisioning::put_step(pool, name, &done).await?;
                tracing::debug!(cluster_tenant = name, step = step.as_str(), elapsed = ?started.elapsed(), "step converged");
            }
            Err(failure) => return fail(pool, backend, &current, &bound, step, index, &failure, began).await,
        }
        // The later steps (the release) carry the ids the identity step made.
        if let Some(now) = identity_now
            && now != desired.identity
        {
            identity_changed = true;
            desired.identity = now;
        }
    }
    let (phase, message) = if desired.suspended {
        ("suspended", "Suspended: the silo's workloads are scaled to zero and its sign-ins are blocked.")
    } else {
        ("ready", "The silo is ready.")
    };
    let silo_url = backend.silo_url(&desired);
    provisioning::observe(
        pool,
        name,
        &Observed {
            generation,
            phase,
            message: Some(message),
            bound_namespace: Some(&bound),
            silo_url: silo_url.as_deref(),
            provisioner: backend.name(),
            progress: Progress::Converged,
        },
    )
    .await?;
    Ok(Outcome::Converged)
}

/// Records a failed step: its row with the action, later steps waiting, phase `failed` with the
/// next automatic attempt after the backoff.
#[allow(clippy::too_many_arguments, reason = "the reconcile's context, passed once")]
async fn fail(
    pool: &PgPool,
    backend: &dyn Backend,
    current: &cluster_tenants::ClusterTenantRow,
    bound: &str,
    step: StepId,
    index: usize,
    failure: &StepFailure,
    began: chrono::DateTime<Utc>,
) -> Result<Outcome, Error> {
    let name = current.name.as_str();
    let generation = current.generation;
    tracing::warn!(cluster_tenant = name, step = step.as_str(), reason = %failure.reason, message = %failure.message, "step failed");
    let mut failed = row(step, StepState::Failed, &failure.reason, &failure.message, generation);
    failed.action = Some(failure.action.clone());
    failed.started_at = Some(began);
    provisioning::put_step(pool, name, &failed).await?;
    for later in &StepId::ALL[index + 1..] {
        let waiting = format!("Waits for the {} step.", step.as_str());
        provisioning::put_step(pool, name, &row(*later, StepState::Pending, "Waiting", &waiting, generation)).await?;
    }
    let retry = retry_after(name, current.failed_attempts);
    let message = format!(
        "Step {} failed: {} Next automatic attempt in {} s; {}",
        step.as_str(),
        failure.message,
        retry.as_secs(),
        failure.action
    );
    provisioning::observe(
        pool,
        name,
        &Observed {
            generation,
            phase: "failed",
            message: Some(&message),
            bound_namespace: Some(bound),
            silo_url: current.silo_url.as_deref(),
            provisioner: backend.name(),
            progress: Progress::Failed { retry_in_seconds: i64::try_from(retry.as_secs()).unwrap_or(300) },
        },
    )
    .await?;
    Ok(Outcome::Failed(step))
}

/// The status of a teardown that stopped early (waiting, or failed).
async fn observe_deleting(
    pool: &PgPool,
    backend: &dyn Backend,
    current: &cluster_tenants::ClusterTenantRow,
    message: &str,
    progress: Progress,
) -> Result<(), Error> {
    provisioning::observe(
        pool,
        &current.name,
        &Observed {
            generation: current.generation,
            phase: "deleting",
            message: Some(message),
            bound_namespace: current.bound_namespace.as_deref(),
            silo_url: None,
            provisioner: backend.name(),
            progress,
        },
    )
    .await?;
    Ok(())
}

async fn tear_down(
    pool: &PgPool,
    backend: &dyn Backend,
    identity: Option<&IdentityPlane>,
    current: &cluster_tenants::ClusterTenantRow,
    stored: &std::collections::HashMap<String, StepRow>,
) -> Result<Outcome, Error> {
    let name = current.name.as_str();
    let delete_database = current.termination_policy == "Delete";
    let generation = current.generation;
    let mut retained = Vec::new();
    // Whether the identity step kept the organisation (the tombstone remembers it then).
    let mut kept_org = false;
    for step in StepId::TEARDOWN {
        let previous = stored.get(step.as_str()).map(|r| r.state.as_str());
        if matches!(previous, Some("removed")) {
            continue;
        }
        if let Some(kept) = stored.get(step.as_str()).filter(|r| r.state == "retained") {
            retained.push(kept.message.clone());
            kept_org |= step == StepId::Identity;
            continue;
        }
        provisioning::put_step(pool, name, &row(step, StepState::Removing, "Removing", "Tearing down.", generation))
            .await?;
        let result = match (step, identity) {
            (StepId::Identity, Some(plane)) => plane.teardown(&ZitadelIds::of(current), delete_database).await,
            (StepId::Identity, None) => Ok(identity::teardown_unconfigured(&ZitadelIds::of(current))),
            _ => backend.teardown(step, name, delete_database).await,
        };
        match result {
            Ok(Teardown::Removed(message)) => {
                provisioning::put_step(pool, name, &row(step, StepState::Removed, "Removed", &message, generation))
                    .await?;
            }
            Ok(Teardown::Waiting(message)) => {
                provisioning::put_step(pool, name, &row(step, StepState::Removing, "Removing", &message, generation))
                    .await?;
                let wait = Progress::Waiting { retry_in_seconds: i64::try_from(WAIT.as_secs()).unwrap_or(5) };
                observe_deleting(pool, backend, current, &message, wait).await?;
                return Ok(Outcome::Waiting(step));
            }
            Ok(Teardown::Retained(message)) => {
                provisioning::put_step(pool, name, &row(step, StepState::Retained, "Retained", &message, generation))
                    .await?;
                retained.push(message);
                kept_org |= step == StepId::Identity;
            }
            Err(failure) => {
                let mut failed = row(step, StepState::Failed, &failure.reason, &failure.message, generation);
                failed.action = Some(failure.action.clone());
                provisioning::put_step(pool, name, &failed).await?;
                let retry = retry_after(name, current.failed_attempts);
                let message = format!(
                    "Teardown of {} failed: {} Next automatic attempt in {} s; {}",
                    step.as_str(),
                    failure.message,
                    retry.as_secs(),
                    failure.action
                );
                let again = Progress::Failed { retry_in_seconds: i64::try_from(retry.as_secs()).unwrap_or(300) };
                observe_deleting(pool, backend, current, &message, again).await?;
                return Ok(Outcome::Failed(step));
            }
        }
    }
    let mut tx = pool.begin().await.map_err(opencrane_db::Error::from)?;
    let retained_json = serde_json::json!(retained);
    // The audit log outlives the row: it says what was kept.
    opencrane_common_db::audit::append(&mut *tx, &opencrane_common_db::audit::NewAuditEntry {
        actor: "system:provisioner",
        actor_role: "system",
        action: "cluster_tenant.deleted",
        target: name,
        outcome: "success",
        request_id: None,
        metadata: &serde_json::json!({ "terminationPolicy": current.termination_policy, "retained": retained_json }),
    })
    .await?;
    provisioning::set_retained(&mut *tx, name, &retained_json).await?;
    if !retained.is_empty() {
        // The kept data stays under the name: hold it, so no new customer inherits it.
        let org = current.zitadel_org_id.as_deref().filter(|_| kept_org);
        opencrane_fleet_db::tombstones::record(&mut *tx, name, &retained_json, org).await?;
    }
    provisioning::finish_deletion(&mut *tx, name).await?;
    tx.commit().await.map_err(opencrane_db::Error::from)?;
    tracing::info!(cluster_tenant = name, retained = ?retained, "silo torn down and ClusterTenant removed");
    Ok(Outcome::Deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_two_seconds_to_five_minutes() {
        let secs: Vec<u64> = (0..10).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(secs, [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(backoff(-3).as_secs(), 2);
    }

    #[test]
    fn retries_of_customers_that_failed_together_are_spread_over_the_last_quarter() {
        let at_cap: Vec<u64> = (0..200).map(|i| retry_after(&format!("c{i}"), 9).as_secs()).collect();
        assert!(at_cap.iter().all(|s| (225..=300).contains(s)), "{at_cap:?}");
        let distinct: std::collections::HashSet<u64> = at_cap.iter().copied().collect();
        assert!(distinct.len() > 40, "spread over many seconds, not a few: {}", distinct.len());
        assert_eq!(retry_after("acme", 3), retry_after("acme", 3), "fixed per customer and attempt");
        assert_eq!(retry_after("acme", 0).as_secs(), 2, "the first retry stays quick");
    }
}
