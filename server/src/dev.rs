//! `opencrane dev`: the embedded default. With no configuration it starts a private PostgreSQL
//! from the installed server binaries, creates and migrates the fleet database and one demo
//! silo's database, and serves the fleet-manager on 127.0.0.1:3000 and the demo silo's
//! clustertenant-manager on its own port — all in this one process. Ctrl-C stops the servers,
//! then PostgreSQL.
//!
//! Sign-in is the explicit development identity (loopback only). A development API token is kept
//! in `<state dir>/token` for scripting the REST API; it exists only in this mode.

use std::{
    fs,
    io::Write as _,
    net::{Ipv4Addr, SocketAddr},
    os::unix::fs::{OpenOptionsExt, PermissionsExt},
    path::Path,
};

use anyhow::{Context as _, anyhow};
use app::model::principal::Principal;
use leptos::config::Env;
use opencrane_db::{PoolSettings, Schema};
use opencrane_localpg::LocalPostgres;
use serde_json::json;
use tokio::sync::watch;

use crate::{
    cli::{AuthArgs, DevArgs, OidcArgs},
    http::{
        self,
        auth::{OrgClient, Scope, oidc::ClientConfig},
    },
    roles,
};

/// Runs the development environment until Ctrl-C.
pub async fn run(args: DevArgs) -> anyhow::Result<()> {
    fs::create_dir_all(&args.state_dir).with_context(|| format!("creating {}", args.state_dir.display()))?;
    let pg_dir = args.state_dir.join("postgres");
    tracing::info!(dir = %pg_dir.display(), "starting PostgreSQL");
    let postgres = tokio::task::spawn_blocking(move || LocalPostgres::start(&pg_dir))
        .await
        .context("the PostgreSQL start-up task failed")?
        .map_err(|e| anyhow!("cannot start the local PostgreSQL: {e}"))?;

    let result = serve_everything(&args, &postgres).await;
    tracing::info!("stopping PostgreSQL");
    tokio::task::spawn_blocking(move || postgres.stop())
        .await
        .context("the PostgreSQL stop task failed")?
        .map_err(|e| anyhow!("stopping PostgreSQL: {e}"))?;
    result
}

