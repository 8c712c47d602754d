//! The fleet's identity plane, for platform operators: the Zitadel service-account key in use
//! and its health, its rotation, and the reconcile pass.
//!
//! Rotation never lets a bad key in: a candidate is validated with a throwaway client (token
//! exchange, then the IAM_OWNER probe `GET /admin/v1/instances/me`), **persisted first** (the
//! Kubernetes Secret the fleet reads its key from at start), and only then swapped in memory;
//! a failure at any point leaves the old key in use. Two ways:
//!
//! - *upload* (the original's `sa-key:rotate`): the operator mints a key in Zitadel's console and
//!   posts it; the old key is left for the console;
//! - *two-phase*: the fleet mints a key through the API → `prepared` (validated, persisted in the
//!   Secret's `<key>.next`, not in use) → `activate` (persisted as the key, swapped in) → the old
//!   key is revoked through the API when the grace period ends (or at once, on request). The
//!   phase lives in `zitadel_key_rotations`, the material in the Secret, so a restart at any
//!   point resumes where it was.
//!
//! Key material never reaches logs, audit entries, error bodies or pages: only key ids.

use std::sync::{Arc, Mutex};

use chrono::{TimeDelta, Utc};
use opencrane_common_db::audit::{self as audit_log, NewAuditEntry};
use opencrane_db::{Error as DbError, PgPool};
use opencrane_fleet_db::zitadel_rotations::{self as rotations, NewRotation, RotationRow};
use opencrane_provision::identity::IdentityPlane;
use opencrane_zitadel::{Error as ZitadelError, ServiceAccountKey};
use serde_json::json;

use crate::{
    error::AppError,
    model::fleet::identity::{
        Adoption, ExchangeView, Failed, IdentityOverview, KeyValidation, ReconcileReport, ReconcileRequest,
        RotateRequest, RotationOutcome, RotationState, RotationView, Skipped, banners,
    },
    service::{OrFail, record},
    state::{AppState, Caller},
};

/// Where in the Secret a key goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeySlot {
    /// The key the fleet signs with (read at start).
    Active,
    /// A prepared key of a two-phase rotation.
    Next,
}

/// Where rotated keys are persisted: the Kubernetes Secret the fleet's Deployment reads
/// `ZITADEL_MGMT_SA_KEY` from. Errors are sentences for operators (no key material).
#[async_trait::async_trait]
pub trait KeyStore: Send + Sync + std::fmt::Debug {
    /// `namespace/name` key `k`, for the page.
    fn location(&self) -> String;
    /// Writes (`Some`) or removes (`None`) the key in `slot`.
    async fn write(&self, slot: KeySlot, json: Option<&str>) -> Result<(), String>;
    /// Reads the key in `slot`.
    async fn read(&self, slot: KeySlot) -> Result<Option<String>, String>;
}

/// The identity plane's runtime: the plane (its client is shared with the provisioner, so a
/// swapped key applies there at once), where keys are persisted, and the rotation's timings.
#[derive(Clone, Debug)]
pub struct IdentityRuntime {
    /// The fleet's Zitadel.
    pub plane: Arc<IdentityPlane>,
    /// The Secret rotated keys go to (`ZITADEL_MGMT_SECRET_NAME`); `None`: rotation refused.
    pub store: Option<Arc<dyn KeyStore>>,
    /// How long the old key stays valid after a two-phase activation.
    pub grace: TimeDelta,
    /// How long a minted key lives.
    pub minted_lifetime: TimeDelta,
    /// The last reconcile pass.
    pub last_reconcile: Arc<Mutex<Option<ReconcileReport>>>,
}

impl IdentityRuntime {
    /// A runtime with the default timings (a 24-hour grace, keys minted for 365 days).
    pub fn new(plane: Arc<IdentityPlane>, store: Option<Arc<dyn KeyStore>>) -> Self {
        Self {
            plane,
            store,
            grace: TimeDelta::hours(24),
            minted_lifetime: TimeDelta::days(365),
            last_reconcile: Arc::default(),
        }
    }
}

fn runtime(state: &AppState) -> Result<&IdentityRuntime, AppError> {
    state.fleet()?.identity.as_ref().ok_or_else(|| AppError::Conflict {
        code: "ZITADEL_NOT_CONFIGURED".into(),
        message: "Zitadel is not configured on this fleet (ZITADEL_MGMT_API_URL).".into(),
        field: None,
    })
}

