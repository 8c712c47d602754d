//! Silo REST routes (the reference's silo contracts, generalised where the portal does more):
//! `/tenants`, `/groups`, `/policies`, `/grants`, `/ai-budget`, `/models`, `/model-routing`,
//! `/providers/credentials`. Every handler calls the same service function as the pages.

use std::{collections::HashMap, future::Future};

use app::{
    error::AppError,
    model::session::NewAccessTokenRequest,
    model::silo::{
        Amount, ByokRequest, CredentialRequest, DefaultRequest, DeploymentRequest, FallbackRequest, GrantRequest,
        GroupRequest, LimitRequest, PolicyRequest, RouteTestRequest, SiloSettingsView, UserFilter, UserRequest,
    },
    service::silo::{
        access, budgets, byok, groups,
        kept::{self, KeptList},
        models, policies, tokens, users,
    },
    state::{AppState, Caller},
};
use axum::{
    Json, Router,
    extract::{Path, Query, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::{delete, get, post, put},
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{
    page::{Page, href},
    patch::{self, PatchRules},
};
use crate::http::error::{ApiError, ApiResult, JsonBody};

/// The silo's `/api/v1` routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/tenants", get(list_tenants).post(create_tenant))
        .route("/tenants/{name}", get(get_tenant).put(update_tenant).delete(delete_tenant))
        .route("/tenants/{name}/suspend", post(suspend_tenant))
        .route("/tenants/{name}/resume", post(resume_tenant))
        .route("/tenants/{name}/effective-access", get(effective_access))
        .route("/tenants/{name}/effective-contract", get(effective_access))
        .route("/tenants/drift", get(tenants_drift))
        .route("/tenants/repair", post(repair_tenants))
        .route("/ai-budget/{name}/spend", get(user_spend))
        .route("/spend/{name}", get(user_spend))
        .route("/token-usage", get(token_usage))
        .route("/ai-budget/{name}/litellm-key", get(user_key))
        .route("/ai-budget/{name}/litellm-key/revoke", post(revoke_user_key))
        .route("/groups", get(list_groups).post(create_group))
        .route("/groups/{id}", get(get_group).put(update_group).delete(delete_group))
        .route("/policies", get(list_policies).post(create_policy))
        .route("/policies/drift", get(policies_drift))
        .route("/policies/repair", post(repair_policies))
        .route("/policies/{name}", get(get_policy).put(update_policy).delete(delete_policy))
        .route("/grants", get(list_grants).post(create_grant))
        .route("/grants/preview", post(preview_grant))
        .route("/grants/{id}", delete(delete_grant))
        .route("/ai-budget", get(budget_overview))
        .route("/ai-budget/global", get(get_global).put(put_global))
        .route("/ai-budget/accounts", get(list_accounts))
        .route("/ai-budget/accounts/{name}", put(put_account).delete(delete_account))
        .route("/ai-budget/limits", put(set_limit))
        .route("/ai-budget/limits/{id}", delete(delete_limit))
        .route("/ai-budget/settings", put(update_settings))
        .route("/ai-budget/spend.csv", get(spend_csv))
        .route("/models", get(list_models).post(create_model))
        .route("/models/{id}", get(get_model).put(update_model).delete(delete_model))
        .route("/model-routing/defaults", get(list_defaults).put(put_default))
        .route("/model-routing/defaults/{id}", delete(delete_default))
        .route("/model-routing/fallbacks", put(put_fallbacks))
        .route("/model-routing/test", post(test_route))
        .route("/providers/credentials", get(list_credentials).post(create_credential))
        .route("/providers/credentials/{id}", get(get_credential).put(rotate_credential).delete(delete_credential))
        .route("/providers/byok", get(byok_status))
        .route("/providers/byok/{provider}", put(byok_set).delete(byok_remove))
        .route("/providers/keys", get(retired_keys))
        .route("/providers/keys/{provider}", get(retired_keys).put(retired_keys).delete(retired_keys))
        .route("/access-tokens", get(list_tokens).post(create_token))
        .route("/access-tokens/{id}", delete(revoke_token))
}

fn created(location: String, body: impl Serialize) -> Response {
    (StatusCode::CREATED, [(header::LOCATION, location)], Json(body)).into_response()
}

fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// `GET /tenants?q=&team=&phase=&suspended=` with the list routes' `limit=&offset=` (see
/// [`Page`]), or `page=N` (50 a page): matching users, the whole count in `X-Total-Count`.
async fn list_tenants(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let suspended = match params.get("suspended").map(String::as_str) {
        None | Some("") => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return Err(AppError::field("suspended", "Use true or false.")).api(&caller),
    };
    let page = match params.get("page").map(String::as_str) {
        None | Some("") => None,
        Some(p) => match p.parse::<i64>() {
            Ok(p) if p >= 1 => Some(p),
            _ => return Err(AppError::field("page", "Use a page number from 1.")).api(&caller),
        },
    };
    let window = Page::from_params(&params).api(&caller)?;
    let filter = UserFilter {
        q: params.get("q").cloned(),
        team: params.get("team").cloned(),
        phase: params.get("phase").cloned(),
        suspended,
        page,
    };
    let key = href("/tenants", &params, &[]);
    if page.is_some() {
        // `page=N` (50 a page, the console's own paging) is kept for scripts that use it.
        let read = async {
            let (users, total) = users::page(&state, &caller, filter).await?;
            KeptList::of(&caller, &users, total)
        };
        let list = kept::list(&state, &caller, &key, read).await.api(&caller)?;
        return Ok(Page::default().respond_kept("/tenants", &params, &list));
    }
    let read = async {
        let (users, total) = users::window(&state, &caller, filter, window.limit, window.offset).await?;
        KeptList::of(&caller, &users, total)
    };
    let list = kept::list(&state, &caller, &key, read).await.api(&caller)?;
    Ok(window.respond_kept("/tenants", &params, &list))
}

/// A list route's answer from [`kept::list`]: `window` of what `read` returns whole.
async fn kept_window<T: Serialize>(
    state: &AppState,
    caller: &Caller,
    path: &str,
    params: &HashMap<String, String>,
    read: impl Future<Output = Result<Vec<T>, AppError>>,
) -> Result<Response, ApiError> {
    let window = Page::from_params(params).api(caller)?;
    let read = async {
        let (items, total) = window.slice(read.await?);
        KeptList::of(caller, &items, total)
    };
    let list = kept::list(state, caller, &href(path, params, &[]), read).await.api(caller)?;
    Ok(window.respond_kept(path, params, &list))
}

/// `POST /tenants` → 201 `{name, status: "created", …user}`.
async fn create_tenant(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<UserRequest>,
) -> Result<Response, ApiError> {
    let user = users::create(&state, &caller, req).await.api(&caller)?;
    let mut body = serde_json::to_value(&user).unwrap_or_default();
    body["status"] = json!("created");
    Ok(created(format!("/api/v1/tenants/{}", user.name), body))
}

async fn get_tenant(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(users::get(&state, &caller, &name).await.api(&caller)?).into_response())
}