async fn serve_everything(args: &DevArgs, postgres: &LocalPostgres) -> anyhow::Result<()> {
    let fleet_db = "opencrane_fleet";
    let silo_db = format!("opencrane_silo_{}", args.demo_silo.replace('-', "_"));
    for db in [fleet_db, silo_db.as_str()] {
        opencrane_db::ensure_database(&postgres.url("postgres"), db)
            .await
            .with_context(|| format!("creating database {db}"))?;
    }
    let settings = PoolSettings::default();
    let fleet_pool = opencrane_db::connect_lazy(&postgres.url(fleet_db), &settings)?;
    let silo_pool = opencrane_db::connect_lazy(&postgres.url(&silo_db), &settings)?;
    roles::migrate_with_retry(&fleet_pool, Schema::Fleet).await?;
    roles::migrate_with_retry(&silo_pool, Schema::Silo).await?;
    seed_demo(&fleet_pool, &silo_pool, &args.demo_silo).await?;

    let token = load_or_create_token(&args.state_dir)?;
    // Plain HTTP on loopback and the dev token; the development identity unless a real provider
    // is configured.
    let sign_in = args.oidc.issuer_url.is_some();
    let fleet_args = AuthArgs {
        oidc: args.oidc.clone(),
        insecure_http: true,
        trusted_proxies: Vec::new(),
        api_token: None,
        dev_identity: !sign_in,
    };
    // The demo silo signs in with its organisation's client only (the configured client's
    // redirect URI points at the fleet).
    let org = args.silo_org_client_id.clone().filter(|_| sign_in).map(|client_id| OrgClient {
        client: ClientConfig {
            client_id,
            client_secret: None,
            extra_scopes: args.silo_org_id.iter().map(|id| format!("urn:zitadel:iam:org:id:{id}")).collect(),
        },
        hosts: args.platform_base_domain.iter().map(|base| format!("{}.{base}", args.demo_silo)).collect(),
    });
    let silo_args = AuthArgs {
        oidc: OidcArgs {
            issuer_url: args.oidc.issuer_url.clone().filter(|_| org.is_some()),
            client_id: None,
            client_secret: None,
            redirect_uri: None,
            ..args.oidc.clone()
        },
        ..fleet_args.clone()
    };
    let dev_token = || vec![("dev".to_owned(), token.clone())];
    let loopback = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let fleet_auth = roles::auth_config(&fleet_args, loopback, dev_token(), Scope::Fleet, None)?;
    let silo_scope =
        Scope::Silo { cluster_tenant: args.demo_silo.clone(), org_admin_groups: args.oidc.org_admin_groups.clone() };
    let silo_auth = roles::auth_config(&silo_args, loopback, dev_token(), silo_scope, org)?;
    let fleet_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let silo_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.silo_port));
    let fleet_listener = tokio::net::TcpListener::bind(fleet_addr)
        .await
        .with_context(|| format!("port {} is not free; choose another with --port", args.port))?;
    let silo_listener = tokio::net::TcpListener::bind(silo_addr)
        .await
        .with_context(|| format!("port {} is not free; choose another with --silo-port", args.silo_port))?;
    let fleet_addr = fleet_listener.local_addr()?;
    let silo_addr = silo_listener.local_addr()?;

    let fleet = roles::fleet_state(
        roles::leptos_options(&args.site_root, fleet_addr, Env::DEV),
        fleet_pool,
        args.platform_base_domain.clone(),
        true,
        true,
        sign_in,
    );
    let silo = roles::silo_state(
        roles::leptos_options(&args.site_root, silo_addr, Env::DEV),
        silo_pool,
        args.demo_silo.clone(),
        args.platform_base_domain.clone(),
        silo_auth.0.oidc.is_some(),
    );

    let token_path = args.state_dir.join("token");
    println!(
        "\nOpenCrane dev is running.\n  Fleet console   http://{fleet_addr}\n  Demo silo       http://{silo_addr}   (customer “{silo}”)\n  \
         Signed in as    {who}\n  API token       {token}\n                  (in {tpath}; accepted as a bearer token in dev mode only)\n  \
         Try             curl -H \"Authorization: Bearer $(cat {tpath})\" http://{fleet_addr}/api/v1/cluster-tenants\n  \
         PostgreSQL      127.0.0.1:{pg_port}, data in {pg_root}\nPress Ctrl-C to stop.\n",
        silo = args.demo_silo,
        who = if sign_in {
            "whoever signs in through the configured provider"
        } else {
            "the development operator (loopback only)"
        },
        tpath = token_path.display(),
        pg_port = postgres.port(),
        pg_root = postgres.root().display(),
    );

    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        http::shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let (fleet_result, silo_result) = tokio::join!(
        roles::serve_on(fleet_listener, fleet, fleet_auth, stopped(stop_rx.clone())),
        roles::serve_on(silo_listener, silo, silo_auth, stopped(stop_rx)),
    );
    fleet_result.and(silo_result)
}

/// Creates the demo ClusterTenant (owned by the development identity) in the fleet registry and
/// mirrors its membership into the silo's read-model, as the fleet's projection would.
async fn seed_demo(fleet: &sqlx::PgPool, silo: &sqlx::PgPool, name: &str) -> anyhow::Result<()> {
    use opencrane_fleet_db::{cluster_tenants, memberships};
    match cluster_tenants::get(fleet, name).await {
        Ok(_) => {}
        Err(opencrane_db::Error::NotFound) => {
            let quota = json!({});
            let desired = cluster_tenants::DesiredState {
                display_name: "Demo Org",
                vanity_domain: None,
                isolation_tier: "shared",
                compute_mode: "shared",
                node_pool: None,
                quota: &quota,
                seat_cap: Some(25),
            };
            let mut tx = fleet.begin().await?;
            cluster_tenants::insert(&mut *tx, name, &desired).await?;
            memberships::upsert(&mut tx, name, Principal::DEV_SUBJECT, "owner").await?;
            tx.commit().await?;
            tracing::info!(cluster_tenant.name = name, "seeded the demo customer");
        }
        Err(other) => return Err(other).context("reading the demo customer"),
    }
    for m in memberships::list(fleet, name).await? {
        opencrane_silo_db::memberships::upsert(silo, name, &m.subject, &m.role, &m.status).await?;
    }
    Ok(())
}

/// Reads the dev token, or creates one (`ocd_` + 32 hex digits, file mode 0600).
fn load_or_create_token(state_dir: &Path) -> anyhow::Result<String> {
    let path = state_dir.join("token");
    if let Ok(existing) = fs::read_to_string(&path) {
        let existing = existing.trim();
        if existing.starts_with("ocd_") && existing.len() >= 36 {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
            return Ok(existing.to_owned());
        }
    }
    let token = format!("ocd_{}", opencrane_localpg::random_hex(16).map_err(|e| anyhow!("{e}"))?);
    let mut file = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    writeln!(file, "{token}")?;
    Ok(token)
}