fn store(runtime: &IdentityRuntime) -> Result<&Arc<dyn KeyStore>, AppError> {
    runtime.store.as_ref().ok_or_else(|| AppError::Conflict {
        code: "SECRET_PERSISTENCE_NOT_CONFIGURED".into(),
        message: "Rotation needs the Secret the key is read from (ZITADEL_MGMT_SECRET_NAME); without it a rotated key would be lost at the next restart.".into(),
        field: None,
    })
}

/// Only platform operators; the refusal is audited.
async fn operator(state: &AppState, caller: &Caller, action: &str) -> Result<(), AppError> {
    let message = "Only platform operators may manage the fleet's Zitadel identity plane.";
    super::cluster_tenants::require_operator(state, caller, action, "zitadel", message).await
}

fn view(row: &RotationRow) -> RotationView {
    RotationView {
        id: row.id.to_string(),
        method: row.method.clone(),
        state: RotationState::parse(&row.state).unwrap_or(RotationState::Done),
        key_id: row.key_id.clone(),
        previous_key_id: row.previous_key_id.clone(),
        key_expires_at: row.key_expires_at,
        prepared_at: row.prepared_at,
        activated_at: row.activated_at,
        revoke_after: row.revoke_after,
        revoked_at: row.revoked_at,
        actor: row.actor.clone(),
    }
}

/// The identity page's data. Without Zitadel, says so (`configured: false`).
pub async fn overview(state: &AppState, caller: &Caller) -> Result<IdentityOverview, AppError> {
    operator(state, caller, "zitadel.read").await?;
    let Some(runtime) = state.fleet()?.identity.as_ref() else {
        return Ok(IdentityOverview {
            configured: false,
            api_url: None,
            key_id: None,
            user_id: None,
            expires_at: None,
            days_left: None,
            last_exchange: None,
            last_success: None,
            persisted_in: None,
            banners: Vec::new(),
            rotation: None,
            history: Vec::new(),
            last_reconcile: None,
        });
    };
    let client = runtime.plane.client();
    let now = Utc::now();
    let expires_at = client.key_expires();
    let last_exchange = client.last_exchange().map(|e| ExchangeView { at: e.at, ok: e.ok, detail: e.detail });
    let open = rotations::open(&state.pool).await.or_fail(caller)?;
    let history = rotations::recent(&state.pool, 5).await.or_fail(caller)?;
    Ok(IdentityOverview {
        configured: true,
        api_url: Some(client.api_url().to_owned()),
        key_id: Some(client.key_id()),
        user_id: Some(client.user_id()),
        days_left: expires_at.map(|e| (e - now).num_days()),
        banners: banners(expires_at, last_exchange.as_ref(), now),
        expires_at,
        last_exchange,
        last_success: client.last_successful_exchange(),
        persisted_in: runtime.store.as_ref().map(|s| s.location()),
        rotation: open.as_ref().map(view),
        history: history.iter().map(view).collect(),
        last_reconcile: runtime.last_reconcile.lock().map(|r| r.clone()).unwrap_or_default(),
    })
}

