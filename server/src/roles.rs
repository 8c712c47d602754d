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
    cli::{AuthArgs, DbArgs, FleetArgs, SiloArgs},
    http::{self, AuthConfig},
};

/// Runs the fleet-manager until SIGTERM or Ctrl-C.
pub async fn run_fleet(args: FleetArgs) -> anyhow::Result<()> {
    let addr = SocketAddr::new(args.http.bind, args.http.port);
    let auth = auth_config(&args.auth, addr, Vec::new())?;
    let pool = open_database(&args.db, Schema::Fleet).await?;
    let state = fleet_state(
        leptos_options(&args.http.site_root, addr, Env::PROD),
        pool,
        args.platform_base_domain,
        args.cluster_tenant_manager_enabled,
        args.billing_enabled,
    );
    serve_role(state, auth, addr, http::shutdown_signal()).await
}

/// Runs the clustertenant-manager until SIGTERM or Ctrl-C.
pub async fn run_silo(args: SiloArgs) -> anyhow::Result<()> {
    let addr = SocketAddr::new(args.http.bind, args.http.port);
    let auth = auth_config(&args.auth, addr, Vec::new())?;
    let pool = open_database(&args.db, Schema::Silo).await?;
    let state = silo_state(
        leptos_options(&args.http.site_root, addr, Env::PROD),
        pool,
        args.cluster_tenant,
        args.platform_base_domain,
    );
    serve_role(state, auth, addr, http::shutdown_signal()).await
}

/// The fleet's state.
pub fn fleet_state(
    leptos_options: LeptosOptions,
    pool: PgPool,
    base_domain: Option<String>,
    cluster_tenants_enabled: bool,
    billing_enabled: bool,
) -> AppState {
    AppState {
        leptos_options,
        pool,
        role: RoleSettings::Fleet(FleetSettings {
            cluster_tenants_enabled,
            billing_enabled,
            validation: ValidationContext { base_domain, dedicated_cluster_available: false },
        }),
    }
}

/// A silo's state.
pub fn silo_state(
    leptos_options: LeptosOptions,
    pool: PgPool,
    cluster_tenant: String,
    base_domain: Option<String>,
) -> AppState {
    AppState { leptos_options, pool, role: RoleSettings::Silo(SiloSettings { cluster_tenant, base_domain }) }
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

/// The credentials a role accepts. The development identity is refused unless `addr` is a
/// loopback address: it must never be reachable from another machine.
pub fn auth_config(args: &AuthArgs, addr: SocketAddr, mut tokens: Vec<(String, String)>) -> anyhow::Result<AuthConfig> {
    if args.dev_identity && !addr.ip().is_loopback() {
        bail!(
            "the development identity (OPENCRANE_DEV_IDENTITY) is only allowed on a loopback address, \
             but the server would listen on {}",
            addr.ip()
        );
    }
    if let Some(token) = args.api_token.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        if token.len() < 16 {
            bail!("OPENCRANE_API_TOKEN is too short to be a secret (fewer than 16 characters)");
        }
        tokens.push(("OPENCRANE_API_TOKEN".into(), token.to_owned()));
    }
    Ok(AuthConfig::new(tokens, args.dev_identity))
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
