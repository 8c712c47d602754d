//! Silo server functions (`/api/silo/…`).

use leptos::prelude::*;
use server_fn::codec::Json;

#[cfg(feature = "ssr")]
use crate::{api::respond, service, state::request_context};
use crate::{
    error::AppError,
    model::{
        audit::{AuditPage, AuditQuery},
        session::{AccessTokenView, CreatedAccessToken, NewAccessTokenRequest, RevokeSessions, SessionView},
        silo::{Member, SiloSummary},
    },
};

/// The overview counts.
#[server(prefix = "/api/silo", endpoint = "overview", input = Json)]
pub async fn silo_overview() -> Result<SiloSummary, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::overview(&state, &caller).await)
}

/// The member read-model.
#[server(prefix = "/api/silo", endpoint = "members/list", input = Json)]
pub async fn list_members() -> Result<Vec<Member>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::members(&state, &caller).await)
}

/// A page of the silo's audit log.
#[server(prefix = "/api/silo", endpoint = "audit/list", input = Json)]
pub async fn list_silo_audit(query: AuditQuery) -> Result<AuditPage, AppError> {
    let (state, caller) = request_context()?;
    respond(service::audit::list(&state, &caller, query).await)
}

/// The sessions the caller may see (own; admins: every member's).
#[server(prefix = "/api/silo", endpoint = "sessions/list", input = Json)]
pub async fn list_silo_sessions() -> Result<Vec<SessionView>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::sessions::list(&state, &caller).await)
}

/// Ends sessions.
#[server(prefix = "/api/silo", endpoint = "sessions/revoke", input = Json)]
pub async fn revoke_silo_sessions(what: RevokeSessions) -> Result<i64, AppError> {
    let (state, caller) = request_context()?;
    respond(service::sessions::revoke(&state, &caller, what).await)
}

/// What a described form (a grant or a policy) would change, from its fields as the browser
/// would post them (see [`crate::api::forms::post_form`]); changes nothing.
#[server(prefix = "/api/silo", endpoint = "portal/preview", input = Json)]
pub async fn preview_portal_form(fields: String) -> Result<WhatIf, AppError> {
    let (state, _) = request_context()?;
    let values = form_urlencoded::parse(fields.as_bytes()).into_owned().collect();
    respond(crate::forms::preview(&state, values).await)
}

/// The silo's access tokens.
#[server(prefix = "/api/silo", endpoint = "tokens/list", input = Json)]
pub async fn list_tokens() -> Result<Vec<AccessTokenView>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::tokens::list(&state, &caller).await)
}

/// Creates an access token; the answer carries its secret, once.
#[server(prefix = "/api/silo", endpoint = "tokens/create", input = Json)]
pub async fn create_token(request: NewAccessTokenRequest) -> Result<CreatedAccessToken, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::tokens::create(&state, &caller, request).await)
}

/// Revokes an access token.
#[server(prefix = "/api/silo", endpoint = "tokens/revoke", input = Json)]
pub async fn revoke_token(id: String) -> Result<AccessTokenView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::tokens::revoke(&state, &caller, &id).await)
}

// The silo portal. Every function is for the silo's owners and admins; the service layer checks.

use crate::model::silo::{
    BudgetOverview, ByokOutcome, ByokRequest, CredentialRequest, CredentialView, DefaultRequest, DefaultView,
    DeploymentRequest, DeploymentView, DomainCheck, EffectiveAccess, FallbackRequest, GrantRequest, GrantView,
    GroupRequest, GroupView, LimitRequest, LimitView, ModelsOverview, PoliciesOverview, PolicyRequest, PolicyView,
    RouteTest, RouteTestRequest, SiloSettingsView, UserFilter, UserList, UserRequest, UserView, WhatIf,
};

/// Users matching the filters.
#[server(prefix = "/api/silo", endpoint = "users/list", input = Json)]
pub async fn list_users(filter: UserFilter) -> Result<UserList, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::users::list(&state, &caller, filter).await)
}

/// Creates a user.
#[server(prefix = "/api/silo", endpoint = "users/create", input = Json)]
pub async fn create_user(request: UserRequest) -> Result<UserView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::users::create(&state, &caller, request).await)
}

/// Changes a user.
#[server(prefix = "/api/silo", endpoint = "users/update", input = Json)]
pub async fn update_user(name: String, request: UserRequest) -> Result<UserView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::users::update(&state, &caller, &name, request).await)
}

