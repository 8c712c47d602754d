//! Budgets: limits at three levels in calendar periods of the silo's time zone, the spend ledger
//! (per user, group and model, with a server-rendered chart and CSV export), threshold notices
//! and the silo settings they depend on.

use std::collections::BTreeMap;

use chrono::{NaiveDate, Utc};
use opencrane_db::Error as DbError;
use opencrane_entitlements::{
    Micros, budget, format_amount, parse_amount,
    period::{Period, local_date, time_zone, window},
};
use opencrane_silo_db::{
    budgets::{self as budget_db, BudgetFields},
    groups, settings,
    tenants::{self, TenantFilter},
};
use serde_json::json;

use super::{admin_read, admin_write, finish, limit_view, not_found, snapshot as load, snapshot_failure, sync_view};
use crate::{
    error::{AppError, FieldErrors},
    model::silo::{BudgetOverview, LimitRequest, LimitView, NoticeView, SiloSettingsView, SpendView, TokenUsage},
    service::{OrFail as _, db_failure, internal, record},
    state::{AppState, Caller},
};

fn settings_view(row: settings::SettingsRow) -> SiloSettingsView {
    SiloSettingsView {
        time_zone: row.time_zone,
        currency: row.currency,
        default_model_access: row.default_model_access,
    }
}

/// Spend in the current `period`, per user, group and model, with the daily chart.
async fn spend(state: &AppState, caller: &Caller, period: Period) -> Result<SpendView, AppError> {
    let db = |e| db_failure(caller, e);
    let snap = load(state, caller).await?;
    let w = window(period, &snap.time_zone, Utc::now()).map_err(|e| internal(caller, &e))?;
    let by_tenant = budget_db::spend_by_tenant(&state.pool, w.start, w.end).await.map_err(db)?;
    let total: Micros = by_tenant.iter().map(|(_, s)| s).sum();
    let mut by_user: Vec<(String, Micros)> =
        by_tenant.iter().map(|(t, s)| (t.clone().unwrap_or_else(|| "(deleted users)".into()), *s)).collect();
    by_user.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut by_group: BTreeMap<String, Micros> = BTreeMap::new();
    for m in groups::memberships(&state.pool, None).await.map_err(db)? {
        let spent = by_tenant.iter().find(|(t, _)| t.as_deref() == Some(m.tenant.as_str())).map_or(0, |(_, s)| *s);
        *by_group.entry(m.group_name).or_default() += spent;
    }
    let mut by_group: Vec<(String, Micros)> = by_group.into_iter().collect();
    by_group.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let by_model = budget_db::spend_by_model(&state.pool, w.start, w.end).await.map_err(db)?;
    let days = budget_db::spend_by_day(&state.pool, w.start, w.end, &snap.settings.time_zone).await.map_err(db)?;
    let first = local_date(w.start, &snap.time_zone);
    let length = (w.end - w.start).num_hours().div_euclid(24) + 1;
    let fmt = |rows: Vec<(String, Micros)>| rows.into_iter().map(|(k, v)| (k, format_amount(v))).collect();
    Ok(SpendView {
        period: period.as_str().into(),
        start: w.start,
        end: w.end,
        total: format_amount(total),
        by_user: fmt(by_user),
        by_group: fmt(by_group),
        by_model: fmt(by_model),
        chart_svg: first
            .map(|f| chart(f, usize::try_from(length).unwrap_or(31).min(31), &days, &snap.settings.currency))
            .unwrap_or_default(),
    })
}

/// A bar per local day from `first`, `days` long; values in micros.
pub fn chart(first: NaiveDate, days: usize, values: &[(NaiveDate, Micros)], currency: &str) -> String {
    crate::service::chart::daily(
        &format!("Spend per day in {currency}"),
        first,
        days,
        values,
        |day, v| format!("{day}: {} {currency}", format_amount(v)),
        |max| format!("{} {currency}", format_amount(max)),
    )
}

fn period_or_month(period: Option<&str>) -> Result<Period, AppError> {
    match period.map(str::trim).filter(|p| !p.is_empty()) {
        None => Ok(Period::Month),
        Some(p) => Period::parse(p).ok_or_else(|| AppError::field("period", "Choose day, week or month.")),
    }
}

