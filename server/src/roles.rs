//! Start-up of the two roles: configuration → database → state → HTTP server, and graceful
//! shutdown. `dev` reuses the same pieces for both roles in one process.

use std::{net::SocketAddr, path::Path, time::Duration};

use anyhow::{Context as _, bail};
use app::{
    model::cluster_tenant::ValidationContext,
    state::{AppState, FleetSettings, RoleSettings, SiloSettings},
};
use leptos::config::{Env, LeptosOptions};
use opencrane_db::{PgPool, PoolSettings, Schema};
use sqlx::migrate::MigrateError;

use crate::{
    cli::{AuthArgs, DbArgs, FleetArgs, OidcArgs, SiloArgs},
    http::{
        self, AuthConfig,
        auth::{
            AuthInner, OidcSetup, OrgClient, Scope,
            oidc::{ClientConfig, Provider, SignInPolicy},
        },
        ratelimit::RateLimiter,
    },
    links,
};

/// Runs the fleet-manager until SIGTERM or Ctrl-C.
pub async fn run_fleet(args: FleetArgs) -> anyhow::Result<()> {
    let addr = SocketAddr::new(args.http.bind, args.http.port);
    if let Some(zitadel) = links::zitadel_link(&args.zitadel, args.namespace.as_deref())? {
        tracing::info!(
            url = %zitadel.api_url,
            key_id = %zitadel.key.key_id,
            rotation_secret = ?zitadel.rotation_secret,
            "Zitadel Management API configured"
        );
    }
    let auth = auth_config(&args.auth, addr, Vec::new(), Scope::Fleet, None)?;
    let pool = open_database(&args.db, Schema::Fleet).await?;
    let mut state = fleet_state(
        leptos_options(&args.http.site_root, addr, Env::PROD),
        pool,
        args.platform_base_domain.clone(),
        args.cluster_tenant_manager_enabled,
        args.billing_enabled,
        auth.0.oidc.is_some(),
    );
    spawn_session_sweeper(state.pool.clone());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let provisioning = match args.provisioner {
        crate::provisioner::ProvisionerKind::Local => {
            bail!("OPENCRANE_PROVISIONER=local runs only under `opencrane dev` (it serves the silos in that process)")
        }
        crate::provisioner::ProvisionerKind::Kubernetes => {
            let base = args.platform_base_domain.as_deref();
            match crate::provisioner::kubernetes_backend(base, args.namespace.as_deref(), &args.cluster).await {
                Ok(backend) => {
                    let identity =
                        args.cluster.pod_name.clone().unwrap_or_else(|| format!("fleet-{}", uuid::Uuid::new_v4()));
                    let (task, check) = crate::provisioner::spawn_kubernetes(&state, backend, identity, stop_rx);
                    state.health = Some(check);
                    task
                }
                Err(unavailable) => {
                    let mut stop_rx = stop_rx;
                    tokio::spawn(crate::provisioner::run(
                        state.pool.clone(),
                        std::sync::Arc::new(unavailable),
                        async move {
                            let _ = stop_rx.wait_for(|s| *s).await;
                        },
                    ))
                }
            }
        }
    };
    let served = serve_role(state, auth, addr, http::shutdown_signal()).await;
    let _ = stop_tx.send(true);
    let _ = provisioning.await;
    served
}

