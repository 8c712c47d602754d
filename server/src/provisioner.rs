//! Choosing and running the provisioning backend (`--provisioner kubernetes|local`), and the
//! [`DevSiloHost`] through which the local backend serves each silo's clustertenant-manager in
//! the `dev` process.

use std::{
    collections::HashMap,
    net::{Ipv4Addr, SocketAddr},
    path::PathBuf,
    sync::{
        Arc, Mutex,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use clap::ValueEnum;
use leptos::config::Env;
use opencrane_crd::cluster_tenant::ClusterTenantSpec;
use opencrane_db::PoolSettings;
use opencrane_provision::{
    Backend, StepFailure, StepId, StepSuccess, Teardown,
    kubernetes::{KubernetesBackend, KubernetesSettings, Registry},
    local::{SiloHost, SiloLaunch},
    spec::Desired,
};
use tokio::{sync::watch, task::JoinHandle};

use crate::{
    cli::AuthArgs,
    http::auth::{OrgClient, Scope},
    roles, sync,
};

/// Which backend provisions silos.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProvisionerKind {
    /// The Kubernetes cluster the fleet-manager runs in.
    Kubernetes,
    /// This machine (only under `opencrane dev`): a database per silo on the local PostgreSQL and
    /// a clustertenant-manager per silo in the same process.
    Local,
}

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
    let settings = KubernetesSettings::new(cluster, namespace, args.charts_dir.clone());
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
    identity: String,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
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
        let work = || {
            let (pool, backend, progress, registry) = (pool.clone(), backend.clone(), progress.clone(), &registry);
            async move {
                let _reset = NotWatching(progress.clone());
                let never = std::future::pending::<()>;
                let worker_backend: Arc<dyn Backend> = backend.clone();
                tokio::join!(
                    opencrane_provision::worker::run(pool.clone(), worker_backend, never()),
                    backend.watch_resources(&pool, registry, &progress, never()),
                );
            }
        };
        elector
            .run_while_leader(work, async move {
                let _ = shutdown.wait_for(|s| *s).await;
            })
            .await;
    });
    (task, check)
}

/// What every silo served by the dev process shares.
#[derive(Clone, Debug)]
pub struct DevSiloSettings {
    /// The browser bundle.
    pub site_root: PathBuf,
    /// `PLATFORM_BASE_DOMAIN`.
    pub base_domain: Option<String>,
    /// Sign-in settings (the development identity unless a provider is configured).
    pub auth: AuthArgs,
    /// The dev token, accepted by every silo.
    pub dev_token: String,
    /// Where the silos pull their memberships from (the fleet in the same process).
    pub fleet: sync::FleetLink,
    /// The first port to try; later silos take the next free ones. 0: any free port.
    pub first_port: u16,
    /// The organisation client of one silo (name, client), for trying per-host sign-in.
    pub org_client: Option<(String, OrgClient)>,
    /// LiteLLM and the credentials key, shared by every local silo.
    pub portal: crate::cli::PortalArgs,
}

struct Running {
    url: String,
    database_url: String,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Serves silos' clustertenant-managers inside the dev process, each on a loopback port of its
/// own that it keeps while the process lives (so "Open silo" links stay valid across suspension).
pub struct DevSiloHost {
    settings: DevSiloSettings,
    running: Mutex<HashMap<String, Running>>,
    ports: Mutex<HashMap<String, u16>>,
}

impl DevSiloHost {
    /// A host with nothing running.
    pub fn new(settings: DevSiloSettings) -> Self {
        Self { settings, running: Mutex::default(), ports: Mutex::default() }
    }

    async fn bind(&self, name: &str) -> Result<tokio::net::TcpListener, String> {
        let remembered = self.ports.lock().map_err(|_| "lock poisoned")?.get(name).copied();
        if let Some(port) = remembered
            && let Ok(listener) = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await
        {
            return Ok(listener);
        }
        if self.settings.first_port == 0 {
            return tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.map_err(|e| e.to_string());
        }
        let taken: Vec<u16> = self.ports.lock().map_err(|_| "lock poisoned")?.values().copied().collect();
        let mut port = self.settings.first_port;
        for _ in 0..200 {
            if !taken.contains(&port)
                && let Ok(listener) = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await
            {
                return Ok(listener);
            }
            port = port.checked_add(1).ok_or("no free port above --silo-port")?;
        }
        Err(format!("no free port in {}–{port}", self.settings.first_port))
    }

