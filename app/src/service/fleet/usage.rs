//! Usage metering for billing: each silo reports its own usage per day over the internal API,
//! with its own credential (a silo answers for its own customer only; another's is a 404 like a
//! missing one). Reports are idempotent per (customer, day); a different report for a day held
//! revises it (the replaced one is kept). Operators, and a customer's owners and admins, read it.

use chrono::{Duration, NaiveDate, Utc};
use opencrane_entitlements::{
    format_micros, parse_micros,
    period::{local_date, time_zone},
    statement::month_bounds,
};
use opencrane_fleet_db::{
    billing_accounts,
    usage::{self as db, DayUsage, SpendLine},
};

use super::cluster_tenants::for_silo;
use crate::{
    authz::{Action, authorize},
    error::{AppError, FieldErrors},
    model::fleet::usage::{CATCH_UP_DAYS, RESEND_DAYS, UsageCursor, UsageDay, UsageRecorded, UsageReport, UsageSpend},
    service::OrFail as _,
    state::{AppState, Caller},
};

/// Where `name`'s silo starts its next report, and the time zone its days are counted in.
pub async fn cursor(state: &AppState, caller: &Caller, name: &str) -> Result<UsageCursor, AppError> {
    for_silo(state, caller, name, "usage").await?;
    let (time_zone, _) = billing_today(state, caller, name).await?;
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    let last_day = db::latest_day(&mut conn, name).await.or_fail(caller)?;
    Ok(UsageCursor { time_zone, last_day, resend_days: RESEND_DAYS })
}

/// Today in the IANA time zone `zone` (UTC when it is not one).
pub fn today_in(zone: &str) -> NaiveDate {
    time_zone(zone).ok().and_then(|tz| local_date(Utc::now(), &tz)).unwrap_or_else(|| Utc::now().date_naive())
}

/// The time zone `name` is billed in (its billing account's, else UTC), and today there.
pub(crate) async fn billing_today(
    state: &AppState,
    caller: &Caller,
    name: &str,
) -> Result<(String, NaiveDate), AppError> {
    let zone = billing_accounts::time_zone_of(&state.pool, name).await.or_fail(caller)?;
    let today = today_in(&zone);
    Ok((zone, today))
}

