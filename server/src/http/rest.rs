//! The REST API under `/api/v1`, beside the UI. Handlers are thin: extract, call the same
//! service functions the server functions call, and answer in the reference's contract.

mod audit;
pub mod fleet;
pub mod openapi;
pub mod page;
mod patch;
pub mod silo;

use app::state::{AppState, RoleSettings};
use axum::{Json, Router, extract::State, routing::get};
use serde_json::Value;

use super::error::api_not_found;

/// The `/api/v1` router of the role in `state`; feature areas switched off are not mounted.
pub fn router(state: &AppState) -> Router<AppState> {
    let mut router = Router::new()
        .route("/openapi.json", get(openapi_json))
        .merge(super::auth::routes::router())
        .merge(audit::routes());
    if let RoleSettings::Fleet(fleet) = &state.role {
        if fleet.cluster_tenants_enabled {
            router = router.merge(fleet::cluster_tenant_routes());
        }
        if fleet.billing_enabled {
            router = router.merge(fleet::billing_routes());
        }
        router = router.merge(fleet::identity_routes()).merge(fleet::platform_routes());
    }
    if matches!(state.role, RoleSettings::Silo(_)) {
        router = router.merge(silo::routes());
    }
    router.fallback(api_not_found)
}

/// `GET /api/v1/openapi.json`: the description of exactly the routes this server mounts. Public,
/// like the reference intended: it describes the API, not its data.
async fn openapi_json(State(state): State<AppState>) -> Json<Value> {
    Json(openapi::document(&state))
}
