//! Silo use cases that exist so far: the overview, the member read-model and the audit log.

use opencrane_common_db::audit;
use opencrane_silo_db::memberships;

use super::db_failure;
use crate::{
    authz::{Action, authorize},
    error::AppError,
    model::silo::{AuditEntry, AuditPage, Member, SiloSummary},
    state::{AppState, Caller},
};

/// Largest audit page.
pub const MAX_AUDIT_PAGE: i64 = 200;

/// Counts for the overview page.
pub async fn overview(state: &AppState, caller: &Caller) -> Result<SiloSummary, AppError> {
    let silo = state.silo()?;
    authorize(caller.principal.as_ref(), Action::ReadSilo)?;
    let members = memberships::list(&state.pool).await.map_err(|e| db_failure(caller, e))?;
    let audit_entries = audit::count(&state.pool).await.map_err(|e| db_failure(caller, e))?;
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    Ok(SiloSummary {
        cluster_tenant: silo.cluster_tenant.clone(),
        namespace: format!("opencrane-{}", silo.cluster_tenant),
        members: count(members.len()),
        active_members: count(members.iter().filter(|m| m.status == "active").count()),
        audit_entries,
    })
}

/// The member read-model.
pub async fn members(state: &AppState, caller: &Caller) -> Result<Vec<Member>, AppError> {
    state.silo()?;
    authorize(caller.principal.as_ref(), Action::ReadSilo)?;
    let rows = memberships::list(&state.pool).await.map_err(|e| db_failure(caller, e))?;
    Ok(rows
        .into_iter()
        .map(|r| Member { subject: r.subject, role: r.role, status: r.status, updated_at: r.updated_at })
        .collect())
}

/// A page of the audit log, newest first, older than `before`.
pub async fn audit_log(
    state: &AppState,
    caller: &Caller,
    before: Option<i64>,
    limit: i64,
) -> Result<AuditPage, AppError> {
    state.silo()?;
    authorize(caller.principal.as_ref(), Action::ReadSilo)?;
    let limit = limit.clamp(1, MAX_AUDIT_PAGE);
    let rows = audit::list(&state.pool, &audit::AuditFilter::default(), before, limit + 1)
        .await
        .map_err(|e| db_failure(caller, e))?;
    let has_more = i64::try_from(rows.len()).unwrap_or(i64::MAX) > limit;
    let entries: Vec<AuditEntry> = rows
        .into_iter()
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .map(|r| AuditEntry {
            id: r.id,
            occurred_at: r.occurred_at,
            actor: r.actor,
            action: r.action,
            target: r.target,
            outcome: r.outcome,
            request_id: r.request_id,
        })
        .collect();
    let next_before = if has_more { entries.last().map(|e| e.id) } else { None };
    Ok(AuditPage { entries, next_before })
}
