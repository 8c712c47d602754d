//! Fleet REST routes: `/cluster-tenants`, `/billing-accounts`, `/billing/{name}/usage`, `/platform/dns` and
//! `/admin/zitadel`.

use std::collections::HashMap;

use app::{
    error::AppError,
    model::{
        fleet::billing::BillingAccountRequest,
        fleet::cluster_tenant::{ClusterTenantCreateRequest, ClusterTenantUpdateRequest, TerminationPolicy},
        fleet::identity::{ReconcileRequest, RotateRequest},
        fleet::members::MemberRequest,
        fleet::provisioning::RetryRequest,
    },
    service,
    state::{AppState, Caller},
};
use axum::{
    Json, Router,
    extract::{Path, Query, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::json;

use super::page::Page;
use crate::http::error::{ApiError, ApiResult, JsonBody};

/// `/cluster-tenants` routes.
pub fn cluster_tenant_routes() -> Router<AppState> {
    Router::new()
        .route("/cluster-tenants", get(list).post(create))
        .route("/cluster-tenants/{name}", get(get_one).put(update).delete(remove))
        .route("/cluster-tenants/{name}/status", get(status))
        .route("/cluster-tenants/{name}/provisioning", get(provisioning))
        .route("/cluster-tenants/{name}/retry", axum::routing::post(retry))
        .route("/cluster-tenants/{name}/refresh", axum::routing::post(refresh))
        .route("/cluster-tenants/{name}/silo-credential/rotate", axum::routing::post(rotate_silo_credential))
        .route("/cluster-tenants/{name}/members", get(members).post(add_member))
        .route("/cluster-tenants/{name}/members/{subject}", axum::routing::delete(remove_member))
        .route("/cluster-tenants/{name}/members/{subject}/suspend", axum::routing::post(suspend_member))
        .route("/cluster-tenants/{name}/members/{subject}/reactivate", axum::routing::post(reactivate_member))
        .route("/cluster-tenants/{name}/invitations", get(invitations))
        .route("/cluster-tenants/{name}/invitations/{email}", axum::routing::delete(cancel_invitation))
}

/// `GET /cluster-tenants/{name}/invitations`: `[{email, role, status: "invited", invitedBy, createdAt}]`.
async fn invitations(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let invitations = service::fleet::members::invitations(&state, &caller, &name).await.api(&caller)?;
    let (items, total) = page.slice(invitations);
    Ok(page.respond(&format!("/cluster-tenants/{name}/invitations"), &params, items, total))
}

/// `DELETE /cluster-tenants/{name}/invitations/{email}` → `{email, status: "cancelled"}`.
async fn cancel_invitation(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, email)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    service::fleet::members::cancel_invitation(&state, &caller, &name, &email).await.api(&caller)?;
    Ok(Json(json!({ "email": email.trim().to_lowercase(), "status": "cancelled" })).into_response())
}

/// `GET /cluster-tenants/{name}/members`: `[{subject, role, status, createdAt, updatedAt}]`.
async fn members(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let members = service::fleet::members::list(&state, &caller, &name).await.api(&caller)?;
    let (items, total) = page.slice(members);
    Ok(page.respond(&format!("/cluster-tenants/{name}/members"), &params, items, total))
}

/// `POST /cluster-tenants/{name}/members {subject, role}`: 201 when created, 200 when the role
/// changed. `{email, role}` (no subject) invites instead: 201 `{email, role, status: "invited", …}`
/// when created, 200 when a pending invitation's role changed.
async fn add_member(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(req): JsonBody<MemberRequest>,
) -> Result<Response, ApiError> {
    let invites = req.subject.trim().is_empty() && req.email.as_deref().is_some_and(|e| !e.trim().is_empty());
    let (created, body) = if invites {
        let change = service::fleet::members::invite(&state, &caller, &name, req).await.api(&caller)?;
        (change.created, serde_json::to_value(change))
    } else {
        let change = service::fleet::members::add(&state, &caller, &name, req).await.api(&caller)?;
        (change.created, serde_json::to_value(change))
    };
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(body.unwrap_or_default())).into_response())
}

