//! Billing plans (platform operators define them and put customers on them, effective from a
//! day) and the monthly statement computed from a customer's plan history and reported usage
//! (`opencrane_entitlements::statement`). Reading a customer's plan and statements is for
//! operators and the customer's owners and admins.

use chrono::{Datelike, Duration, NaiveDate};
use opencrane_db::Error as DbError;
use opencrane_entitlements::{
    format_amount, is_currency, parse_amount,
    statement::{self, LineKind, Statement},
};
use opencrane_fleet_db::{
    plans::{self as db, NewPlan, PlanRow},
    statements,
};
use serde_json::json;

use super::book::Book;

use crate::{
    authz::{Action, authorize, cluster_tenant_not_found},
    error::{AppError, FieldErrors},
    model::fleet::billing::{AssignPlanRequest, PlanAssignment, PlanRequest, PlanView, StatementLine, StatementView},
    service::{OrFail as _, authorize_mutation, db_failure, record},
    state::{AppState, Caller},
};

fn view(row: &PlanRow) -> PlanView {
    PlanView {
        id: row.id.to_string(),
        name: row.name.clone(),
        currency: row.currency.clone(),
        seat_price: format_amount(row.seat_price),
        included_seats: row.included_seats,
        markup_percent: format_amount(row.markup_basis_points * 10_000),
        monthly_minimum: row.monthly_minimum.map(format_amount),
    }
}

/// Every plan (operators).
pub async fn list(state: &AppState, caller: &Caller) -> Result<Vec<PlanView>, AppError> {
    state.fleet()?;
    authorize(caller.principal.as_ref(), Action::ManageBilling)?;
    Ok(db::list(&state.pool).await.or_fail(caller)?.iter().map(view).collect())
}

/// Defines a plan (operators; audited).
pub async fn create(state: &AppState, caller: &Caller, req: PlanRequest) -> Result<PlanView, AppError> {
    state.fleet()?;
    let name = req.name.trim().to_owned();
    authorize_mutation(state, caller, Action::ManageBilling, "billing.plan.create", &name).await?;
    let mut errors = FieldErrors::new();
    if name.is_empty() || name.chars().count() > 80 {
        errors.add("name", "A name of 1 to 80 characters.");
    }
    let currency = req.currency.trim().to_owned();
    if !is_currency(&currency) {
        errors.add("currency", "An ISO 4217 currency code, e.g. EUR or USD.");
    }
    let money = |errors: &mut FieldErrors, field: &str, text: &str| {
        parse_amount(text).or_else(|| {
            errors.add(field, "A decimal amount, 0 or more, with at most two places.");
            None
        })
    };
    let seat_price = money(&mut errors, "seatPrice", &req.seat_price);
    let markup = money(&mut errors, "markupPercent", req.markup_percent.as_deref().unwrap_or("0"));
    if markup.is_some_and(|m| m > 1000 * 1_000_000) {
        errors.add("markupPercent", "At most 1000 percent.");
    }
    let minimum = match req.monthly_minimum.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
        Some(text) => money(&mut errors, "monthlyMinimum", text),
        None => None,
    };
    let included = i32::try_from(req.included_seats).ok().filter(|n| *n >= 0);
    if included.is_none() {
        errors.add("includedSeats", "A whole number of seats, 0 or more.");
    }
    errors.into_result(()).map_err(|fields| AppError::Validation { fields })?;
    let new = NewPlan {
        name: &name,
        currency: &currency,
        seat_price: seat_price.unwrap_or_default(),
        included_seats: included.unwrap_or_default(),
        markup_basis_points: markup.unwrap_or_default() / 10_000,
        monthly_minimum: minimum,
    };
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let id = db::insert(&mut *tx, &new).await.map_err(|e| match e {
        DbError::UniqueViolation { .. } => AppError::Conflict {
            code: "PLAN_EXISTS".into(),
            message: format!("A plan named “{name}” exists."),
            field: Some("name".into()),
        },
        other => db_failure(caller, other),
    })?;
    let meta = json!({ "id": id, "currency": currency, "seatPrice": req.seat_price.trim() });
    record(&mut *tx, caller, "billing.plan.create", &name, "success", meta).await?;
    tx.commit().await.or_fail(caller)?;
    let rows = db::list(&state.pool).await.or_fail(caller)?;
    rows.iter().find(|r| r.id == id).map(view).ok_or_else(|| AppError::field("name", "The plan was not stored."))
}

