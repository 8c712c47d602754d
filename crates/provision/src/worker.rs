//! Drives the reconciler: on start every live ClusterTenant is reconciled once (a backend may
//! have to restore runtime state, e.g. the local backend's silo servers), then every
//! ClusterTenant the fleet database reports as due is reconciled when a notification arrives or,
//! at the latest, on the next poll. One ClusterTenant is never reconciled twice at the same time;
//! different ones run concurrently (at most [`CONCURRENCY`]).

use std::{collections::HashSet, sync::Arc, time::Duration};

use opencrane_db::PgPool;
use opencrane_fleet_db::provisioning;
use sqlx::postgres::PgListener;
use tokio::{sync::Mutex, task::JoinSet};

use crate::{
    identity::IdentityPlane,
    reconcile::{self, Backend},
};

/// How many ClusterTenants are reconciled at once.
pub const CONCURRENCY: usize = 4;

/// How often the due list is read without a notification (backoff deadlines are checked then).
pub const POLL: Duration = Duration::from_secs(1);

/// Runs until `shutdown` resolves; `identity` is the fleet's Zitadel, if configured.
pub async fn run(
    pool: PgPool,
    backend: Arc<dyn Backend>,
    identity: Option<Arc<IdentityPlane>>,
    shutdown: impl Future<Output = ()> + Send,
) {
    let in_flight: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut tasks = JoinSet::new();
    let mut listener = connect_listener(&pool).await;
    match provisioning::live_names(&pool).await {
        Ok(names) => {
            for name in names {
                spawn(&mut tasks, &pool, &backend, identity.as_ref(), &in_flight, name).await;
            }
        }
        Err(err) => tracing::warn!(error = %err, "cannot list ClusterTenants for the start-up resync"),
    }
    tokio::pin!(shutdown);
    loop {
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
            healthy = woken => {
                if !healthy {
                    listener = connect_listener(&pool).await;
                }
            }
        }
        while tasks.try_join_next().is_some() {}
        match provisioning::due(&pool).await {
            Ok(due) => {
                for item in due {
                    if tasks.len() >= CONCURRENCY {
                        break;
                    }
                    spawn(&mut tasks, &pool, &backend, identity.as_ref(), &in_flight, item.name).await;
                }
            }
            Err(err) => tracing::warn!(error = %err, "cannot read the ClusterTenants due for provisioning"),
        }
    }
    tasks.shutdown().await;
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
