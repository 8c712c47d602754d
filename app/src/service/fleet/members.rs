//! A customer's members on the fleet: list, add or change a role, suspend, reactivate, remove.
//! The customer's owners and admins (and operators) manage them; only owners (and operators) give
//! or take the Owner role (and suspend, reactivate or remove an owner). The last active Owner cannot be demoted, suspended or removed, and
//! nobody becomes an active member without a free seat — both decided under the customer's row
//! lock (`opencrane_fleet_db::memberships`), so concurrent requests cannot break either rule.
//!
//! With Zitadel configured, every change reaches the customer's organisation: the identity step
//! runs again and gives each active member their role's grant and deactivates a suspended
//! member's; a removed member's grants are deleted at once.

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

/// Asks the provisioner to bring the customer's Zitadel grants in line with its memberships (the
/// identity step runs again on the next reconcile). Best effort after the change committed: a
/// failure is logged, and the next reconcile pass catches up.
async fn resync_grants(state: &AppState, caller: &Caller, name: &str) {
    let has_identity = state.fleet().is_ok_and(|f| f.identity.is_some());
    if !has_identity {
        return;
    }
    let identity = opencrane_provision::StepId::Identity.as_str();
    let requeued = opencrane_fleet_db::provisioning::rerun_step(&state.pool, name, identity).await;
    let notified = opencrane_fleet_db::provisioning::notify(&state.pool, name).await;
    if let Err(e) = requeued.and(notified) {
        tracing::warn!(request_id = %caller.request_id, cluster_tenant = %name, error = %e, "could not requeue the Zitadel grants");
    }
}

/// Deletes a removed member's grants on the customer's project (best effort, logged).
async fn remove_grants(state: &AppState, caller: &Caller, name: &str, subject: &str) {
    let Some(identity) = state.fleet().ok().and_then(|f| f.identity.as_ref()) else { return };
    let Ok(row) = opencrane_fleet_db::cluster_tenants::get(&state.pool, name).await else { return };
    let (Some(org), Some(project)) = (row.zitadel_org_id, row.zitadel_project_id) else { return };
    let client = identity.plane.client();
    let removed = async {
        for grant in client.user_grants(&org, subject, &project).await? {
            client.remove_user_grant(&org, subject, &grant.id).await?;
        }
        Ok::<(), opencrane_zitadel::Error>(())
    };
    if let Err(e) = removed.await {
        tracing::warn!(request_id = %caller.request_id, cluster_tenant = %name, error = %e, "a removed member's Zitadel grant could not be deleted");
    }
}

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
    resync_grants(state, caller, name).await;
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
    resync_grants(state, caller, name).await;
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
    remove_grants(state, caller, name, subject).await;
    Ok(())
}
