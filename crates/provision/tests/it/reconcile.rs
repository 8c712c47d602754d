//! The reconciler against a real PostgreSQL (the fleet schema) and an in-memory fake backend
//! that records every object it creates and can fail any step with any fault. The fake stands in
//! for a cluster: it answers like an idempotent apply (create once, then no-op) and an idempotent
//! delete; the faults are the three a Kubernetes API server produces (500, 409 conflict, timeout).

use crate::support;
use std::{
    collections::BTreeMap,
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use opencrane_fleet_db::{cluster_tenants, provisioning};
use opencrane_provision::{
    Backend, StepFailure, StepId, StepSuccess, Teardown,
    reconcile::{Outcome, reconcile},
    spec::Desired,
};
use serde_json::json;
use sqlx::PgPool;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    ServerError,
    Conflict,
    Timeout,
}

#[derive(Default)]
pub(crate) struct FakeCluster {
    /// Step → how many times its object was created.
    created: Mutex<BTreeMap<(String, StepId), u32>>,
    /// Objects that exist now.
    existing: Mutex<BTreeMap<(String, StepId), ()>>,
    fault: Mutex<Option<(StepId, Fault)>>,
    /// A step that keeps waiting (like a database that never starts).
    waiting: Mutex<Option<StepId>>,
    calls: AtomicUsize,
    /// The silo credentials the release step was handed to install, in order.
    installed: Mutex<Vec<String>>,
    /// The credential each silo holds.
    held: Mutex<BTreeMap<String, String>>,
    /// The sign-in ids each release was handed, in order.
    pub(crate) released: Mutex<Vec<(String, Option<opencrane_provision::spec::SiloIdentity>)>>,
}

impl FakeCluster {
    fn fail(&self, step: StepId, fault: Fault) {
        *self.fault.lock().unwrap() = Some((step, fault));
    }

    fn heal(&self) {
        *self.fault.lock().unwrap() = None;
    }

    fn check_fault(&self, step: StepId) -> Result<(), StepFailure> {
        match *self.fault.lock().unwrap() {
            Some((s, fault)) if s == step => Err(match fault {
                Fault::ServerError => StepFailure::new("ApiError", "the API server answered 500", "Retry."),
                Fault::Conflict => StepFailure::new("Conflict", "409: the object was modified", "Retry."),
                Fault::Timeout => {
                    StepFailure::new("Timeout", "no answer within 10 s", "Check the cluster, then Retry.")
                }
            }),
            _ => Ok(()),
        }
    }

    fn objects(&self, name: &str) -> Vec<StepId> {
        self.existing.lock().unwrap().keys().filter(|(n, _)| n == name).map(|(_, s)| *s).collect()
    }
}

#[async_trait::async_trait]
impl Backend for FakeCluster {
    fn name(&self) -> &'static str {
        "fake"
    }

    async fn converge(&self, step: StepId, desired: &Desired, _done_before: bool) -> Result<StepSuccess, StepFailure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.check_fault(step)?;
        if *self.waiting.lock().unwrap() == Some(step) {
            return Ok(StepSuccess::waiting("Starting", "the database is starting"));
        }
        if let Some(credential) = &desired.silo_credential {
            assert_eq!(step, StepId::Release, "only the release step installs a credential");
            self.installed.lock().unwrap().push(credential.expose().to_owned());
            self.held.lock().unwrap().insert(desired.name.clone(), credential.expose().to_owned());
        }
        if step == StepId::Release {
            self.released.lock().unwrap().push((desired.name.clone(), desired.identity.clone()));
        }
        let key = (desired.name.clone(), step);
        if self.existing.lock().unwrap().insert(key.clone(), ()).is_none() {
            *self.created.lock().unwrap().entry(key).or_default() += 1;
        }
        Ok(StepSuccess::done("Applied", format!("{} applied", step.as_str())))
    }

    async fn teardown(&self, step: StepId, name: &str, delete_database: bool) -> Result<Teardown, StepFailure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.check_fault(step)?;
        let key = (name.to_owned(), step);
        if step == StepId::Database && !delete_database && self.existing.lock().unwrap().contains_key(&key) {
            return Ok(Teardown::Retained("database kept".into()));
        }
        self.existing.lock().unwrap().remove(&key);
        Ok(Teardown::Removed(format!("{} removed", step.as_str())))
    }

    async fn holds_credential(&self, name: &str, fingerprint: &str) -> Result<bool, StepFailure> {
        let held = self.held.lock().unwrap();
        Ok(held.get(name).is_some_and(|c| opencrane_provision::credential::fingerprint(c) == fingerprint))
    }

    fn silo_url(&self, desired: &Desired) -> Option<String> {
        Some(format!("https://{}.example.com", desired.name))
    }

    fn bound_to(&self, desired: &Desired) -> String {
        desired.namespace()
    }
}