/// `DELETE /cluster-tenants/{name}/members/{subject}` → `{subject, status: "removed"}`.
async fn remove_member(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, subject)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    service::fleet::members::remove(&state, &caller, &name, &subject).await.api(&caller)?;
    Ok(Json(json!({ "subject": subject, "status": "removed" })).into_response())
}

/// `POST /cluster-tenants/{name}/members/{subject}/suspend` (frees the seat).
async fn suspend_member(
    state: State<AppState>,
    caller: Caller,
    path: Path<(String, String)>,
) -> Result<Response, ApiError> {
    member_status(state, caller, path, true).await
}

/// `POST /cluster-tenants/{name}/members/{subject}/reactivate` (takes a seat).
async fn reactivate_member(
    state: State<AppState>,
    caller: Caller,
    path: Path<(String, String)>,
) -> Result<Response, ApiError> {
    member_status(state, caller, path, false).await
}

/// Suspends or reactivates one member → `{subject, role, status}`.
async fn member_status(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, subject)): Path<(String, String)>,
    suspended: bool,
) -> Result<Response, ApiError> {
    let member =
        service::fleet::members::set_suspended(&state, &caller, &name, &subject, suspended).await.api(&caller)?;
    Ok(Json(member).into_response())
}

/// `/platform/dns`: the platform's certificate issuer (platform operators; the original's
/// routes were ungated).
pub fn platform_routes() -> Router<AppState> {
    Router::new().route("/platform/dns", get(platform_dns).put(configure_platform_dns))
}

/// `GET /platform/dns` → `{configured, issuerName, issuerKind, issuerNamespace, provider, zone,
/// email, server, ready, message, tokenSet, tokenChangedAt, …}` (never the token).
async fn platform_dns(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    Ok(Json(service::fleet::dns::issuer(&state, &caller).await.api(&caller)?).into_response())
}

/// `PUT /platform/dns {provider, zone, email, server?, issuerName?, apiToken?, solverConfig?}` →
/// the issuer as written, with the original's `status: "configured"`.
async fn configure_platform_dns(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<opencrane_provision::platform_dns::IssuerRequest>,
) -> Result<Response, ApiError> {
    let view = service::fleet::dns::configure_issuer(&state, &caller, req).await.api(&caller)?;
    let mut body = serde_json::to_value(view).unwrap_or_default();
    body["status"] = json!("configured");
    Ok(Json(body).into_response())
}

/// `/admin/zitadel` routes: the fleet's identity plane (platform operators).
pub fn identity_routes() -> Router<AppState> {
    use axum::routing::post;
    Router::new()
        .route("/admin/zitadel", get(identity_overview))
        .route("/admin/zitadel/sa-key:rotate", post(rotate_key))
        .route("/admin/zitadel/sa-key:prepare", post(prepare_key))
        .route("/admin/zitadel/sa-key:activate", post(activate_key))
        .route("/admin/zitadel/sa-key:revoke", post(revoke_key))
        .route("/admin/zitadel/sa-key:cancel", post(cancel_key))
        .route("/admin/zitadel/reconcile", post(reconcile_identity))
}

/// `GET /admin/zitadel`: the key in use, its health and the rotation under way.
async fn identity_overview(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    Ok(Json(service::fleet::identity::overview(&state, &caller).await.api(&caller)?).into_response())
}

