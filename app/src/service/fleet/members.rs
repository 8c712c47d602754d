//! A customer's members on the fleet: list, add or change a role, suspend, reactivate, remove.
//! The customer's owners and admins (and operators) manage them; only owners (and operators) give
//! or take the Owner role (and suspend, reactivate or remove an owner). The last active Owner cannot be demoted, suspended or removed, and
//! nobody becomes an active member without a free seat — both decided under the customer's row
//! lock (`opencrane_fleet_db::memberships`), so concurrent requests cannot break either rule.

use opencrane_fleet_db::memberships::{self, MembershipError, MembershipRow};
use serde_json::json;

use crate::{
    authz::Action,
    error::{AppError, FieldErrors},
    model::{
        fleet::members::{MemberChange, MemberRequest, MemberView},
        principal::{OrgRole, Principal},
        rules,
    },
    service::{OrFail as _, authorize_mutation, db_failure, fleet::cluster_tenants, record},
    state::{AppState, Caller},
};

fn view(row: MembershipRow) -> MemberView {
    MemberView {
        subject: row.subject,
        role: row.role,
        status: row.status,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

fn refusal(caller: &Caller, name: &str, subject: &str, err: MembershipError) -> AppError {
    match err {
        MembershipError::LastOwner => AppError::Conflict {
            code: "LAST_OWNER".into(),
            message: format!("“{subject}” is the last active owner of {name}; make someone else an owner first."),
            field: Some("subject".into()),
        },
        MembershipError::NotFound => AppError::NotFound {
            code: "MEMBERSHIP_NOT_FOUND".into(),
            message: format!("“{subject}” is not a member of {name}."),
        },
        MembershipError::SeatCapExceeded { cap } => AppError::Conflict {
            code: "SEAT_CAP_EXCEEDED".into(),
            message: format!(
                "All {cap} seats of {name} are taken by active members; raise the seat cap or suspend a member first."
            ),
            field: None,
        },
        MembershipError::Db(db) => db_failure(caller, db),
    }
}

/// Giving or taking the Owner role is for owners and operators, not admins.
fn may_touch_owners(principal: &Principal, name: &str) -> Result<(), AppError> {
    if principal.is_platform_operator || principal.role_in(name) == Some(OrgRole::Owner) {
        Ok(())
    } else {
        Err(AppError::Forbidden {
            code: "FORBIDDEN_ORG_SCOPE".into(),
            message: "Only the customer's owners may give or take the Owner role.".into(),
        })
    }
}

/// The members of `name`, owners first.
pub async fn list(state: &AppState, caller: &Caller, name: &str) -> Result<Vec<MemberView>, AppError> {
    cluster_tenants::get(state, caller, name).await?;
    let rows = memberships::list(&state.pool, name).await.or_fail(caller)?;
    Ok(rows.into_iter().map(view).collect())
}

/// Adds `req.subject` (taking a seat) or changes their role.
pub async fn add(state: &AppState, caller: &Caller, name: &str, req: MemberRequest) -> Result<MemberChange, AppError> {
    let subject = req.subject.trim().to_owned();
    let target = format!("{name}/{subject}");
    let principal =
        authorize_mutation(state, caller, Action::UpdateClusterTenant(name), "membership.add", &target).await?;
    cluster_tenants::get(state, caller, name).await?;
    let mut errors = FieldErrors::new();
    errors.check("subject", rules::display_text("Subject", &subject, 255));
    let role = req.role.as_deref().map(str::trim).unwrap_or("member").to_ascii_lowercase();
    if OrgRole::parse(&role).is_none() {
        errors.add("role", "Role is owner, admin or member.");
    }
    errors.into_result(()).map_err(|fields| AppError::Validation { fields })?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = memberships::find(&mut tx, name, &subject).await.or_fail(caller)?;
    if role == "owner" || before.as_ref().is_some_and(|m| m.role == "owner") {
        may_touch_owners(principal, name)?;
    }
    let (row, created) = memberships::add_or_change(&mut tx, name, &subject, &role)
        .await
        .map_err(|e| refusal(caller, name, &subject, e))?;
    let meta = json!({ "role": role, "created": created, "before": before.map(|m| json!({ "role": m.role, "status": m.status })) });
    record(&mut *tx, caller, "membership.add", &target, "success", meta).await?;
    tx.commit().await.or_fail(caller)?;
    Ok(MemberChange { member: view(row), created, zitadel_seated: false })
}

/// Suspends (frees the seat) or reactivates (takes a seat) `subject`'s membership.
pub async fn set_suspended(
    state: &AppState,
    caller: &Caller,
    name: &str,
    subject: &str,
    suspended: bool,
) -> Result<MemberView, AppError> {
    let action = if suspended { "membership.suspend" } else { "membership.reactivate" };
    let target = format!("{name}/{subject}");
    let principal = authorize_mutation(state, caller, Action::UpdateClusterTenant(name), action, &target).await?;
    cluster_tenants::get(state, caller, name).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let current = memberships::find(&mut tx, name, subject).await.or_fail(caller)?;
    if current.is_some_and(|m| m.role == "owner") {
        may_touch_owners(principal, name)?;
    }
    let changed = if suspended {
        memberships::set_status(&mut tx, name, subject, "suspended").await
    } else {
        memberships::reactivate(&mut tx, name, subject).await
    };
    let row = changed.map_err(|e| refusal(caller, name, subject, e))?;
    record(&mut *tx, caller, action, &target, "success", json!({ "role": row.role })).await?;
    tx.commit().await.or_fail(caller)?;
    Ok(view(row))
}

/// Removes `subject`'s membership.
pub async fn remove(state: &AppState, caller: &Caller, name: &str, subject: &str) -> Result<(), AppError> {
    let target = format!("{name}/{subject}");
    let principal =
        authorize_mutation(state, caller, Action::UpdateClusterTenant(name), "membership.remove", &target).await?;
    cluster_tenants::get(state, caller, name).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = memberships::find(&mut tx, name, subject).await.or_fail(caller)?;
    if before.as_ref().is_some_and(|m| m.role == "owner") {
        may_touch_owners(principal, name)?;
    }
    memberships::remove(&mut tx, name, subject).await.map_err(|e| refusal(caller, name, subject, e))?;
    let meta = json!({ "before": before.map(|m| json!({ "role": m.role, "status": m.status })) });
    record(&mut *tx, caller, "membership.remove", &target, "success", meta).await?;
    tx.commit().await.or_fail(caller)?;
    Ok(())
}
