//! `/healthz` (the process answers) and `/readyz` (and its database does).

use app::state::AppState;
use axum::{Json, extract::State, http::StatusCode, response::IntoResponse};
use serde_json::json;

/// Liveness: the process is up and serving.
pub async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

/// Readiness: the role's database answers `SELECT 1` within 2 s.
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    if opencrane_db::ping(&state.pool).await {
        (StatusCode::OK, Json(json!({"status": "ok", "db": true})))
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "degraded", "db": false})))
    }
}
