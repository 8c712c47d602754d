//! Reading the audit log: the fleet's (platform operators) and a silo's (its owners and admins).

use opencrane_common_db::audit::{self as db, AuditFilter};

use crate::{
    Role,
    authz::{Action, authorize},
    error::AppError,
    model::audit::{AuditEntry, AuditPage, AuditQuery, MAX_AUDIT_LIMIT},
    service::OrFail as _,
    state::{AppState, Caller},
};

/// Entries per page unless the query asks for another number.
pub const PAGE: i64 = 50;

/// A page of the role's audit log, newest first.
pub async fn list(state: &AppState, caller: &Caller, query: AuditQuery) -> Result<AuditPage, AppError> {
    match state.role() {
        Role::Fleet => authorize(caller.principal.as_ref(), Action::ReadFleetAudit)?,
        Role::Silo => authorize(caller.principal.as_ref(), Action::AdministerSilo(&state.silo()?.cluster_tenant))?,
    };
    let filter = AuditFilter { actor: query.actor, action_prefix: query.action, outcome: query.outcome };
    let page = query.limit.unwrap_or(PAGE).clamp(1, MAX_AUDIT_LIMIT);
    let rows = db::list(&state.pool, &filter, query.before, page + 1).await.or_fail(caller)?;
    let has_more = rows.len() > usize::try_from(page).unwrap_or(usize::MAX);
    let entries: Vec<AuditEntry> = rows
        .into_iter()
        .take(usize::try_from(page).unwrap_or(usize::MAX))
        .map(|r| AuditEntry {
            id: r.id,
            occurred_at: r.occurred_at,
            actor: r.actor,
            actor_role: r.actor_role,
            action: r.action,
            target: r.target,
            outcome: r.outcome,
            request_id: r.request_id,
            metadata: r.metadata,
        })
        .collect();
    let next_before = if has_more { entries.last().map(|e| e.id) } else { None };
    Ok(AuditPage { entries, next_before })
}
