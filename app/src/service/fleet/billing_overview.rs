//! The operators' billing overview (`/billing`, `GET /api/v1/billing/customers`): every customer
//! with the account that pays for it, its plan, the month so far and a forecast of its end, the
//! totals per currency and a six-month trend. Customers on no plan or with no account are listed
//! as unbilled; deleted customers whose usage or statements remain are listed too. A customer's
//! owners and admins see the same for their own customers.
//!
//! Every row comes from the month's kept figures (`billing_month_totals`, priced in the
//! transaction of each change; see `book`) and the final statements: five statements whatever
//! the number of customers and days, no usage day read; filtering and paging are in memory.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{Datelike, Months, NaiveDate, Utc};
use opencrane_entitlements::{Micros, format_amount, statement};
use opencrane_fleet_db::{
    billing_accounts,
    month_totals::{self, MonthTotal},
};

use super::{
    book::{Book, by_customer},
    usage::today_in,
};
use crate::{
    authz::{Action, authorize},
    error::AppError,
    model::fleet::billing::{
        AccountRef, BILLING_PAGE_SIZE, BillingOverview, BillingQuery, BillingRow, CurrencyTotal, TrendMonth,
    },
    service::{OrFail as _, chart},
    state::{AppState, Caller},
};

/// Months in the trend, the chosen one included.
const TREND_MONTHS: u32 = 6;

/// A row before formatting.
struct Priced {
    row: BillingRow,
    amount: Micros,
    forecast: Option<Micros>,
}

fn month_of(query: Option<&str>, today: NaiveDate) -> Result<NaiveDate, AppError> {
    let this = statement::month_bounds(today).0;
    let Some(text) = query.map(str::trim).filter(|m| !m.is_empty()) else { return Ok(this) };
    let first = NaiveDate::parse_from_str(&format!("{text}-01"), "%Y-%m-%d")
        .map_err(|_| AppError::field("month", "A calendar month, YYYY-MM."))?;
    if first > this {
        return Err(AppError::field("month", format!("{} has not begun yet.", first.format("%B %Y"))));
    }
    Ok(first)
}

fn total_of(rows: &[&Priced]) -> Vec<CurrencyTotal> {
    let mut sums: BTreeMap<&str, (Micros, Option<Micros>)> = BTreeMap::new();
    for p in rows {
        let Some(currency) = p.row.currency.as_deref() else { continue };
        let entry = sums.entry(currency).or_default();
        entry.0 += p.amount;
        if let Some(f) = p.forecast {
            entry.1 = Some(entry.1.unwrap_or(0) + f);
        }
    }
    sums.into_iter()
        .map(|(currency, (amount, forecast))| CurrencyTotal {
            currency: currency.to_owned(),
            amount: format_amount(amount),
            forecast: forecast.map(format_amount),
        })
        .collect()
}

/// One customer's month as the overview shows it.
struct Figures<'a> {
    total: Micros,
    currency: Option<String>,
    status: &'static str,
    /// What a forecast extends (drafts).
    so_far: Option<statement::SoFar>,
    /// The kept figures, when the month was priced.
    kept: Option<&'a MonthTotal>,
}

/// `name`'s month: its final statement, else its kept figures, else — never priced: no usage
/// reported that month — its plan's charges on no usage (the monthly minimum).
fn figures<'a>(book: &Book, kept: &'a HashMap<String, Vec<MonthTotal>>, name: &str, month: NaiveDate) -> Figures<'a> {
    if let Some(f) = book.final_of(name, month) {
        return Figures { total: f.total, currency: f.currency.clone(), status: "final", so_far: None, kept: None };
    }
    if let Some(k) = kept.get(name).and_then(|months| months.iter().find(|k| k.month == month)) {
        let so_far = statement::SoFar {
            month,
            usage: k.usage_amount,
            corrections: k.corrections,
            total: k.total,
            minimum: k.minimum,
        };
        return Figures {
            total: k.total,
            currency: k.currency.clone(),
            status: "draft",
            so_far: Some(so_far),
            kept: Some(k),
        };
    }
    let periods = book.periods(name);
    if periods.is_empty() {
        return Figures { total: 0, currency: None, status: "draft", so_far: None, kept: None };
    }
    let unused = statement::compute(month, &periods, &[]);
    let so_far = statement::SoFar::of(&unused, book.minimum_of(name, month));
    Figures { total: unused.total, currency: unused.currency, status: "draft", so_far: Some(so_far), kept: None }
}