    fn serve(&self, launch: &SiloLaunch, listener: tokio::net::TcpListener) -> anyhow::Result<Running> {
        let addr: SocketAddr = listener.local_addr()?;
        let settings = &self.settings;
        let pool = opencrane_db::connect_lazy(&launch.database_url, &PoolSettings::default())?;
        let org = settings.org_client.as_ref().filter(|(n, _)| *n == launch.name).map(|(_, org)| org.clone());
        let sign_in = org.is_some();
        let mut auth_args = settings.auth.clone();
        if !sign_in {
            auth_args.oidc.issuer_url = None;
        }
        auth_args.oidc.client_id = None;
        auth_args.oidc.client_secret = None;
        auth_args.oidc.redirect_uri = None;
        let scope = Scope::Silo {
            cluster_tenant: launch.name.clone(),
            org_admin_groups: settings.auth.oidc.org_admin_groups.clone(),
        };
        let tokens = vec![("dev".to_owned(), settings.dev_token.clone())];
        let auth = roles::auth_config(&auth_args, addr, tokens, scope, org)?;
        let mut state = roles::silo_state(
            roles::leptos_options(&settings.site_root, addr, Env::DEV),
            pool.clone(),
            launch.name.clone(),
            settings.base_domain.clone(),
            auth.0.oidc.is_some(),
        );
        let (stop, stopped) = watch::channel(false);
        if let app::state::RoleSettings::Silo(silo) = &mut state.role {
            silo.portal = roles::start_portal(&launch.name, &pool, &settings.portal, stopped.clone())?;
        }
        sync::spawn(settings.fleet.clone(), launch.name.clone(), pool, stopped.clone());
        let name = launch.name.clone();
        let task = tokio::spawn(async move {
            let mut rx = stopped;
            let shutdown = async move {
                let _ = rx.wait_for(|s| *s).await;
            };
            if let Err(err) = roles::serve_on(listener, state, auth, shutdown).await {
                tracing::error!(cluster_tenant = %name, error = %format!("{err:#}"), "silo server failed");
            }
        });
        Ok(Running { url: format!("http://{addr}"), database_url: launch.database_url.clone(), stop, task })
    }

    /// Remembers the port a silo had before a restart (from its stored URL), so that links to it
    /// keep working when the dev process comes back.
    pub fn remember(&self, name: &str, url: &str) {
        let port = url.rsplit(':').next().and_then(|p| p.trim_end_matches('/').parse::<u16>().ok());
        if let (Some(port), Ok(mut ports)) = (port, self.ports.lock()) {
            ports.insert(name.to_owned(), port);
        }
    }

    /// Stops every silo (the dev process is exiting).
    pub async fn stop_all(&self) {
        let names: Vec<String> = self.running.lock().map(|r| r.keys().cloned().collect()).unwrap_or_default();
        for name in names {
            self.stop(&name).await;
        }
    }
}

#[async_trait::async_trait]
impl SiloHost for DevSiloHost {
    async fn start(&self, launch: &SiloLaunch) -> Result<String, String> {
        let same = {
            let running = self.running.lock().map_err(|_| "lock poisoned")?;
            running
                .get(&launch.name)
                .map(|r| (r.database_url == launch.database_url && !r.task.is_finished(), r.url.clone()))
        };
        match same {
            Some((true, url)) => return Ok(url),
            Some((false, _)) => {
                self.stop(&launch.name).await;
            }
            None => {}
        }
        let listener = self.bind(&launch.name).await?;
        let running = self.serve(launch, listener).map_err(|e| format!("{e:#}"))?;
        let url = running.url.clone();
        let port = running.url.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or(0);
        self.ports.lock().map_err(|_| "lock poisoned")?.insert(launch.name.clone(), port);
        self.running.lock().map_err(|_| "lock poisoned")?.insert(launch.name.clone(), running);
        tracing::info!(cluster_tenant = %launch.name, %url, "silo serving");
        Ok(url)
    }

    async fn stop(&self, name: &str) -> bool {
        let Some(running) = self.running.lock().ok().and_then(|mut r| r.remove(name)) else { return false };
        let _ = running.stop.send(true);
        if tokio::time::timeout(Duration::from_secs(25), running.task).await.is_err() {
            tracing::warn!(cluster_tenant = %name, "silo server did not stop within 25 s");
        }
        tracing::info!(cluster_tenant = %name, "silo stopped");
        true
    }