/// `PUT /tenants/{name}` with any part of the user: only the members sent change; `null` clears
/// `team`, `policyRef`, a resource or the user's own `monthlyBudgetUsd` (see [`patch`]).
async fn update_tenant(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let current = users::get(&state, &caller, &name).await.api(&caller)?;
    let rules = PatchRules { aliases: &[("monthlyBudget", "monthlyBudgetUsd")], null_is_empty: &["monthlyBudgetUsd"] };
    let req: UserRequest = patch::patched(&current, body, &rules).api(&caller)?;
    Ok(Json(users::update(&state, &caller, &name, req).await.api(&caller)?).into_response())
}

/// `DELETE /tenants/{name}` → 204.
async fn delete_tenant(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    users::delete(&state, &caller, &name).await.api(&caller)?;
    Ok(no_content())
}

async fn suspend_tenant(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(users::set_suspended(&state, &caller, &name, true).await.api(&caller)?).into_response())
}

async fn resume_tenant(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(users::set_suspended(&state, &caller, &name, false).await.api(&caller)?).into_response())
}

async fn effective_access(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(access::effective(&state, &caller, &name).await.api(&caller)?).into_response())
}

async fn list_groups(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    kept_window(&state, &caller, "/groups", &params, groups::list(&state, &caller)).await
}

