//! The fleet-manager's wiring: its state, the provisioning backend (`provisioner`) and the
//! service layer the Kubernetes watch hands foreign resources to (`registry`).

pub mod key_store;
pub mod provisioner;
pub mod registry;

use std::net::SocketAddr;

use anyhow::bail;
use app::{
    model::fleet::cluster_tenant::ValidationContext,
    state::{AppState, FleetSettings, RoleSettings},
};
use leptos::config::{Env, LeptosOptions};
use opencrane_db::{PgPool, Schema};
use opencrane_provision::identity::IdentityPlane;

use crate::{
    cli::{FleetArgs, ProvisionerKind},
    http::{self, auth::Scope},
    links,
    start::{self, auth_config, leptos_options, open_database, spawn_session_sweeper},
};

/// The fleet's Zitadel for the identity step, when `ZITADEL_MGMT_API_URL` is set: the key must
/// sign (checked here, before anything uses it) and the platform domain must be known (the login
/// apps call back to `<customer>.<base>`).
fn identity_plane(args: &FleetArgs) -> anyhow::Result<Option<(std::sync::Arc<IdentityPlane>, links::ZitadelLink)>> {
    let Some(link) = links::zitadel_link(&args.zitadel, args.namespace.as_deref())? else { return Ok(None) };
    let Some(base) = args.platform_base_domain.clone() else {
        bail!(
            "ZITADEL_MGMT_API_URL is set: PLATFORM_BASE_DOMAIN is required (the login apps call back to <customer>.<base>)"
        )
    };
    let client = opencrane_zitadel::Client::new(&link.api_url, &link.key, opencrane_zitadel::Timeouts::default())
        .map_err(|e| anyhow::anyhow!("ZITADEL_MGMT_SA_KEY: {e}"))?;
    client.set_trace_headers(crate::telemetry::header_hook());
    tracing::info!(
        url = %link.api_url,
        key_id = %link.key.key_id,
        rotation_secret = ?link.rotation_secret,
        "Zitadel Management API configured"
    );
    Ok(Some((std::sync::Arc::new(IdentityPlane::new(client, base)), link)))
}

/// The identity plane's runtime: the Secret rotated keys are persisted in (when
/// `ZITADEL_MGMT_SECRET_NAME` is set and a cluster is reachable), and its background work —
/// the old key's revocation when a grace period ends, and the reconcile pass.
async fn identity_runtime(
    plane: std::sync::Arc<IdentityPlane>,
    link: &links::ZitadelLink,
) -> app::service::fleet::identity::IdentityRuntime {
    let store: Option<std::sync::Arc<dyn app::service::fleet::identity::KeyStore>> = match &link.rotation_secret {
        None => None,
        Some((namespace, name, key)) => match opencrane_provision::kubernetes::default_client().await {
            Ok(client) => Some(std::sync::Arc::new(key_store::SecretKeyStore::new(client, namespace, name, key))),
            Err(e) => {
                tracing::warn!(error = %e, "no Kubernetes client: the Zitadel key cannot be persisted, so rotation is refused");
                None
            }
        },
    };
    let mut runtime = app::service::fleet::identity::IdentityRuntime::new(plane, store);
    runtime.grace = chrono::TimeDelta::hours(i64::from(link.rotation_grace_hours));
    runtime
}

/// Every minute: picks up a key another replica rotated to (from the mounted key file, which the
/// kubelet refreshes from the Secret) and revokes old keys whose grace period ended; every
/// `interval`, if any, the reconcile pass.
pub(crate) fn spawn_identity_loops(
    state: AppState,
    key_file: Option<std::path::PathBuf>,
    interval: Option<std::time::Duration>,
) {
    tokio::spawn(async move {
        let mut watch = key_file.map(KeyFileWatch::new);
        let mut minutes = tokio::time::interval(std::time::Duration::from_secs(60));
        let mut passes = interval.map(|every| tokio::time::interval_at(tokio::time::Instant::now() + every, every));
        loop {
            let pass = async {
                match passes.as_mut() {
                    Some(p) => {
                        p.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = minutes.tick() => {
                    if let Some(watch) = watch.as_mut() {
                        watch.poll(&state);
                    }
                    app::service::fleet::identity::revoke_due(&state).await;
                }
                () = pass => app::service::fleet::identity::reconcile_scheduled(&state).await,
            }
        }
    });
}

/// The mounted key file, watched for a rotation made by another replica.
struct KeyFileWatch {
    path: std::path::PathBuf,
    /// The key id the file held at the last look.
    last_seen: Option<String>,
}

/// Whether a key read from the file is to be adopted: only when the *file* changed since the
/// last look (so this replica's own rotation, not yet in the file, is never undone by the old
/// content) and the key is not the one in use already.
fn adopt_from_file(last_seen: Option<&str>, in_file: &str, in_use: &str) -> bool {
    last_seen.is_some_and(|seen| seen != in_file) && in_file != in_use
}

impl KeyFileWatch {
    fn new(path: std::path::PathBuf) -> Self {
        let last_seen = Self::read(&path).map(|k| k.key_id);
        Self { path, last_seen }
    }

    fn read(path: &std::path::Path) -> Option<opencrane_zitadel::ServiceAccountKey> {
        let text = std::fs::read_to_string(path).ok()?;
        match opencrane_zitadel::ServiceAccountKey::parse(&text) {
            Ok(key) => Some(key),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "the key file is not a key; the key in use stays");
                None
            }
        }
    }

    fn poll(&mut self, state: &AppState) {
        let Ok(fleet) = state.fleet() else { return };
        let Some(runtime) = fleet.identity.as_ref() else { return };
        let Some(key) = Self::read(&self.path) else { return };
        let client = runtime.plane.client();
        if adopt_from_file(self.last_seen.as_deref(), &key.key_id, &client.key_id())
            && let Err(e) = client.swap_key(&key)
        {
            tracing::warn!(path = %self.path.display(), error = %e, "the key file holds an unusable key; the key in use stays");
        }
        self.last_seen = Some(key.key_id);
    }
}

