//! Fleet server functions (`/api/fleet/…`).

use leptos::prelude::*;
use server_fn::codec::Json;

#[cfg(feature = "ssr")]
use crate::{api::respond, service, state::request_context};
use crate::{
    error::AppError,
    islands::fleet::provisioning::ChecklistUpdate,
    model::{
        audit::{AuditPage, AuditQuery},
        fleet::billing::{BillingAccount, BillingAccountRequest},
        fleet::cluster_tenant::{
            ClusterTenant, ClusterTenantCreateRequest, ClusterTenantPage, ClusterTenantUpdateRequest, ListQuery,
            TerminationPolicy,
        },
        fleet::identity::{IdentityOverview, ReconcileReport, RotationAction, RotationView},
        fleet::members::{InvitationChange, InvitationView, MemberChange, MemberRequest, MemberView},
        fleet::provisioning::{ProvisioningView, StepId},
        session::{RevokeSessions, SessionView},
    },
};

/// One page of ClusterTenants.
#[server(prefix = "/api/fleet", endpoint = "cluster-tenants/list", input = Json)]
pub async fn list_cluster_tenants(query: ListQuery) -> Result<ClusterTenantPage, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::cluster_tenants::list(&state, &caller, query).await)
}

/// One ClusterTenant.
#[server(prefix = "/api/fleet", endpoint = "cluster-tenants/get", input = Json)]
pub async fn get_cluster_tenant(name: String) -> Result<ClusterTenant, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::cluster_tenants::get(&state, &caller, &name).await)
}

/// Creates a ClusterTenant.
#[server(prefix = "/api/fleet", endpoint = "cluster-tenants/create", input = Json)]
pub async fn create_cluster_tenant(request: ClusterTenantCreateRequest) -> Result<ClusterTenant, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::cluster_tenants::create(&state, &caller, request).await)
}

/// Updates a ClusterTenant's desired state.
#[server(prefix = "/api/fleet", endpoint = "cluster-tenants/update", input = Json)]
pub async fn update_cluster_tenant(
    name: String,
    request: ClusterTenantUpdateRequest,
) -> Result<ClusterTenant, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::cluster_tenants::update(&state, &caller, &name, request).await)
}

/// Starts deleting a ClusterTenant; `confirmation` must repeat its name (checked here too, not
/// only in the browser); `termination_policy`, when given, is what happens to its data.
#[server(prefix = "/api/fleet", endpoint = "cluster-tenants/delete", input = Json)]
pub async fn delete_cluster_tenant(
    name: String,
    confirmation: String,
    termination_policy: Option<TerminationPolicy>,
) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    if confirmation.trim() != name {
        return respond(Err(AppError::field("confirmation", format!("Type “{name}” to confirm."))));
    }
    respond(service::fleet::cluster_tenants::delete(&state, &caller, &name, termination_policy).await.map(|_| ()))
}

/// The provisioning checklist of a ClusterTenant (polled by the detail page while it settles).
#[server(prefix = "/api/fleet", endpoint = "cluster-tenants/provisioning", input = Json)]
pub async fn get_provisioning(name: String) -> Result<ProvisioningView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::cluster_tenants::provisioning_view(&state, &caller, &name).await)
}

/// The provisioning checklist of a ClusterTenant as its page renders it (the caller's Retry
/// buttons included): what the page's island swaps in while the silo settles.
#[server(prefix = "/api/fleet", endpoint = "cluster-tenants/provisioning/rendered", input = Json)]
pub async fn provisioning_update(name: String) -> Result<ChecklistUpdate, AppError> {
    let view = get_provisioning(name.clone()).await?;
    let can_retry =
        crate::authz::can(crate::current_principal().as_ref(), crate::authz::Action::UpdateClusterTenant(&name));
    Ok(ChecklistUpdate::render(view, can_retry))
}

/// Retries one failed provisioning step, or all of them.
#[server(prefix = "/api/fleet", endpoint = "cluster-tenants/retry", input = Json)]
pub async fn retry_provisioning(name: String, step: Option<StepId>) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::cluster_tenants::retry(&state, &caller, &name, step).await)
}

/// Suspends or resumes a ClusterTenant's silo.
#[server(prefix = "/api/fleet", endpoint = "cluster-tenants/suspend", input = Json)]
pub async fn set_cluster_tenant_suspended(name: String, suspended: bool) -> Result<ClusterTenant, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::cluster_tenants::set_suspended(&state, &caller, &name, suspended).await)
}

/// A customer's members, owners first.
#[server(prefix = "/api/fleet", endpoint = "members/list", input = Json)]
pub async fn list_members(name: String) -> Result<Vec<MemberView>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::members::list(&state, &caller, &name).await)
}

/// Adds a member (taking a seat) or changes a member's role.
#[server(prefix = "/api/fleet", endpoint = "members/add", input = Json)]
pub async fn add_member(name: String, request: MemberRequest) -> Result<MemberChange, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::members::add(&state, &caller, &name, request).await)
}

