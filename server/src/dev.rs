//! `opencrane dev`: the embedded default. With no configuration it starts a private PostgreSQL
//! from the installed server binaries, creates and migrates the fleet database, serves the
//! fleet-manager on 127.0.0.1:3000 and runs the local provisioner: every ClusterTenant (the
//! seeded demo one and every one created in the console) gets its own database and role and its
//! own clustertenant-manager on a port from 3001 up — all in this one process. Ctrl-C stops the
//! servers, then PostgreSQL.
//!
//! Sign-in is the explicit development identity (loopback only). A development API token is kept
//! in `<state dir>/token` for scripting the REST API; it exists only in this mode.

use std::{
    fs,
    io::Write as _,
    net::{Ipv4Addr, SocketAddr},
    os::unix::fs::{OpenOptionsExt, PermissionsExt},
    path::Path,
    sync::Arc,
    time::Duration,
};

use anyhow::{Context as _, anyhow};
use app::model::principal::Principal;
use leptos::config::Env;
use opencrane_db::{PoolSettings, Schema};
use opencrane_localpg::LocalPostgres;
use serde_json::json;
use tokio::sync::watch;

use app::service::fleet::migrations::MigrationRuntime;
use opencrane_provision::local::{LocalBackend, LocalServer, SiloHost as _};

use crate::{
    cli::ProvisionerKind,
    cli::{AuthArgs, DevArgs},
    fleet::{self, provisioner},
    http::{
        self,
        auth::{OrgClient, Scope, oidc::ClientConfig},
    },
    links, start,
};

mod key_file;
mod silo_host;

pub use silo_host::{DevSiloHost, DevSiloSettings};

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

/// The identity plane of `opencrane dev`, when `--zitadel-mgmt-api-url` is given: the key is
/// the one a rotation left in the state directory, else the flag's; rotated keys go there too.
/// Organisations' login apps call back to `<name>.<PLATFORM_BASE_DOMAIN>` (default `localhost`).
fn dev_identity(
    args: &DevArgs,
) -> anyhow::Result<Option<(app::service::fleet::identity::IdentityRuntime, Option<Duration>)>> {
    let files = key_file::KeyFiles::new(args.state_dir.clone());
    let mut zitadel = args.zitadel.clone();
    if zitadel.mgmt_api_url.is_some() {
        let rotated = files.path(app::service::fleet::identity::KeySlot::Active);
        if rotated.is_file() {
            zitadel.sa_key = None;
            zitadel.sa_key_file = Some(rotated);
        }
    }
    let Some(link) = links::zitadel_link(&zitadel, None)? else { return Ok(None) };
    let client = opencrane_zitadel::Client::new(&link.api_url, &link.key, opencrane_zitadel::Timeouts::default())
        .map_err(|e| anyhow!("ZITADEL_MGMT_SA_KEY: {e}"))?;
    client.set_trace_headers(crate::telemetry::header_hook());
    let base = args.platform_base_domain.clone().unwrap_or_else(|| "localhost".into());
    let plane = Arc::new(opencrane_provision::identity::IdentityPlane::new(client, base));
    let store: Arc<dyn app::service::fleet::identity::KeyStore> = Arc::new(files);
    let mut runtime = app::service::fleet::identity::IdentityRuntime::new(plane, Some(store));
    runtime.grace = chrono::TimeDelta::hours(i64::from(link.rotation_grace_hours));
    Ok(Some((runtime, link.reconcile_interval)))
}

/// The fleet's database on the dev PostgreSQL.
pub const FLEET_DATABASE: &str = "opencrane_fleet";