/// The overview of `query.month` (this month when absent).
pub async fn overview(state: &AppState, caller: &Caller, query: BillingQuery) -> Result<BillingOverview, AppError> {
    if !state.fleet()?.billing_enabled {
        return Err(AppError::NotFound {
            code: "NOT_FOUND".into(),
            message: "Billing is disabled on this fleet-manager.".into(),
        });
    }
    let principal = authorize(caller.principal.as_ref(), Action::ListClusterTenants)?;
    let today = Utc::now().date_naive();
    let first = month_of(query.month.as_deref(), today)?;
    let (_, last) = statement::month_bounds(first);
    let length = u32::try_from((last - first).num_days() + 1).unwrap_or(31);
    let open = last >= today;
    let elapsed = if open { today.day() } else { length };
    let trend_from = first.checked_sub_months(Months::new(TREND_MONTHS - 1)).unwrap_or(first);

    let book = Book::plans_of_all(&state.pool, trend_from, first).await.or_fail(caller)?;
    let kept: HashMap<String, Vec<MonthTotal>> =
        by_customer(month_totals::in_months(&state.pool, trend_from, first).await.or_fail(caller)?, |t| {
            &t.cluster_tenant
        });
    let customers = billing_accounts::customer_accounts(&state.pool).await.or_fail(caller)?;
    let may_read = |name: &str| authorize(Some(principal), Action::ReadBilling(name)).is_ok();
    let figures = |name: &str, month: NaiveDate| figures(&book, &kept, name, month);

    // Every customer in scope, the deleted ones with billing history included.
    let known: BTreeSet<&str> = customers.iter().map(|c| c.cluster_tenant.as_str()).collect();
    let deleted: BTreeSet<&str> =
        kept.keys().chain(book.finals.keys()).map(String::as_str).filter(|n| !known.contains(n)).collect();
    let mut priced: Vec<Priced> = Vec::new();
    let rows = customers
        .iter()
        .map(|c| (c.cluster_tenant.as_str(), Some(c)))
        .chain(deleted.iter().map(|n| (*n, None)))
        .filter(|(name, _)| may_read(name));
    let mut todays: HashMap<&str, NaiveDate> = HashMap::new();
    for (name, customer) in rows {
        let month = figures(name, first);
        if customer.is_none() && month.kept.is_none() && month.status == "draft" {
            continue;
        }
        // The month runs in the customer's billing time zone.
        let zone = customer.map_or("UTC", |c| c.time_zone.as_str());
        let today = *todays.entry(zone).or_insert_with(|| today_in(zone));
        let plan = book.plan_on(name, last.min(today));
        let elapsed = if today < first { 0 } else { (today.min(last) - first).num_days() + 1 };
        let forecast =
            month.so_far.filter(|_| last >= today && month.currency.is_some()).map(|so_far| so_far.forecast(elapsed));
        let (amount, currency, status) = (month.total, month.currency, month.status);
        let account = customer.and_then(|c| {
            c.account_id.map(|id| AccountRef {
                id: id.to_string(),
                name: c.account_name.clone().or_else(|| c.account_email.clone()).unwrap_or_else(|| id.to_string()),
            })
        });
        priced.push(Priced {
            row: BillingRow {
                cluster_tenant: name.to_owned(),
                display_name: customer.map_or_else(|| name.to_owned(), |c| c.display_name.clone()),
                deleted: customer.is_none(),
                account,
                plan: plan.map(|p| p.name.clone()),
                currency,
                month_to_date: format_amount(amount),
                forecast: forecast.map(format_amount),
                status: status.into(),
                seats: month.kept.and_then(|k| k.last_seats),
            },
            amount,
            forecast,
        });
    }

    // The trend over every customer in scope (filters narrow the table, not the trend).
    let mut trend = Vec::new();
    let mut month = trend_from;
    while month < first {
        let mut sums: BTreeMap<String, Micros> = BTreeMap::new();
        for p in &priced {
            let f = figures(&p.row.cluster_tenant, month);
            if let Some(currency) = f.currency {
                *sums.entry(currency).or_default() += f.total;
            }
        }
        let totals = sums
            .into_iter()
            .map(|(currency, amount)| CurrencyTotal { currency, amount: format_amount(amount), forecast: None })
            .collect();
        trend.push(TrendMonth { month: month.format("%Y-%m").to_string(), totals });
        month = month.checked_add_months(Months::new(1)).unwrap_or(NaiveDate::MAX);
    }
    trend.push(TrendMonth {
        month: first.format("%Y-%m").to_string(),
        totals: total_of(&priced.iter().collect::<Vec<_>>()),
    });
    let charts = charts(&trend, open);

    // Filters, then by account (none last) and name.
    let q = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty()).map(str::to_lowercase);
    let plan = query.plan.as_deref().map(str::trim).filter(|p| !p.is_empty());
    let status = query.status.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if let Some(s) = status
        && !matches!(s, "billed" | "unbilled" | "draft" | "final")
    {
        return Err(AppError::field("status", "Choose billed, unbilled, draft or final."));
    }
    let mut matching: Vec<&Priced> = priced
        .iter()
        .filter(|p| {
            let r = &p.row;
            let text = q.as_deref().is_none_or(|q| {
                r.cluster_tenant.contains(q)
                    || r.display_name.to_lowercase().contains(q)
                    || r.account.as_ref().is_some_and(|a| a.name.to_lowercase().contains(q))
            });
            let plan = plan.is_none_or(|want| match &r.plan {
                None => want == "none",
                Some(p) => p == want,
            });
            let billed = r.plan.is_some() && r.account.is_some();
            let status = status.is_none_or(|s| match s {
                "billed" => billed,
                "unbilled" => !billed,
                other => r.status == other,
            });
            text && plan && status
        })
        .collect();
    matching.sort_by(|a, b| {
        let key = |p: &Priced| (p.row.account.is_none(), p.row.account.as_ref().map(|a| a.name.to_lowercase()));
        key(a).cmp(&key(b)).then_with(|| a.row.cluster_tenant.cmp(&b.row.cluster_tenant))
    });
    let totals = total_of(&matching);
    let total = matching.len();
    let pages = total.div_ceil(BILLING_PAGE_SIZE).max(1);
    let page = usize::try_from(query.page.unwrap_or(1).max(1)).unwrap_or(1).min(pages);
    let items = matching.iter().skip((page - 1) * BILLING_PAGE_SIZE).take(BILLING_PAGE_SIZE).map(|p| p.row.clone());
    Ok(BillingOverview {
        month: first.format("%Y-%m").to_string(),
        open,
        days_elapsed: elapsed,
        days_in_month: length,
        totals,
        trend,
        items: items.collect(),
        total,
        page: u32::try_from(page).unwrap_or(1),
        page_size: BILLING_PAGE_SIZE,
        plans: book.plans.iter().map(|p| p.name.clone()).collect(),
        charts,
    })
}