/// The first day of the month `day` is in.
fn month_start(day: NaiveDate) -> NaiveDate {
    day.with_day(1).unwrap_or(day)
}

/// Puts a customer on a plan from a day of this month or later (operators; audited). Earlier
/// months are closed: their statements do not change behind anyone's back. A plan in another
/// currency starts on the first of a month only (a statement has one currency).
pub async fn assign(
    state: &AppState,
    caller: &Caller,
    name: &str,
    req: AssignPlanRequest,
) -> Result<Vec<PlanAssignment>, AppError> {
    state.fleet()?;
    let principal = authorize_mutation(state, caller, Action::ManageBilling, "billing.plan.assign", name).await?;
    let actor = principal.subject.clone();
    opencrane_fleet_db::cluster_tenants::get(&state.pool, name).await.map_err(|e| match e {
        DbError::NotFound => cluster_tenant_not_found(name),
        other => db_failure(caller, other),
    })?;
    let (zone, today) = super::usage::billing_today(state, caller, name).await?;
    let from = match req.effective_from.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
        None => today,
        Some(text) => NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .map_err(|_| AppError::field("effectiveFrom", "A calendar day, YYYY-MM-DD."))?,
    };
    if from < month_start(today) {
        return Err(AppError::field(
            "effectiveFrom",
            format!(
                "Months before {} are closed ({zone}); a plan can start on {} or later.",
                today.format("%B %Y"),
                month_start(today)
            ),
        ));
    }
    let plans = db::list(&state.pool).await.or_fail(caller)?;
    let wanted = req.plan.trim();
    let plan = plans
        .iter()
        .find(|p| p.name == wanted || p.id.to_string() == wanted)
        .ok_or_else(|| AppError::field("plan", format!("No plan named “{wanted}” exists.")))?;
    let history = db::assignments(&state.pool, name).await.or_fail(caller)?;
    let before = history.iter().rev().find(|a| a.effective_from < from);
    if let Some(current) = before.and_then(|a| plans.iter().find(|p| p.id == a.plan_id))
        && current.currency != plan.currency
        && from.day() != 1
    {
        return Err(AppError::Unprocessable {
            code: "CURRENCY_CHANGE_MID_MONTH".into(),
            message: format!(
                "“{}” bills in {}, the plan in force in {}: a plan in {} can start on the first of a month.",
                current.name,
                current.currency,
                from.format("%B"),
                plan.currency
            ),
            field: Some("effectiveFrom".into()),
        });
    }
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    db::assign(&mut *tx, name, from, plan.id, &actor).await.or_fail(caller)?;
    // The month running now is the only one a new plan can change.
    super::book::reprice(&mut tx, name, &[month_start(today)]).await.or_fail(caller)?;
    let meta = json!({ "plan": plan.name, "effectiveFrom": from });
    record(&mut *tx, caller, "billing.plan.assign", name, "success", meta).await?;
    tx.commit().await.or_fail(caller)?;
    history_of(state, caller, name).await
}

async fn history_of(state: &AppState, caller: &Caller, name: &str) -> Result<Vec<PlanAssignment>, AppError> {
    let plans = db::list(&state.pool).await.or_fail(caller)?;
    let rows = db::assignments(&state.pool, name).await.or_fail(caller)?;
    let mut out = Vec::with_capacity(rows.len());
    for (i, a) in rows.iter().enumerate() {
        let Some(plan) = plans.iter().find(|p| p.id == a.plan_id) else { continue };
        out.push(PlanAssignment {
            effective_from: a.effective_from,
            effective_to: rows.get(i + 1).map(|next| next.effective_from - Duration::days(1)),
            plan: view(plan),
            assigned_by: a.assigned_by.clone(),
            assigned_at: a.assigned_at,
        });
    }
    Ok(out)
}

/// A customer's plan history, oldest first.
pub async fn history(state: &AppState, caller: &Caller, name: &str) -> Result<Vec<PlanAssignment>, AppError> {
    state.fleet()?;
    authorize(caller.principal.as_ref(), Action::ReadBilling(name))?;
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    super::usage::known(&mut conn, caller, name).await?;
    drop(conn);
    history_of(state, caller, name).await
}

