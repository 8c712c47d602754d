//! `/healthz` (the process answers) and `/readyz` (and its database does, and — on a leading
//! fleet-manager — its ClusterTenant watch makes progress).

use app::state::AppState;
use axum::{Json, extract::State, http::StatusCode, response::IntoResponse};
use serde_json::json;

/// Liveness: the process is up and serving.
pub async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

/// Readiness: the role's database answers `SELECT 1` within 2 s, and the extra check (if any)
/// reports no problem.
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let db = opencrane_db::ping(&state.pool).await;
    let problem = state.health.as_ref().and_then(|check| (check.0)());
    match (db, problem) {
        (true, None) => (StatusCode::OK, Json(json!({"status": "ok", "db": true}))),
        (db, problem) => {
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "degraded", "db": db, "problem": problem})))
        }
    }
}