async fn create_group(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<GroupRequest>,
) -> Result<Response, ApiError> {
    let group = groups::create(&state, &caller, req).await.api(&caller)?;
    Ok(created(format!("/api/v1/groups/{}", group.id), group))
}

async fn get_group(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(groups::get(&state, &caller, &id).await.api(&caller)?).into_response())
}

async fn update_group(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<GroupRequest>,
) -> Result<Response, ApiError> {
    Ok(Json(groups::update(&state, &caller, &id, req).await.api(&caller)?).into_response())
}

async fn delete_group(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    groups::delete(&state, &caller, &id).await.api(&caller)?;
    Ok(no_content())
}

async fn list_policies(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    kept_window(&state, &caller, "/policies", &params, policies::list_policies(&state, &caller)).await
}

async fn create_policy(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<PolicyRequest>,
) -> Result<Response, ApiError> {
    let policy = policies::create_policy(&state, &caller, req).await.api(&caller)?;
    Ok(created(format!("/api/v1/policies/{}", policy.name), policy))
}

async fn get_policy(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(policies::get_policy(&state, &caller, &name).await.api(&caller)?).into_response())
}

/// `PUT /policies/{name}` with any part of the policy: only the members sent change; `null`
/// clears one (an empty description, no domains, no rules).
async fn update_policy(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let current = policies::get_policy(&state, &caller, &name).await.api(&caller)?;
    let rules = PatchRules { aliases: &[("domains", "allowedDomains")], null_is_empty: &[] };
    let req: PolicyRequest = patch::patched(&current, body, &rules).api(&caller)?;
    Ok(Json(policies::update_policy(&state, &caller, &name, req).await.api(&caller)?).into_response())
}

async fn delete_policy(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    policies::delete_policy(&state, &caller, &name).await.api(&caller)?;
    Ok(no_content())
}

async fn list_grants(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let (items, total) = page.slice(policies::list_grants(&state, &caller).await.api(&caller)?);
    Ok(page.respond("/grants", &params, items, total))
}

async fn create_grant(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<GrantRequest>,
) -> Result<Response, ApiError> {
    let grant = policies::create_grant(&state, &caller, req).await.api(&caller)?;
    Ok(created(format!("/api/v1/grants/{}", grant.id), grant))
}

/// `POST /grants/preview`: what a grant would change, without making it.
async fn preview_grant(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<GrantRequest>,
) -> Result<Response, ApiError> {
    Ok(Json(policies::preview_grant(&state, &caller, req).await.api(&caller)?).into_response())
}

async fn delete_grant(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    policies::delete_grant(&state, &caller, &id).await.api(&caller)?;
    Ok(no_content())
}

/// `GET /ai-budget[?period=day|week|month]`: limits, notices, spend.
async fn budget_overview(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    Ok(Json(budgets::overview(&state, &caller, params.get("period").cloned()).await.api(&caller)?).into_response())
}

/// The reference's global ceiling: the silo-level limit of the calendar month, as its server sends
/// it (`{currency, ceilingAmount}`) or as its CLI and spec do (`{monthlyLimitUsd}`).
#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct GlobalCeiling {
    #[serde(default)]
    currency: String,
    #[serde(default)]
    ceiling_amount: Option<Amount>,
    #[serde(default)]
    monthly_limit_usd: Option<Amount>,
}