async fn serve_everything(args: &DevArgs, postgres: &LocalPostgres) -> anyhow::Result<()> {
    let fleet_db = FLEET_DATABASE;
    let admin_url = postgres.url("postgres");
    opencrane_db::ensure_database(&admin_url, fleet_db)
        .await
        .with_context(|| format!("creating database {fleet_db}"))?;
    close_to_silo_roles(&admin_url, &[fleet_db, "postgres"]).await?;
    let fleet_pool = opencrane_db::connect_lazy(&postgres.url(fleet_db), &PoolSettings::default())?;
    start::migrate_with_retry(&fleet_pool, Schema::Fleet).await?;
    seed_demo(&fleet_pool, &args.demo_silo).await?;

    let token = load_or_create_token(&args.state_dir)?;
    // Plain HTTP on loopback and the dev token; the development identity unless a real provider
    // is configured.
    let sign_in = args.oidc.issuer_url.is_some();
    let fleet_args = AuthArgs {
        oidc: args.oidc.clone(),
        insecure_http: true,
        trusted_proxies: Vec::new(),
        api_token: None,
        api_token_file: None,
        dev_identity: !sign_in,
    };
    let dev_token = || vec![("dev".to_owned(), token.clone())];
    let loopback = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let fleet_auth = start::auth_config(&fleet_args, loopback, dev_token(), Scope::Fleet, None)?;
    let fleet_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let fleet_listener = tokio::net::TcpListener::bind(fleet_addr)
        .await
        .with_context(|| format!("port {} is not free; choose another with --port", args.port))?;
    let fleet_addr = fleet_listener.local_addr()?;
    // The internal API for the silos, on a loopback port of its own (as in a cluster).
    let internal_listener = start::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), "--port").await?;
    let internal_addr = internal_listener.local_addr()?;
    // One process serves every role here, so one /metrics shows them all (by their `role` label).
    let metrics_listener = start::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), "--port").await?;
    let metrics_addr = metrics_listener.local_addr()?;
    tokio::spawn(crate::metrics::serve(metrics_listener, std::future::pending()));
    fleet::price_unpriced_months(&fleet_pool).await?;
    let mut fleet = fleet::fleet_state(
        start::leptos_options(&args.site_root, fleet_addr, Env::DEV),
        fleet_pool.clone(),
        args.platform_base_domain.clone(),
        true,
        true,
        sign_in,
    );
    let zitadel = dev_identity(args)?;
    let identity_plane = zitadel.as_ref().map(|(runtime, _)| runtime.plane.clone());
    let reconcile_interval = zitadel.as_ref().and_then(|(_, every)| *every);
    if let (app::state::RoleSettings::Fleet(settings), Some((runtime, _))) = (&mut fleet.role, zitadel) {
        settings.identity = Some(runtime);
        fleet::spawn_identity_loops(fleet.clone(), None, reconcile_interval);
    }
    let (_stop_probes, probes_stop) = tokio::sync::watch::channel(false);
    // The issuer and the vanity Certificates live on a cluster: only with one (the Kubernetes
    // provisioner, or --manage-issuer against the kube context).
    let kube = if args.cluster.manage_issuer || args.provisioner == ProvisionerKind::Kubernetes {
        let client = opencrane_provision::kubernetes::default_client().await;
        if let Err(err) = &client {
            tracing::warn!(error = %err, "no Kubernetes configuration: the platform issuer is not shown");
        }
        client.ok()
    } else {
        None
    };
    let dns = args.dns_probe.settings(args.platform_base_domain.as_deref(), args.cluster.ingress_ip);
    fleet::attach_dns_probes(&mut fleet, dns, kube.clone(), probes_stop);
    fleet::attach_platform_dns(&mut fleet, args.cluster.issuer_settings(), kube);

    // The demo organisation's own client (per-host sign-in on `<demo>.<base>`), when configured.
    let org_client = args.silo_org_client_id.clone().filter(|_| sign_in).map(|client_id| {
        let org = OrgClient {
            client: ClientConfig {
                client_id,
                client_secret: None,
                extra_scopes: args.silo_org_id.iter().map(|id| format!("urn:zitadel:iam:org:id:{id}")).collect(),
            },
            hosts: args.platform_base_domain.iter().map(|base| format!("{}.{base}", args.demo_silo)).collect(),
        };
        (args.demo_silo.clone(), org)
    });
    let credentials_key = match args.portal.credentials_key() {
        Some(key) => key,
        None => load_or_create_credentials_key(&args.state_dir)?,
    };
    let host = DevSiloHost::new(DevSiloSettings {
        site_root: args.site_root.clone(),
        base_domain: args.platform_base_domain.clone(),
        auth: fleet_args.clone(),
        dev_token: token.clone(),
        fleet_console: format!("http://{fleet_addr}"),
        fleet_url: format!("http://{internal_addr}"),
        first_port: args.silo_port,
        org_client,
        portal: crate::cli::PortalArgs { credentials_key: Some(credentials_key.clone()), ..args.portal.clone() },
    });
    for name in opencrane_fleet_db::provisioning::live_names(&fleet_pool).await? {
        if let Some(url) = opencrane_fleet_db::cluster_tenants::get(&fleet_pool, &name).await?.silo_url {
            host.remember(&name, &url);
        }
    }
    let local = Arc::new(
        LocalBackend::new(
            LocalServer {
                host: Ipv4Addr::LOCALHOST.to_string(),
                port: postgres.port(),
                superuser: opencrane_localpg::SUPERUSER.to_owned(),
                password: postgres.password().to_owned(),
            },
            host,
        )
        .context("connecting the local provisioner to PostgreSQL")?,
    );
    let backend: Arc<dyn opencrane_provision::Backend> = match args.provisioner {
        ProvisionerKind::Off => {
            anyhow::bail!("`opencrane dev` provisions its silos: use --provisioner local or kubernetes")
        }
        ProvisionerKind::Local => local.clone(),
        ProvisionerKind::Kubernetes => {
            let truth = fleet.fleet().ok().and_then(|f| f.dns.clone());
            let base = args.platform_base_domain.as_deref();
            match provisioner::kubernetes_backend(base, None, &args.cluster, args.oidc.issuer_url.as_deref(), truth)
                .await
            {
                Ok(backend) => backend,
                Err(unavailable) => Arc::new(unavailable),
            }
        }
    };

    if let Some(url) = &args.shared_source.url {
        // The `/migrations` page copies into the local silos' databases on this PostgreSQL.
        let server = sqlx::postgres::PgConnectOptions::new()
            .host("127.0.0.1")
            .port(postgres.port())
            .username(opencrane_localpg::SUPERUSER)
            .password(postgres.password());
        let silos = Arc::new(crate::migrate_shared::DevSilos::new(server, Some(credentials_key.clone())));
        let runtime = match args.provisioner {
            ProvisionerKind::Local => MigrationRuntime::new(url, silos),
            ProvisionerKind::Kubernetes | ProvisionerKind::Off => MigrationRuntime::unavailable(
                url,
                "Under opencrane dev the migration copies into the local provisioner's silos; run it with --provisioner local.",
            ),
        }
        .map_err(anyhow::Error::msg)?;
        if let app::state::RoleSettings::Fleet(settings) = &mut fleet.role {
            settings.migration = Some(runtime);
        }
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        http::shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let stopped = start::stopped;
    // Without --zitadel-mgmt-api-url the identity step says so and the silos use the dev login.
    let worker = tokio::spawn(provisioner::run(fleet_pool.clone(), backend, identity_plane, stopped(stop_rx.clone())));
    let fleet_server = tokio::spawn(start::serve_fleet_on(
        fleet_listener,
        internal_listener,
        fleet,
        fleet_auth,
        stopped(stop_rx.clone()),
    ));

    let demo_url = match args.provisioner {
        ProvisionerKind::Local => wait_for_silo(local.host(), &args.demo_silo, Duration::from_secs(60)).await,
        ProvisionerKind::Kubernetes | ProvisionerKind::Off => None,
    };
    let token_path = args.state_dir.join("token");
    println!(
        "\nOpenCrane dev is running.\n  Fleet console   http://{fleet_addr}\n  Demo silo       {demo}   (customer “{silo}”)\n  \
         New customers   are provisioned by the {provisioner} provisioner; “Open silo” on their page\n  \
         Signed in as    {who}\n  API token       {token}\n                  (in {tpath}; accepted as a bearer token in dev mode only)\n  \
         Try             curl -H \"Authorization: Bearer $(cat {tpath})\" http://{fleet_addr}/api/v1/cluster-tenants\n  \
         Metrics         fleet http://{metrics_addr}/metrics (role=\"fleet\"), silos the same URL (role=\"silo\")\n  \
         PostgreSQL      127.0.0.1:{pg_port}, data in {pg_root}\nPress Ctrl-C to stop.\n",
        demo = demo_url.unwrap_or_else(|| "(not provisioned yet; see its page in the fleet console)".into()),
        silo = args.demo_silo,
        provisioner = match args.provisioner {
            ProvisionerKind::Local => "local",
            ProvisionerKind::Kubernetes => "kubernetes",
            ProvisionerKind::Off => "no",
        },
        who = if sign_in {
            "whoever signs in through the configured provider"
        } else {
            "the development operator (loopback only)"
        },
        tpath = token_path.display(),
        pg_port = postgres.port(),
        pg_root = postgres.root().display(),
    );

    let fleet_result = fleet_server.await.context("the fleet server task failed")?;
    let _ = worker.await;
    local.host().stop_all().await;
    fleet_result
}