/// The silo settings and every limit in its current period (without the page's spend view).
pub async fn current_limits(state: &AppState, caller: &Caller) -> Result<(SiloSettingsView, Vec<LimitView>), AppError> {
    admin_read(state, caller)?;
    let snap = load(state, caller).await?;
    let ledger = snap.ledger(&state.pool, Utc::now()).await.map_err(|e| snapshot_failure(caller, e))?;
    let limits = snap
        .all_limit_statuses(&ledger)
        .map_err(|e| snapshot_failure(caller, e))?
        .iter()
        .map(|l| limit_view(l, &snap.time_zone))
        .collect();
    Ok((settings_view(snap.settings), limits))
}

/// Whether a threshold notice still describes the present: its limit's period is the current one
/// and spend is still at or over the threshold (a raised limit or a new period clears it without
/// anyone dismissing it).
fn still_holds(notice: &budget_db::NoticeRow, limits: &[LimitView]) -> bool {
    let id = notice.budget_id.to_string();
    limits.iter().any(|l| {
        l.id == id && l.period_start == notice.period_start && i64::from(l.used_percent) >= i64::from(notice.threshold)
    })
}

/// The budgets page.
pub async fn overview(state: &AppState, caller: &Caller, period: Option<String>) -> Result<BudgetOverview, AppError> {
    admin_read(state, caller)?;
    let db = |e| db_failure(caller, e);
    let period = period_or_month(period.as_deref())?;
    let (settings, limits) = current_limits(state, caller).await?;
    let notices = budget_db::open_notices(&state.pool)
        .await
        .map_err(db)?
        .into_iter()
        .filter(|n| still_holds(n, &limits))
        .map(|n| NoticeView { id: n.id, message: n.message, threshold: n.threshold, created_at: n.created_at })
        .collect();
    let groups =
        groups::names(&state.pool).await.map_err(db)?.into_iter().map(|g| (g.id.to_string(), g.name)).collect();
    let users =
        tenants::list(&state.pool, &TenantFilter::default()).await.map_err(db)?.into_iter().map(|t| t.name).collect();
    Ok(BudgetOverview {
        settings,
        limits,
        notices,
        spend: spend(state, caller, period).await?,
        enforcement: sync_view(state, caller).await?,
        users,
        groups,
    })
}

/// Tokens and cost per user in the current `period` (month when absent), from the ledger the
/// LiteLLM pass fills.
pub async fn token_usage(
    state: &AppState,
    caller: &Caller,
    period: Option<String>,
) -> Result<Vec<TokenUsage>, AppError> {
    admin_read(state, caller)?;
    let period = period_or_month(period.as_deref())?;
    let snap = load(state, caller).await?;
    let w = window(period, &snap.time_zone, Utc::now()).map_err(|e| internal(caller, &e))?;
    let rows = budget_db::token_usage(&state.pool, w.start, w.end).await.or_fail(caller)?;
    let sampled_at = opencrane_silo_db::litellm::sync_state(&state.pool).await.or_fail(caller)?.finished_at;
    Ok(rows
        .into_iter()
        .map(|r| TokenUsage {
            user_id: r.tenant,
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            total_tokens: r.input_tokens.saturating_add(r.output_tokens),
            requests: r.requests,
            currency: snap.settings.currency.clone(),
            total_cost: format_amount(r.cost),
            period: period.as_str().into(),
            period_start: w.start,
            period_end: w.end,
            sampled_at,
        })
        .collect())
}

/// The spend of the current `period` as CSV: one row per user and model.
pub async fn spend_csv(state: &AppState, caller: &Caller, period: Option<String>) -> Result<String, AppError> {
    admin_read(state, caller)?;
    let period = period_or_month(period.as_deref())?;
    let view = spend(state, caller, period).await?;
    let currency = settings::get(&state.pool).await.or_fail(caller)?.currency;
    use crate::service::csv;
    let mut out = String::from("kind,name,amount,currency,period_start,period_end\n");
    let (start, end) = (view.start.to_rfc3339(), view.end.to_rfc3339());
    for (kind, rows) in [("user", &view.by_user), ("group", &view.by_group), ("model", &view.by_model)] {
        for (name, amount) in rows {
            out.push_str(&csv::line(&[
                kind.to_owned(),
                csv::text(name),
                csv::quoted(amount),
                csv::text(&currency),
                start.clone(),
                end.clone(),
            ]));
        }
    }
    out.push_str(&csv::line(&[
        "total".into(),
        String::new(),
        csv::quoted(&view.total),
        csv::text(&currency),
        start,
        end,
    ]));
    Ok(out)
}