/// Runs the clustertenant-manager until SIGTERM or Ctrl-C.
pub async fn run_silo(args: SiloArgs) -> anyhow::Result<()> {
    let addr = SocketAddr::new(args.http.bind, args.http.port);
    let link =
        links::silo_link(args.deployment_mode, args.fleet_internal_url.as_deref(), args.auth.api_token.is_some())?;
    let watch = links::watch_namespace(args.require_watch_namespace, args.watch_namespace.as_deref())?;
    tracing::info!(?link, watch_namespace = ?watch, cluster_tenant = %args.cluster_tenant, "silo configuration");
    let scope = Scope::Silo {
        cluster_tenant: args.cluster_tenant.clone(),
        org_admin_groups: args.auth.oidc.org_admin_groups.clone(),
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
    let (_stop_portal, portal_stop) = tokio::sync::watch::channel(false);
    if let app::state::RoleSettings::Silo(silo) = &mut state.role {
        silo.portal = start_portal(&own_name, &state.pool, &args.portal, portal_stop)?;
        // In a cluster, each user is also a Tenant resource in the silo's namespace.
        if let (Some(namespace), Some(client)) =
            (watch.clone(), opencrane_provision::kubernetes::in_cluster_client().await)
        {
            let runtime =
                opencrane_portal::runtime::TenantRuntime::new(client, &namespace, state.pool.clone(), &own_name);
            let trigger = opencrane_portal::reconcile::Trigger::default();
            silo.portal.triggers.push(trigger.clone());
            tokio::spawn(runtime.run(trigger));
            tracing::info!(%namespace, "Tenant resources follow the users");
        }
    }
    // A fleet-managed silo keeps its membership read-model in step with the fleet.
    let (_stop_sync, stop_rx) = tokio::sync::watch::channel(false);
    if let (links::SiloLink::FleetManaged { fleet_url }, Some(token)) = (&link, args.auth.api_token.clone()) {
        let link = crate::sync::FleetLink { url: fleet_url.clone(), token };
        crate::sync::spawn(link, own_name, state.pool.clone(), stop_rx);
    }
    serve_role(state, auth, addr, http::shutdown_signal()).await
}

/// The fleet's state.
pub fn fleet_state(
    leptos_options: LeptosOptions,
    pool: PgPool,
    base_domain: Option<String>,
    cluster_tenants_enabled: bool,
    billing_enabled: bool,
    sign_in: bool,
) -> AppState {
    AppState {
        leptos_options,
        pool,
        role: RoleSettings::Fleet(FleetSettings {
            cluster_tenants_enabled,
            billing_enabled,
            validation: ValidationContext { base_domain, dedicated_cluster_available: false },
        }),
        sign_in,
        health: None,
    }
}

/// A silo's state.
pub fn silo_state(
    leptos_options: LeptosOptions,
    pool: PgPool,
    cluster_tenant: String,
    base_domain: Option<String>,
    sign_in: bool,
) -> AppState {
    AppState {
        leptos_options,
        pool,
        role: RoleSettings::Silo(SiloSettings {
            cluster_tenant,
            base_domain,
            portal: app::state::PortalRuntime::default(),
        }),
        sign_in,
        health: None,
    }
}

/// Sweeps expired sessions every minute (records and index rows).
pub fn spawn_session_sweeper(pool: PgPool) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(60));
        loop {
            tick.tick().await;
            match opencrane_common_db::sessions::delete_expired(&pool).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(sessions = n, "expired sessions swept"),
                Err(err) => tracing::warn!(error = %err, "session sweep failed"),
            }
        }
    });
}

/// Leptos' settings: where the browser bundle is, and the address (for its own bookkeeping).
pub fn leptos_options(site_root: &Path, addr: SocketAddr, env: Env) -> LeptosOptions {
    if !site_root.join("pkg").join("opencrane.wasm").is_file() {
        tracing::warn!(
            site_root = %site_root.display(),
            "the browser bundle (pkg/opencrane.wasm) is missing: pages render, but forms will not react \
             until it is built; `cargo xtask dev` builds it"
        );
    }
    LeptosOptions::builder()
        .output_name("opencrane")
        .site_root(site_root.to_string_lossy().into_owned())
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .env(env)
        .build()
}