/// The `/migrations` page's runtime on a cluster: each silo's database is closed to everything
/// but its own manager (the silo's NetworkPolicy floor), so the copy and the read-back are
/// relayed through that manager (`opencrane_migrate::relay`), which takes its customer's rows
/// from the fleet with its own credential.
fn shared_migration(
    url: &str,
    pool: &sqlx::PgPool,
) -> Result<app::service::fleet::migrations::MigrationRuntime, String> {
    let relay = opencrane_migrate::relay::Relay::new(pool.clone());
    app::service::fleet::migrations::MigrationRuntime::new(url, std::sync::Arc::new(relay))
        .map(|runtime| runtime.with_silo_storage(crate::migrate_shared::cluster_silo_storage()))
}

/// Prices the months of the last year that have usage but no kept figures (usage held before the
/// figures were kept, or written around the fleet), so the billing overview shows them. Quick
/// when there are none: one statement.
pub(crate) async fn price_unpriced_months(pool: &sqlx::PgPool) -> anyhow::Result<()> {
    use chrono::{Datelike, Months, Utc};
    let this = Utc::now().date_naive().with_day(1).unwrap_or_default();
    let from = this.checked_sub_months(Months::new(12)).unwrap_or(this);
    let priced = app::service::fleet::book::backfill(pool, from).await?;
    if priced > 0 {
        tracing::info!(months = priced, "priced the usage months that had no billing figures");
    }
    Ok(())
}

/// Runs the fleet-manager until SIGTERM or Ctrl-C.
pub async fn run_fleet(args: FleetArgs) -> anyhow::Result<()> {
    let addr = SocketAddr::new(args.http.bind, args.http.port);
    let zitadel = identity_plane(&args)?;
    let identity = zitadel.as_ref().map(|(plane, _)| plane.clone());
    let auth = auth_config(&args.auth, addr, Vec::new(), Scope::Fleet, None)?;
    let pool = open_database(&args.db, Schema::Fleet).await?;
    price_unpriced_months(&pool).await?;
    match opencrane_fleet_db::cluster_tenants::search_indexed(&pool).await {
        Ok(true) => tracing::info!("customer search: substring matches through trigram indexes (pg_trgm)"),
        Ok(false) => tracing::warn!(
            "customer search: pg_trgm is not available in the fleet database, so substring search scans every customer"
        ),
        Err(e) => tracing::warn!(error = %e, "customer search: could not tell whether it is indexed"),
    }
    let mut state = fleet_state(
        leptos_options(&args.http.site_root, addr, Env::PROD),
        pool,
        args.platform_base_domain.clone(),
        args.cluster_tenant_manager_enabled,
        args.billing_enabled,
        auth.0.oidc.is_some(),
    );
    let mut reconcile_interval = None;
    let pool = state.pool.clone();
    if let RoleSettings::Fleet(fleet) = &mut state.role {
        if !args.db.kept_answers {
            fleet.kept_pages = std::sync::Arc::new(app::service::kept::Kept::off());
            fleet.kept_rows = std::sync::Arc::new(app::service::kept::KeptHtml::off());
        }
        fleet.validation.fleet_namespace = args.namespace.clone();
        if let Some(url) = &args.shared_source.url {
            fleet.migration = Some(shared_migration(url, &pool).map_err(anyhow::Error::msg)?);
        }
        if let Some((plane, link)) = &zitadel {
            fleet.identity = Some(identity_runtime(plane.clone(), link).await);
            reconcile_interval = link.reconcile_interval;
        }
    }
    if zitadel.is_some() {
        spawn_identity_loops(state.clone(), args.zitadel.sa_key_file.clone(), reconcile_interval);
    }
    spawn_session_sweeper(state.pool.clone());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let dns = args.dns_probe.settings(args.platform_base_domain.as_deref(), args.cluster.ingress_ip);
    let kube = opencrane_provision::kubernetes::default_client().await.ok();
    attach_dns_probes(&mut state, dns, kube.clone(), stop_rx.clone());
    attach_platform_dns(&mut state, args.cluster.issuer_settings(), kube);
    let provisioning = match args.provisioner {
        ProvisionerKind::Local => {
            bail!("OPENCRANE_PROVISIONER=local runs only under `opencrane dev` (it serves the silos in that process)")
        }
        ProvisionerKind::Off => {
            tracing::warn!(
                "provisioning is off (OPENCRANE_PROVISIONER=off): customers are recorded, no silo is provisioned or reconciled"
            );
            tokio::spawn(async {})
        }
        ProvisionerKind::Kubernetes => {
            let base = args.platform_base_domain.as_deref();
            let truth = state.fleet().ok().and_then(|f| f.dns.clone());
            match provisioner::kubernetes_backend(
                base,
                args.namespace.as_deref(),
                &args.cluster,
                args.auth.oidc.issuer_url.as_deref(),
                truth,
            )
            .await
            {
                Ok(backend) => {
                    let pod =
                        args.cluster.pod_name.clone().unwrap_or_else(|| format!("fleet-{}", uuid::Uuid::new_v4()));
                    let (task, check) = provisioner::spawn_kubernetes(&state, backend, identity, pod, stop_rx);
                    state.health = Some(check);
                    task
                }
                Err(unavailable) => {
                    let backend = std::sync::Arc::new(unavailable);
                    tokio::spawn(provisioner::run(state.pool.clone(), backend, identity, start::stopped(stop_rx)))
                }
            }
        }
    };
    let public = start::bind(addr, "--port").await?;
    let internal = start::bind(SocketAddr::new(args.http.bind, args.internal_port), "--internal-port").await?;
    start::spawn_metrics(&args.http).await?;
    // A shutdown signal stops provisioning at once, so the reconciles under way finish while the
    // HTTP server drains its requests (both within Kubernetes' default grace period).
    let stop = std::sync::Arc::new(stop_tx);
    let signal = {
        let stop = stop.clone();
        async move {
            http::shutdown_signal().await;
            let _ = stop.send(true);
        }
    };
    let served = start::serve_fleet_on(public, internal, state, auth, signal).await;
    let _ = stop.send(true);
    let _ = provisioning.await;
    served
}