/// `POST /admin/zitadel/sa-key:rotate {serviceAccountKey}`: 200 `{rotated: true, keyId,
/// previousKeyId, validation}`, or 422 `{rotated: false, validation}` (the old key stays).
async fn rotate_key(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<RotateRequest>,
) -> Result<Response, ApiError> {
    let outcome = service::fleet::identity::rotate(&state, &caller, req).await.api(&caller)?;
    let status = if outcome.rotated { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
    Ok((status, Json(outcome)).into_response())
}

/// `POST /admin/zitadel/sa-key:prepare`: mints, validates and keeps a new key (201).
async fn prepare_key(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    let rotation = service::fleet::identity::prepare(&state, &caller).await.api(&caller)?;
    Ok((StatusCode::CREATED, Json(rotation)).into_response())
}

/// `POST /admin/zitadel/sa-key:activate`: the prepared key goes into use.
async fn activate_key(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    Ok(Json(service::fleet::identity::activate(&state, &caller).await.api(&caller)?).into_response())
}

/// `POST /admin/zitadel/sa-key:revoke`: revokes the old key now (ends the grace period).
async fn revoke_key(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    Ok(Json(service::fleet::identity::revoke_now(&state, &caller).await.api(&caller)?).into_response())
}

/// `POST /admin/zitadel/sa-key:cancel`: abandons a prepared rotation.
async fn cancel_key(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    Ok(Json(service::fleet::identity::cancel(&state, &caller).await.api(&caller)?).into_response())
}

/// `POST /admin/zitadel/reconcile {name?}`: the reconcile pass now.
async fn reconcile_identity(
    State(state): State<AppState>,
    caller: Caller,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    // The body is optional (`{}` or nothing reconciles every customer).
    let request: ReconcileRequest = if body.iter().all(u8::is_ascii_whitespace) {
        ReconcileRequest::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| AppError::field("name", format!("The body must be {{\"name\": \"…\"}} or empty: {e}")))
            .api(&caller)?
    };
    Ok(Json(service::fleet::identity::reconcile(&state, &caller, request).await.api(&caller)?).into_response())
}

/// `/billing-accounts` routes.
pub fn billing_routes() -> Router<AppState> {
    Router::new()
        .route("/billing-accounts", axum::routing::post(upsert_billing))
        .route("/billing-accounts/me", get(my_billing))
        .route("/billing/{name}/usage", get(usage_days))
        .route("/billing/{name}/usage/export", get(export_usage))
        .route("/billing/{name}/statements/{month}/export", get(export_statement))
        .route("/billing/customers", get(billing_overview))
        .route("/billing/plans", get(list_plans).post(create_plan))
        .route("/billing/{name}/plan", get(plan_history).put(assign_plan))
        .route("/billing/{name}/statements/{month}", get(statement))
        .route("/billing/{name}/statements/{month}/finalise", axum::routing::post(finalise_statement))
}

/// `GET /billing/customers?month=&q=&plan=&status=&page=`: the billing overview.
async fn billing_overview(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let text = |key: &str| params.get(key).cloned();
    let page = match params.get("page").map(|p| p.trim()) {
        None | Some("") => None,
        Some(p) => Some(
            p.parse::<u32>()
                .ok()
                .filter(|p| *p >= 1)
                .ok_or_else(|| AppError::field("page", "A page number, 1 or more."))
                .api(&caller)?,
        ),
    };
    let query = app::model::fleet::billing::BillingQuery {
        month: text("month"),
        q: text("q"),
        plan: text("plan"),
        status: text("status"),
        page,
    };
    let mut overview = service::fleet::billing_overview::overview(&state, &caller, query).await.api(&caller)?;
    overview.charts.clear();
    Ok(Json(overview).into_response())
}

/// `GET /billing/plans` (operators).
async fn list_plans(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let (items, total) = page.slice(service::fleet::plans::list(&state, &caller).await.api(&caller)?);
    Ok(page.respond("/billing/plans", &params, items, total))
}

/// `POST /billing/plans` → 201 (operators; 409 `PLAN_EXISTS`).
async fn create_plan(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<app::model::fleet::billing::PlanRequest>,
) -> Result<Response, ApiError> {
    let plan = service::fleet::plans::create(&state, &caller, req).await.api(&caller)?;
    Ok((StatusCode::CREATED, Json(plan)).into_response())
}

/// `GET /billing/{name}/plan`: the customer's plan history, oldest first.
async fn plan_history(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(service::fleet::plans::history(&state, &caller, &name).await.api(&caller)?).into_response())
}

/// `PUT /billing/{name}/plan {plan, effectiveFrom?}` → the history (operators).
async fn assign_plan(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(req): JsonBody<app::model::fleet::billing::AssignPlanRequest>,
) -> Result<Response, ApiError> {
    Ok(Json(service::fleet::plans::assign(&state, &caller, &name, req).await.api(&caller)?).into_response())
}

