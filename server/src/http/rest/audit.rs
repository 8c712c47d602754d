//! `GET /audit` on both roles: the role's audit log, newest first, with the audit page's filters
//! (`actor`, `action` prefix, `outcome`), `limit` (50; at most 1000) and an opaque `cursor`; the
//! original's envelope (`{data, pagination: {limit, hasMore, nextCursor}}`) and the list routes'
//! `Link: <…>; rel="next"`.

use std::collections::HashMap;

use app::{
    error::AppError,
    model::audit::{AuditEntry, AuditQuery, MAX_AUDIT_LIMIT},
    service,
    state::{AppState, Caller},
};
use axum::{
    Json, Router,
    extract::{Query, State},
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::{Value, json};

use super::page::{href, integer_param};
use crate::http::error::{ApiError, ApiResult};

/// The route.
pub fn routes() -> Router<AppState> {
    Router::new().route("/audit", get(list))
}

/// The query, checked: a bad `limit` or `cursor` is named, not ignored.
fn query_of(params: &HashMap<String, String>) -> Result<AuditQuery, AppError> {
    let mut query = AuditQuery::from_params(|k| params.get(k).cloned());
    query.limit = integer_param(params, "limit", 1, MAX_AUDIT_LIMIT)?;
    query.before = match params.get("cursor").map(|c| c.trim()).filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => match c.parse::<i64>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(AppError::field("cursor", "Use the nextCursor of the previous page.")),
        },
    };
    Ok(query)
}

/// One entry in the original's shape (`timestamp`, `resource`, `message`, and `tenant` for a
/// user's entries) with this project's detail beside it.
fn entry(e: &AuditEntry) -> Value {
    let tenant = e.action.starts_with("tenant.").then(|| e.target.clone());
    json!({
        "id": e.id,
        "timestamp": e.occurred_at,
        "actor": e.actor,
        "actorRole": e.actor_role,
        "action": e.action,
        "resource": e.target,
        "tenant": tenant,
        "outcome": e.outcome,
        "requestId": e.request_id,
        "message": format!("{} {} {} ({})", e.actor, e.action, e.target, e.outcome),
        "metadata": e.metadata,
    })
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let query = query_of(&params).api(&caller)?;
    let limit = query.limit.unwrap_or(service::audit::PAGE);
    let page = service::audit::list(&state, &caller, query).await.api(&caller)?;
    let next = page.next_before.map(|n| n.to_string());
    let body = json!({
        "data": page.entries.iter().map(entry).collect::<Vec<_>>(),
        "pagination": { "limit": limit, "hasMore": next.is_some(), "nextCursor": next },
    });
    let mut response = Json(body).into_response();
    if let Some(cursor) = page.next_before {
        let link = format!("<{}>; rel=\"next\"", href("/audit", &params, &[("cursor", cursor)]));
        if let Ok(value) = HeaderValue::from_str(&link) {
            response.headers_mut().insert(header::LINK, value);
        }
    }
    Ok(response)
}