/// Suspends (frees the seat) or reactivates (takes a seat) a member.
#[server(prefix = "/api/fleet", endpoint = "members/suspend", input = Json)]
pub async fn set_member_suspended(name: String, subject: String, suspended: bool) -> Result<MemberView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::members::set_suspended(&state, &caller, &name, &subject, suspended).await)
}

/// Removes a member.
#[server(prefix = "/api/fleet", endpoint = "members/remove", input = Json)]
pub async fn remove_member(name: String, subject: String) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::members::remove(&state, &caller, &name, &subject).await)
}

/// A customer's pending invitations, oldest first.
#[server(prefix = "/api/fleet", endpoint = "members/invitations", input = Json)]
pub async fn list_invitations(name: String) -> Result<Vec<InvitationView>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::members::invitations(&state, &caller, &name).await)
}

/// Invites a person by e-mail address (no seat until they accept at their first sign-in).
#[server(prefix = "/api/fleet", endpoint = "members/invite", input = Json)]
pub async fn invite_member(name: String, request: MemberRequest) -> Result<InvitationChange, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::members::invite(&state, &caller, &name, request).await)
}

/// Withdraws a pending invitation.
#[server(prefix = "/api/fleet", endpoint = "members/cancel-invitation", input = Json)]
pub async fn cancel_invitation(name: String, email: String) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::members::cancel_invitation(&state, &caller, &name, &email).await)
}

/// The DNS page: every customer's hosts as the probes last saw them (platform operators).
#[server(prefix = "/api/fleet", endpoint = "dns/overview", input = Json)]
pub async fn get_dns_overview() -> Result<crate::model::fleet::dns::DnsOverview, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::dns::overview(&state, &caller).await)
}

/// One customer's hosts as last checked.
#[server(prefix = "/api/fleet", endpoint = "dns/of", input = Json)]
pub async fn get_customer_dns(name: String) -> Result<crate::model::fleet::dns::CustomerDns, AppError> {
    let (state, caller) = request_context()?;
    let hosts = service::fleet::dns::of(&state, &caller, &name).await;
    respond(
        hosts.map(|hosts| crate::model::fleet::dns::CustomerDns {
            probing: service::fleet::dns::probing(&state),
            hosts,
        }),
    )
}

/// Checks one customer's DNS and certificates now.
#[server(prefix = "/api/fleet", endpoint = "dns/refresh", input = Json)]
pub async fn refresh_customer_dns(name: String) -> Result<Vec<crate::model::fleet::dns::DnsHostView>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::dns::refresh(&state, &caller, &name).await.map(|(_, hosts)| hosts))
}

/// The platform's certificate issuer as the cluster has it (platform operators).
#[server(prefix = "/api/fleet", endpoint = "dns/issuer", input = Json)]
pub async fn get_platform_dns() -> Result<crate::model::fleet::dns::PlatformDnsView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::dns::issuer(&state, &caller).await)
}

/// Writes the platform's issuer (and its solver Secret when a token is given).
#[server(prefix = "/api/fleet", endpoint = "dns/issuer/save", input = Json)]
pub async fn save_platform_dns(
    form: crate::model::fleet::dns::PlatformDnsForm,
) -> Result<crate::model::fleet::dns::PlatformDnsView, AppError> {
    let (state, caller) = request_context()?;
    let result = match service::fleet::dns::request_of(&form) {
        Ok(request) => service::fleet::dns::configure_issuer(&state, &caller, request).await,
        Err(e) => Err(e),
    };
    respond(result)
}

/// The identity page: the Zitadel key in use, its health, the rotation under way.
#[server(prefix = "/api/fleet", endpoint = "identity/overview", input = Json)]
pub async fn get_identity_overview() -> Result<IdentityOverview, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::identity::overview(&state, &caller).await)
}

/// Rotates to an uploaded key (Zitadel's JSON key file). A key that fails validation is an
/// error naming what is wrong; the old key stays in use.
#[server(prefix = "/api/fleet", endpoint = "identity/rotate", input = Json)]
pub async fn rotate_zitadel_key(service_account_key: String) -> Result<RotationView, AppError> {
    let (state, caller) = request_context()?;
    let request = crate::model::fleet::identity::RotateRequest {
        service_account_key: Some(serde_json::Value::String(service_account_key)),
    };
    let outcome = service::fleet::identity::rotate(&state, &caller, request).await;
    let outcome = match outcome {
        Ok(outcome) if !outcome.rotated => Err(AppError::Unprocessable {
            code: "SA_KEY_INVALID".into(),
            message: outcome.validation.detail.unwrap_or_else(|| "The key did not validate.".into()),
            field: Some("serviceAccountKey".into()),
        }),
        other => other,
    };
    let outcome = match outcome {
        Ok(_) => service::fleet::identity::latest(&state, &caller).await,
        Err(e) => Err(e),
    };
    respond(outcome)
}

