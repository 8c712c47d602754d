//! The clustertenant-manager's wiring: its state, the portal runtime (LiteLLM reconciler and the
//! Tenant resources) and the membership read-model kept in step with the fleet (`sync`).

pub mod import;
pub mod sync;
pub mod usage;

use std::net::SocketAddr;

use app::state::{AppState, RoleSettings, SiloSettings};
use leptos::config::{Env, LeptosOptions};
use opencrane_db::{PgPool, Schema};

use crate::{
    cli::SiloArgs,
    http::{
        self,
        auth::{OrgClient, Scope, oidc::ClientConfig},
    },
    links,
    start::{self, auth_config, leptos_options, open_database, serve_role, spawn_session_sweeper},
};

/// Runs the clustertenant-manager until SIGTERM or Ctrl-C.
pub async fn run_silo(args: SiloArgs) -> anyhow::Result<()> {
    let addr = SocketAddr::new(args.http.bind, args.http.port);
    let link =
        links::silo_link(args.deployment_mode, args.fleet_internal_url.as_deref(), args.fleet_token_file.is_some())?;
    let fleet_token = args.fleet_token_file.clone().map(sync::FleetToken::File);
    refuse_outbound_inbound(fleet_token.as_ref(), args.auth.api_token().as_deref())?;
    let watch = links::watch_namespace(args.require_watch_namespace, args.watch_namespace.as_deref())?;
    tracing::info!(?link, watch_namespace = ?watch, cluster_tenant = %args.cluster_tenant, "silo configuration");
    let fleet_link = match (&link, fleet_token) {
        (links::SiloLink::FleetManaged { fleet_url }, Some(token)) => {
            Some(sync::FleetLink { url: fleet_url.clone(), token })
        }
        _ => None,
    };
    let scope = Scope::Silo {
        cluster_tenant: args.cluster_tenant.clone(),
        org_admin_groups: args.auth.oidc.org_admin_groups.clone(),
        fleet: fleet_link.clone(),
    };
    let org = args.org_client_id.clone().map(|client_id| {
        let mut hosts: Vec<String> =
            args.platform_base_domain.iter().map(|base| format!("{}.{base}", args.cluster_tenant)).collect();
        hosts.extend(args.vanity_domain.clone());
        OrgClient {
            client: ClientConfig {
                client_id,
                client_secret: None,
                extra_scopes: args.org_id.iter().map(|id| format!("urn:zitadel:iam:org:id:{id}")).collect(),
            },
            hosts,
        }
    });
    let auth = auth_config(&args.auth, addr, Vec::new(), scope, org)?;
    let pool = open_database(&args.db, Schema::Silo).await?;
    let own_name = args.cluster_tenant.clone();
    let state = silo_state(
        leptos_options(&args.http.site_root, addr, Env::PROD),
        pool,
        args.cluster_tenant,
        args.platform_base_domain,
        auth.0.oidc.is_some(),
    );
    spawn_session_sweeper(state.pool.clone());
    let mut state = state;
    let pool = state.pool.clone();
    let (_stop_portal, portal_stop) = tokio::sync::watch::channel(false);
    if let app::state::RoleSettings::Silo(silo) = &mut state.role {
        if !args.db.kept_answers {
            silo.kept_lists = std::sync::Arc::new(app::service::kept::Kept::off());
        }
        if let Some(url) = args.fleet_console_url.clone() {
            silo.fleet_console = Some(url);
        }
        let cluster = match watch.clone() {
            Some(namespace) => opencrane_provision::kubernetes::in_cluster_client().await.map(|c| (namespace, c)),
            None => None,
        };
        // Credentials may reference Secrets of the silo's namespace (read at each LiteLLM pass).
        let reader = cluster
            .as_ref()
            .map(|(namespace, client)| opencrane_portal::secrets::SecretReader::new(client.clone(), namespace));
        silo.portal = start_portal(&own_name, &pool, &args.portal, reader, portal_stop).await?;
        // In a cluster, each user is also a Tenant resource in the silo's namespace.
        if let Some((namespace, client)) = cluster {
            let mut runtime =
                opencrane_portal::runtime::TenantRuntime::new(client.clone(), &namespace, pool.clone(), &own_name);
            if let Some(floor) = args.cilium_egress_floor.clone() {
                runtime = runtime.with_cilium(client, floor.0);
                silo.cilium_egress = true;
                tracing::info!(%namespace, "The MCP gateway's egress follows the access policies (Cilium)");
            }
            let trigger = opencrane_portal::reconcile::Trigger::default();
            silo.portal.triggers.push(trigger.clone());
            tokio::spawn(runtime.run(trigger));
            tracing::info!(%namespace, "Tenant resources follow the users");
        }
    }
    // A fleet-managed silo keeps its membership read-model in step with the fleet.
    let (_stop_sync, stop_rx) = tokio::sync::watch::channel(false);
    if let Some(link) = fleet_link {
        let portal = match &state.role {
            app::state::RoleSettings::Silo(silo) => silo.portal.clone(),
            app::state::RoleSettings::Fleet(_) => app::state::PortalRuntime::default(),
        };
        sync::spawn(link, own_name, state.pool.clone(), portal, stop_rx);
    }
    start::spawn_metrics(&args.http).await?;
    serve_role(state, auth, addr, http::shutdown_signal()).await
}