/// Waits until the silo `name` is served (the provisioner's first pass), for the banner.
async fn wait_for_silo(host: &DevSiloHost, name: &str, patience: Duration) -> Option<String> {
    let deadline = tokio::time::Instant::now() + patience;
    while tokio::time::Instant::now() < deadline {
        if let Some(url) = host.url(name) {
            return Some(url);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Revokes `CONNECT` from `PUBLIC` on `databases`, so that the silos' roles cannot open the fleet
/// registry (or the maintenance database); only the superuser and each database's owner can.
async fn close_to_silo_roles(admin_url: &str, databases: &[&str]) -> anyhow::Result<()> {
    use sqlx::Executor as _;
    let admin = opencrane_db::connect_lazy(admin_url, &PoolSettings { max_connections: 1, ..PoolSettings::default() })?;
    for db in databases {
        let sql = format!("REVOKE CONNECT, TEMPORARY ON DATABASE \"{}\" FROM PUBLIC", db.replace('"', "\"\""));
        admin.execute(sql.as_str()).await.with_context(|| format!("closing database {db} to other roles"))?;
    }
    admin.close().await;
    Ok(())
}

/// Creates the demo ClusterTenant (owned by the development identity) in the fleet registry; the
/// local provisioner then provisions its silo like any other.
async fn seed_demo(fleet: &sqlx::PgPool, name: &str) -> anyhow::Result<()> {
    use opencrane_fleet_db::{cluster_tenants, memberships};
    match cluster_tenants::get(fleet, name).await {
        Ok(_) => Ok(()),
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
                suspended: false,
                termination_policy: "Retain",
                silo_version: None,
            };
            let mut tx = fleet.begin().await?;
            cluster_tenants::insert(&mut *tx, name, &desired).await?;
            memberships::upsert(&mut tx, name, Principal::DEV_SUBJECT, "owner").await?;
            opencrane_fleet_db::provisioning::notify(&mut *tx, name).await?;
            tx.commit().await?;
            tracing::info!(cluster_tenant.name = name, "seeded the demo customer");
            Ok(())
        }
        Err(other) => Err(other).context("reading the demo customer"),
    }
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
    write_secret(&path, &token)?;
    Ok(token)
}

/// The dev silos' credentials key, created once in the state directory (0600) so that sealed
/// provider keys still open after a restart.
fn load_or_create_credentials_key(state_dir: &Path) -> anyhow::Result<String> {
    let path = state_dir.join("credentials.key");
    if let Ok(existing) = fs::read_to_string(&path)
        && opencrane_portal::seal::SecretBox::from_base64(existing.trim()).is_ok()
    {
        return Ok(existing.trim().to_owned());
    }
    let key = opencrane_portal::seal::SecretBox::generate_base64().map_err(|e| anyhow!("{e}"))?;
    write_secret(&path, &key)?;
    Ok(key)
}

/// Writes a secret to a file only its owner can read (0600), replacing what was there.
fn write_secret(path: &Path, secret: &str) -> anyhow::Result<()> {
    let mut file = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    writeln!(file, "{secret}")?;
    Ok(())
}
