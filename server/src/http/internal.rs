//! The fleet's internal API under `/api/internal`, for silos (each with its own credential, which
//! answers only about its own customer; platform operators' tokens too):
//! `GET /cluster-tenants/{name}/members` feeds a silo's membership read-model,
//! `GET /cluster-tenants/{name}` its read-model of its own ClusterTenant, and
//! `POST /cluster-tenants/{name}/members/adopt {subject, email?, emailVerified?}` admits a person
//! signing in to the silo (200 `{subject, role, status, admission}`; 403 `MEMBER_SUSPENDED`,
//! 409 `SEAT_CAP_EXCEEDED`); `GET /cluster-tenants/{name}/usage` says where a silo's usage report
//! starts and `PUT /cluster-tenants/{name}/usage/{day}` records one day of it (idempotent);
//! `GET /cluster-tenants/{name}/import` (204: nothing), `GET …/import/{generation}/{seq}` and
//! `PUT …/import/{generation}` carry the relayed migration from the original's shared database
//! (`opencrane_migrate::relay`) — the silo's own credential only.

use app::{
    service,
    state::{AppState, Caller},
};
use axum::{
    Json, Router,
    extract::{Path, State},
    response::{IntoResponse, Response},
    routing::{get, post},
};

use super::error::{ApiError, ApiResult, JsonBody, api_not_found};

/// The internal router (fleet only).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/cluster-tenants/{name}", get(own))
        .route("/cluster-tenants/{name}/members", get(members))
        .route("/cluster-tenants/{name}/members/adopt", post(adopt))
        .route("/cluster-tenants/{name}/usage", get(usage_cursor))
        .route("/cluster-tenants/{name}/usage/{day}", axum::routing::put(report_usage))
        .route("/cluster-tenants/{name}/import", get(pending_import))
        .route("/cluster-tenants/{name}/import/{generation}", axum::routing::put(import_reported))
        .route("/cluster-tenants/{name}/import/{generation}/{seq}", get(import_parcel))
        .fallback(api_not_found)
}

async fn members(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let members = service::fleet::cluster_tenants::members_for_silo(&state, &caller, &name).await.api(&caller)?;
    Ok(Json(members).into_response())
}

async fn own(State(state): State<AppState>, caller: Caller, Path(name): Path<String>) -> Result<Response, ApiError> {
    let own = service::fleet::cluster_tenants::silo_self(&state, &caller, &name).await.api(&caller)?;
    Ok(Json(own).into_response())
}

async fn adopt(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(req): JsonBody<app::model::fleet::members::AdmitRequest>,
) -> Result<Response, ApiError> {
    let admitted = service::fleet::members::admit(&state, &caller, &name, req).await.api(&caller)?;
    Ok(Json(admitted).into_response())
}

async fn usage_cursor(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(service::fleet::usage::cursor(&state, &caller, &name).await.api(&caller)?).into_response())
}

async fn report_usage(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, day)): Path<(String, String)>,
    JsonBody(req): JsonBody<app::model::fleet::usage::UsageReport>,
) -> Result<Response, ApiError> {
    Ok(Json(service::fleet::usage::report(&state, &caller, &name, &day, req).await.api(&caller)?).into_response())
}

async fn pending_import(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let staged = service::fleet::migrations::pending_import(&state, &caller, &name).await.api(&caller)?;
    Ok(match staged {
        Some(delivery) => Json(delivery).into_response(),
        None => axum::http::StatusCode::NO_CONTENT.into_response(),
    })
}

async fn import_parcel(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, generation, seq)): Path<(String, String, u32)>,
) -> Result<Response, ApiError> {
    let parcel =
        service::fleet::migrations::import_parcel(&state, &caller, &name, &generation, seq).await.api(&caller)?;
    Ok(Json(parcel).into_response())
}

async fn import_reported(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, generation)): Path<(String, String)>,
    JsonBody(digest): JsonBody<opencrane_migrate::relay::Digest>,
) -> Result<Response, ApiError> {
    service::fleet::migrations::import_reported(&state, &caller, &name, &generation, digest).await.api(&caller)?;
    Ok(axum::http::StatusCode::NO_CONTENT.into_response())
}
