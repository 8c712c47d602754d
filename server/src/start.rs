//! Start-up both roles share: sign-in configuration, the database and its migrations, the Leptos
//! options, the session sweeper and serving the HTTP stack until shutdown. `fleet`, `silo` and
//! `dev` build on these pieces.

use std::{net::SocketAddr, path::Path, time::Duration};

use anyhow::{Context as _, bail};
use app::state::AppState;
use leptos::config::{Env, LeptosOptions};
use opencrane_db::{PgPool, PoolSettings, Schema};
use sqlx::migrate::MigrateError;

use crate::{
    cli::{AuthArgs, DbArgs, OidcArgs},
    http::{
        self, AuthConfig,
        auth::{
            AuthInner, OidcSetup, OrgClient, Scope,
            oidc::{ClientConfig, Provider, SignInPolicy},
        },
        ratelimit::RateLimiter,
    },
};

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
    let bundles = [app::Role::Fleet, app::Role::Silo].map(|role| format!("{}.wasm", app::bundle::stem(role)));
    if !bundles.iter().all(|wasm| site_root.join("pkg").join(wasm).is_file()) {
        tracing::warn!(
            site_root = %site_root.display(),
            "the browser bundles (pkg/opencrane-fleet.wasm, pkg/opencrane-silo.wasm) are missing: pages \
             render and forms post, but nothing reacts in the browser until they are built; `cargo xtask dev` \
             builds them"
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
    let api_token = args.api_token();
    if let Some(token) = api_token.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
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
    serve_on(bind(addr, "--port").await?, state, auth, shutdown).await
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
    crate::metrics::register(role, &pool);
    let activity = crate::idle::Activity::default();
    let forget = {
        let state = state.clone();
        move || state.forget_kept_answers()
    };
    tokio::spawn(crate::idle::give_back_when_quiet(pool.clone(), activity.clone(), crate::idle::PERIOD, forget));
    let router = activity.count_requests(http::router(state, auth));
    let served = http::serve(listener, router, shutdown).await.context("serving HTTP");
    crate::metrics::unregister(&pool);
    served?;
    pool.close().await;
    tracing::info!(role = role.as_str(), "stopped");
    Ok(())
}

/// Resolves once `stop` turns `true` (or its sender is gone): the shutdown of a task told by a
/// `watch` channel.
pub async fn stopped(mut stop: tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Serves the fleet: its role on `public`, its internal API for silos on `internal`, both until
/// `shutdown` resolves.
pub async fn serve_fleet_on(
    public: tokio::net::TcpListener,
    internal: tokio::net::TcpListener,
    state: AppState,
    auth: AuthConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (stop, stopping) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    tracing::info!(addr = %internal.local_addr()?, "internal API listening");
    let router = http::internal_router(state.clone(), auth.clone());
    let internal = tokio::spawn(http::serve(internal, router, stopped(stopping.clone())));
    let served = serve_on(public, state, auth, stopped(stopping)).await;
    internal.await.context("the internal API's task failed")?.context("serving the internal API")?;
    served
}

/// Binds the `/metrics` listener on `--metrics-port` (unless 0) and serves it in the background
/// until the process ends; answers its address.
pub async fn spawn_metrics(http: &crate::cli::HttpArgs) -> anyhow::Result<Option<SocketAddr>> {
    if http.metrics_port == 0 {
        return Ok(None);
    }
    let listener = bind(SocketAddr::new(http.bind, http.metrics_port), "--metrics-port").await?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "metrics listening on /metrics");
    tokio::spawn(async move {
        if let Err(err) = crate::metrics::serve(listener, std::future::pending()).await {
            tracing::error!(error = %err, "the metrics listener stopped");
        }
    });
    Ok(Some(addr))
}

/// Binds `addr`, naming the flag that chooses it when it is taken.
pub async fn bind(addr: SocketAddr, flag: &str) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (is the port in use? choose another with {flag})"))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command, FleetArgs};

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