impl GlobalCeiling {
    /// The monthly limit at `level` (on `target`), in the silo's currency: a USD amount for a silo
    /// that budgets in another currency is refused (422), never converted.
    async fn limit(
        self,
        state: &AppState,
        caller: &Caller,
        level: &str,
        target: Option<String>,
    ) -> Result<LimitRequest, AppError> {
        let (currency, amount) = match (self.ceiling_amount, self.monthly_limit_usd) {
            (Some(amount), None) => (self.currency, amount),
            (None, Some(usd)) => {
                let (settings, _) = budgets::current_limits(state, caller).await?;
                if settings.currency != "USD" {
                    return Err(AppError::Unprocessable {
                        code: "CURRENCY_MISMATCH".into(),
                        message: format!(
                            "This silo budgets in {c}, not USD; send {{\"currency\": \"{c}\", \"ceilingAmount\": …}} instead.",
                            c = settings.currency
                        ),
                        field: Some("monthlyLimitUsd".into()),
                    });
                }
                ("USD".to_owned(), usd)
            }
            (Some(_), Some(_)) => {
                return Err(AppError::field("monthlyLimitUsd", "Send ceilingAmount or monthlyLimitUsd, not both."));
            }
            (None, None) => return Err(AppError::field("ceilingAmount", "Enter the monthly limit.")),
        };
        Ok(LimitRequest { level: level.into(), target, currency, amount, period: "month".into(), thresholds: vec![] })
    }
}

/// `GET /ai-budget/global` → `{currency, ceilingAmount}` (`USD`/`0` when none is set, as in the
/// reference — where `0` meant "none"; here a set limit of 0 blocks spending, so an unset one
/// also answers `"set": false`).
async fn get_global(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    let (settings, limits) = budgets::current_limits(&state, &caller).await.api(&caller)?;
    let body = match limits.iter().find(|l| l.level == "silo") {
        Some(l) => json!({ "currency": l.currency, "ceilingAmount": l.amount, "period": l.period, "set": true }),
        None => json!({ "currency": settings.currency, "ceilingAmount": "0.00", "set": false }),
    };
    Ok(Json(body).into_response())
}

/// `PUT /ai-budget/global` `{currency, ceilingAmount}` or `{monthlyLimitUsd}` → 204: the silo's
/// monthly limit.
async fn put_global(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<GlobalCeiling>,
) -> Result<Response, ApiError> {
    let limit = req.limit(&state, &caller, "silo", None).await.api(&caller)?;
    budgets::set_limit(&state, &caller, limit).await.api(&caller)?;
    Ok(no_content())
}

/// `GET /ai-budget/accounts`: the reference's per-account ceilings — each user's own limit.
async fn list_accounts(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let (_, limits) = budgets::current_limits(&state, &caller).await.api(&caller)?;
    let accounts: Vec<Value> = limits
        .iter()
        .filter(|l| l.level == "user")
        .map(|l| json!({ "userId": l.target.trim_start_matches("user "), "currency": l.currency, "ceilingAmount": l.amount, "period": l.period }))
        .collect();
    let (items, total) = page.slice(accounts);
    Ok(page.respond("/ai-budget/accounts", &params, items, total))
}

/// `PUT /ai-budget/accounts/{name}` `{currency, ceilingAmount}` or `{monthlyLimitUsd}` → 204: the
/// user's monthly limit.
async fn put_account(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(req): JsonBody<GlobalCeiling>,
) -> Result<Response, ApiError> {
    let limit = req.limit(&state, &caller, "user", Some(name)).await.api(&caller)?;
    budgets::set_limit(&state, &caller, limit).await.api(&caller)?;
    Ok(no_content())
}

/// `DELETE /ai-budget/accounts/{name}` → 204: removes the user's own limit (404 when none).
async fn delete_account(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let (_, limits) = budgets::current_limits(&state, &caller).await.api(&caller)?;
    let target = format!("user {name}");
    let Some(limit) = limits.iter().find(|l| l.level == "user" && l.target == target) else {
        return Err(AppError::NotFound {
            code: "BUDGET_NOT_FOUND".into(),
            message: format!("User “{name}” has no limit of their own."),
        })
        .api(&caller);
    };
    budgets::delete_limit(&state, &caller, &limit.id).await.api(&caller)?;
    Ok(no_content())
}

/// `PUT /ai-budget/limits` `{level, target?, currency, amount, period, thresholds}`.
async fn set_limit(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<LimitRequest>,
) -> Result<Response, ApiError> {
    Ok(Json(budgets::set_limit(&state, &caller, req).await.api(&caller)?).into_response())
}

