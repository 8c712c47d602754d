//! The [`DevSiloHost`]: how the local backend serves each silo's clustertenant-manager inside the
//! `dev` process, on its own loopback port.

use std::{
    collections::HashMap,
    net::{Ipv4Addr, SocketAddr},
    path::PathBuf,
    sync::Mutex,
    time::Duration,
};

use leptos::config::Env;
use opencrane_db::PoolSettings;
use opencrane_provision::local::{SiloHost, SiloLaunch};
use tokio::{sync::watch, task::JoinHandle};

use crate::{
    cli::AuthArgs,
    http::auth::{OrgClient, Scope},
    silo::{self, sync},
    start,
};

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
    /// The fleet console (`http://127.0.0.1:<port>`), for the silos' links to it.
    pub fleet_console: String,
    /// Where the silos pull their memberships from (the fleet in the same process), each with
    /// its own credential.
    pub fleet_url: String,
    /// The first port to try; later silos take the next free ones. 0: any free port.
    pub first_port: u16,
    /// The organisation client of one silo (name, client), for trying per-host sign-in.
    pub org_client: Option<(String, OrgClient)>,
    /// LiteLLM and the credentials key, shared by every local silo.
    pub portal: crate::cli::PortalArgs,
}

struct Running {
    url: String,
    launch: SiloLaunch,
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

    async fn serve(&self, launch: &SiloLaunch, listener: tokio::net::TcpListener) -> anyhow::Result<Running> {
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
        let link = sync::FleetLink {
            url: settings.fleet_url.clone(),
            token: sync::FleetToken::Value(launch.fleet_credential.expose().to_owned()),
        };
        let scope = Scope::Silo {
            cluster_tenant: launch.name.clone(),
            org_admin_groups: settings.auth.oidc.org_admin_groups.clone(),
            fleet: Some(link.clone()),
        };
        let tokens = vec![("dev".to_owned(), settings.dev_token.clone())];
        let auth = start::auth_config(&auth_args, addr, tokens, scope, org)?;
        let mut state = silo::silo_state(
            start::leptos_options(&settings.site_root, addr, Env::DEV),
            pool.clone(),
            launch.name.clone(),
            settings.base_domain.clone(),
            auth.0.oidc.is_some(),
        );
        let (stop, stopped) = watch::channel(false);
        let mut portal = app::state::PortalRuntime::default();
        if let app::state::RoleSettings::Silo(silo) = &mut state.role {
            silo.fleet_console = Some(settings.fleet_console.clone());
            silo.portal = silo::start_portal(&launch.name, &pool, &settings.portal, None, stopped.clone()).await?;
            portal = silo.portal.clone();
        }
        sync::spawn(link, launch.name.clone(), pool, portal, stopped.clone());
        let name = launch.name.clone();
        let task = tokio::spawn(async move {
            if let Err(err) = start::serve_on(listener, state, auth, start::stopped(stopped)).await {
                tracing::error!(cluster_tenant = %name, error = %format!("{err:#}"), "silo server failed");
            }
        });
        Ok(Running { url: format!("http://{addr}"), launch: launch.clone(), stop, task })
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
            running.get(&launch.name).map(|r| (r.launch == *launch && !r.task.is_finished(), r.url.clone()))
        };
        match same {
            Some((true, url)) => return Ok(url),
            Some((false, _)) => {
                self.stop(&launch.name).await;
            }
            None => {}
        }
        let listener = self.bind(&launch.name).await?;
        let running = self.serve(launch, listener).await.map_err(|e| format!("{e:#}"))?;
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