/// `POST /billing/{name}/statements/{YYYY-MM}/finalise`: freezes a closed month (operators).
async fn finalise_statement(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, month)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    Ok(Json(service::fleet::plans::finalise(&state, &caller, &name, &month).await.api(&caller)?).into_response())
}

/// `GET /billing/{name}/statements/{YYYY-MM}`: the month's statement (final once frozen, else a
/// draft from the usage held now).
async fn statement(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, month)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    Ok(Json(service::fleet::plans::statement(&state, &caller, &name, &month).await.api(&caller)?).into_response())
}

/// `?format=csv|json` of an export (JSON when absent).
fn export_format(params: &HashMap<String, String>) -> Result<bool, AppError> {
    match params.get("format").map(String::as_str) {
        None | Some("" | "json") => Ok(false),
        Some("csv") => Ok(true),
        Some(_) => Err(AppError::field("format", "Use csv or json.")),
    }
}

/// An export's answer: a download named `file` (`.csv` or `.json`).
fn download(file: &str, csv: bool, body: String) -> Response {
    let (kind, ext) = if csv { ("text/csv; charset=utf-8", "csv") } else { ("application/json", "json") };
    (
        [
            (header::CONTENT_TYPE, kind.to_owned()),
            (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{file}.{ext}\"")),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        body,
    )
        .into_response()
}

/// `GET /billing/{name}/usage/export?format=csv|json[&from=&to=]`: the usage days as a download.
async fn export_usage(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let csv = export_format(&params).api(&caller)?;
    let (from, to) = (params.get("from").map(String::as_str), params.get("to").map(String::as_str));
    let body = if csv {
        service::fleet::usage::days_csv(&state, &caller, &name, from, to).await.api(&caller)?
    } else {
        let days = service::fleet::usage::days(&state, &caller, &name, from, to).await.api(&caller)?;
        serde_json::to_string_pretty(&days).unwrap_or_default()
    };
    Ok(download(&format!("usage-{name}"), csv, body))
}

/// `GET /billing/{name}/statements/{YYYY-MM}/export?format=csv|json`: the statement as a download.
async fn export_statement(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, month)): Path<(String, String)>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let csv = export_format(&params).api(&caller)?;
    let body = if csv {
        service::fleet::plans::statement_csv(&state, &caller, &name, &month).await.api(&caller)?
    } else {
        let statement = service::fleet::plans::statement(&state, &caller, &name, &month).await.api(&caller)?;
        serde_json::to_string_pretty(&statement).unwrap_or_default()
    };
    Ok(download(&format!("statement-{name}-{}", month.trim()), csv, body))
}

/// `GET /billing/{name}/usage[?from=&to=]`: the customer's usage per day as its silo reported it
/// (the last 31 days by default), oldest first; paged like every list.
async fn usage_days(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let (from, to) = (params.get("from").map(String::as_str), params.get("to").map(String::as_str));
    let days = service::fleet::usage::days(&state, &caller, &name, from, to).await.api(&caller)?;
    let (items, total) = page.slice(days);
    Ok(page.respond(&format!("/billing/{name}/usage"), &params, items, total))
}

/// `GET /cluster-tenants[?limit=&offset=]`: all rows, oldest first (the reference's contract),
/// optionally paged; `X-Total-Count` carries the total.
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let page = Page::from_params(&params).api(&caller)?;
    let (items, total) =
        service::fleet::cluster_tenants::list_all(&state, &caller, page.limit, page.offset).await.api(&caller)?;
    Ok(page.respond("/cluster-tenants", &params, items, total))
}

/// `POST /cluster-tenants` → 201 with `Location`.
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<ClusterTenantCreateRequest>,
) -> Result<Response, ApiError> {
    let ct = service::fleet::cluster_tenants::create(&state, &caller, req).await.api(&caller)?;
    let location = format!("/api/v1/cluster-tenants/{}", ct.name);
    Ok((StatusCode::CREATED, [(header::LOCATION, location)], Json(ct)).into_response())
}