    fn url(&self, name: &str) -> Option<String> {
        self.running.lock().ok()?.get(name).filter(|r| !r.task.is_finished()).map(|r| r.url.clone())
    }
}

/// Runs the reconciler for `backend` until `shutdown` resolves.
pub async fn run(pool: opencrane_db::PgPool, backend: Arc<dyn Backend>, shutdown: impl Future<Output = ()> + Send) {
    opencrane_provision::worker::run(pool, backend, shutdown).await;
}

/// The service layer as the Kubernetes backend's [`Registry`]: a ClusterTenant resource applied
/// with kubectl is created, edited or deleted through exactly the functions the console and the
/// REST API call (same validation, same audit entries), acting as the `controller` service token.
pub struct ServiceRegistry {
    /// The fleet's state.
    pub state: app::state::AppState,
}

impl ServiceRegistry {
    fn caller() -> app::state::Caller {
        app::state::Caller {
            principal: Some(app::model::principal::Principal::api_token("controller")),
            request_id: format!("controller-{}", uuid::Uuid::new_v4()),
            session_id: None,
        }
    }
}

/// What a resource's spec asks for, as the API's create request.
pub fn create_request(name: &str, spec: &ClusterTenantSpec) -> app::model::cluster_tenant::ClusterTenantCreateRequest {
    use app::model::cluster_tenant as m;
    use opencrane_crd::cluster_tenant as crd;
    m::ClusterTenantCreateRequest {
        name: name.to_owned(),
        display_name: spec.display_name.clone(),
        vanity_domain: spec.vanity_domain.clone(),
        isolation_tier: Some(match spec.isolation_tier {
            crd::IsolationTier::Shared => m::IsolationTier::Shared,
            crd::IsolationTier::DedicatedNodes => m::IsolationTier::DedicatedNodes,
            crd::IsolationTier::DedicatedCluster => m::IsolationTier::DedicatedCluster,
        }),
        compute: Some(m::ComputeRequest {
            mode: Some(match spec.compute.mode {
                crd::ComputeMode::Shared => m::ComputeMode::Shared,
                crd::ComputeMode::Dedicated => m::ComputeMode::Dedicated,
            }),
            node_pool: spec.compute.node_pool.clone(),
        }),
        resources: Some(m::Resources {
            quota: Some(spec.resources.quota.as_ref().map_or_else(m::Quota::default, |q| m::Quota {
                cpu: q.cpu.clone(),
                memory: q.memory.clone(),
                pods: q.pods,
                storage: q.storage.clone(),
                gpu: q.gpu,
            })),
        }),
        seat_cap: None,
        owner: spec.owner.as_ref().map(|o| m::OwnerRequest { subject: o.subject.clone(), email: o.email.clone() }),
        termination_policy: Some(match spec.termination_policy {
            crd::TerminationPolicy::Retain => m::TerminationPolicy::Retain,
            crd::TerminationPolicy::Delete => m::TerminationPolicy::Delete,
        }),
        silo_version: spec.silo_version.clone(),
        suspended: Some(spec.suspended),
    }
}

fn refusal(error: &app::error::AppError) -> String {
    match error {
        app::error::AppError::Validation { fields } => {
            fields.0.iter().map(|(field, message)| format!("spec.{field}: {message}")).collect::<Vec<_>>().join("; ")
        }
        other => other.to_string(),
    }
}

#[async_trait::async_trait]
impl Registry for ServiceRegistry {
    async fn adopt(&self, name: &str, spec: &ClusterTenantSpec) -> Result<(), opencrane_provision::Error> {
        let created =
            app::service::cluster_tenants::create(&self.state, &Self::caller(), create_request(name, spec)).await;
        created
            .map(|_| tracing::info!(cluster_tenant = name, "adopted a ClusterTenant resource created out of band"))
            .map_err(|e| opencrane_provision::Error::Refused(refusal(&e)))
    }

    async fn edit(&self, name: &str, spec: &ClusterTenantSpec) -> Result<(), opencrane_provision::Error> {
        let request = create_request(name, spec);
        let update = app::model::cluster_tenant::ClusterTenantUpdateRequest {
            display_name: Some(request.display_name),
            vanity_domain: match request.vanity_domain {
                Some(domain) => app::model::cluster_tenant::Patch::Set(domain),
                None => app::model::cluster_tenant::Patch::Clear,
            },
            isolation_tier: request.isolation_tier,
            compute: request.compute,
            resources: request.resources,
            seat_cap: app::model::cluster_tenant::Patch::Keep,
            termination_policy: request.termination_policy,
            silo_version: match request.silo_version {
                Some(version) => app::model::cluster_tenant::Patch::Set(version),
                None => app::model::cluster_tenant::Patch::Clear,
            },
            suspended: request.suspended,
        };
        app::service::cluster_tenants::update(&self.state, &Self::caller(), name, update)
            .await
            .map(|_| ())
            .map_err(|e| opencrane_provision::Error::Refused(refusal(&e)))
    }

    async fn delete(&self, name: &str) -> Result<(), opencrane_provision::Error> {
        app::service::cluster_tenants::delete(&self.state, &Self::caller(), name, None)
            .await
            .map(|_| ())
            .map_err(|e| opencrane_provision::Error::Refused(refusal(&e)))
    }
}