/// A report checked against `today` in the billing time zone `zone`: its day and usage, or every
/// field that is wrong (nothing is stored then).
fn checked(day: &str, report: UsageReport, today: NaiveDate, zone: &str) -> Result<(NaiveDate, DayUsage), AppError> {
    let mut errors = FieldErrors::new();
    let parsed = NaiveDate::parse_from_str(day.trim(), "%Y-%m-%d").ok();
    match parsed {
        None => errors.add("day", "A calendar day, YYYY-MM-DD."),
        Some(d) if d > today => errors.add("day", format!("{d} has not begun yet in {zone}.")),
        Some(d) if d < today - Duration::days(i64::from(CATCH_UP_DAYS)) => {
            errors.add("day", format!("Usage older than {CATCH_UP_DAYS} days is not taken."));
        }
        Some(_) => {}
    }
    let seats = i32::try_from(report.active_seats).ok().filter(|s| *s >= 0);
    if seats.is_none() {
        errors.add("activeSeats", "A whole number of seats, 0 or more.");
    }
    let mut spend = Vec::with_capacity(report.spend.len());
    for (i, line) in report.spend.iter().enumerate() {
        let model = line.model.trim();
        if model.is_empty() || model.chars().count() > 200 {
            errors.add(format!("spend[{i}].model"), "A model name of 1 to 200 characters.");
        }
        if !(line.currency.len() == 3 && line.currency.bytes().all(|b| b.is_ascii_uppercase())) {
            errors.add(format!("spend[{i}].currency"), "A currency code of three capitals (ISO 4217), e.g. EUR.");
        }
        match parse_micros(&line.amount) {
            Some(amount) => spend.push(SpendLine { model: model.to_owned(), currency: line.currency.clone(), amount }),
            None => errors.add(format!("spend[{i}].amount"), "A decimal amount, 0 or more, with at most six places."),
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, line) in spend.iter().enumerate() {
        if !seen.insert((line.model.as_str(), line.currency.as_str())) {
            errors.add(format!("spend[{i}].model"), format!("{} in {} is listed twice.", line.model, line.currency));
        }
    }
    errors.into_result(()).map_err(|fields| AppError::Validation { fields })?;
    match (parsed, seats) {
        (Some(day), Some(active_seats)) => Ok((day, DayUsage { active_seats, spend })),
        _ => Err(AppError::field("day", "A calendar day, YYYY-MM-DD.")),
    }
}

/// Records one day of `name`'s usage (its silo, or an operator).
pub async fn report(
    state: &AppState,
    caller: &Caller,
    name: &str,
    day: &str,
    report: UsageReport,
) -> Result<UsageRecorded, AppError> {
    for_silo(state, caller, name, "usage").await?;
    let (zone, today) = billing_today(state, caller, name).await?;
    let (day, usage) = checked(day, report, today, &zone)?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let recorded = db::record(&mut tx, name, day, usage).await.or_fail(caller)?;
    if recorded.changed {
        // The day's month, and the next one when it has begun (a correction lands there).
        let this = month_bounds(day).0;
        let next = month_bounds(this).1 + Duration::days(1);
        let months: Vec<NaiveDate> = [this, next].into_iter().filter(|m| *m <= today).collect();
        super::book::reprice(&mut tx, name, &months).await.or_fail(caller)?;
    }
    tx.commit().await.or_fail(caller)?;
    if recorded.changed && recorded.revision > 1 {
        tracing::info!(cluster_tenant = name, %day, revision = recorded.revision, "usage revised");
    }
    Ok(UsageRecorded { day, revision: recorded.revision, changed: recorded.changed })
}

/// `name`'s days in `[from, to]` (the last 31 days when absent), oldest first.
pub async fn days(
    state: &AppState,
    caller: &Caller,
    name: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Vec<UsageDay>, AppError> {
    state.fleet()?;
    authorize(caller.principal.as_ref(), Action::ReadBilling(name))?;
    let (_, today) = billing_today(state, caller, name).await?;
    let mut errors = FieldErrors::new();
    let mut date = |field: &str, text: Option<&str>, default: NaiveDate| match text.map(str::trim) {
        None | Some("") => default,
        Some(t) => NaiveDate::parse_from_str(t, "%Y-%m-%d").unwrap_or_else(|_| {
            errors.add(field, "A calendar day, YYYY-MM-DD.");
            default
        }),
    };
    let to = date("to", to, today);
    let from = date("from", from, to - Duration::days(30));
    if from > to {
        errors.add("from", "The first day comes before the last.");
    }
    errors.into_result(()).map_err(|fields| AppError::Validation { fields })?;
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    known(&mut conn, caller, name).await?;
    let rows = db::days(&mut conn, name, from, to).await.or_fail(caller)?;
    Ok(rows
        .into_iter()
        .map(|r| UsageDay {
            day: r.day,
            active_seats: r.usage.active_seats,
            spend: r
                .usage
                .spend
                .into_iter()
                .map(|l| UsageSpend { model: l.model, currency: l.currency, amount: format_micros(l.amount) })
                .collect(),
            revision: r.revision,
            reported_at: r.reported_at,
        })
        .collect())
}

/// The days as CSV for a spreadsheet: one row per day and model (a day without spend has one row
/// with no model).
pub async fn days_csv(
    state: &AppState,
    caller: &Caller,
    name: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<String, AppError> {
    use crate::service::csv;
    let mut out = String::from("customer,day,active_seats,model,currency,amount,revision\n");
    for d in days(state, caller, name, from, to).await? {
        let head = [csv::text(name), d.day.to_string(), d.active_seats.to_string()];
        let tail = d.revision.to_string();
        if d.spend.is_empty() {
            out.push_str(&csv::line(&[
                head[0].clone(),
                head[1].clone(),
                head[2].clone(),
                String::new(),
                String::new(),
                String::new(),
                tail.clone(),
            ]));
        }
        for l in &d.spend {
            let mut row = head.to_vec();
            row.extend([csv::text(&l.model), csv::text(&l.currency), csv::quoted(&l.amount), tail.clone()]);
            out.push_str(&csv::line(&row));
        }
    }
    Ok(out)
}

/// 404 for a name that is neither a customer nor one whose usage is held (a deleted customer's
/// billing stays readable).
pub(crate) async fn known(conn: &mut sqlx::PgConnection, caller: &Caller, name: &str) -> Result<(), AppError> {
    let known = match opencrane_fleet_db::cluster_tenants::get(&mut *conn, name).await {
        Ok(_) => true,
        Err(opencrane_db::Error::NotFound) => db::latest_day(conn, name).await.or_fail(caller)?.is_some(),
        Err(other) => return Err(crate::service::db_failure(caller, other)),
    };
    if known { Ok(()) } else { Err(crate::authz::cluster_tenant_not_found(name)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(model: &str, currency: &str, amount: &str) -> UsageSpend {
        UsageSpend { model: model.into(), currency: currency.into(), amount: amount.into() }
    }

    #[test]
    fn a_report_is_checked_field_by_field() {
        let today = today_in("Pacific/Kiritimati");
        let day = today.to_string();
        let good = UsageReport { active_seats: 3, spend: vec![line("fast", "EUR", "1.250000")] };
        let (d, usage) = checked(&day, good, today, "Pacific/Kiritimati").unwrap();
        assert_eq!((d, usage.active_seats, usage.spend[0].amount), (today, 3, 1_250_000));
        assert!(today >= Utc::now().date_naive(), "UTC+14 is never behind UTC");
        let future = (today + Duration::days(1)).to_string();
        let cases: [(&str, UsageReport, &str); 6] = [
            (&future, UsageReport { active_seats: 1, spend: vec![] }, "day"),
            ("2026-13-01", UsageReport { active_seats: 1, spend: vec![] }, "day"),
            (&day, UsageReport { active_seats: -1, spend: vec![] }, "activeSeats"),
            (&day, UsageReport { active_seats: 1, spend: vec![line("fast", "eur", "1")] }, "spend[0].currency"),
            (&day, UsageReport { active_seats: 1, spend: vec![line("fast", "EUR", "-1")] }, "spend[0].amount"),
            (
                &day,
                UsageReport { active_seats: 1, spend: vec![line("a", "EUR", "1"), line("a", "EUR", "2")] },
                "spend[1].model",
            ),
        ];
        for (day, report, field) in cases {
            match checked(day, report, today, "Pacific/Kiritimati") {
                Err(AppError::Validation { fields }) => assert!(fields.0.contains_key(field), "{field}: {fields:?}"),
                other => panic!("{field}: {other:?}"),
            }
        }
    }
}
