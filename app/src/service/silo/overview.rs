//! Silo use cases: the overview (any member) and the member read-model (owners and admins).

use opencrane_common_db::audit;
use opencrane_silo_db::memberships;

use crate::{
    authz::{Action, authorize},
    error::AppError,
    model::{
        fleet::cluster_tenant::Phase,
        silo::{Member, OwnClusterTenant, SiloSummary},
    },
    service::OrFail as _,
    state::{AppState, Caller},
};

/// Counts for the overview page.
pub async fn overview(state: &AppState, caller: &Caller) -> Result<SiloSummary, AppError> {
    let silo = state.silo()?;
    authorize(caller.principal.as_ref(), Action::ViewSilo(&silo.cluster_tenant))?;
    // A `removed` row is a former member kept so their key stays blocked: not a member.
    let members: Vec<_> =
        memberships::list(&state.pool).await.or_fail(caller)?.into_iter().filter(|m| m.status != "removed").collect();
    let audit_entries = audit::count(&state.pool).await.or_fail(caller)?;
    let own = opencrane_silo_db::own::get(&state.pool, &silo.cluster_tenant).await.or_fail(caller)?;
    let own = own.and_then(|o| {
        Some(OwnClusterTenant {
            display_name: o.display_name,
            phase: Phase::parse(&o.phase)?,
            suspended: o.suspended,
            vanity_domain: o.vanity_domain,
            source: o.source,
            updated_at: o.updated_at,
        })
    });
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    Ok(SiloSummary {
        cluster_tenant: silo.cluster_tenant.clone(),
        namespace: format!("opencrane-{}", silo.cluster_tenant),
        members: count(members.len()),
        active_members: count(members.iter().filter(|m| m.status == "active").count()),
        audit_entries,
        own,
    })
}

/// The member read-model (former members, kept as `removed`, left out).
pub async fn members(state: &AppState, caller: &Caller) -> Result<Vec<Member>, AppError> {
    authorize(caller.principal.as_ref(), Action::AdministerSilo(&state.silo()?.cluster_tenant))?;
    let rows = memberships::list(&state.pool).await.or_fail(caller)?;
    Ok(rows
        .into_iter()
        .filter(|r| r.status != "removed")
        .map(|r| Member { subject: r.subject, role: r.role, status: r.status, updated_at: r.updated_at })
        .collect())
}