/// Suspends or resumes a user.
#[server(prefix = "/api/silo", endpoint = "users/suspend", input = Json)]
pub async fn suspend_user(name: String, suspended: bool) -> Result<UserView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::users::set_suspended(&state, &caller, &name, suspended).await)
}

/// Revokes a user's LiteLLM key: the next pass (asked for now) deletes it and issues a new one.
#[server(prefix = "/api/silo", endpoint = "users/revoke-key", input = Json)]
pub async fn revoke_user_key(name: String) -> Result<UserView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::users::revoke_key(&state, &caller, &name).await)
}

/// Deletes a user; `confirmation` must repeat the name.
#[server(prefix = "/api/silo", endpoint = "users/delete", input = Json)]
pub async fn delete_user(name: String, confirmation: String) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    if confirmation.trim() != name {
        return respond(Err(AppError::field("confirmation", "Type the user's name to confirm.")));
    }
    respond(service::silo::users::delete(&state, &caller, &name).await)
}

/// Every group.
#[server(prefix = "/api/silo", endpoint = "groups/list", input = Json)]
pub async fn list_groups() -> Result<Vec<GroupView>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::groups::list(&state, &caller).await)
}

/// Creates a group.
#[server(prefix = "/api/silo", endpoint = "groups/create", input = Json)]
pub async fn create_group(request: GroupRequest) -> Result<GroupView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::groups::create(&state, &caller, request).await)
}

/// Changes a group.
#[server(prefix = "/api/silo", endpoint = "groups/update", input = Json)]
pub async fn update_group(id: String, request: GroupRequest) -> Result<GroupView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::groups::update(&state, &caller, &id, request).await)
}

/// Deletes a group.
#[server(prefix = "/api/silo", endpoint = "groups/delete", input = Json)]
pub async fn delete_group(id: String) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::groups::delete(&state, &caller, &id).await)
}

/// Policies and grants.
#[server(prefix = "/api/silo", endpoint = "policies/overview", input = Json)]
pub async fn load_policies() -> Result<PoliciesOverview, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::policies::overview(&state, &caller).await)
}

/// Creates (`create`) or changes a policy.
#[server(prefix = "/api/silo", endpoint = "policies/save", input = Json)]
pub async fn save_policy(request: PolicyRequest, create: bool) -> Result<PolicyView, AppError> {
    let (state, caller) = request_context()?;
    let name = request.name.trim().to_owned();
    respond(if create {
        service::silo::policies::create_policy(&state, &caller, request).await
    } else {
        service::silo::policies::update_policy(&state, &caller, &name, request).await
    })
}

/// Which users a policy change would govern.
#[server(prefix = "/api/silo", endpoint = "policies/preview", input = Json)]
pub async fn preview_policy(request: PolicyRequest) -> Result<WhatIf, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::policies::preview_policy(&state, &caller, request).await)
}

/// Deletes a policy.
#[server(prefix = "/api/silo", endpoint = "policies/delete", input = Json)]
pub async fn delete_policy(name: String) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::policies::delete_policy(&state, &caller, &name).await)
}

/// Creates a grant.
#[server(prefix = "/api/silo", endpoint = "grants/create", input = Json)]
pub async fn create_grant(request: GrantRequest) -> Result<GrantView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::policies::create_grant(&state, &caller, request).await)
}

/// What a grant would change.
#[server(prefix = "/api/silo", endpoint = "grants/preview", input = Json)]
pub async fn preview_grant(request: GrantRequest) -> Result<WhatIf, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::policies::preview_grant(&state, &caller, request).await)
}

/// What deleting a grant would change.
#[server(prefix = "/api/silo", endpoint = "grants/preview-removal", input = Json)]
pub async fn preview_grant_removal(id: String) -> Result<WhatIf, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::policies::preview_grant_removal(&state, &caller, &id).await)
}

/// Deletes a grant.
#[server(prefix = "/api/silo", endpoint = "grants/delete", input = Json)]
pub async fn delete_grant(id: String) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::policies::delete_grant(&state, &caller, &id).await)
}

/// A user's effective access.
#[server(prefix = "/api/silo", endpoint = "access/effective", input = Json)]
pub async fn load_effective_access(user: String) -> Result<EffectiveAccess, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::access::effective(&state, &caller, &user).await)
}

