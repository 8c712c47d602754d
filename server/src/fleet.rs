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
                    if let Some(path) = &key_file {
                        reload_key(&state, path);
                    }
                    app::service::fleet::identity::revoke_due(&state).await;
                }
                () = pass => app::service::fleet::identity::reconcile_scheduled(&state).await,
            }
        }
    });
}

/// Swaps in the key of `path` when it is not the one in use (a rotation on another replica).
fn reload_key(state: &AppState, path: &std::path::Path) {
    let Ok(fleet) = state.fleet() else { return };
    let Some(runtime) = fleet.identity.as_ref() else { return };
    let Ok(text) = std::fs::read_to_string(path) else { return };
    match opencrane_zitadel::ServiceAccountKey::parse(&text) {
        Ok(key) if key.key_id != runtime.plane.client().key_id() => {
            if let Err(e) = runtime.plane.client().swap_key(&key) {
                tracing::warn!(path = %path.display(), error = %e, "the key file holds an unusable key; the key in use stays");
            }
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(path = %path.display(), error = %e, "the key file is not a key; the key in use stays"),
    }
}

/// Runs the fleet-manager until SIGTERM or Ctrl-C.
pub async fn run_fleet(args: FleetArgs) -> anyhow::Result<()> {
    let addr = SocketAddr::new(args.http.bind, args.http.port);
    let zitadel = identity_plane(&args)?;
    let identity = zitadel.as_ref().map(|(plane, _)| plane.clone());
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
    let mut reconcile_interval = None;
    if let RoleSettings::Fleet(fleet) = &mut state.role {
        fleet.validation.fleet_namespace = args.namespace.clone();
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
    let provisioning = match args.provisioner {
        ProvisionerKind::Local => {
            bail!("OPENCRANE_PROVISIONER=local runs only under `opencrane dev` (it serves the silos in that process)")
        }
        ProvisionerKind::Kubernetes => {
            let base = args.platform_base_domain.as_deref();
            match provisioner::kubernetes_backend(base, args.namespace.as_deref(), &args.cluster).await {
                Ok(backend) => {
                    let pod =
                        args.cluster.pod_name.clone().unwrap_or_else(|| format!("fleet-{}", uuid::Uuid::new_v4()));
                    let (task, check) = provisioner::spawn_kubernetes(&state, backend, identity, pod, stop_rx);
                    state.health = Some(check);
                    task
                }
                Err(unavailable) => {
                    let mut stop_rx = stop_rx;
                    let backend = std::sync::Arc::new(unavailable);
                    tokio::spawn(provisioner::run(state.pool.clone(), backend, identity, async move {
                        let _ = stop_rx.wait_for(|s| *s).await;
                    }))
                }
            }
        }
    };
    let public = start::bind(addr, "--port").await?;
    let internal = start::bind(SocketAddr::new(args.http.bind, args.internal_port), "--internal-port").await?;
    let served = start::serve_fleet_on(public, internal, state, auth, http::shutdown_signal()).await;
    let _ = stop_tx.send(true);
    let _ = provisioning.await;
    served
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
            validation: ValidationContext { base_domain, ..ValidationContext::default() },
            identity: None,
        }),
        sign_in,
        health: None,
    }
}
