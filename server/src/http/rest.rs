//! The REST API under `/api/v1`, beside the UI. Handlers are thin: extract, call the same
//! service functions the server functions call, and answer in the reference's contract.

pub mod fleet;
pub mod openapi;

use app::{
    model::principal::{Principal, PrincipalKind},
    state::{AppState, Caller, RoleSettings},
};
use axum::{Json, Router, extract::State, routing::get};
use serde_json::{Value, json};

use super::error::api_not_found;

/// The `/api/v1` router of the role in `state`; feature areas switched off are not mounted.
pub fn router(state: &AppState) -> Router<AppState> {
    let mut router = Router::new().route("/auth/me", get(auth_me)).route("/openapi.json", get(openapi_json));
    if let RoleSettings::Fleet(fleet) = &state.role {
        if fleet.cluster_tenants_enabled {
            router = router.merge(fleet::cluster_tenant_routes());
        }
        if fleet.billing_enabled {
            router = router.merge(fleet::billing_routes());
        }
    }
    router.fallback(api_not_found)
}

/// `GET /api/v1/auth/me`: who the server thinks is calling.
async fn auth_me(caller: Caller) -> Json<Value> {
    let mode = match caller.principal.as_ref().map(|p| p.kind) {
        Some(PrincipalKind::Development) => "development",
        Some(PrincipalKind::User) => "oidc",
        Some(PrincipalKind::Token) | None => "token",
    };
    let user = caller.principal.as_ref().map(|p: &Principal| {
        json!({
            "sub": p.subject,
            "email": p.email,
            "name": p.display_name,
            "kind": p.kind,
            "isPlatformOperator": p.is_platform_operator,
        })
    });
    Json(json!({ "mode": mode, "authenticated": user.is_some(), "user": user }))
}

/// `GET /api/v1/openapi.json`: the description of exactly the routes this server mounts. Public,
/// like the reference intended: it describes the API, not its data.
async fn openapi_json(State(state): State<AppState>) -> Json<Value> {
    Json(openapi::document(&state))
}