/// One step of a two-phase rotation.
#[server(prefix = "/api/fleet", endpoint = "identity/rotation", input = Json)]
pub async fn identity_rotation(action: RotationAction) -> Result<RotationView, AppError> {
    let (state, caller) = request_context()?;
    let done = match action {
        RotationAction::Prepare => service::fleet::identity::prepare(&state, &caller).await,
        RotationAction::Activate => service::fleet::identity::activate(&state, &caller).await,
        RotationAction::Revoke => service::fleet::identity::revoke_now(&state, &caller).await,
        RotationAction::Cancel => service::fleet::identity::cancel(&state, &caller).await,
    };
    respond(done)
}

/// The reconcile pass now (one customer, or all).
#[server(prefix = "/api/fleet", endpoint = "identity/reconcile", input = Json)]
pub async fn reconcile_identity(name: Option<String>) -> Result<ReconcileReport, AppError> {
    let (state, caller) = request_context()?;
    let request = crate::model::fleet::identity::ReconcileRequest { name };
    respond(service::fleet::identity::reconcile(&state, &caller, request).await)
}

/// The migration from the original's shared database (platform operators).
#[server(prefix = "/api/fleet", endpoint = "migrations/overview", input = Json)]
pub async fn get_migrations() -> Result<crate::model::fleet::migrations::MigrationsView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::migrations::overview(&state, &caller).await)
}

/// Starts a migration run in the background; answers its id.
#[server(prefix = "/api/fleet", endpoint = "migrations/run", input = Json)]
pub async fn start_migration_run(request: crate::model::fleet::migrations::RunRequest) -> Result<i64, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::migrations::start(&state, &caller, request).await)
}

/// One customer's billing: plan history, a month's statement (`YYYY-MM`; this month when absent)
/// and its usage days.
#[server(prefix = "/api/fleet", endpoint = "billing/customer", input = Json)]
pub async fn customer_billing(
    name: String,
    month: Option<String>,
) -> Result<crate::model::fleet::billing::CustomerBilling, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::plans::customer_billing(&state, &caller, &name, month.as_deref()).await)
}

/// The caller's own billing account, if any.
#[server(prefix = "/api/fleet", endpoint = "billing/mine", input = Json)]
pub async fn my_billing_account() -> Result<Option<BillingAccount>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::billing::mine(&state, &caller).await)
}

/// Creates the caller's billing account or renames it.
#[server(prefix = "/api/fleet", endpoint = "billing/save", input = Json)]
pub async fn save_billing_account(request: BillingAccountRequest) -> Result<BillingAccount, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::billing::upsert_mine(&state, &caller, request).await.map(|(account, _)| account))
}

/// A page of the fleet's audit log.
#[server(prefix = "/api/fleet", endpoint = "audit/list", input = Json)]
pub async fn list_fleet_audit(query: AuditQuery) -> Result<AuditPage, AppError> {
    let (state, caller) = request_context()?;
    respond(service::audit::list(&state, &caller, query).await)
}

/// The caller's own sessions.
#[server(prefix = "/api/fleet", endpoint = "sessions/list", input = Json)]
pub async fn list_fleet_sessions() -> Result<Vec<SessionView>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::sessions::list(&state, &caller).await)
}

/// Ends the caller's sessions.
#[server(prefix = "/api/fleet", endpoint = "sessions/revoke", input = Json)]
pub async fn revoke_fleet_sessions(what: RevokeSessions) -> Result<i64, AppError> {
    let (state, caller) = request_context()?;
    respond(service::sessions::revoke(&state, &caller, what).await)
}

/// The billing overview: every customer in scope with its account, plan, month-to-date and
/// forecast (operators: all; others: the customers they own or administer).
#[server(prefix = "/api/fleet", endpoint = "billing/overview", input = Json)]
pub async fn billing_overview(
    query: crate::model::fleet::billing::BillingQuery,
) -> Result<crate::model::fleet::billing::BillingOverview, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::billing_overview::overview(&state, &caller, query).await)
}

/// Every billing plan (platform operators).
#[server(prefix = "/api/fleet", endpoint = "billing/plans", input = Json)]
pub async fn billing_plans() -> Result<Vec<crate::model::fleet::billing::PlanView>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::plans::list(&state, &caller).await)
}

/// Defines a billing plan (platform operators).
#[server(prefix = "/api/fleet", endpoint = "billing/plans/create", input = Json)]
pub async fn create_billing_plan(
    request: crate::model::fleet::billing::PlanRequest,
) -> Result<crate::model::fleet::billing::PlanView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::plans::create(&state, &caller, request).await)
}

/// Puts a customer on a plan from a day (platform operators); answers its plan history.
#[server(prefix = "/api/fleet", endpoint = "billing/assign", input = Json)]
pub async fn assign_billing_plan(
    name: String,
    request: crate::model::fleet::billing::AssignPlanRequest,
) -> Result<Vec<crate::model::fleet::billing::PlanAssignment>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::plans::assign(&state, &caller, &name, request).await)
}

/// Makes a closed month's statement final (platform operators).
#[server(prefix = "/api/fleet", endpoint = "billing/finalise", input = Json)]
pub async fn finalise_billing_statement(
    name: String,
    month: String,
) -> Result<crate::model::fleet::billing::StatementView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::fleet::plans::finalise(&state, &caller, &name, &month).await)
}
