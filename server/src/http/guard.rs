//! Role isolation: `leptos_axum` mounts every server function compiled into the binary, so a
//! fleet-manager would also answer the silo's `/api/silo/…` functions and vice versa. This layer
//! answers 404 for the other role's prefix before any of them runs; each function also checks its
//! role through the service layer, so neither guard alone is load-bearing.

use app::Role;
use axum::{
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::error::not_found_response;

/// Answers 404 for the other role's server functions.
pub async fn role_isolation(State(role): State<Role>, req: Request, next: Next) -> Response {
    let other = match role {
        Role::Fleet => Role::Silo,
        Role::Silo => Role::Fleet,
    };
    if req.uri().path().starts_with(other.server_fn_prefix()) {
        return not_found_response(&req).into_response();
    }
    next.run(req).await
}