/// `GET /cluster-tenants/{name}`.
async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let ct = service::fleet::cluster_tenants::get(&state, &caller, &name).await.api(&caller)?;
    Ok(Json(ct).into_response())
}

/// `GET /cluster-tenants/{name}/status`.
async fn status(State(state): State<AppState>, caller: Caller, Path(name): Path<String>) -> Result<Response, ApiError> {
    let status = service::fleet::cluster_tenants::status(&state, &caller, &name).await.api(&caller)?;
    Ok(Json(status).into_response())
}

/// `PUT /cluster-tenants/{name}`.
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(req): JsonBody<ClusterTenantUpdateRequest>,
) -> Result<Response, ApiError> {
    let ct = service::fleet::cluster_tenants::update(&state, &caller, &name, req).await.api(&caller)?;
    Ok(Json(ct).into_response())
}

/// `DELETE /cluster-tenants/{name}[?terminationPolicy=Retain|Delete]` → 202 `{name, status: "deleting", terminationPolicy}`: the
/// teardown runs in the background (the reference answered `deleted` and left everything behind);
/// `GET …/provisioning` follows it, and the resource answers 404 once it is gone.
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let policy = match params.get("terminationPolicy") {
        None => None,
        Some(raw) => Some(
            TerminationPolicy::parse(raw)
                .ok_or_else(|| AppError::field("terminationPolicy", "Must be Retain or Delete."))
                .api(&caller)?,
        ),
    };
    let ct = service::fleet::cluster_tenants::delete(&state, &caller, &name, policy).await.api(&caller)?;
    let body = json!({ "name": name, "status": "deleting", "terminationPolicy": ct.termination_policy });
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

/// `GET /cluster-tenants/{name}/provisioning`: the step checklist.
async fn provisioning(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let view = service::fleet::cluster_tenants::provisioning_view(&state, &caller, &name).await.api(&caller)?;
    Ok(Json(view).into_response())
}

/// `POST /cluster-tenants/{name}/retry` `{step?}` → 202: another attempt now.
async fn retry(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(req): JsonBody<RetryRequest>,
) -> Result<Response, ApiError> {
    service::fleet::cluster_tenants::retry(&state, &caller, &name, req.step).await.api(&caller)?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "name": name, "status": "retrying" }))).into_response())
}

/// `POST /cluster-tenants/{name}/refresh`: checks the customer's DNS records and served
/// certificates now → `{name, phase, probing, dns: [host…]}` (`probing: false`: the fleet has no
/// base domain or ingress address, nothing is checked).
async fn refresh(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let (ct, dns) = service::fleet::dns::refresh(&state, &caller, &name).await.api(&caller)?;
    let probing = service::fleet::dns::probing(&state);
    Ok(Json(json!({ "name": name, "phase": ct.status.phase, "probing": probing, "dns": dns })).into_response())
}

/// `POST /cluster-tenants/{name}/silo-credential/rotate`: revokes the silo's credential now; the
/// provisioner installs a new one (202).
async fn rotate_silo_credential(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let revoked = service::fleet::cluster_tenants::rotate_silo_credential(&state, &caller, &name).await.api(&caller)?;
    let body = json!({ "name": name, "status": "rotating", "revoked": revoked });
    Ok((StatusCode::ACCEPTED, Json(body)).into_response())
}

/// `POST /billing-accounts`: idempotent upsert; 201 when created, 200 when it existed.
async fn upsert_billing(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(req): JsonBody<BillingAccountRequest>,
) -> Result<Response, ApiError> {
    let (account, created) = service::fleet::billing::upsert_mine(&state, &caller, req).await.api(&caller)?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(account)).into_response())
}

/// `GET /billing-accounts/me`.
async fn my_billing(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    match service::fleet::billing::mine(&state, &caller).await.api(&caller)? {
        Some(account) => Ok(Json(account).into_response()),
        None => Err(AppError::NotFound {
            code: "BILLING_ACCOUNT_NOT_FOUND".into(),
            message: "You have no billing account yet.".into(),
        })
        .api(&caller),
    }
}