async fn delete_limit(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    budgets::delete_limit(&state, &caller, &id).await.api(&caller)?;
    Ok(no_content())
}

async fn update_settings(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<SiloSettingsView>,
) -> Result<Response, ApiError> {
    Ok(Json(budgets::update_settings(&state, &caller, req).await.api(&caller)?).into_response())
}

/// `GET /ai-budget/spend.csv[?period=]`.
async fn spend_csv(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let csv = budgets::spend_csv(&state, &caller, params.get("period").cloned()).await.api(&caller)?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (header::CONTENT_DISPOSITION, "attachment; filename=\"spend.csv\""),
        ],
        csv,
    )
        .into_response())
}

async fn list_models(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let (items, total) = page.slice(models::list_deployments(&state, &caller).await.api(&caller)?);
    Ok(page.respond("/models", &params, items, total))
}

/// The original's model fields beside this project's: `publicModelName` (an alias of
/// `publicName`), `providerCredentialId` (of `credential`) and `isDefault` (this public name becomes
/// the silo's default model).
const MODEL_RULES: PatchRules<'static> = PatchRules {
    aliases: &[("publicModelName", "publicName"), ("providerCredentialId", "credential")],
    null_is_empty: &[],
};

/// `isDefault` taken out of a model body.
fn take_is_default(body: &mut Map<String, Value>) -> Result<bool, AppError> {
    match body.remove("isDefault") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(_) => Err(AppError::field("isDefault", "Use true or false.")),
    }
}

/// With `isDefault`, the model's public name becomes the silo's default.
async fn make_default(state: &AppState, caller: &Caller, public_name: &str) -> Result<(), AppError> {
    let req = DefaultRequest { scope: "silo".into(), target: None, model: public_name.to_owned() };
    models::set_default(state, caller, req).await.map(drop)
}

/// `POST /models` with this project's or the original's field names → 201 and the deployment.
async fn create_model(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(mut body): JsonBody<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let is_default = take_is_default(&mut body).api(&caller)?;
    let req: DeploymentRequest = patch::patched(&json!({}), body, &MODEL_RULES).api(&caller)?;
    let model = models::add_deployment(&state, &caller, req).await.api(&caller)?;
    if is_default {
        make_default(&state, &caller, &model.public_name).await.api(&caller)?;
    }
    Ok(created(format!("/api/v1/models/{}", model.id), model))
}

async fn get_model(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(models::get_deployment(&state, &caller, &id).await.api(&caller)?).into_response())
}

/// `PUT /models/{id}` with any part of the deployment (either spelling); `isDefault: true` also
/// makes its public name the silo's default.
async fn update_model(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(mut body): JsonBody<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let is_default = take_is_default(&mut body).api(&caller)?;
    let current = models::get_deployment(&state, &caller, &id).await.api(&caller)?;
    let req: DeploymentRequest = patch::patched(&current, body, &MODEL_RULES).api(&caller)?;
    let model = models::update_deployment(&state, &caller, &id, req).await.api(&caller)?;
    if is_default {
        make_default(&state, &caller, &model.public_name).await.api(&caller)?;
    }
    Ok(Json(model).into_response())
}

async fn delete_model(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    models::delete_deployment(&state, &caller, &id).await.api(&caller)?;
    Ok(no_content())
}

async fn list_defaults(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    let (defaults, fallbacks) = models::list_routing(&state, &caller).await.api(&caller)?;
    let body: Value = json!({ "defaults": defaults, "fallbacks": fallbacks });
    Ok(Json(body).into_response())
}

/// `PUT /model-routing/defaults` `{scope, target?, model | defaultModel}`: the original's scopes
/// `global` and `clusterTenant` both mean this silo.
async fn put_default(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(mut req): JsonBody<DefaultRequest>,
) -> Result<Response, ApiError> {
    if matches!(req.scope.trim(), "global" | "clusterTenant") {
        req.scope = "silo".into();
        req.target = None;
    }
    Ok(Json(models::set_default(&state, &caller, req).await.api(&caller)?).into_response())
}