/// The steps a backend runs (the identity step is the reconciler's own, against Zitadel).
fn backend_steps() -> Vec<StepId> {
    StepId::ALL.into_iter().filter(|s| *s != StepId::Identity).collect()
}

async fn seed(pool: &PgPool, name: &str, policy: &str) {
    let quota = json!({"cpu": "4"});
    support::seed(pool, name, &support::desired("Acme", &quota, policy)).await;
}

/// The transaction ids that last wrote the ClusterTenant's row and its step rows: unchanged ids
/// mean no write happened.
pub(crate) async fn write_marks(pool: &PgPool, name: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT xmin::text FROM cluster_tenants WHERE name = $1
         UNION ALL SELECT xmin::text || step FROM provisioning_steps WHERE cluster_tenant = $1",
    )
    .bind(name)
    .fetch_all(pool)
    .await
    .unwrap()
}

async fn step_states(pool: &PgPool, name: &str) -> BTreeMap<String, (String, String, Option<String>)> {
    provisioning::steps(pool, name)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.step, (r.state, r.reason, r.action)))
        .collect()
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn the_release_step_installs_a_silo_credential_only_when_none_is_in_force(pool: PgPool) {
    use opencrane_provision::credential::fingerprint;
    let cluster = FakeCluster::default();
    seed(&pool, "acme", "Retain").await;
    seed(&pool, "globex", "Retain").await;
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Converged);
    assert_eq!(reconcile(&pool, &cluster, "globex").await.unwrap(), Outcome::Converged);
    let installed = cluster.installed.lock().unwrap().clone();
    assert_eq!(installed.len(), 2, "one credential per customer");
    assert_ne!(installed[0], installed[1], "no two silos share a credential");
    let issued = |name: &'static str| {
        let pool = pool.clone();
        async move { opencrane_fleet_db::silo_credentials::issued(&pool, name).await.unwrap().map(|c| c.sha256) }
    };
    assert_eq!(issued("acme").await, Some(fingerprint(&installed[0])), "only the SHA-256 is stored");

    // In force and held by the silo: nothing new on the next pass.
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Converged);
    assert_eq!(cluster.installed.lock().unwrap().len(), 2);

    // Rotated (revoked): the next pass installs a new one, and only its hash is in force.
    assert!(opencrane_fleet_db::silo_credentials::revoke(&pool, "acme").await.unwrap());
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Converged);
    let after = cluster.installed.lock().unwrap().clone();
    assert_eq!(after.len(), 3);
    assert_ne!(after[2], installed[0]);
    assert_eq!(issued("acme").await, Some(fingerprint(&after[2])));

    // The hash is recorded before the install (so the silo's first call is accepted); an install
    // that fails leaves a hash the silo does not hold, and the next pass mints again.
    opencrane_fleet_db::silo_credentials::revoke(&pool, "acme").await.unwrap();
    cluster.fail(StepId::Release, Fault::ServerError);
    assert!(matches!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Failed(_)));
    let orphan = issued("acme").await.expect("recorded before the install");
    assert_ne!(Some(orphan.clone()), Some(fingerprint(&after[2])));
    cluster.heal();
    provisioning::request_retry(&pool, "acme", None).await.unwrap();
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Converged);
    let installed = cluster.installed.lock().unwrap().clone();
    assert_eq!(installed.len(), 4, "minted again after the failed install");
    assert_eq!(issued("acme").await, Some(fingerprint(&installed[3])));
    assert_ne!(issued("acme").await, Some(orphan));
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_fresh_create_reaches_ready_and_a_second_reconcile_writes_nothing(pool: PgPool) {
    let cluster = FakeCluster::default();
    seed(&pool, "acme", "Retain").await;
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Converged);
    let row = cluster_tenants::get(&pool, "acme").await.unwrap();
    assert_eq!(
        (row.phase.as_str(), row.observed_generation, row.silo_url.as_deref()),
        ("ready", Some(1), Some("https://acme.example.com"))
    );
    assert_eq!(row.bound_namespace.as_deref(), Some("opencrane-acme"));
    let states = step_states(&pool, "acme").await;
    assert_eq!(states.len(), StepId::ALL.len());
    // Every backend step done; the identity step skipped (no Zitadel here).
    assert!(
        states.iter().all(|(step, (state, _, _))| state == if step == "identity" { "skipped" } else { "done" }),
        "{states:?}"
    );
    assert!(provisioning::due(&pool).await.unwrap().is_empty(), "converged: not due");

    let before = write_marks(&pool, "acme").await;
    let calls = cluster.calls.load(Ordering::SeqCst);
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Converged);
    assert_eq!(write_marks(&pool, "acme").await, before, "a converged reconcile wrote to the fleet database");
    assert_eq!(cluster.calls.load(Ordering::SeqCst) - calls, backend_steps().len(), "one idempotent call per step");
    assert!(cluster.created.lock().unwrap().values().all(|n| *n == 1), "no object was created twice");
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_fault_at_any_step_is_reported_there_and_converges_once_it_clears(pool: PgPool) {
    for (i, step) in StepId::ALL.into_iter().enumerate().filter(|(_, s)| *s != StepId::Identity) {
        for fault in [Fault::ServerError, Fault::Conflict, Fault::Timeout] {
            let cluster = FakeCluster::default();
            let name = format!("ct-{i}-{}", format!("{fault:?}").to_lowercase());
            seed(&pool, &name, "Retain").await;
            cluster.fail(step, fault);
            assert_eq!(reconcile(&pool, &cluster, &name).await.unwrap(), Outcome::Failed(step));
            let states = step_states(&pool, &name).await;
            let (state, reason, action) = &states[step.as_str()];
            assert_eq!(state, "failed", "{name}");
            assert!(!reason.is_empty() && action.as_deref().is_some_and(|a| !a.is_empty()), "{name}: {states:?}");
            for earlier in StepId::ALL[..i].iter().filter(|s| **s != StepId::Identity) {
                assert_eq!(states[earlier.as_str()].0, "done", "{name}");
            }
            for later in &StepId::ALL[i + 1..] {
                assert_eq!(states[later.as_str()].0, "pending", "{name}: later steps wait");
            }
            let row = cluster_tenants::get(&pool, &name).await.unwrap();
            assert_eq!(row.phase, "failed");
            assert_eq!(row.failed_attempts, 1, "{name}: one failed attempt, counted once");
            assert!(row.message.as_deref().unwrap_or_default().contains(step.as_str()), "{:?}", row.message);
            assert!(
                !provisioning::due(&pool).await.unwrap().iter().any(|d| d.name == name),
                "{name}: backing off, not due at once"
            );
            // Still failing: a second attempt is counted and backs off longer.
            provisioning::request_retry(&pool, &name, None).await.unwrap();
            assert_eq!(reconcile(&pool, &cluster, &name).await.unwrap(), Outcome::Failed(step));
            cluster.heal();
            provisioning::request_retry(&pool, &name, Some(step.as_str())).await.unwrap();
            assert!(provisioning::due(&pool).await.unwrap().iter().any(|d| d.name == name), "{name}: retry is due now");
            assert_eq!(reconcile(&pool, &cluster, &name).await.unwrap(), Outcome::Converged, "{name}");
            let row = cluster_tenants::get(&pool, &name).await.unwrap();
            assert_eq!((row.phase.as_str(), row.failed_attempts), ("ready", 0));
            assert!(cluster.created.lock().unwrap().values().all(|n| *n == 1), "{name}: duplicate side effect");
            assert_eq!(cluster.objects(&name).len(), backend_steps().len());
        }
    }
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn deleting_at_any_point_leaves_nothing_but_what_retain_keeps(pool: PgPool) {
    for policy in ["Retain", "Delete"] {
        for (i, step) in StepId::ALL.into_iter().enumerate() {
            let cluster = FakeCluster::default();
            let name = format!("del-{}-{i}", policy.to_lowercase());
            seed(&pool, &name, policy).await;
            // Provisioning stopped at `step` (the steps before it exist), then deletion.
            cluster.fail(step, Fault::ServerError);
            reconcile(&pool, &cluster, &name).await.unwrap();
            cluster.heal();
            provisioning::request_deletion(&pool, &name).await.unwrap();
            assert_eq!(reconcile(&pool, &cluster, &name).await.unwrap(), Outcome::Deleted, "{name}");
            let left = cluster.objects(&name);
            let database_existed = i > StepId::ALL.iter().position(|s| *s == StepId::Database).unwrap();
            let expected: Vec<StepId> =
                if policy == "Retain" && database_existed { vec![StepId::Database] } else { vec![] };
            assert_eq!(left, expected, "{name}");
            assert!(matches!(cluster_tenants::get(&pool, &name).await, Err(opencrane_db::Error::NotFound)));
            let audit: serde_json::Value = sqlx::query_scalar(
                "SELECT metadata FROM audit_log WHERE target = $1 AND action = 'cluster_tenant.deleted'",
            )
            .bind(&name)
            .fetch_one(&pool)
            .await
            .unwrap();
            assert_eq!(audit["retained"].as_array().unwrap().len(), expected.len(), "{name}: {audit}");
            let held = opencrane_fleet_db::tombstones::get(&pool, &name).await.unwrap();
            assert_eq!(held.is_some(), !expected.is_empty(), "{name}: the name is held exactly when data was kept");
        }
    }
}

/// Deletion with Retain leaves a tombstone naming the former owners and what was kept, so a new
/// customer of the same name cannot inherit the silo's data (the service refuses the name).
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_retained_silo_holds_its_name_with_its_former_owners(pool: PgPool) {
    let cluster = FakeCluster::default();
    seed(&pool, "acme", "Retain").await;
    sqlx::query(
        "INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'otto', 'owner'), ('acme', 'mia', 'member')",
    )
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Converged);
    provisioning::request_deletion(&pool, "acme").await.unwrap();
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Deleted);
    let held = opencrane_fleet_db::tombstones::get(&pool, "acme").await.unwrap().expect("a tombstone");
    assert_eq!(held.former_owners, ["otto"]);
    assert_eq!(held.retained.as_array().map(Vec::len), Some(1), "{}", held.retained);
    assert!(opencrane_fleet_db::tombstones::remove(&pool, "acme").await.unwrap());
    assert!(opencrane_fleet_db::tombstones::get(&pool, "acme").await.unwrap().is_none());
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_failed_teardown_keeps_the_row_and_resumes(pool: PgPool) {
    let cluster = FakeCluster::default();
    seed(&pool, "acme", "Delete").await;
    reconcile(&pool, &cluster, "acme").await.unwrap();
    provisioning::request_deletion(&pool, "acme").await.unwrap();
    cluster.fail(StepId::Database, Fault::Timeout);
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Failed(StepId::Database));
    let row = cluster_tenants::get(&pool, "acme").await.unwrap();
    assert_eq!(row.phase, "deleting");
    assert!(!cluster.objects("acme").contains(&StepId::Release), "the release went first");
    cluster.heal();
    provisioning::request_retry(&pool, "acme", None).await.unwrap();
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Deleted);
    assert!(cluster.objects("acme").is_empty());
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn an_invalid_desired_state_fails_naming_the_field_without_touching_the_cluster(pool: PgPool) {
    let cluster = FakeCluster::default();
    seed(&pool, "acme", "Retain").await;
    sqlx::query("UPDATE cluster_tenants SET quota = '{\"cpu\": \"lots\"}' WHERE name = 'acme'")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Invalid);
    let row = cluster_tenants::get(&pool, "acme").await.unwrap();
    assert_eq!(row.phase, "failed");
    assert!(row.message.unwrap_or_default().contains("spec.resources.quota.cpu"));
    assert_eq!(cluster.calls.load(Ordering::SeqCst), 0);
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn suspension_and_resumption_follow_the_generation(pool: PgPool) {
    let cluster = FakeCluster::default();
    seed(&pool, "acme", "Retain").await;
    reconcile(&pool, &cluster, "acme").await.unwrap();
    sqlx::query("UPDATE cluster_tenants SET suspended = true, generation = generation + 1 WHERE name = 'acme'")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(provisioning::due(&pool).await.unwrap().len(), 1, "a new generation is due");
    reconcile(&pool, &cluster, "acme").await.unwrap();
    let row = cluster_tenants::get(&pool, "acme").await.unwrap();
    assert_eq!((row.phase.as_str(), row.observed_generation), ("suspended", Some(2)));
    sqlx::query("UPDATE cluster_tenants SET suspended = false, generation = generation + 1 WHERE name = 'acme'")
        .execute(&pool)
        .await
        .unwrap();
    reconcile(&pool, &cluster, "acme").await.unwrap();
    assert_eq!(cluster_tenants::get(&pool, "acme").await.unwrap().phase, "ready");
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_wait_is_not_a_failure_until_it_lasts_too_long(pool: PgPool) {
    let cluster = FakeCluster::default();
    *cluster.waiting.lock().unwrap() = Some(StepId::Database);
    seed(&pool, "acme", "Retain").await;
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Waiting(StepId::Database));
    let row = cluster_tenants::get(&pool, "acme").await.unwrap();
    assert_eq!((row.phase.as_str(), row.failed_attempts), ("provisioning", 0));
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Waiting(StepId::Database), "still waiting");
    sqlx::query("UPDATE provisioning_steps SET started_at = now() - interval '11 minutes' WHERE step = 'database'")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Failed(StepId::Database));
    let steps = step_states(&pool, "acme").await;
    assert_eq!(steps["database"].1, "StillWaiting");
    *cluster.waiting.lock().unwrap() = None;
    provisioning::request_retry(&pool, "acme", None).await.unwrap();
    assert_eq!(reconcile(&pool, &cluster, "acme").await.unwrap(), Outcome::Converged);
}