/// The credentials a role accepts, checked for consistency: the development identity and plain
/// HTTP are refused unless `addr` is a loopback address; a partial OIDC configuration stops
/// start-up with the name of what is missing.
pub fn auth_config(
    args: &AuthArgs,
    addr: SocketAddr,
    mut tokens: Vec<(String, String)>,
    scope: Scope,
    org: Option<OrgClient>,
) -> anyhow::Result<AuthConfig> {
    let loopback = addr.ip().is_loopback();
    if args.dev_identity && !loopback {
        bail!(
            "the development identity (OPENCRANE_DEV_IDENTITY) is only allowed on a loopback address, \
             but the server would listen on {}",
            addr.ip()
        );
    }
    if args.insecure_http && !loopback {
        bail!(
            "OPENCRANE_INSECURE_HTTP is only allowed on a loopback address, but the server would listen on {}",
            addr.ip()
        );
    }
    if let Some(token) = args.api_token.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        if token.len() < 16 {
            bail!("OPENCRANE_API_TOKEN is too short to be a secret (fewer than 16 characters)");
        }
        tokens.push(("OPENCRANE_API_TOKEN".into(), token.to_owned()));
    }
    let trusted_proxies = args
        .trusted_proxies
        .iter()
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.parse().map_err(|e: String| anyhow::anyhow!("OPENCRANE_TRUSTED_PROXIES: {e}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let oidc = oidc_setup(&args.oidc, &scope, org, args.insecure_http)?;
    Ok(AuthConfig::new(AuthInner {
        tokens,
        dev_identity: args.dev_identity,
        scope,
        oidc,
        secure: !args.insecure_http,
        session_max_age: Duration::from_secs(args.oidc.session_max_age_seconds.max(60)),
        session_idle: Duration::from_secs(args.oidc.session_idle_seconds.max(60)),
        trusted_proxies,
        limiter: RateLimiter::new(20, 20),
    }))
}

fn oidc_setup(
    args: &OidcArgs,
    scope: &Scope,
    org: Option<OrgClient>,
    insecure_http: bool,
) -> anyhow::Result<Option<OidcSetup>> {
    let configured = args.issuer_url.is_some() || args.client_id.is_some() || args.redirect_uri.is_some();
    if !configured {
        if org.is_some() {
            bail!("the organisation's client is set, but OIDC_ISSUER_URL is not");
        }
        return Ok(None);
    }
    let missing = |what: &str| anyhow::anyhow!("OIDC is partially configured: {what} is required");
    let issuer = args.issuer_url.as_deref().ok_or_else(|| missing("OIDC_ISSUER_URL"))?;
    let fallback = match (&args.client_id, &args.redirect_uri) {
        (Some(id), Some(redirect)) => {
            let url: openidconnect::url::Url =
                redirect.parse().map_err(|e| anyhow::anyhow!("OIDC_REDIRECT_URI is not a URL: {e}"))?;
            if url.scheme() != "https" && !insecure_http {
                bail!("OIDC_REDIRECT_URI must be https (plain HTTP only with OPENCRANE_INSECURE_HTTP on loopback)");
            }
            let client = ClientConfig {
                client_id: id.clone(),
                client_secret: args.client_secret.clone(),
                extra_scopes: Vec::new(),
            };
            Some((client, redirect.clone()))
        }
        (Some(_), None) => return Err(missing("OIDC_REDIRECT_URI")),
        (None, Some(_)) => return Err(missing("OIDC_CLIENT_ID")),
        (None, None) => None,
    };
    if fallback.is_none() && (matches!(scope, Scope::Fleet) || org.is_none()) {
        return Err(missing("OIDC_CLIENT_ID"));
    }
    let provider = Provider::new(issuer, Duration::from_secs(60)).map_err(|e| anyhow::anyhow!(e))?;
    let policy = SignInPolicy {
        scopes: args.scopes.split_whitespace().map(str::to_owned).collect(),
        groups_claim: args.groups_claim.clone(),
        roles_claim: args.roles_claim.clone(),
        allowed_email_domains: args
            .allowed_email_domains
            .iter()
            .map(|d| d.trim().to_ascii_lowercase())
            .filter(|d| !d.is_empty())
            .collect(),
        allowed_emails: args
            .allowed_emails
            .iter()
            .map(|e| e.trim().to_ascii_lowercase())
            .filter(|e| !e.is_empty())
            .collect(),
        operator_groups: args
            .platform_operator_groups
            .iter()
            .map(|g| g.trim().to_owned())
            .filter(|g| !g.is_empty())
            .collect(),
        operator_seed_email: args
            .platform_operator_seed_email
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_ascii_lowercase),
    };
    Ok(Some(OidcSetup { provider, policy, fallback, org, post_logout_redirect: args.post_logout_redirect_uri.clone() }))
}

