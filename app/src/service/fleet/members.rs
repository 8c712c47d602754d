//! A customer's members on the fleet: list, add or change a role, suspend, reactivate, remove.
//! The customer's owners and admins (and operators) manage them; only owners (and operators) give
//! or take the Owner role (and suspend, reactivate or remove an owner). The last active Owner cannot be demoted, suspended or removed, and
//! nobody becomes an active member without a free seat — both decided under the customer's row
//! lock (`opencrane_fleet_db::memberships`), so concurrent requests cannot break either rule.
//!
//! With Zitadel configured, every change reaches the customer's organisation: the identity step
//! runs again and gives each active member their role's grant and deactivates a suspended
//! member's. A removal offboards in order: the member's grants are deleted first (if Zitadel
//! cannot be reached the removal is refused and nothing changes), then the row; the silo, at its
//! next pull of the memberships, ends the person's sessions and blocks their LLM key.
//!
//! People can also be invited by e-mail address (no seat until they accept), and a silo asks the
//! fleet to admit each person signing in through the customer's organisation ([`admit`]): the
//! sign-in is recorded, an invitation for their verified address is accepted, a newcomer becomes a
//! `member` — each only with a free seat, and never for a suspended member.

use opencrane_fleet_db::{
    invitations::{self, InvitationRow},
    memberships::{self, Admission, MembershipError, MembershipRow},
};
use serde_json::json;