/// Sets the limit of the silo, a group or a user (replacing the target's previous limit).
pub async fn set_limit(state: &AppState, caller: &Caller, req: LimitRequest) -> Result<LimitView, AppError> {
    let target_label = req.target.clone().unwrap_or_else(|| req.level.clone());
    let silo = admin_write(state, caller, "budget.set", &target_label).await?;
    let snap = load(state, caller).await?;
    let mut errors = FieldErrors::new();
    let level = req.level.trim();
    let target = req.target.as_deref().map(str::trim).filter(|t| !t.is_empty());
    let (mut group_id, mut tenant) = (None, None);
    match level {
        "silo" => {}
        "group" => {
            let all = groups::names(&state.pool).await.or_fail(caller)?;
            match target.and_then(|t| all.iter().find(|g| g.id.to_string() == t || g.name == t)) {
                Some(g) => group_id = Some(g.id),
                None => errors.add("target", "Choose a group."),
            }
        }
        "user" => match target.and_then(|t| snap.tenant(t)) {
            Some(t) => tenant = Some(t.name.clone()),
            None => errors.add("target", "Choose a user."),
        },
        _ => errors.add("level", "Choose silo, group or user."),
    }
    let currency = if req.currency.trim().is_empty() {
        snap.settings.currency.clone()
    } else {
        req.currency.trim().to_ascii_uppercase()
    };
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
        errors.add("currency", "Use a three-letter ISO 4217 code such as USD.");
    } else if currency != snap.settings.currency {
        errors.add(
            "currency",
            format!(
                "Limits are enforced against LiteLLM's spend, reported in {}; use {} (or change the silo currency).",
                snap.settings.currency, snap.settings.currency
            ),
        );
    }
    let amount = parse_amount(&req.amount.0);
    if amount.is_none() {
        errors.add("amount", "Enter an amount like 100 or 99.50 (two decimals at most); 0 blocks all spending.");
    }
    let period = period_or_month(Some(&req.period)).map(Some).unwrap_or_else(|_| {
        errors.add("period", "Choose day, week or month.");
        None
    });
    let mut thresholds: Vec<u8> = if req.thresholds.is_empty() {
        budget::DEFAULT_THRESHOLDS.to_vec()
    } else if let Ok(t) = req.thresholds.iter().map(|t| u8::try_from(*t)).collect::<Result<Vec<u8>, _>>() {
        t
    } else {
        errors.add("thresholds", "Thresholds are percentages from 1 to 100.");
        Vec::new()
    };
    thresholds.sort_unstable();
    errors.check("thresholds", budget::validate_thresholds(&thresholds));
    let (Some(amount), Some(period)) = (amount, period) else {
        return Err(AppError::Validation { fields: errors });
    };
    errors.into_result(()).map_err(|fields| AppError::Validation { fields })?;
    let thresholds_db: Vec<i16> = thresholds.iter().map(|t| i16::from(*t)).collect();
    let f = BudgetFields {
        level,
        group_id,
        tenant: tenant.as_deref(),
        currency: &currency,
        amount,
        period: period.as_str(),
        thresholds: &thresholds_db,
    };
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = budget_db::list(&mut *tx)
        .await
        .or_fail(caller)?
        .into_iter()
        .find(|b| b.level == level && b.group_id == group_id && b.tenant == tenant);
    let id = budget_db::put(&mut tx, &f).await.map_err(|e| match e {
        DbError::ForeignKeyViolation { .. } => AppError::field("target", "It was deleted meanwhile."),
        other => db_failure(caller, other),
    })?;
    let meta = json!({
        "id": id, "level": level, "amount": format_amount(amount), "currency": currency,
        "period": period.as_str(), "thresholds": thresholds, "before": before.as_ref().map(audit_record),
    });
    finish(tx, silo, caller, "budget.set", &target_label, meta).await?;
    let id = id.to_string();
    current_limits(state, caller).await?.1.into_iter().find(|l| l.id == id).ok_or_else(|| budget_not_found(&id))
}

