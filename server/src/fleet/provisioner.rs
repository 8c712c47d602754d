//! Choosing and running the fleet's provisioning backend (`--provisioner kubernetes`): the
//! Kubernetes backend with its lease and watch, or a backend that says why it cannot provision.

use std::{
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use opencrane_provision::{
    Backend, StepFailure, StepId, StepSuccess, Teardown,
    identity::IdentityPlane,
    kubernetes::{KubernetesBackend, KubernetesSettings},
    spec::Desired,
};

use super::registry::ServiceRegistry;

/// A backend that cannot provision, and says why in the first step's condition (no cluster
/// configuration, no base domain) instead of the fleet-manager failing to start.
pub struct ProvisioningUnavailable {
    /// What is missing.
    pub reason: String,
    /// What to do about it.
    pub action: String,
}

#[async_trait::async_trait]
impl Backend for ProvisioningUnavailable {
    fn name(&self) -> &'static str {
        "kubernetes"
    }

    async fn converge(
        &self,
        _step: StepId,
        _desired: &Desired,
        _done_before: bool,
    ) -> Result<StepSuccess, StepFailure> {
        Err(StepFailure::new("ProvisionerUnavailable", self.reason.clone(), self.action.clone()))
    }

    async fn teardown(&self, _step: StepId, name: &str, _delete_database: bool) -> Result<Teardown, StepFailure> {
        Ok(Teardown::Retained(format!(
            "Nothing was provisioned by this fleet-manager; objects in opencrane-{name}, if any, are left alone."
        )))
    }

    fn silo_url(&self, _desired: &Desired) -> Option<String> {
        None
    }

    fn bound_to(&self, desired: &Desired) -> String {
        desired.namespace()
    }
}

/// The Kubernetes backend for the current cluster (in-cluster, or the kube context), or an
/// explanation of why there is none.
pub async fn kubernetes_backend(
    base_domain: Option<&str>,
    fleet_namespace: Option<&str>,
    args: &crate::cli::ClusterArgs,
    oidc_issuer_url: Option<&str>,
    dns_truth: Option<Arc<opencrane_provision::dns_truth::DnsTruth>>,
) -> Result<Arc<KubernetesBackend>, ProvisioningUnavailable> {
    let Some(base_domain) = base_domain else {
        return Err(ProvisioningUnavailable {
            reason: "PLATFORM_BASE_DOMAIN is not set, so silos have no host name (<name>.<base>).".into(),
            action: "Set PLATFORM_BASE_DOMAIN (the fleet chart's ingress.domain), then Retry.".into(),
        });
    };
    let client = opencrane_provision::kubernetes::default_client().await.map_err(|err| {
        tracing::warn!(error = %err, "no Kubernetes configuration: provisioning will report it");
        ProvisioningUnavailable {
            reason: format!("No Kubernetes configuration was found (in-cluster or kubeconfig): {err}."),
            action: "Run the fleet-manager in the cluster (the opencrane-fleet chart), or point KUBECONFIG at one, then Retry."
                .into(),
        }
    })?;
    let namespace = fleet_namespace.unwrap_or("opencrane-system").to_owned();
    let mut cluster = opencrane_provision::build::ClusterSettings::new(base_domain);
    cluster.ingress_ip = args.ingress_ip;
    cluster.fleet_service_account = (namespace.clone(), args.service_account.clone());
    cluster.installer_role = args.silo_installer_role.clone();
    cluster.issuer.1 = args.cert_issuer_name.clone();
    // The silos sign their organisations' users in at the fleet's own issuer (one Zitadel).
    cluster.oidc_issuer_url = oidc_issuer_url.map(str::to_owned);
    let mut settings = KubernetesSettings::new(cluster, namespace, args.charts_dir.clone());
    settings.dns_truth = dns_truth;
    settings.fleet_internal_url = args.fleet_internal_url.clone();
    Ok(Arc::new(KubernetesBackend::new(client, settings)))
}

/// How long the ClusterTenant watch may go without an event or restart before `/readyz` fails
/// (kube-runtime restarts an idle watch every five minutes).
pub const WATCH_PATIENCE: Duration = Duration::from_secs(600);

/// Resets the watch-progress signal when leadership ends (a non-leader does not watch).
struct NotWatching(Arc<AtomicI64>);

impl Drop for NotWatching {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// Runs provisioning on a fleet-manager against Kubernetes until `shutdown`: leader election on
/// the Lease `opencrane-fleet-provisioner`; the leader runs the reconcile worker and the
/// ClusterTenant watch (adoption, out-of-band edits and deletions). Returns the readiness check
/// of the watch.
pub fn spawn_kubernetes(
    state: &app::state::AppState,
    backend: Arc<KubernetesBackend>,
    zitadel: Option<Arc<IdentityPlane>>,
    identity: String,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> (tokio::task::JoinHandle<()>, app::state::HealthCheck) {
    let progress = Arc::new(AtomicI64::new(0));
    let check = {
        let progress = progress.clone();
        app::state::HealthCheck(Arc::new(move || {
            let last = progress.load(Ordering::Relaxed);
            let idle = chrono::Utc::now().timestamp() - last;
            (last != 0 && idle > i64::try_from(WATCH_PATIENCE.as_secs()).unwrap_or(600))
                .then(|| format!("the ClusterTenant watch made no progress for {idle} s"))
        }))
    };
    let pool = state.pool.clone();
    let registry = ServiceRegistry { state: state.clone() };
    let namespace = backend.fleet_namespace().to_owned();
    let task = tokio::spawn(async move {
        let elector = opencrane_provision::lease::Elector::new(
            backend.client().clone(),
            &namespace,
            "opencrane-fleet-provisioner",
            &identity,
            Duration::from_secs(15),
        );
        let work = |stopping: tokio::sync::watch::Receiver<bool>| {
            let (pool, backend, progress, registry) = (pool.clone(), backend.clone(), progress.clone(), &registry);
            let zitadel = zitadel.clone();
            async move {
                let _reset = NotWatching(progress.clone());
                let worker_backend: Arc<dyn Backend> = backend.clone();
                tokio::join!(
                    opencrane_provision::worker::run(
                        pool.clone(),
                        worker_backend,
                        zitadel,
                        crate::start::stopped(stopping.clone()),
                        opencrane_provision::worker::DRAIN,
                    ),
                    backend.watch_resources(&pool, registry, &progress, crate::start::stopped(stopping)),
                );
            }
        };
        elector.run_while_leader(work, crate::start::stopped(shutdown)).await;
    });
    (task, check)
}

/// Runs the reconciler for `backend` (and Zitadel, if configured) until `shutdown` resolves,
/// then lets the reconciles under way finish (at most [`opencrane_provision::worker::DRAIN`]).
pub async fn run(
    pool: opencrane_db::PgPool,
    backend: Arc<dyn Backend>,
    zitadel: Option<Arc<IdentityPlane>>,
    shutdown: impl Future<Output = ()> + Send,
) {
    opencrane_provision::worker::run(pool, backend, zitadel, shutdown, opencrane_provision::worker::DRAIN).await;
}