use crate::{
    authz::Action,
    error::{AppError, FieldErrors},
    model::{
        fleet::members::{
            AdmitRequest, Admitted, InvitationChange, InvitationView, MemberChange, MemberRequest, MemberView,
        },
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

/// Deletes a member's grants on the customer's project, the first step of their removal: a
/// person Zitadel does not know has none (fine); Zitadel failing refuses the removal (502), so
/// nobody is removed here while still able to sign in there.
async fn remove_grants(state: &AppState, caller: &Caller, name: &str, subject: &str) -> Result<(), AppError> {
    let Some(identity) = state.fleet().ok().and_then(|f| f.identity.as_ref()) else { return Ok(()) };
    let row = opencrane_fleet_db::cluster_tenants::get(&state.pool, name).await.or_fail(caller)?;
    let (Some(org), Some(project)) = (row.zitadel_org_id, row.zitadel_project_id) else { return Ok(()) };
    let client = identity.plane.client();
    let removed = async {
        for grant in client.user_grants(&org, subject, &project).await? {
            client.remove_user_grant(&org, subject, &grant.id).await?;
        }
        Ok::<(), opencrane_zitadel::Error>(())
    };
    match removed.await {
        Ok(()) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => {
            tracing::warn!(request_id = %caller.request_id, cluster_tenant = %name, error = %e, "a member's Zitadel grant could not be deleted; the removal is refused");
            Err(AppError::Upstream {
                code: "ZITADEL_UNREACHABLE".into(),
                message: format!(
                    "“{subject}” was not removed: their sign-in grant in Zitadel could not be deleted first. Try again in a moment."
                ),
            })
        }
    }
}

fn view(row: MembershipRow) -> MemberView {
    MemberView {
        subject: row.subject,
        role: row.role,
        status: row.status,
        created_at: row.created_at,
        updated_at: row.updated_at,
        last_sign_in_at: row.last_sign_in_at,
    }
}

fn invitation_view(row: InvitationRow) -> InvitationView {
    InvitationView {
        email: row.email,
        role: row.role,
        status: "invited".into(),
        invited_by: row.invited_by,
        created_at: row.created_at,
    }
}

/// The role of a request (`member` when none), or the field error.
fn requested_role(errors: &mut FieldErrors, role: Option<&str>) -> String {
    let role = role.map(str::trim).filter(|r| !r.is_empty()).unwrap_or("member").to_ascii_lowercase();
    if OrgRole::parse(&role).is_none() {
        errors.add("role", "Role is owner, admin or member.");
    }
    role
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
        MembershipError::Suspended => AppError::Forbidden {
            code: "MEMBER_SUSPENDED".into(),
            message: format!("“{subject}” is a suspended member of {name}; an owner or admin must reactivate them."),
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

/// Adds `req.subject` (taking a seat) or changes their role. A request with an e-mail address
/// instead of a subject is an invitation: see [`invite`].
pub async fn add(state: &AppState, caller: &Caller, name: &str, req: MemberRequest) -> Result<MemberChange, AppError> {
    let subject = req.subject.trim().to_owned();
    let target = format!("{name}/{subject}");
    let principal =
        authorize_mutation(state, caller, Action::UpdateClusterTenant(name), "membership.add", &target).await?;
    cluster_tenants::get(state, caller, name).await?;
    let mut errors = FieldErrors::new();
    if subject.is_empty() {
        errors.add("subject", "Give the person's subject, or invite them by e-mail address instead.");
    } else {
        errors.check("subject", rules::display_text("Subject", &subject, 255));
    }
    if req.email.as_deref().is_some_and(|e| !e.trim().is_empty()) {
        errors.add("email", "Give either a subject or an e-mail address, not both.");
    }
    let role = requested_role(&mut errors, req.role.as_deref());
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

/// Removes `subject`'s membership: their Zitadel grants first (refused, nothing changed, when
/// Zitadel cannot be reached), then the row — under the customer's lock throughout, so the
/// last-owner rule is decided before anything is deleted.
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
    remove_grants(state, caller, name, subject).await?;
    let meta = json!({ "before": before.map(|m| json!({ "role": m.role, "status": m.status })) });
    record(&mut *tx, caller, "membership.remove", &target, "success", meta).await?;
    tx.commit().await.or_fail(caller)?;
    Ok(())
}

/// The pending invitations of `name`, oldest first.
pub async fn invitations(state: &AppState, caller: &Caller, name: &str) -> Result<Vec<InvitationView>, AppError> {
    cluster_tenants::get(state, caller, name).await?;
    let rows = invitations::list(&state.pool, name).await.or_fail(caller)?;
    Ok(rows.into_iter().map(invitation_view).collect())
}

/// Invites `req.email` with `req.role` (or changes a pending invitation's role). No seat is taken
/// until they accept, at their first sign-in through the customer's organisation.
pub async fn invite(
    state: &AppState,
    caller: &Caller,
    name: &str,
    req: MemberRequest,
) -> Result<InvitationChange, AppError> {
    let email = req.email.as_deref().unwrap_or_default().trim().to_lowercase();
    let target = format!("{name}/{email}");
    let principal =
        authorize_mutation(state, caller, Action::UpdateClusterTenant(name), "membership.invite", &target).await?;
    cluster_tenants::get(state, caller, name).await?;
    let mut errors = FieldErrors::new();
    errors.check("email", rules::email_address(&email));
    if !req.subject.trim().is_empty() {
        errors.add("subject", "Give either a subject or an e-mail address, not both.");
    }
    let role = requested_role(&mut errors, req.role.as_deref());
    errors.into_result(()).map_err(|fields| AppError::Validation { fields })?;
    if role == "owner" {
        may_touch_owners(principal, name)?;
    }
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let (row, created) = invitations::put(&mut *tx, name, &email, &role, caller.actor()).await.or_fail(caller)?;
    record(&mut *tx, caller, "membership.invite", &target, "success", json!({ "role": role, "created": created }))
        .await?;
    tx.commit().await.or_fail(caller)?;
    Ok(InvitationChange { invitation: invitation_view(row), created })
}

/// Withdraws the invitation of `email`.
pub async fn cancel_invitation(state: &AppState, caller: &Caller, name: &str, email: &str) -> Result<(), AppError> {
    let email = email.trim().to_lowercase();
    let target = format!("{name}/{email}");
    authorize_mutation(state, caller, Action::UpdateClusterTenant(name), "membership.invitation.cancel", &target)
        .await?;
    cluster_tenants::get(state, caller, name).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    if !invitations::cancel(&mut *tx, name, &email).await.or_fail(caller)? {
        return Err(AppError::NotFound {
            code: "INVITATION_NOT_FOUND".into(),
            message: format!("{email} has no pending invitation to {name}."),
        });
    }
    record(&mut *tx, caller, "membership.invitation.cancel", &target, "success", json!({})).await?;
    tx.commit().await.or_fail(caller)?;
    Ok(())
}

/// Admits a person signing in to the customer's silo (asked by that silo, with its own
/// credential, or by a platform operator): records the sign-in of an active member; accepts the
/// invitation of their address when the provider verified it; otherwise adopts them as a
/// `member` — a newcomer only with a free seat (409 `SEAT_CAP_EXCEEDED`). A suspended member is
/// refused (403 `MEMBER_SUSPENDED`) and stays suspended; a role is never lowered.
pub async fn admit(state: &AppState, caller: &Caller, name: &str, req: AdmitRequest) -> Result<Admitted, AppError> {
    let row = cluster_tenants::for_silo(state, caller, name, "members").await?;
    let subject = req.subject.trim().to_owned();
    let mut errors = FieldErrors::new();
    errors.check("subject", rules::display_text("Subject", &subject, 255));
    errors.into_result(()).map_err(|fields| AppError::Validation { fields })?;
    if row.deletion_requested_at.is_some() {
        return Err(cluster_tenants::not_found(name));
    }
    let target = format!("{name}/{subject}");
    let email = req.email.as_deref().map(str::trim).filter(|e| req.email_verified && rules::email_address(e).is_ok());
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let (member, admission) = match memberships::admit(&mut tx, name, &subject, email).await {
        Ok(admitted) => admitted,
        Err(err) => {
            drop(tx);
            let refused = refusal(caller, name, &subject, err);
            if matches!(refused, AppError::Forbidden { .. } | AppError::Conflict { .. }) {
                let meta = json!({ "code": refused.code() });
                if let Err(e) = record(&state.pool, caller, "membership.admit", &target, "denied", meta).await {
                    tracing::warn!(request_id = %caller.request_id, error = %e, "could not record a refused admission");
                }
            }
            return Err(refused);
        }
    };
    let admission = match admission {
        Admission::Member => "member",
        Admission::Invited => "invited",
        Admission::Adopted => "adopted",
    };
    if admission != "member" {
        let meta = json!({ "role": member.role, "admission": admission });
        record(&mut *tx, caller, "membership.admit", &target, "success", meta).await?;
    }
    tx.commit().await.or_fail(caller)?;
    if admission != "member" {
        resync_grants(state, caller, name).await;
    }
    Ok(Admitted { subject: member.subject, role: member.role, status: member.status, admission: admission.into() })
}