async fn delete_default(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    models::delete_default(&state, &caller, &id).await.api(&caller)?;
    Ok(no_content())
}

async fn put_fallbacks(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<FallbackRequest>,
) -> Result<Response, ApiError> {
    Ok(Json(models::set_fallbacks(&state, &caller, req).await.api(&caller)?).into_response())
}

async fn test_route(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<RouteTestRequest>,
) -> Result<Response, ApiError> {
    Ok(Json(access::route_test(&state, &caller, req).await.api(&caller)?).into_response())
}

async fn list_credentials(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let (items, total) = page.slice(models::list_credentials(&state, &caller).await.api(&caller)?);
    Ok(page.respond("/providers/credentials", &params, items, total))
}

async fn create_credential(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<CredentialRequest>,
) -> Result<Response, ApiError> {
    let credential = models::add_credential(&state, &caller, req).await.api(&caller)?;
    Ok(created(format!("/api/v1/providers/credentials/{}", credential.id), credential))
}

/// `PUT /providers/credentials/{id}` `{apiKey}`: rotation.
async fn rotate_credential(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(req): JsonBody<CredentialRequest>,
) -> Result<Response, ApiError> {
    Ok(Json(models::rotate_credential(&state, &caller, &id, req).await.api(&caller)?).into_response())
}

async fn get_credential(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let all = models::list_credentials(&state, &caller).await.api(&caller)?;
    match all.into_iter().find(|c| c.id == id.trim()) {
        Some(credential) => Ok(Json(credential).into_response()),
        None => Err(AppError::NotFound {
            code: "CREDENTIAL_NOT_FOUND".into(),
            message: format!("No credential with id “{id}” exists in this silo."),
        })
        .api(&caller),
    }
}

async fn delete_credential(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    models::delete_credential(&state, &caller, &id).await.api(&caller)?;
    Ok(no_content())
}

/// `GET /access-tokens`: every token of the silo, metadata only (never a secret).
async fn list_tokens(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let (items, total) = page.slice(tokens::list(&state, &caller).await.api(&caller)?);
    Ok(page.respond("/access-tokens", &params, items, total))
}

/// `POST /access-tokens`: this project's `{name, role, expiresInDays}` or the original's
/// `{name?, owner?, expiresAt?}`. A token always acts for its creator (the original took `owner`
/// from the body: free text that granted nothing; here it is ignored), with `role` (member when
/// absent) no higher than the creator's; `name` defaults to `default`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenBody {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    expires_in_days: Option<i64>,
    #[serde(default)]
    expires_at: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default, rename = "owner")]
    _owner: Option<String>,
}