fn budget_not_found(id: &str) -> AppError {
    not_found("BUDGET_NOT_FOUND", format!("No limit with id “{id}” exists in this silo."))
}

/// Removes a limit.
pub async fn delete_limit(state: &AppState, caller: &Caller, id: &str) -> Result<(), AppError> {
    let silo = admin_write(state, caller, "budget.delete", id).await?;
    let uuid = uuid::Uuid::parse_str(id.trim()).map_err(|_| budget_not_found(id))?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = budget_db::list(&mut *tx)
        .await
        .or_fail(caller)?
        .into_iter()
        .find(|b| b.id == uuid)
        .ok_or_else(|| budget_not_found(id))?;
    budget_db::delete(&mut *tx, uuid).await.or_fail(caller)?;
    finish(tx, silo, caller, "budget.delete", id, json!({ "before": audit_record(&before) })).await?;
    Ok(())
}

/// What the audit log keeps of a limit as it was before it was replaced or removed.
fn audit_record(row: &budget_db::BudgetRow) -> serde_json::Value {
    json!({
        "level": row.level, "group": row.group_name, "user": row.tenant, "amount": format_amount(row.amount),
        "currency": row.currency, "period": row.period, "thresholds": row.thresholds,
    })
}

/// Changes the silo settings (time zone, currency, default model access).
pub async fn update_settings(
    state: &AppState,
    caller: &Caller,
    req: SiloSettingsView,
) -> Result<SiloSettingsView, AppError> {
    let silo = admin_write(state, caller, "settings.update", "silo").await?;
    let mut errors = FieldErrors::new();
    let tz = req.time_zone.trim().to_owned();
    errors.check("timeZone", time_zone(&tz).map(|_| ()));
    let currency = req.currency.trim().to_ascii_uppercase();
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
        errors.add("currency", "Use a three-letter ISO 4217 code such as USD.");
    }
    let access = req.default_model_access.trim().to_owned();
    if !matches!(access.as_str(), "allow" | "deny") {
        errors.add("defaultModelAccess", "Choose allow or deny.");
    }
    errors.into_result(()).map_err(|fields| AppError::Validation { fields })?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = settings_view(settings::get(&mut *tx).await.or_fail(caller)?);
    let row = settings::update(&mut *tx, &tz, &currency, &access).await.or_fail(caller)?;
    let meta = json!({ "timeZone": tz, "currency": currency, "defaultModelAccess": access, "before": before });
    finish(tx, silo, caller, "settings.update", "silo", meta).await?;
    Ok(settings_view(row))
}

/// Dismisses a notice.
pub async fn dismiss_notice(state: &AppState, caller: &Caller, id: i64) -> Result<(), AppError> {
    admin_write(state, caller, "notice.dismiss", &id.to_string()).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    if !budget_db::dismiss(&mut *tx, id).await.or_fail(caller)? {
        return Err(not_found("NOTICE_NOT_FOUND", "No open notice with this id.".into()));
    }
    record(&mut *tx, caller, "notice.dismiss", &id.to_string(), "success", json!({})).await?;
    tx.commit().await.or_fail(caller)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_has_a_bar_per_day_and_only_numbers_and_dates() {
        let first = NaiveDate::from_ymd_opt(2026, 2, 1).unwrap_or_default();
        let svg = chart(first, 28, &[(first, 2_000_000), (first + chrono::Duration::days(3), 1_000_000)], "USD");
        assert_eq!(svg.matches("<rect").count(), 28);
        assert!(svg.contains("2026-02-01: 2.00 USD"));
        assert!(svg.contains("2026-02-04: 1.00 USD"));
        assert!(svg.contains("max 2.00 USD"));
        assert!(!svg.contains("style="), "no inline styles (the CSP forbids them)");
    }
}