/// Validates `key` with a throwaway client: 502 when Zitadel cannot be reached; otherwise what
/// the key proved (a refused key is a result, not an error).
async fn validate(runtime: &IdentityRuntime, key: &ServiceAccountKey) -> Result<KeyValidation, AppError> {
    let mut validation = KeyValidation { key_id: Some(key.key_id.clone()), ..KeyValidation::default() };
    if let Err(expired) = key.check_expiry(Utc::now()) {
        validation.detail = Some(format!("{}.", capitalised(&expired.to_string())));
        return Ok(validation);
    }
    let candidate = match runtime.plane.client().candidate(key) {
        Ok(candidate) => candidate,
        Err(e) => {
            validation.detail = Some(format!("{}.", capitalised(&e.to_string())));
            return Ok(validation);
        }
    };
    let unreachable = |e: &ZitadelError| AppError::Upstream {
        code: "ZITADEL_UNREACHABLE".into(),
        message: format!("Zitadel could not be reached to validate the key: {e}"),
    };
    match candidate.token().await {
        Ok(_) => validation.token_exchange_ok = true,
        Err(e) if e.is_transient() => return Err(unreachable(&e)),
        Err(e) => {
            validation.detail = Some(e.to_string());
            return Ok(validation);
        }
    }
    match candidate.instance().await {
        Ok(_) => validation.instance_scope_ok = true,
        Err(e) if e.is_transient() => return Err(unreachable(&e)),
        Err(e) => {
            validation.detail = Some(format!("{e} (the service account needs the IAM_OWNER role)"));
        }
    }
    Ok(validation)
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

fn persist_failed(caller: &Caller, what: &str, e: &str) -> AppError {
    tracing::error!(request_id = %caller.request_id, error = %e, "persisting the Zitadel key failed ({what})");
    AppError::Upstream {
        code: "KEY_PERSIST_FAILED".into(),
        message: format!("The key could not be written to its Secret ({what}); the old key stays in use."),
    }
}

/// `POST /api/v1/admin/zitadel/sa-key:rotate`: validate the posted key, persist it, swap it in.
/// `rotated: false` (422) when the key failed validation; the old key stays in use.
pub async fn rotate(state: &AppState, caller: &Caller, request: RotateRequest) -> Result<RotationOutcome, AppError> {
    operator(state, caller, "zitadel.sa_key.rotate").await?;
    let blank = match &request.service_account_key {
        None | Some(serde_json::Value::Null) => true,
        Some(serde_json::Value::String(s)) => s.trim().is_empty(),
        Some(_) => false,
    };
    if blank {
        return Err(AppError::BadRequest {
            code: "INVALID_REQUEST".into(),
            message: "serviceAccountKey is required: paste the JSON key file Zitadel gave you.".into(),
            field: Some("serviceAccountKey".into()),
        });
    }
    let runtime = runtime(state)?;
    let store = store(runtime)?;
    let refused =
        |validation: KeyValidation| RotationOutcome { rotated: false, key_id: None, previous_key_id: None, validation };
    let key = match ServiceAccountKey::from_value(request.service_account_key.unwrap_or_default()) {
        Ok(key) => key,
        Err(e) => {
            let outcome = refused(KeyValidation {
                detail: Some(format!("{}.", capitalised(&e.to_string()))),
                ..KeyValidation::default()
            });
            audit_refusal(state, caller, &outcome).await;
            return Ok(outcome);
        }
    };
    let validation = validate(runtime, &key).await?;
    if !(validation.token_exchange_ok && validation.instance_scope_ok) {
        let outcome = refused(validation);
        audit_refusal(state, caller, &outcome).await;
        return Ok(outcome);
    }
    store.write(KeySlot::Active, Some(&key.to_json())).await.map_err(|e| persist_failed(caller, "the key", &e))?;
    let previous = runtime.plane.client().swap_key(&key).map_err(|e| AppError::Unprocessable {
        code: "SA_KEY_INVALID".into(),
        message: e.to_string(),
        field: Some("serviceAccountKey".into()),
    })?;
    // A two-phase rotation under way makes way for the upload.
    abandon_open(state, runtime, caller).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let new = NewRotation {
        method: "upload",
        state: "done",
        key_id: &key.key_id,
        previous_key_id: Some(&previous),
        key_expires_at: key.expiration_date,
        actor: caller.actor(),
    };
    rotations::insert(&mut *tx, &new).await.or_fail(caller)?;
    let meta = json!({ "keyId": key.key_id, "previousKeyId": previous, "method": "upload" });
    record(&mut *tx, caller, "zitadel.sa_key.rotate", &key.key_id, "success", meta).await?;
    tx.commit().await.or_fail(caller)?;
    Ok(RotationOutcome { rotated: true, key_id: Some(key.key_id.clone()), previous_key_id: Some(previous), validation })
}

async fn audit_refusal(state: &AppState, caller: &Caller, outcome: &RotationOutcome) {
    let target = outcome.validation.key_id.clone().unwrap_or_else(|| "zitadel".into());
    let meta = json!({ "validation": outcome.validation });
    if let Err(e) = record(&state.pool, caller, "zitadel.sa_key.rotate", &target, "failure", meta).await {
        tracing::warn!(request_id = %caller.request_id, error = %e, "could not record a refused rotation");
    }
}

/// Makes way for an upload: a prepared rotation is cancelled (its minted key deleted in Zitadel
/// and from the Secret, best effort); an active one is finished (its old key is left to the
/// console, as an upload's is).
async fn abandon_open(state: &AppState, runtime: &IdentityRuntime, caller: &Caller) -> Result<(), AppError> {
    let Some(open) = rotations::open(&state.pool).await.or_fail(caller)? else { return Ok(()) };
    if open.state == "prepared" {
        let client = runtime.plane.client();
        if let Err(e) = client.remove_machine_key(&client.user_id(), &open.key_id).await {
            tracing::warn!(request_id = %caller.request_id, error = %e, "the abandoned prepared key could not be deleted in Zitadel");
        }
        if let Some(store) = &runtime.store {
            let _ = store.write(KeySlot::Next, None).await;
        }
        rotations::cancel(&state.pool, open.id).await.or_fail(caller)?;
    } else {
        rotations::finish(&state.pool, open.id).await.or_fail(caller)?;
    }
    Ok(())
}

fn upstream(e: &ZitadelError) -> AppError {
    if e.is_transient() {
        AppError::Upstream { code: "ZITADEL_UNREACHABLE".into(), message: format!("Zitadel could not be reached: {e}") }
    } else {
        AppError::Upstream { code: "ZITADEL_REFUSED".into(), message: e.to_string() }
    }
}

fn conflict(message: &str) -> AppError {
    AppError::Conflict { code: "ROTATION_STATE".into(), message: message.into(), field: None }
}

/// Phase 1: mints a new key for the fleet's service account, validates it and keeps it in the
/// Secret's second slot; the old key stays in use.
pub async fn prepare(state: &AppState, caller: &Caller) -> Result<RotationView, AppError> {
    operator(state, caller, "zitadel.sa_key.prepare").await?;
    let runtime = runtime(state)?;
    let store = store(runtime)?;
    if rotations::open(&state.pool).await.or_fail(caller)?.is_some() {
        return Err(conflict("A rotation is already under way: activate, finish or cancel it first."));
    }
    let client = runtime.plane.client();
    let expires = Utc::now() + runtime.minted_lifetime;
    let key = client.add_machine_key(&client.user_id(), expires).await.map_err(|e| upstream(&e))?;
    let validation = validate(runtime, &key).await?;
    let undo = |why: String| async {
        let _ = client.remove_machine_key(&client.user_id(), &key.key_id).await;
        AppError::Unprocessable { code: "SA_KEY_INVALID".into(), message: why, field: None }
    };
    if !(validation.token_exchange_ok && validation.instance_scope_ok) {
        let why = validation.detail.clone().unwrap_or_else(|| "The minted key did not validate.".into());
        return Err(undo(why).await);
    }
    if let Err(e) = store.write(KeySlot::Next, Some(&key.to_json())).await {
        let _ = client.remove_machine_key(&client.user_id(), &key.key_id).await;
        return Err(persist_failed(caller, "the prepared key", &e));
    }
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let row = rotations::insert(
        &mut *tx,
        &NewRotation {
            method: "minted",
            state: "prepared",
            key_id: &key.key_id,
            previous_key_id: Some(&client.key_id()),
            key_expires_at: key.expiration_date,
            actor: caller.actor(),
        },
    )
    .await
    .map_err(|e| match e {
        DbError::UniqueViolation { .. } => conflict("A rotation is already under way."),
        other => crate::service::db_failure(caller, other),
    })?;
    record(&mut *tx, caller, "zitadel.sa_key.prepare", &key.key_id, "success", json!({ "keyId": key.key_id })).await?;
    tx.commit().await.or_fail(caller)?;
    Ok(view(&row))
}

/// Phase 2: the prepared key (read back from the Secret, validated again) becomes the key in
/// use; the old one is revoked when the grace period ends.
pub async fn activate(state: &AppState, caller: &Caller) -> Result<RotationView, AppError> {
    operator(state, caller, "zitadel.sa_key.activate").await?;
    let runtime = runtime(state)?;
    let store = store(runtime)?;
    let open = rotations::open(&state.pool).await.or_fail(caller)?.filter(|r| r.state == "prepared");
    let Some(open) = open else { return Err(conflict("No prepared rotation to activate.")) };
    let json = store.read(KeySlot::Next).await.map_err(|e| persist_failed(caller, "reading the prepared key", &e))?;
    let key = json
        .as_deref()
        .map(ServiceAccountKey::parse)
        .transpose()
        .ok()
        .flatten()
        .filter(|k| k.key_id == open.key_id)
        .ok_or_else(|| {
            conflict("The prepared key is no longer in its Secret: cancel this rotation and prepare a new one.")
        })?;
    let validation = validate(runtime, &key).await?;
    if !(validation.token_exchange_ok && validation.instance_scope_ok) {
        let why = validation.detail.unwrap_or_else(|| "The prepared key no longer validates.".into());
        return Err(AppError::Unprocessable { code: "SA_KEY_INVALID".into(), message: why, field: None });
    }
    store.write(KeySlot::Active, Some(&key.to_json())).await.map_err(|e| persist_failed(caller, "the key", &e))?;
    let previous = runtime.plane.client().swap_key(&key).map_err(|e| AppError::Unprocessable {
        code: "SA_KEY_INVALID".into(),
        message: e.to_string(),
        field: None,
    })?;
    let _ = store.write(KeySlot::Next, None).await;
    let revoke_after = Utc::now() + runtime.grace;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    rotations::activate(&mut *tx, open.id, &previous, revoke_after).await.or_fail(caller)?;
    let meta = json!({ "keyId": key.key_id, "previousKeyId": previous, "revokeAfter": revoke_after });
    record(&mut *tx, caller, "zitadel.sa_key.activate", &key.key_id, "success", meta).await?;
    tx.commit().await.or_fail(caller)?;
    latest(state, caller).await
}

/// The latest rotation (what a step answers, and what the page confirms after an upload).
pub async fn latest(state: &AppState, caller: &Caller) -> Result<RotationView, AppError> {
    let rows = rotations::recent(&state.pool, 1).await.or_fail(caller)?;
    rows.first().map(view).ok_or_else(|| conflict("No rotation."))
}

/// Cuts the grace period short: revokes the old key now.
pub async fn revoke_now(state: &AppState, caller: &Caller) -> Result<RotationView, AppError> {
    operator(state, caller, "zitadel.sa_key.revoke").await?;
    let runtime = runtime(state)?;
    let open = rotations::open(&state.pool).await.or_fail(caller)?.filter(|r| r.state == "active");
    let Some(open) = open else { return Err(conflict("No activated rotation whose old key waits for revocation.")) };
    revoke(&state.pool, runtime, &open, caller.actor(), caller.actor_role()).await.map_err(|e| match e {
        Revocation::Zitadel(e) => upstream(&e),
        Revocation::Db(e) => crate::service::db_failure(caller, e),
    })?;
    latest(state, caller).await
}

/// Abandons a prepared rotation: its minted key is deleted in Zitadel and removed from the Secret.
pub async fn cancel(state: &AppState, caller: &Caller) -> Result<RotationView, AppError> {
    operator(state, caller, "zitadel.sa_key.cancel").await?;
    let runtime = runtime(state)?;
    let open = rotations::open(&state.pool).await.or_fail(caller)?.filter(|r| r.state == "prepared");
    let Some(open) = open else { return Err(conflict("No prepared rotation to cancel.")) };
    let client = runtime.plane.client();
    client.remove_machine_key(&client.user_id(), &open.key_id).await.map_err(|e| upstream(&e))?;
    if let Some(store) = &runtime.store {
        let _ = store.write(KeySlot::Next, None).await;
    }
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    rotations::cancel(&mut *tx, open.id).await.or_fail(caller)?;
    record(&mut *tx, caller, "zitadel.sa_key.cancel", &open.key_id, "success", json!({ "keyId": open.key_id })).await?;
    tx.commit().await.or_fail(caller)?;
    latest(state, caller).await
}

enum Revocation {
    Zitadel(ZitadelError),
    Db(DbError),
}

/// Deletes the old key of `open` in Zitadel (gone already is fine) and finishes the rotation.
async fn revoke(
    pool: &PgPool,
    runtime: &IdentityRuntime,
    open: &RotationRow,
    actor: &str,
    role: &str,
) -> Result<(), Revocation> {
    let client = runtime.plane.client();
    if let Some(old) = &open.previous_key_id {
        client.remove_machine_key(&client.user_id(), old).await.map_err(Revocation::Zitadel)?;
    }
    let mut tx = pool.begin().await.map_err(|e| Revocation::Db(e.into()))?;
    if !rotations::finish(&mut *tx, open.id).await.map_err(Revocation::Db)? {
        // Another replica finished it meanwhile (and recorded it).
        return Ok(());
    }
    let meta = json!({ "keyId": open.key_id, "revokedKeyId": open.previous_key_id });
    let entry = NewAuditEntry {
        actor,
        actor_role: role,
        action: "zitadel.sa_key.revoke",
        target: open.previous_key_id.as_deref().unwrap_or("zitadel"),
        outcome: "success",
        request_id: None,
        metadata: &meta,
    };
    audit_log::append(&mut *tx, &entry).await.map_err(Revocation::Db)?;
    tx.commit().await.map_err(|e| Revocation::Db(e.into()))?;
    Ok(())
}

/// The background side of a two-phase rotation: revokes the old key once its grace period has
/// ended (also after a restart). Quiet when there is nothing to do.
pub async fn revoke_due(state: &AppState) {
    let Ok(fleet) = state.fleet() else { return };
    let Some(runtime) = fleet.identity.as_ref() else { return };
    let open = match rotations::open(&state.pool).await {
        Ok(open) => open,
        Err(e) => return tracing::warn!(error = %e, "cannot read the Zitadel key rotation"),
    };
    let Some(open) = open.filter(|r| r.state == "active" && r.revoke_after.is_some_and(|t| t <= Utc::now())) else {
        return;
    };
    match revoke(&state.pool, runtime, &open, "system:identity", "system").await {
        Ok(()) => tracing::info!(key_id = %open.key_id, "the old Zitadel key was revoked after its grace period"),
        Err(Revocation::Zitadel(e)) => tracing::warn!(error = %e, "revoking the old Zitadel key failed; retried"),
        Err(Revocation::Db(e)) => tracing::warn!(error = %e, "finishing the Zitadel key rotation failed; retried"),
    }
}

fn report(heal: opencrane_provision::identity::HealReport) -> ReconcileReport {
    ReconcileReport {
        reconciled: heal.reconciled,
        skipped: heal.skipped.into_iter().map(|(name, reason)| Skipped { name, reason }).collect(),
        failed: heal.failed.into_iter().map(|(name, error)| Failed { name, error }).collect(),
        member_adoption: heal
            .adopted
            .into_iter()
            .map(|(name, adopted, skipped)| Adoption { name, adopted, skipped })
            .collect(),
        member_adoption_failed: heal.adoption_failed.into_iter().map(|(name, error)| Failed { name, error }).collect(),
        finished_at: Some(Utc::now()),
    }
}

/// `POST /api/v1/admin/zitadel/reconcile {name?}`: the reconcile pass now.
pub async fn reconcile(
    state: &AppState,
    caller: &Caller,
    request: ReconcileRequest,
) -> Result<ReconcileReport, AppError> {
    operator(state, caller, "zitadel.reconcile").await?;
    let runtime = runtime(state)?;
    let name = request.name.as_deref().map(str::trim).filter(|n| !n.is_empty());
    let heal = runtime.plane.heal(&state.pool, name).await.or_fail(caller)?;
    let report = report(heal);
    let meta = json!({
        "reconciled": report.reconciled, "failed": report.failed.len(), "skipped": report.skipped.len(),
    });
    record(&state.pool, caller, "zitadel.reconcile", name.unwrap_or("*"), "success", meta).await?;
    if let Ok(mut last) = runtime.last_reconcile.lock() {
        *last = Some(report.clone());
    }
    Ok(report)
}

/// The scheduled reconcile pass (every `ZITADEL_RECONCILE_INTERVAL_MS`).
pub async fn reconcile_scheduled(state: &AppState) {
    let Ok(fleet) = state.fleet() else { return };
    let Some(runtime) = fleet.identity.as_ref() else { return };
    match runtime.plane.heal(&state.pool, None).await {
        Ok(heal) => {
            let report = report(heal);
            tracing::info!(reconciled = ?report.reconciled, failed = report.failed.len(), "Zitadel reconcile pass");
            if let Ok(mut last) = runtime.last_reconcile.lock() {
                *last = Some(report);
            }
        }
        Err(e) => tracing::warn!(error = %e, "the Zitadel reconcile pass could not run"),
    }
}