/// Whether a user's assistant may reach a domain.
#[server(prefix = "/api/silo", endpoint = "access/domain", input = Json)]
pub async fn check_domain(user: String, domain: String) -> Result<DomainCheck, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::access::check_domain(&state, &caller, &user, &domain).await)
}

/// The test-route tool.
#[server(prefix = "/api/silo", endpoint = "models/test-route", input = Json)]
pub async fn test_route(request: RouteTestRequest) -> Result<RouteTest, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::access::route_test(&state, &caller, request).await)
}

/// The budgets page.
#[server(prefix = "/api/silo", endpoint = "budgets/overview", input = Json)]
pub async fn load_budgets(period: Option<String>) -> Result<BudgetOverview, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::budgets::overview(&state, &caller, period).await)
}

/// Sets a limit.
#[server(prefix = "/api/silo", endpoint = "budgets/set", input = Json)]
pub async fn set_limit(request: LimitRequest) -> Result<LimitView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::budgets::set_limit(&state, &caller, request).await)
}

/// Removes a limit.
#[server(prefix = "/api/silo", endpoint = "budgets/delete", input = Json)]
pub async fn delete_limit(id: String) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::budgets::delete_limit(&state, &caller, &id).await)
}

/// Changes the silo settings.
#[server(prefix = "/api/silo", endpoint = "settings/update", input = Json)]
pub async fn update_settings(request: SiloSettingsView) -> Result<SiloSettingsView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::budgets::update_settings(&state, &caller, request).await)
}

/// Dismisses a notice.
#[server(prefix = "/api/silo", endpoint = "notices/dismiss", input = Json)]
pub async fn dismiss_notice(id: i64) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::budgets::dismiss_notice(&state, &caller, id).await)
}

/// The models page.
#[server(prefix = "/api/silo", endpoint = "models/overview", input = Json)]
pub async fn load_models() -> Result<ModelsOverview, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::models::overview(&state, &caller).await)
}

/// Stores a provider credential.
#[server(prefix = "/api/silo", endpoint = "credentials/create", input = Json)]
pub async fn add_credential(request: CredentialRequest) -> Result<CredentialView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::models::add_credential(&state, &caller, request).await)
}

/// The quick set-up: one provider key, and that provider's default models (with `auto` and
/// `auto-embedding`) where no deployment has their name yet.
#[server(prefix = "/api/silo", endpoint = "byok/set", input = Json)]
pub async fn set_byok(provider: String, request: ByokRequest) -> Result<ByokOutcome, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::byok::set(&state, &caller, provider.trim(), request).await)
}

/// Rotates a credential's key.
#[server(prefix = "/api/silo", endpoint = "credentials/rotate", input = Json)]
pub async fn rotate_credential(id: String, request: CredentialRequest) -> Result<CredentialView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::models::rotate_credential(&state, &caller, &id, request).await)
}

/// Deletes a credential.
#[server(prefix = "/api/silo", endpoint = "credentials/delete", input = Json)]
pub async fn delete_credential(id: String) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::models::delete_credential(&state, &caller, &id).await)
}

/// Adds a deployment.
#[server(prefix = "/api/silo", endpoint = "models/create", input = Json)]
pub async fn add_deployment(request: DeploymentRequest) -> Result<DeploymentView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::models::add_deployment(&state, &caller, request).await)
}

/// Removes a deployment.
#[server(prefix = "/api/silo", endpoint = "models/delete", input = Json)]
pub async fn delete_deployment(id: String) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::models::delete_deployment(&state, &caller, &id).await)
}

/// Sets a fallback chain.
#[server(prefix = "/api/silo", endpoint = "models/fallbacks", input = Json)]
pub async fn set_fallbacks(request: FallbackRequest) -> Result<Vec<(String, Vec<String>)>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::models::set_fallbacks(&state, &caller, request).await)
}

/// Sets a default model.
#[server(prefix = "/api/silo", endpoint = "models/default", input = Json)]
pub async fn set_default_model(request: DefaultRequest) -> Result<DefaultView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::models::set_default(&state, &caller, request).await)
}

/// Removes a default model.
#[server(prefix = "/api/silo", endpoint = "models/default-delete", input = Json)]
pub async fn delete_default_model(id: String) -> Result<(), AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::models::delete_default(&state, &caller, &id).await)
}
