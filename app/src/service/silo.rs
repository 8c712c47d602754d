//! The clustertenant-manager's use cases, on the silo's own database: the overview and the
//! member read-model ([`overview`]), users, groups, policies and grants, effective access,
//! budgets, model routing and access tokens. Owners and admins of the silo only, except the
//! overview (any member; the original let any signed-in user manage all of this). Every portal
//! mutation is audited in its own transaction and then asks the LiteLLM reconciler for an early
//! pass, so enforcement follows within seconds.

pub mod access;
pub mod budgets;
pub mod byok;
pub mod groups;
pub mod kept;
pub mod models;
pub mod overview;
pub mod policies;
pub mod tokens;
pub mod users;

pub use overview::*;

use opencrane_entitlements::{budget::LimitStatus, format_amount};
use opencrane_portal::snapshot::{Snapshot, SnapshotError};

use super::{authorize_mutation, db_failure, internal, record};
use crate::{
    authz::{Action, authorize},
    error::AppError,
    model::silo::{LimitView, SyncView},
    service::OrFail as _,
    state::{AppState, Caller, SiloSettings},
};

/// The silo, for a caller who may administer it (reads).
pub(crate) fn admin_read<'s>(state: &'s AppState, caller: &Caller) -> Result<&'s SiloSettings, AppError> {
    let silo = state.silo()?;
    authorize(caller.principal.as_ref(), Action::AdministerSilo(&silo.cluster_tenant))?;
    Ok(silo)
}

/// The silo, for a caller who may administer it (mutations; refusals are audited).
pub(crate) async fn admin_write<'s>(
    state: &'s AppState,
    caller: &Caller,
    audit_action: &str,
    target: &str,
) -> Result<&'s SiloSettings, AppError> {
    let silo = state.silo()?;
    authorize_mutation(state, caller, Action::AdministerSilo(&silo.cluster_tenant), audit_action, target).await?;
    Ok(silo)
}

/// Loads the silo's entitlements.
pub(crate) async fn snapshot(state: &AppState, caller: &Caller) -> Result<Snapshot, AppError> {
    Snapshot::load(&state.pool).await.map_err(|e| snapshot_failure(caller, e))
}

/// Maps a snapshot failure.
pub(crate) fn snapshot_failure(caller: &Caller, err: SnapshotError) -> AppError {
    match err {
        SnapshotError::Db(e) => db_failure(caller, e),
        other => internal(caller, &other),
    }
}

/// Asks the reconciler for an early pass (after a committed change).
pub(crate) fn converge(silo: &SiloSettings) {
    for trigger in &silo.portal.triggers {
        trigger.poke();
    }
}

/// Ends a mutation: its audit entry in the same transaction, the commit, then an early pass of
/// the background loops so enforcement follows.
pub(crate) async fn finish(
    mut tx: sqlx::Transaction<'_, sqlx::Postgres>,
    silo: &SiloSettings,
    caller: &Caller,
    action: &str,
    target: &str,
    metadata: serde_json::Value,
) -> Result<(), AppError> {
    record(&mut *tx, caller, action, target, "success", metadata).await?;
    tx.commit().await.or_fail(caller)?;
    converge(silo);
    Ok(())
}

/// `Not found` with a code.
pub(crate) fn not_found(code: &str, message: String) -> AppError {
    AppError::NotFound { code: code.into(), message }
}

/// A conflict about one field.
pub(crate) fn conflict(code: &str, field: &str, message: String) -> AppError {
    AppError::Conflict { code: code.into(), message, field: Some(field.into()) }
}

/// A limit for the pages; `tz` is the silo's time zone, in which resets are shown.
pub(crate) fn limit_view(s: &LimitStatus, tz: &opencrane_entitlements::period::TimeZone) -> LimitView {
    let resets_local = opencrane_entitlements::period::local_label(s.window.end, tz);
    LimitView {
        id: s.limit.id.clone(),
        level: s.limit.level.kind().into(),
        target: s.limit.level.describe(),
        currency: s.limit.currency.clone(),
        amount: format_amount(s.limit.amount),
        period: s.limit.period.as_str().into(),
        thresholds: s.limit.thresholds.clone(),
        spent: format_amount(s.spent),
        remaining: format_amount(s.remaining),
        used_percent: s.used_percent,
        reached: s.reached,
        period_start: s.window.start,
        resets_at: s.window.end,
        resets_local,
    }
}

/// The state of LiteLLM enforcement.
pub(crate) async fn sync_view(state: &AppState, caller: &Caller) -> Result<SyncView, AppError> {
    let silo = state.silo()?;
    let row = opencrane_silo_db::litellm::sync_state(&state.pool).await.or_fail(caller)?;
    let configured = silo.portal.litellm.is_some();
    Ok(SyncView {
        configured,
        ok: configured && row.ok,
        message: if configured {
            row.message
        } else {
            "LiteLLM is not configured (LITELLM_ENDPOINT): limits and model access are computed and shown, but not enforced."
                .into()
        },
        finished_at: row.finished_at,
    })
}