/// A chart per currency: a bar per month, and the forecast of an open month hollow beside it.
fn charts(trend: &[TrendMonth], open: bool) -> Vec<(String, String)> {
    let currencies: BTreeSet<&str> = trend.iter().flat_map(|m| m.totals.iter().map(|t| t.currency.as_str())).collect();
    let parse = |s: &str| opencrane_entitlements::parse_amount(s).unwrap_or(0);
    currencies
        .into_iter()
        .map(|currency| {
            let mut bars = Vec::new();
            for (i, m) in trend.iter().enumerate() {
                let t = m.totals.iter().find(|t| t.currency == currency);
                let value = t.map_or(0, |t| parse(&t.amount));
                let label = NaiveDate::parse_from_str(&format!("{}-01", m.month), "%Y-%m-%d")
                    .map_or_else(|_| m.month.clone(), |d| d.format("%b %Y").to_string());
                let last = i + 1 == trend.len();
                let so_far = if last && open { " so far" } else { "" };
                bars.push(chart::Bar {
                    value,
                    title: format!("{label}{so_far}: {} {currency}", format_amount(value)),
                    tick: Some(label.clone()),
                    projected: false,
                });
                if last
                    && open
                    && let Some(f) = t.and_then(|t| t.forecast.as_deref())
                {
                    let value = parse(f);
                    bars.push(chart::Bar {
                        value,
                        title: format!("{label}, forecast: {} {currency}", format_amount(value)),
                        tick: Some("forecast".into()),
                        projected: true,
                    });
                }
            }
            let svg = chart::bars(&format!("Billed per month in {currency}"), &bars, |max| {
                format!("{} {currency}", format_amount(max))
            });
            (currency.to_owned(), svg)
        })
        .collect()
}