/// A backend whose every customer fails its first step (like a fleet started without its base
/// domain), and that records how many reconciles ran at the same time and which customers reached
/// the step and got past it. With a gate, each waits at the step until the gate opens.
#[derive(Default)]
struct Storm {
    running: AtomicUsize,
    most: AtomicUsize,
    entered: Mutex<Vec<String>>,
    passed: Mutex<Vec<String>>,
    gate: Option<tokio::sync::watch::Receiver<bool>>,
}

impl Storm {
    fn gated(gate: tokio::sync::watch::Receiver<bool>) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self { gate: Some(gate), ..Self::default() })
    }

    /// The customers that reached the step, once one has.
    async fn entered(&self, deadline: std::time::Instant) -> Vec<String> {
        loop {
            let entered = self.entered.lock().unwrap().clone();
            if !entered.is_empty() {
                return entered;
            }
            assert!(std::time::Instant::now() < deadline, "no reconcile reached the step");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

#[async_trait::async_trait]
impl Backend for Storm {
    fn name(&self) -> &'static str {
        "storm"
    }

    async fn converge(&self, _step: StepId, desired: &Desired, _done_before: bool) -> Result<StepSuccess, StepFailure> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        self.entered.lock().unwrap().push(desired.name.clone());
        match &self.gate {
            Some(gate) => {
                let _ = gate.clone().wait_for(|open| *open).await;
            }
            None => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
        self.passed.lock().unwrap().push(desired.name.clone());
        self.running.fetch_sub(1, Ordering::SeqCst);
        Err(StepFailure::new("NotConfigured", "PLATFORM_BASE_DOMAIN is not set", "Set it."))
    }

    async fn teardown(&self, _step: StepId, _name: &str, _delete: bool) -> Result<Teardown, StepFailure> {
        Ok(Teardown::Removed("gone".into()))
    }

    fn silo_url(&self, _desired: &Desired) -> Option<String> {
        None
    }

    fn bound_to(&self, desired: &Desired) -> String {
        desired.namespace()
    }
}

/// Issue 20's storm: a fleet that starts with many failing customers reconciles each of them,
/// never more than `worker::CONCURRENCY` at once (it spawned one task per customer at start), on
/// a pool of its own (the request path's pool is not drawn on), and spreads their retries.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_fleet_starting_with_many_failing_customers_reconciles_them_a_few_at_a_time(pool: PgPool) {
    use opencrane_provision::worker;
    const CUSTOMERS: usize = 40;
    for i in 0..CUSTOMERS {
        seed(&pool, &format!("storm-{i:02}"), "Retain").await;
    }
    let storm = std::sync::Arc::new(Storm::default());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let backend: std::sync::Arc<dyn Backend> = storm.clone();
    let before = pool.size();
    let stopped = async move {
        let _ = stopped.await;
    };
    let run = tokio::spawn(worker::run(pool.clone(), backend, None, stopped, worker::DRAIN));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let attempted = || storm.passed.lock().unwrap().iter().collect::<std::collections::HashSet<_>>().len();
    while attempted() < CUSTOMERS {
        assert!(std::time::Instant::now() < deadline, "only {} attempted", attempted());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The worker holds its own connections, not the ones the pages are served from.
    let drawn = pool.size() - before;
    let own: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
        .bind(worker::APPLICATION_NAME)
        .fetch_one(&pool)
        .await
        .unwrap();
    // The last attempts' failures are recorded a moment after the backend saw them: wait for every
    // customer to have failed and to wait out its backoff — or, on a slow machine where the first
    // ones' 3-4 s backoff has passed by then, to have been retried (only due rows are) and failed again.
    let failed = loop {
        let failed: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM cluster_tenants
             WHERE phase = 'failed' AND (next_attempt_at > now() OR failed_attempts > 1)",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        if failed == i64::try_from(CUSTOMERS).unwrap() || std::time::Instant::now() >= deadline {
            break failed;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    stop.send(()).unwrap();
    run.await.unwrap();
    let most = storm.most.load(Ordering::SeqCst);
    assert!((1..=worker::CONCURRENCY).contains(&most), "{most} reconciles at once");
    assert_eq!(drawn, 0, "the worker drew connections from the caller's pool");
    assert!((1..=i64::from(worker::POOL_SIZE)).contains(&own), "{own} connections of its own");
    assert_eq!(failed, i64::try_from(CUSTOMERS).unwrap(), "each failed and waits out its backoff");
}

/// A fleet that stops (a rolling update) lets the reconciles under way finish — one cut off
/// between two applies left its writes to the next fleet, which the restart's "zero writes" then
/// counted — and starts no new one; a reconcile that outlasts the drain is cut off, so stopping
/// never hangs.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_stopping_fleet_lets_the_reconciles_under_way_finish(pool: PgPool) {
    use opencrane_provision::worker;
    use std::time::{Duration, Instant};
    // The worker on `backend`, stopped when the returned sender sends.
    let start = |backend: &std::sync::Arc<Storm>, drain: Duration| {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let stopped = async move {
            let _ = stopped.await;
        };
        let backend: std::sync::Arc<dyn Backend> = backend.clone();
        (stop, tokio::spawn(worker::run(pool.clone(), backend, None, stopped, drain)))
    };
    seed(&pool, "acme", "Retain").await;
    let (open, gate) = tokio::sync::watch::channel(false);
    let backend = Storm::gated(gate);
    let (stop, mut run) = start(&backend, Duration::from_secs(60));
    assert_eq!(backend.entered(Instant::now() + Duration::from_secs(30)).await, ["acme"]);
    stop.send(()).unwrap();
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut run).await.is_err(),
        "the stopping worker returned with a reconcile under way"
    );
    // Due now, after the stop: not started.
    seed(&pool, "late", "Retain").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    open.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("the worker returned once it had drained").unwrap();
    assert_eq!(*backend.passed.lock().unwrap(), ["acme"], "the reconcile under way finished");
    assert_eq!(*backend.entered.lock().unwrap(), ["acme"], "no reconcile started once stopping");
    let row = cluster_tenants::get(&pool, "acme").await.unwrap();
    assert_eq!((row.phase.as_str(), row.failed_attempts), ("failed", 1), "its outcome was recorded");

    // A reconcile that outlasts the drain is cut off.
    let (_shut, gate) = tokio::sync::watch::channel(false);
    let backend = Storm::gated(gate);
    let (stop, run) = start(&backend, Duration::from_millis(200));
    backend.entered(Instant::now() + Duration::from_secs(30)).await;
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), run).await.expect("cut off after its drain").unwrap();
    assert!(backend.passed.lock().unwrap().is_empty(), "the gate never opened");
}