/// → 201 `{id, plainTextToken, token}`: the secret is in this answer and nowhere else.
async fn create_token(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<TokenBody>,
) -> Result<Response, ApiError> {
    let expires_in_days = match (body.expires_in_days, body.expires_at) {
        (Some(_), Some(_)) => {
            return Err(AppError::field("expiresAt", "Send expiresAt or expiresInDays, not both.")).api(&caller);
        }
        (days, None) => days,
        (None, Some(at)) => {
            let hours = (at - chrono::Utc::now()).num_hours();
            if hours <= 0 {
                return Err(AppError::field("expiresAt", "Choose a time in the future.")).api(&caller);
            }
            // Whole days, rounded up: the token never lives shorter than asked.
            Some((hours + 23) / 24)
        }
    };
    let req = NewAccessTokenRequest {
        name: body.name.filter(|n| !n.trim().is_empty()).unwrap_or_else(|| "default".into()),
        role: body.role.unwrap_or_else(|| "member".into()),
        expires_in_days,
    };
    let made = tokens::create(&state, &caller, req).await.api(&caller)?;
    let body = json!({ "id": made.token.id, "plainTextToken": made.plain_text_token, "token": made.token });
    let mut response = created(format!("/api/v1/access-tokens/{}", made.token.id), body);
    response.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `DELETE /access-tokens/{id}` → 204 (404 `TOKEN_NOT_FOUND`).
async fn revoke_token(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    tokens::revoke(&state, &caller, &id).await.api(&caller)?;
    Ok(no_content())
}

/// `GET /token-usage[?period=]`: tokens and cost per user in the current calendar period, as
/// LiteLLM logged them (a list: `limit`/`offset` like every list).
async fn token_usage(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let usage = budgets::token_usage(&state, &caller, params.get("period").cloned()).await.api(&caller)?;
    let (items, total) = page.slice(usage);
    Ok(page.respond("/token-usage", &params, items, total))
}

/// `GET /ai-budget/{name}/spend` (and the original's `/spend/{name}`): the user's spend in the
/// current calendar period (`?period=day|week|month`, month when absent), with their own limit.
async fn user_spend(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let user = users::get(&state, &caller, &name).await.api(&caller)?;
    let overview = budgets::overview(&state, &caller, params.get("period").cloned()).await.api(&caller)?;
    let spend = overview.spend.by_user.iter().find(|(u, _)| *u == user.name).map_or("0.00", |(_, a)| a.as_str());
    Ok(Json(json!({
        "tenant": user.name,
        "currency": overview.settings.currency,
        "spend": spend,
        "period": overview.spend.period,
        "periodStart": overview.spend.start,
        "periodEnd": overview.spend.end,
        "ownLimit": user.own_limit,
    }))
    .into_response())
}

/// `GET /ai-budget/{name}/litellm-key`: the user's LiteLLM key as the last pass applied it (never
/// the key itself); 404 `LITELLM_KEY_NOT_FOUND` before the first pass made one.
async fn user_key(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let user = users::get(&state, &caller, &name).await.api(&caller)?;
    Ok(Json(key_body(user).api(&caller)?).into_response())
}

/// `POST /ai-budget/{name}/litellm-key/revoke`: the key is deleted in LiteLLM by the pass this
/// asks for, and a new one issued → 202 with the key as now recorded (`revokeRequestedAt` set
/// until the pass ran).
async fn revoke_user_key(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let user = users::revoke_key(&state, &caller, &name).await.api(&caller)?;
    Ok((StatusCode::ACCEPTED, Json(key_body(user).api(&caller)?)).into_response())
}

/// The original's key metadata: the key's status with the user it belongs to.
fn key_body(user: app::model::silo::UserView) -> Result<Value, AppError> {
    let Some(key) = user.key else {
        return Err(AppError::NotFound {
            code: "LITELLM_KEY_NOT_FOUND".into(),
            message: format!("User “{}” has no LiteLLM key yet; it is made on the next pass.", user.name),
        });
    };
    let mut body = serde_json::to_value(&key).unwrap_or_default();
    body["tenant"] = json!(user.name);
    body["suspended"] = json!(user.suspended);
    Ok(body)
}

/// Users whose Tenant resource or LiteLLM key differed from this database on the last pass, and
/// how: `[{tenant, resource, key}]`.
async fn drift_report(state: &AppState, caller: &Caller) -> Result<Vec<Value>, ApiError> {
    let (users, _) = users::page(state, caller, app::model::silo::UserFilter::default()).await.api(caller)?;
    Ok(users
        .iter()
        .filter_map(|u| {
            let key = u.key.as_ref().and_then(|k| k.drift.clone());
            (u.resource_drift.is_some() || key.is_some())
                .then(|| json!({ "tenant": u.name, "resource": u.resource_drift, "key": key }))
        })
        .collect())
}

/// `GET /tenants/drift` → `{count, drift: [{tenant, resource, key}]}`; empty when all agree.
async fn tenants_drift(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    let drift = drift_report(&state, &caller).await?;
    Ok(Json(json!({ "count": drift.len(), "drift": drift })).into_response())
}

/// `POST /tenants/repair[?dryRun=true]`: with `dryRun`, what a repair would touch (the drift);
/// else the background loops are asked for a pass now → 202 `{requested: true, drift}`.
async fn repair_tenants(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let dry_run = dry_run(&params).api(&caller)?;
    let drift = drift_report(&state, &caller).await?;
    if !dry_run {
        users::repair(&state, &caller).await.api(&caller)?;
    }
    Ok(repair_answer(dry_run, &drift))
}

/// Policies whose AccessPolicy resource differed on the last pass: `[{policy, resource}]`.
async fn policy_drift_report(state: &AppState, caller: &Caller) -> Result<Vec<Value>, ApiError> {
    let drift = policies::drift(state, caller).await.api(caller)?;
    Ok(drift.into_iter().map(|(name, how)| json!({ "policy": name, "resource": how })).collect())
}

/// `GET /policies/drift` → `{count, drift: [{policy, resource}]}`; empty when all agree (and
/// always outside Kubernetes mode, where policies have no resources).
async fn policies_drift(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    let drift = policy_drift_report(&state, &caller).await?;
    Ok(Json(json!({ "count": drift.len(), "drift": drift })).into_response())
}

/// `POST /policies/repair[?dryRun=true]`: as `/tenants/repair`, for the AccessPolicy resources.
async fn repair_policies(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let dry_run = dry_run(&params).api(&caller)?;
    let drift = policy_drift_report(&state, &caller).await?;
    if !dry_run {
        policies::repair(&state, &caller).await.api(&caller)?;
    }
    Ok(repair_answer(dry_run, &drift))
}

/// The original's `?dryRun=true|false` (absent: false).
fn dry_run(params: &HashMap<String, String>) -> Result<bool, AppError> {
    match params.get("dryRun").map(String::as_str) {
        None | Some("" | "false") => Ok(false),
        Some("true") => Ok(true),
        Some(_) => Err(AppError::field("dryRun", "Use true or false.")),
    }
}

/// A repair's answer: 200 with what it would touch for a dry run, else 202 (a pass was asked for).
fn repair_answer(dry_run: bool, drift: &[Value]) -> Response {
    let status = if dry_run { StatusCode::OK } else { StatusCode::ACCEPTED };
    (status, Json(json!({ "requested": !dry_run, "dryRun": dry_run, "drift": drift }))).into_response()
}

/// `GET /providers/byok`: each provider's quick set-up — whether its key is stored (its last four
/// characters), which of its models are defined, and what it defines.
async fn byok_status(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let (items, total) = page.slice(byok::status(&state, &caller).await.api(&caller)?);
    Ok(page.respond("/providers/byok", &params, items, total))
}

/// `PUT /providers/byok/{provider}` `{apiKey}`: the key sealed into `byok-<provider>` and the
/// provider's default models (with `auto` and `auto-embedding`) defined where no deployment has
/// their name yet → `{provider, credential, seeded, kept}`.
async fn byok_set(
    State(state): State<AppState>,
    caller: Caller,
    Path(provider): Path<String>,
    JsonBody(req): JsonBody<ByokRequest>,
) -> Result<Response, ApiError> {
    Ok(Json(byok::set(&state, &caller, &provider, req).await.api(&caller)?).into_response())
}

/// `DELETE /providers/byok/{provider}`: what the quick set-up defined goes, nothing an admin
/// defined → `{removed, left}` (the key stays while `left` is not empty).
async fn byok_remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(provider): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(byok::remove(&state, &caller, &provider).await.api(&caller)?).into_response())
}

/// The original's legacy `/providers/keys*` stored raw provider keys in plain text; they are
/// retired: 410 with the routes that replace them (a key is never stored unsealed here).
async fn retired_keys(caller: Caller) -> Result<Response, ApiError> {
    if caller.principal.is_none() {
        return Err(AppError::Unauthorized).api(&caller);
    }
    let body = json!({
        "error": "The raw provider-key routes are retired: keys are sealed credentials now. Use PUT /api/v1/providers/byok/{provider} {\"apiKey\"} for the quick set-up, or POST /api/v1/providers/credentials.",
        "code": "ROUTE_RETIRED",
        "requestId": caller.request_id,
    });
    Ok((StatusCode::GONE, Json(body)).into_response())
}
