//! Drives the reconciler: on start every live ClusterTenant is reconciled once (a backend may
//! have to restore runtime state, e.g. the local backend's silo servers), then every
//! ClusterTenant the fleet database reports as due is reconciled when a notification arrives or,
//! at the latest, on the next poll. One ClusterTenant is never reconciled twice at the same time;
//! different ones run concurrently (at most [`CONCURRENCY`]).
//!
//! A fleet that starts with thousands of customers, or thousands failing, keeps serving pages:
//! the start-up resync is a queue drained [`CONCURRENCY`] at a time (not one task per customer
//! at once), the due list is read only as far as there are free slots, retries are spread by a
//! jittered backoff ([`crate::reconcile::retry_after`]), and the reconciler has a small pool of
//! its own ([`POOL_SIZE`]) so it never takes the connections the request path waits for.
//!
//! Stopping (a rolling update, a scale-down) starts no new reconcile and lets those under way
//! finish, for at most the `drain` the caller gives ([`DRAIN`] in the server): a pass cut off
//! between two applies is redone by the next fleet, which then writes what this one did not.

use std::{
    collections::{HashSet, VecDeque},
    sync::Arc,
    time::Duration,
};

use opencrane_db::PgPool;
use opencrane_fleet_db::provisioning;
use sqlx::postgres::{PgListener, PgPoolOptions};
use tokio::{sync::Mutex, task::JoinSet};

use crate::{
    identity::IdentityPlane,
    reconcile::{self, Backend},
};

/// How many ClusterTenants are reconciled at once.
pub const CONCURRENCY: usize = 4;

/// The connections of the reconciler's own pool: two per reconcile under way (a step may hold a
/// transaction while it reads), and one for the due list.
pub const POOL_SIZE: u32 = 2 * CONCURRENCY as u32 + 1;

/// The reconciler's connections in `pg_stat_activity`.
pub const APPLICATION_NAME: &str = "opencrane-reconciler";

/// How often the due list is read without a notification (backoff deadlines are checked then).
pub const POLL: Duration = Duration::from_secs(1);

/// How long the reconciles under way may take to finish once the fleet stops; the HTTP server's
/// drain runs beside it, both within Kubernetes' default grace period of 30 s.
pub const DRAIN: Duration = Duration::from_secs(15);

/// Runs until `shutdown` resolves, then lets the reconciles under way finish for at most `drain`
/// and cuts off the rest; `identity` is the fleet's Zitadel, if configured. `pool` names the
/// fleet database; the worker opens its own pool of [`POOL_SIZE`] on it.
pub async fn run(
    pool: PgPool,
    backend: Arc<dyn Backend>,
    identity: Option<Arc<IdentityPlane>>,
    shutdown: impl Future<Output = ()> + Send,
    drain: Duration,
) {
    let pool = PgPoolOptions::new()
        .max_connections(POOL_SIZE)
        .connect_lazy_with((*pool.connect_options()).clone().application_name(APPLICATION_NAME));
    let in_flight: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut tasks = JoinSet::new();
    let mut listener = connect_listener(&pool).await;
    let mut resync: VecDeque<String> = match provisioning::live_names(&pool).await {
        Ok(names) => names.into(),
        Err(err) => {
            tracing::warn!(error = %err, "cannot list ClusterTenants for the start-up resync");
            VecDeque::new()
        }
    };
    tokio::pin!(shutdown);
    loop {
        while tasks.try_join_next().is_some() {}
        if tasks.len() < CONCURRENCY {
            // Enough rows to fill the free slots even if every reconcile under way is among them.
            let limit = i64::try_from(2 * CONCURRENCY).unwrap_or(8);
            let mut due: VecDeque<String> = match provisioning::due_first(&pool, limit).await {
                Ok(due) => due.into_iter().map(|d| d.name).collect(),
                Err(err) => {
                    tracing::warn!(error = %err, "cannot read the ClusterTenants due for provisioning");
                    VecDeque::new()
                }
            };
            // The due list and the start-up resync take turns, so neither starves the other
            // (a customer created during a long resync starts at once).
            let mut from_due = true;
            while tasks.len() < CONCURRENCY && !(due.is_empty() && resync.is_empty()) {
                let next = if from_due {
                    due.pop_front().or_else(|| resync.pop_front())
                } else {
                    resync.pop_front().or_else(|| due.pop_front())
                };
                from_due = !from_due;
                if let Some(name) = next {
                    spawn(&mut tasks, &pool, &backend, identity.as_ref(), &in_flight, name).await;
                }
            }
        }
        let woken = async {
            let Some(l) = listener.as_mut() else {
                tokio::time::sleep(POLL).await;
                return true;
            };
            match tokio::time::timeout(POLL, l.recv()).await {
                Ok(Err(err)) => {
                    tracing::debug!(error = %err, "notification listener broke; reconnecting");
                    false
                }
                Ok(Ok(_)) | Err(_) => true,
            }
        };
        tokio::select! {
            () = &mut shutdown => break,
            // A slot freed: the next of the resync queue, or of the due list, starts at once.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            healthy = woken => {
                if !healthy {
                    listener = connect_listener(&pool).await;
                }
            }
        }
    }
    if !tasks.is_empty() {
        tracing::info!(under_way = tasks.len(), "stopping: the reconciles under way finish first");
    }
    let drained = tokio::time::timeout(drain, async { while tasks.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!(
            cut_off = tasks.len(),
            drain_s = drain.as_secs_f32(),
            "stopping: reconciles still under way are cut off; the next fleet redoes them"
        );
        tasks.shutdown().await;
    }
    pool.close().await;
}

async fn connect_listener(pool: &PgPool) -> Option<PgListener> {
    match PgListener::connect_with(pool).await {
        Ok(mut listener) => match listener.listen(provisioning::CHANNEL).await {
            Ok(()) => Some(listener),
            Err(err) => {
                tracing::warn!(error = %err, "cannot LISTEN for provisioning changes; polling only");
                None
            }
        },
        Err(err) => {
            tracing::warn!(error = %err, "cannot LISTEN for provisioning changes; polling only");
            None
        }
    }
}

async fn spawn(
    tasks: &mut JoinSet<()>,
    pool: &PgPool,
    backend: &Arc<dyn Backend>,
    identity: Option<&Arc<IdentityPlane>>,
    in_flight: &Arc<Mutex<HashSet<String>>>,
    name: String,
) {
    if !in_flight.lock().await.insert(name.clone()) {
        return;
    }
    let (pool, backend, identity, in_flight) = (pool.clone(), backend.clone(), identity.cloned(), in_flight.clone());
    let span = tracing::info_span!("reconcile", cluster_tenant = %name);
    tasks.spawn(tracing::Instrument::instrument(async move {
        let started = std::time::Instant::now();
        match reconcile::reconcile_with(&pool, backend.as_ref(), identity.as_deref(), &name).await {
            Ok(outcome) => {
                tracing::info!(cluster_tenant = %name, ?outcome, elapsed_ms = started.elapsed().as_millis(), "reconciled")
            }
            Err(err) => tracing::warn!(cluster_tenant = %name, error = %err, "reconcile could not run"),
        }
        if let Err(err) = backend.publish(&pool, &name).await {
            tracing::warn!(cluster_tenant = %name, error = %err, "publishing the status failed; retried on the next reconcile");
        }
        in_flight.lock().await.remove(&name);
    }, span));
}