/// Opens the pool and, if asked, applies migrations, waiting up to a minute for the database to
/// come up (a pod may start before its database does).
pub async fn open_database(args: &DbArgs, schema: Schema) -> anyhow::Result<PgPool> {
    let settings = PoolSettings { max_connections: args.db_max_connections, ..PoolSettings::default() };
    let pool = opencrane_db::connect_lazy(&args.database_url, &settings).context("parsing DATABASE_URL")?;
    if args.migrate_on_start {
        migrate_with_retry(&pool, schema).await?;
    }
    Ok(pool)
}

/// Applies `schema`'s migrations, retrying while the database is unreachable.
pub async fn migrate_with_retry(pool: &PgPool, schema: Schema) -> anyhow::Result<()> {
    let mut attempt = 0;
    loop {
        match opencrane_db::migrate(pool, schema).await {
            Ok(()) => {
                tracing::info!(schema = schema.as_str(), "database schema is up to date");
                return Ok(());
            }
            Err(MigrateError::Execute(err)) if opencrane_db::is_unavailable(&err) && attempt < 30 => {
                attempt += 1;
                tracing::warn!(schema = schema.as_str(), attempt, error = %err, "database not reachable yet; retrying in 2 s");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(err) => return Err(err).with_context(|| format!("applying the {} migrations", schema.as_str())),
        }
    }
}

/// Binds `addr` and serves `state`'s role until `shutdown` resolves.
pub async fn serve_role(
    state: AppState,
    auth: AuthConfig,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (is the port in use? choose another with --port)"))?;
    serve_on(listener, state, auth, shutdown).await
}

/// Serves `state`'s role on an already bound listener.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    state: AppState,
    auth: AuthConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let role = state.role();
    let addr = listener.local_addr()?;
    tracing::info!(role = role.as_str(), %addr, "listening");
    let pool = state.pool.clone();
    http::serve(listener, http::router(state, auth), shutdown).await.context("serving HTTP")?;
    pool.close().await;
    tracing::info!(role = role.as_str(), "stopped");
    Ok(())
}

