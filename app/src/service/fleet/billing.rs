//! Billing-account use cases: read or create one's own account (its display name and the time
//! zone its customers are billed in).

use opencrane_fleet_db::billing_accounts::{self as db, BillingAccountRow};

use serde_json::json;

use crate::service::{OrFail as _, authorize_mutation, record};
use crate::{
    authz::{Action, authorize},
    error::AppError,
    model::fleet::billing::{BillingAccount, BillingAccountRequest},
    state::{AppState, Caller},
};

fn enabled(state: &AppState) -> Result<(), AppError> {
    if state.fleet()?.billing_enabled {
        Ok(())
    } else {
        Err(AppError::NotFound {
            code: "NOT_FOUND".into(),
            message: "Billing is disabled on this fleet-manager.".into(),
        })
    }
}

fn to_wire(row: BillingAccountRow) -> BillingAccount {
    BillingAccount {
        id: row.id.to_string(),
        subject: row.subject,
        email: row.email,
        display_name: row.display_name,
        time_zone: row.time_zone,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

/// The caller's own account, if they have one.
pub async fn mine(state: &AppState, caller: &Caller) -> Result<Option<BillingAccount>, AppError> {
    enabled(state)?;
    let principal = authorize(caller.principal.as_ref(), Action::ManageOwnBillingAccount)?;
    let row = db::find_by_subject(&state.pool, &principal.subject).await.or_fail(caller)?;
    Ok(row.map(to_wire))
}

/// Creates the caller's account or updates its display name; the flag says whether it was new.
pub async fn upsert_mine(
    state: &AppState,
    caller: &Caller,
    req: BillingAccountRequest,
) -> Result<(BillingAccount, bool), AppError> {
    enabled(state)?;
    let principal =
        authorize_mutation(state, caller, Action::ManageOwnBillingAccount, "billing_account.upsert", caller.actor())
            .await?;
    let display_name = req.display_name.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if let Some(name) = display_name {
        crate::model::rules::display_text("Display name", name, 128)
            .map_err(|message| AppError::field("displayName", message))?;
    }
    let time_zone = req.time_zone.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if let Some(zone) = time_zone {
        opencrane_entitlements::period::time_zone(zone).map_err(|message| AppError::field("timeZone", message))?;
    }
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let (row, created) = db::upsert(&mut *tx, &principal.subject, principal.email.as_deref(), display_name, time_zone)
        .await
        .or_fail(caller)?;
    let action = if created { "billing_account.create" } else { "billing_account.update" };
    let meta = json!({ "displayName": display_name, "timeZone": time_zone });
    record(&mut *tx, caller, action, &principal.subject, "success", meta).await?;
    tx.commit().await.or_fail(caller)?;
    Ok((to_wire(row), created))
}
