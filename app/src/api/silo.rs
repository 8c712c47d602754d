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

/// The silo's access tokens.
#[server(prefix = "/api/silo", endpoint = "tokens/list", input = Json)]
pub async fn list_tokens() -> Result<Vec<AccessTokenView>, AppError> {
    let (state, caller) = request_context()?;
    respond(service::tokens::list(&state, &caller).await)
}

/// Creates an access token; the answer carries its secret, once.
#[server(prefix = "/api/silo", endpoint = "tokens/create", input = Json)]
pub async fn create_token(request: NewAccessTokenRequest) -> Result<CreatedAccessToken, AppError> {
    let (state, caller) = request_context()?;
    respond(service::tokens::create(&state, &caller, request).await)
}

/// Revokes an access token.
#[server(prefix = "/api/silo", endpoint = "tokens/revoke", input = Json)]
pub async fn revoke_token(id: String) -> Result<AccessTokenView, AppError> {
    let (state, caller) = request_context()?;
    respond(service::tokens::revoke(&state, &caller, &id).await)
}