/// A silo never accepts its outbound credential inbound: an `OPENCRANE_API_TOKEN` equal to the
/// credential it presents to the fleet (or any silo credential) is refused at start.
pub fn refuse_outbound_inbound(fleet: Option<&sync::FleetToken>, api_token: Option<&str>) -> anyhow::Result<()> {
    let Some(inbound) = api_token.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(()) };
    anyhow::ensure!(
        !inbound.starts_with(opencrane_provision::credential::PREFIX),
        "OPENCRANE_API_TOKEN is a silo credential (ocs_…): that one is only presented to the fleet, never accepted"
    );
    if let Some(outbound) = fleet.and_then(|t| t.current().ok()) {
        anyhow::ensure!(
            outbound != inbound,
            "OPENCRANE_API_TOKEN equals the fleet credential: a silo never accepts its outbound credential"
        );
    }
    Ok(())
}

/// A silo's state.
pub fn silo_state(
    leptos_options: LeptosOptions,
    pool: PgPool,
    cluster_tenant: String,
    base_domain: Option<String>,
    sign_in: bool,
) -> AppState {
    AppState::from(app::state::AppStateFields {
        leptos_options,
        pool,
        role: RoleSettings::Silo(SiloSettings {
            cluster_tenant,
            fleet_console: base_domain.as_ref().map(|base| format!("https://platform.{base}")),
            base_domain,
            portal: app::state::PortalRuntime::default(),
            cilium_egress: false,
            kept_lists: std::sync::Arc::default(),
        }),
        sign_in,
        health: None,
    })
}

/// The silo portal's runtime: the secret box, and the LiteLLM reconciler (spawned until `stop`)
/// when an endpoint is configured. Misconfiguration fails the start with the variable named.
///
/// The credentials key is checked against the fingerprint the silo's database recorded
/// ([`opencrane_portal::credentials_key::verify`]): another key refuses the start, naming where it
/// came from (`--credentials-key-secret`, which the chart sets to the Secret's name).
pub async fn start_portal(
    silo: &str,
    pool: &PgPool,
    args: &crate::cli::PortalArgs,
    secret_reader: Option<opencrane_portal::secrets::SecretReader>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<app::state::PortalRuntime> {
    use anyhow::Context as _;
    let credentials_key = args.credentials_key();
    let secrets = match credentials_key.as_deref().filter(|k| !k.trim().is_empty()) {
        Some(key) => {
            let key = opencrane_portal::seal::SecretBox::from_base64(key).context("OPENCRANE_CREDENTIALS_KEY")?;
            let key = opencrane_portal::credentials_key::verify(pool, key, &args.credentials_key_source()).await?;
            tracing::info!(version = key.version(), "credentials key matches the sealed secrets");
            Some(std::sync::Arc::new(key))
        }
        None => None,
    };
    let Some(endpoint) = args.litellm_endpoint.as_deref().filter(|e| !e.trim().is_empty()) else {
        return Ok(app::state::PortalRuntime { secrets, litellm: None, triggers: Vec::new() });
    };
    let master_key = args.litellm_master_key();
    let master = master_key
        .as_deref()
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| anyhow::anyhow!("LITELLM_MASTER_KEY is required with LITELLM_ENDPOINT"))?;
    let sealing = secrets.clone().ok_or_else(|| {
        anyhow::anyhow!("OPENCRANE_CREDENTIALS_KEY is required with LITELLM_ENDPOINT (it seals the users' keys)")
    })?;
    let client = opencrane_portal::litellm::LiteLlm::new(endpoint, master)
        .context("LITELLM_ENDPOINT")?
        .with_trace_headers(opencrane_portal::litellm::TraceHeaders(crate::telemetry::header_hook()));
    let mut reconciler = opencrane_portal::reconcile::Reconciler::new(silo, pool.clone(), client, sealing);
    if let Some(reader) = secret_reader {
        reconciler = reconciler.with_secret_reader(reader);
    }
    let trigger = reconciler.trigger();
    tokio::spawn(async move {
        tokio::select! {
            () = reconciler.run() => {}
            _ = stop.wait_for(|s| *s) => {}
        }
    });
    Ok(app::state::PortalRuntime { secrets, litellm: Some(endpoint.to_owned()), triggers: vec![trigger] })
}