/// The silo portal's runtime: the secret box, and the LiteLLM reconciler (spawned until `stop`)
/// when an endpoint is configured. Misconfiguration fails the start with the variable named.
pub fn start_portal(
    silo: &str,
    pool: &PgPool,
    args: &crate::cli::PortalArgs,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<app::state::PortalRuntime> {
    use anyhow::Context as _;
    let secrets = match args.credentials_key.as_deref().filter(|k| !k.trim().is_empty()) {
        Some(key) => Some(std::sync::Arc::new(
            opencrane_portal::seal::SecretBox::from_base64(key).context("OPENCRANE_CREDENTIALS_KEY")?,
        )),
        None => None,
    };
    let Some(endpoint) = args.litellm_endpoint.as_deref().filter(|e| !e.trim().is_empty()) else {
        return Ok(app::state::PortalRuntime { secrets, litellm: None, triggers: Vec::new() });
    };
    let master = args
        .litellm_master_key
        .as_deref()
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| anyhow::anyhow!("LITELLM_MASTER_KEY is required with LITELLM_ENDPOINT"))?;
    let sealing = secrets.clone().ok_or_else(|| {
        anyhow::anyhow!("OPENCRANE_CREDENTIALS_KEY is required with LITELLM_ENDPOINT (it seals the users' keys)")
    })?;
    let client = opencrane_portal::litellm::LiteLlm::new(endpoint, master).context("LITELLM_ENDPOINT")?;
    let reconciler = opencrane_portal::reconcile::Reconciler::new(silo, pool.clone(), client, sealing);
    let trigger = reconciler.trigger();
    tokio::spawn(async move {
        tokio::select! {
            () = reconciler.run() => {}
            _ = stop.wait_for(|s| *s) => {}
        }
    });
    Ok(app::state::PortalRuntime { secrets, litellm: Some(endpoint.to_owned()), triggers: vec![trigger] })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn fleet(extra: &[&str]) -> FleetArgs {
        let mut argv = vec!["opencrane", "fleet-manager", "--database-url", "postgres://x/y"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::FleetManager(args) => args,
            _ => unreachable!("parsed the fleet-manager command"),
        }
    }

    fn config(args: &FleetArgs, bind: &str) -> anyhow::Result<AuthConfig> {
        auth_config(&args.auth, format!("{bind}:8080").parse().unwrap(), Vec::new(), Scope::Fleet, None)
    }

    #[test]
    fn partial_oidc_configuration_names_what_is_missing() {
        let issuer_only = config(&fleet(&["--oidc-issuer-url", "https://idp.test"]), "0.0.0.0").unwrap_err();
        assert!(issuer_only.to_string().contains("OIDC_CLIENT_ID"), "{issuer_only}");
        let no_redirect =
            config(&fleet(&["--oidc-issuer-url", "https://idp.test", "--oidc-client-id", "c"]), "0.0.0.0").unwrap_err();
        assert!(no_redirect.to_string().contains("OIDC_REDIRECT_URI"), "{no_redirect}");
        let no_issuer =
            config(&fleet(&["--oidc-client-id", "c", "--oidc-redirect-uri", "https://a/cb"]), "0.0.0.0").unwrap_err();
        assert!(no_issuer.to_string().contains("OIDC_ISSUER_URL"), "{no_issuer}");
        let plain =
            ["--oidc-issuer-url", "https://idp.test", "--oidc-client-id", "c", "--oidc-redirect-uri", "http://a/cb"];
        assert!(config(&fleet(&plain), "0.0.0.0").unwrap_err().to_string().contains("https"));
        let complete =
            ["--oidc-issuer-url", "https://idp.test", "--oidc-client-id", "c", "--oidc-redirect-uri", "https://a/cb"];
        let auth = config(&fleet(&complete), "0.0.0.0").unwrap();
        assert!(auth.0.oidc.is_some() && auth.0.secure);
        assert!(config(&fleet(&[]), "0.0.0.0").unwrap().0.oidc.is_none(), "no OIDC settings: sign-in off");
    }

    #[test]
    fn loopback_only_switches_are_refused_elsewhere() {
        let dev = fleet(&["--dev-identity", "true"]);
        assert!(config(&dev, "0.0.0.0").unwrap_err().to_string().contains("loopback"));
        assert!(config(&dev, "127.0.0.1").is_ok());
        let insecure = fleet(&["--insecure-http", "true"]);
        assert!(config(&insecure, "10.0.0.5").unwrap_err().to_string().contains("loopback"));
        assert!(!config(&insecure, "127.0.0.1").unwrap().0.secure);
        let short = fleet(&["--api-token", "short"]);
        assert!(config(&short, "0.0.0.0").unwrap_err().to_string().contains("too short"));
        let proxies = fleet(&["--trusted-proxies", "10.0.0.0/8,nonsense"]);
        assert!(config(&proxies, "0.0.0.0").unwrap_err().to_string().contains("OPENCRANE_TRUSTED_PROXIES"));
    }
}