/// Attaches the DNS and certificate probes to the fleet (pages and `…/refresh` use them) and
/// starts their background pass (unless its interval is 0). With the cluster's client they also
/// read cert-manager's Ready condition of each vanity Certificate.
pub fn attach_dns_probes(
    state: &mut AppState,
    settings: Option<opencrane_provision::dns_truth::DnsTruthSettings>,
    cluster: Option<kube::Client>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let (Some(settings), RoleSettings::Fleet(fleet)) = (settings, &mut state.role) else { return };
    let background = !settings.interval.is_zero();
    let mut truth = opencrane_provision::dns_truth::DnsTruth::new(settings);
    if let Some(client) = cluster {
        truth = truth.with_cluster(client);
    }
    let truth = std::sync::Arc::new(truth);
    fleet.dns = Some(truth.clone());
    if background {
        truth.spawn(state.pool.clone(), shutdown);
    }
}

/// Attaches the platform's certificate issuer (`/dns`, `/api/v1/platform/dns`) on `client`'s
/// cluster; without a client the page says there is no cluster.
pub fn attach_platform_dns(
    state: &mut AppState,
    settings: opencrane_provision::platform_dns::IssuerSettings,
    client: Option<kube::Client>,
) {
    let (Some(client), RoleSettings::Fleet(fleet)) = (client, &mut state.role) else { return };
    let plane = opencrane_provision::platform_dns::cluster::PlatformDns::new(client, settings);
    fleet.platform_dns = Some(std::sync::Arc::new(plane));
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
    AppState::from(app::state::AppStateFields {
        leptos_options,
        pool,
        role: RoleSettings::Fleet(FleetSettings {
            cluster_tenants_enabled,
            billing_enabled,
            validation: ValidationContext { base_domain, ..ValidationContext::default() },
            identity: None,
            dns: None,
            platform_dns: None,
            migration: None,
            kept_pages: std::sync::Arc::default(),
            kept_rows: std::sync::Arc::default(),
        }),
        sign_in,
        health: None,
    })
}

#[cfg(test)]
mod tests {
    use super::adopt_from_file;

    #[test]
    fn a_key_is_taken_from_the_file_only_when_the_file_changed() {
        // This replica rotated to k2; the file still shows k1 until the kubelet refreshes it.
        assert!(!adopt_from_file(Some("k1"), "k1", "k2"), "never back to the old key");
        // The file now shows k2 (already in use here): nothing to do.
        assert!(!adopt_from_file(Some("k1"), "k2", "k2"));
        // Another replica rotated to k3: the file changed, so this one follows.
        assert!(adopt_from_file(Some("k2"), "k3", "k2"));
        // Nothing seen yet (the file was unreadable at start): the first look is the baseline.
        assert!(!adopt_from_file(None, "k3", "k2"));
    }
}