/// The month (`YYYY-MM`) as its first day.
fn parse_month(month: &str) -> Result<NaiveDate, AppError> {
    NaiveDate::parse_from_str(&format!("{}-01", month.trim()), "%Y-%m-%d")
        .map_err(|_| AppError::field("month", "A calendar month, YYYY-MM."))
}

/// The draft of the month starting `first` (see [`Book::draft`]).
async fn draft(state: &AppState, caller: &Caller, name: &str, first: NaiveDate) -> Result<Statement, AppError> {
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    Ok(Book::one(&mut conn, name, first, first).await.or_fail(caller)?.draft(name, first))
}

pub(super) fn wire(name: &str, computed: Statement) -> StatementView {
    let kind = |k: LineKind| match k {
        LineKind::Seats => "seats",
        LineKind::Spend => "spend",
        LineKind::Unpriced => "unpriced",
        LineKind::Minimum => "minimum",
        LineKind::Correction => "correction",
    };
    StatementView {
        cluster_tenant: name.to_owned(),
        month: computed.month.format("%Y-%m").to_string(),
        status: "draft".into(),
        finalised_at: None,
        finalised_by: None,
        currency: computed.currency,
        lines: computed
            .lines
            .into_iter()
            .map(|l| StatementLine {
                kind: kind(l.kind).into(),
                description: l.description,
                amount: format_amount(l.amount),
                days: l.days,
            })
            .collect(),
        total: format_amount(computed.total),
    }
}

/// A customer's statement for `month` (`YYYY-MM`): the frozen one once final, else the draft.
pub async fn statement(state: &AppState, caller: &Caller, name: &str, month: &str) -> Result<StatementView, AppError> {
    state.fleet()?;
    authorize(caller.principal.as_ref(), Action::ReadBilling(name))?;
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    super::usage::known(&mut conn, caller, name).await?;
    drop(conn);
    let first = parse_month(month)?;
    if let Some(frozen) = statements::get(&state.pool, name, first).await.or_fail(caller)? {
        return Ok(StatementView {
            cluster_tenant: name.to_owned(),
            month: first.format("%Y-%m").to_string(),
            status: "final".into(),
            finalised_at: Some(frozen.finalised_at),
            finalised_by: Some(frozen.finalised_by),
            currency: frozen.currency,
            lines: serde_json::from_value(frozen.lines).unwrap_or_default(),
            total: format_amount(frozen.total),
        });
    }
    Ok(wire(name, draft(state, caller, name, first).await?))
}

/// Makes a closed month's statement final (operators; audited): its numbers are frozen in one
/// transaction. 409 `MONTH_OPEN` before the month has ended, `STATEMENT_FINAL` when it already is.
pub async fn finalise(state: &AppState, caller: &Caller, name: &str, month: &str) -> Result<StatementView, AppError> {
    state.fleet()?;
    let principal =
        authorize_mutation(state, caller, Action::ManageBilling, "billing.statement.finalise", name).await?;
    let actor = principal.subject.clone();
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    super::usage::known(&mut conn, caller, name).await?;
    drop(conn);
    let first = parse_month(month)?;
    let (_, last) = statement::month_bounds(first);
    let (zone, today) = super::usage::billing_today(state, caller, name).await?;
    if last >= today {
        return Err(AppError::Conflict {
            code: "MONTH_OPEN".into(),
            message: format!(
                "{} has not ended yet in {zone}; its statement is a draft until then.",
                first.format("%B %Y")
            ),
            field: Some("month".into()),
        });
    }
    let computed = draft(state, caller, name, first).await?;
    let total = computed.total;
    let view = wire(name, computed);
    let lines = serde_json::to_value(&view.lines).map_err(|e| crate::service::internal(caller, &e))?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    if !statements::finalise(&mut *tx, name, first, view.currency.as_deref(), total, &lines, &actor)
        .await
        .or_fail(caller)?
    {
        return Err(AppError::Conflict {
            code: "STATEMENT_FINAL".into(),
            message: format!("The statement of {} is already final.", first.format("%B %Y")),
            field: Some("month".into()),
        });
    }
    let meta = json!({ "month": view.month, "total": view.total, "currency": view.currency });
    record(&mut *tx, caller, "billing.statement.finalise", name, "success", meta).await?;
    tx.commit().await.or_fail(caller)?;
    statement(state, caller, name, month).await
}

