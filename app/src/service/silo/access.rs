//! Effective access: for one user, every model, policy and limit that applies and why, the
//! route a request would take, and whether a domain is reachable — computed by the same
//! evaluators and snapshot the LiteLLM reconciler enforces.

use chrono::Utc;
use opencrane_entitlements::{
    grants::Reason,
    keys,
    policy::{self, Selection},
    routing::{self, Route, RouteError},
};
use opencrane_portal::snapshot::Snapshot;
use opencrane_silo_db::policies as policy_db;

use super::{admin_read, limit_view, not_found, snapshot as load, snapshot_failure, users};
use crate::{
    error::AppError,
    model::silo::{DomainCheck, EffectiveAccess, ModelAccess, PolicyAccess, RouteTest, RouteTestRequest},
    service::OrFail as _,
    state::{AppState, Caller},
};

fn route_view(result: Result<Route, RouteError>) -> RouteTest {
    match result {
        Ok(r) => RouteTest {
            ok: true,
            model: Some(r.model),
            chosen_by: Some(r.chosen_by.describe()),
            access: Some(r.access.explain()),
            deployments: r.deployments.into_iter().map(|s| (s.deployment.upstream_model, s.percent)).collect(),
            fallbacks: r.fallbacks,
            skipped: r.skipped,
            error: None,
            no_default: false,
        },
        Err(e) => RouteTest {
            ok: false,
            model: None,
            chosen_by: None,
            access: None,
            deployments: Vec::new(),
            fallbacks: Vec::new(),
            skipped: match &e {
                RouteError::NoModel { skipped } => skipped.clone(),
                _ => Vec::new(),
            },
            no_default: matches!(&e, RouteError::NoModel { skipped } if skipped.is_empty()),
            error: Some(e.describe()),
        },
    }
}

fn user_of<'s>(snap: &'s Snapshot, name: &str) -> Result<&'s opencrane_silo_db::tenants::TenantRow, AppError> {
    snap.tenant(name.trim())
        .ok_or_else(|| not_found("TENANT_NOT_FOUND", format!("No user named “{}” exists in this silo.", name.trim())))
}

/// Everything that applies to `name`, with reasons.
pub async fn effective(state: &AppState, caller: &Caller, name: &str) -> Result<EffectiveAccess, AppError> {
    admin_read(state, caller)?;
    let snap = load(state, caller).await?;
    let tenant = user_of(&snap, name)?;
    let subject = snap.subject(tenant);
    let models = snap
        .catalog
        .public_names()
        .into_iter()
        .map(|m| {
            let d = snap.catalog.access(&subject, &m);
            let overridden = d
                .overridden
                .iter()
                .map(|a| {
                    let lost = opencrane_entitlements::grants::Decision {
                        access: a.grant.access,
                        reason: Reason::Grant(a.clone()),
                        overridden: vec![],
                    };
                    format!("{} (overridden)", lost.explain())
                })
                .collect();
            ModelAccess { allowed: d.allowed(), why: d.explain(), overridden, model: m }
        })
        .collect();
    let labels = policy::labels(&tenant.name, tenant.team.as_deref());
    let policy = match policy::select(&snap.policies, tenant.policy_ref.as_deref(), &labels) {
        Some((p, how)) => {
            let row = policy_db::get(&state.pool, &p.name).await.or_fail(caller)?;
            row.map(|row| PolicyAccess {
                policy: super::policies::policy_view(row),
                how: match how {
                    Selection::Named => "named on the user's record".into(),
                    Selection::Selector { labels } => format!(
                        "selected by its tenant selector ({})",
                        labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
                    ),
                },
            })
        }
        None => None,
    };
    let ledger = snap.ledger(&state.pool, Utc::now()).await.map_err(|e| snapshot_failure(caller, e))?;
    let limits = snap.limits_for(&subject, &ledger).map_err(|e| snapshot_failure(caller, e))?;
    let key = keys::desired(&subject, snap.hold(tenant), &snap.catalog, &limits, 0);
    let default_route = route_view(routing::resolve(&subject, None, &snap.defaults_for(&subject), &snap.catalog));
    let user = users::get(state, caller, &tenant.name).await?;
    let sessions = opencrane_common_db::sessions::list_for(&state.pool, std::slice::from_ref(&tenant.subject))
        .await
        .or_fail(caller)?;
    Ok(EffectiveAccess {
        user,
        models,
        policy,
        limits: limits.iter().map(|l| limit_view(l, &snap.time_zone)).collect(),
        default_route,
        block_reasons: key.block_reasons,
        default_model_access: snap.settings.default_model_access.clone(),
        active_sessions: sessions.len(),
    })
}

/// The test-route tool: which deployment would serve `req.user` asking for `req.model`, and why.
pub async fn route_test(state: &AppState, caller: &Caller, req: RouteTestRequest) -> Result<RouteTest, AppError> {
    admin_read(state, caller)?;
    let snap = load(state, caller).await?;
    let tenant = snap.tenant(req.user.trim()).ok_or_else(|| AppError::field("user", "Choose a user."))?;
    let subject = snap.subject(tenant);
    let requested = req.model.as_deref().map(str::trim).filter(|m| !m.is_empty());
    Ok(route_view(routing::resolve(&subject, requested, &snap.defaults_for(&subject), &snap.catalog)))
}

/// Whether `name`'s assistant may reach `domain` under their policy.
pub async fn check_domain(
    state: &AppState,
    caller: &Caller,
    name: &str,
    domain: &str,
) -> Result<DomainCheck, AppError> {
    admin_read(state, caller)?;
    let host = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    policy::validate_pattern(&host).map_err(|m| AppError::field("domain", m))?;
    let snap = load(state, caller).await?;
    let tenant = user_of(&snap, name)?;
    let labels = policy::labels(&tenant.name, tenant.team.as_deref());
    Ok(match policy::select(&snap.policies, tenant.policy_ref.as_deref(), &labels) {
        None => DomainCheck {
            allowed: false,
            explanation: format!("No policy governs {}: nothing outside the silo is reachable.", tenant.name),
        },
        Some((p, _)) => {
            let d = policy::check_domain(p, &host);
            let explanation = match (&d.rule, d.allowed) {
                (Some(rule), true) => format!("{host} is reachable: policy “{}” allows {rule}.", p.name),
                (Some(rule), false) => format!("{host} is blocked: policy “{}” denies {rule}.", p.name),
                (None, _) => {
                    format!("{host} is blocked: policy “{}” allows no pattern matching it (default deny).", p.name)
                }
            };
            DomainCheck { allowed: d.allowed, explanation }
        }
    })
}
