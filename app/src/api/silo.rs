//! Silo server functions (`/api/silo/…`).

use leptos::prelude::*;
use server_fn::codec::Json;

#[cfg(feature = "ssr")]
use crate::{api::respond, service, state::request_context};
use crate::{
    error::AppError,
    model::silo::{AuditPage, Member, SiloSummary},
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

/// A page of the audit log.
#[server(prefix = "/api/silo", endpoint = "audit/list", input = Json)]
pub async fn list_audit(before: Option<i64>, limit: i64) -> Result<AuditPage, AppError> {
    let (state, caller) = request_context()?;
    respond(service::silo::audit_log(&state, &caller, before, limit).await)
}