/// The statement as CSV for a spreadsheet: one row per line, then the total.
pub async fn statement_csv(state: &AppState, caller: &Caller, name: &str, month: &str) -> Result<String, AppError> {
    use crate::service::csv;
    let s = statement(state, caller, name, month).await?;
    let currency = s.currency.clone().unwrap_or_default();
    let mut out = String::from("customer,month,status,kind,description,amount,currency,usage_days\n");
    let head = [csv::text(&s.cluster_tenant), csv::quoted(&s.month), csv::text(&s.status)];
    for l in &s.lines {
        let days: Vec<String> = l.days.iter().map(ToString::to_string).collect();
        let mut row = head.to_vec();
        row.extend([
            csv::text(&l.kind),
            csv::text(&l.description),
            csv::quoted(&l.amount),
            csv::text(&currency),
            csv::quoted(&days.join(" ")),
        ]);
        out.push_str(&csv::line(&row));
    }
    let mut total = head.to_vec();
    total.extend(["total".into(), String::new(), csv::quoted(&s.total), csv::text(&currency), String::new()]);
    out.push_str(&csv::line(&total));
    Ok(out)
}

/// The customer billing page: the plan history, the statement of `month` (this month when
/// absent) and that month's usage days.
pub async fn customer_billing(
    state: &AppState,
    caller: &Caller,
    name: &str,
    month: Option<&str>,
) -> Result<crate::model::fleet::billing::CustomerBilling, AppError> {
    if !state.fleet()?.billing_enabled {
        return Err(AppError::NotFound {
            code: "NOT_FOUND".into(),
            message: "Billing is disabled on this fleet-manager.".into(),
        });
    }
    let (time_zone, today) = super::usage::billing_today(state, caller, name).await?;
    let month =
        month.map(str::trim).filter(|m| !m.is_empty()).map_or_else(|| today.format("%Y-%m").to_string(), str::to_owned);
    let statement = statement(state, caller, name, &month).await?;
    let (first, last) = statement::month_bounds(parse_month(&month)?);
    let (from, to) = (first.to_string(), last.to_string());
    let usage = super::usage::days(state, caller, name, Some(&from), Some(&to)).await?;
    // `statement` and `days` above checked the caller and the name.
    let manage = crate::authz::can(caller.principal.as_ref(), Action::ManageBilling);
    let plans = if manage {
        db::list(&state.pool).await.or_fail(caller)?.into_iter().map(|p| p.name).collect()
    } else {
        Vec::new()
    };
    Ok(crate::model::fleet::billing::CustomerBilling {
        plans: history_of(state, caller, name).await?,
        charts: usage_charts(first, &usage),
        statement,
        usage,
        manage,
        closed: last < today,
        time_zone,
        plans_available: plans,
    })
}

fn seats_text(n: i64) -> String {
    if n == 1 { "1 seat".to_owned() } else { format!("{n} seats") }
}

/// The month's usage charts: seats per day, then spend per day in each currency.
fn usage_charts(first: NaiveDate, usage: &[crate::model::fleet::usage::UsageDay]) -> Vec<(String, String)> {
    use crate::service::chart;
    let (_, last) = statement::month_bounds(first);
    let days = usize::try_from((last - first).num_days() + 1).unwrap_or(31);
    let seats: Vec<(NaiveDate, i64)> = usage.iter().map(|d| (d.day, i64::from(d.active_seats))).collect();
    let mut charts = vec![(
        "Active seats per day".to_owned(),
        chart::daily("Active seats per day", first, days, &seats, |d, v| format!("{d}: {}", seats_text(v)), seats_text),
    )];
    let mut by_currency: std::collections::BTreeMap<&str, Vec<(NaiveDate, i64)>> = Default::default();
    for d in usage {
        for l in &d.spend {
            let amount = opencrane_entitlements::parse_micros(&l.amount).unwrap_or(0);
            let series = by_currency.entry(l.currency.as_str()).or_default();
            match series.last_mut() {
                Some((day, total)) if *day == d.day => *total += amount,
                _ => series.push((d.day, amount)),
            }
        }
    }
    for (currency, series) in by_currency {
        let aria = format!("LLM spend per day in {currency}");
        let svg = chart::daily(
            &aria,
            first,
            days,
            &series,
            |d, v| format!("{d}: {} {currency}", opencrane_entitlements::format_micros(v)),
            |v| format!("{} {currency}", format_amount(v)),
        );
        charts.push((aria, svg));
    }
    charts
}
