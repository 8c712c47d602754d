//! `/billing`: for platform operators, the billing overview — every customer with the account
//! that pays for it, its plan, the month so far and a forecast of its end, the totals and a
//! six-month trend — and the plans, with the form that defines one. For everybody, their own
//! billing account (which lets non-operators create customers), and the billing of the
//! customers they own or administer. Plain server-rendered HTML: the filters are a GET form and
//! the plan form a plain post (`crate::forms`); nothing here needs the wasm but the account form.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    UiContext,
    api::fleet::{billing_overview, billing_plans, my_billing_account},
    authz::{Action, can},
    components::{
        feedback::{Badge, ErrorView, Notice},
        form::TextInput,
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState, Pagination},
    },
    current_principal,
    forms::{self, Posted, PostedFields},
    islands::fleet::billing_account::BillingAccountForm,
    model::{
        fleet::billing::{BILLING_PAGE_SIZE, BillingOverview, BillingQuery, BillingRow, CurrencyTotal, PlanView},
        href::url_encode,
    },
};

/// The plan form's DOM id.
const PLAN_FORM: &str = "billing-plan";

/// The billing page.
#[component]
pub fn BillingPage() -> impl IntoView {
    let enabled = expect_context::<UiContext>().billing_enabled;
    let (saved, query) = use_query_map().with_untracked(|q| {
        let text = |key: &str| q.get(key).filter(|v| !v.trim().is_empty());
        let query = BillingQuery {
            month: text("month"),
            q: text("q"),
            plan: text("plan"),
            status: text("status"),
            page: text("page").and_then(|p| p.trim().parse().ok()),
        };
        (q.get("saved"), query)
    });
    view! {
        <Title text="Billing" />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                if !enabled {
                    return view! { <crate::pages::shared::NotFound /> }.into_any();
                }
                let operator = can(current_principal().as_ref(), Action::ManageBilling);
                let filtered = query.q.is_some() || query.plan.is_some() || query.status.is_some();
                let overview = billing_overview(query).await;
                let plans = if operator { Some(billing_plans().await) } else { None };
                let account = my_billing_account().await;
                let description = if operator {
                    "What each customer owes this month and why: plans, usage and statements. Statements are exported, not charged."
                } else {
                    "Your billing account, and the billing of the customers you own or administer."
                };
                let notice = saved.map(|what| {
                    let text = if what == "account" { "Billing account saved.".to_owned() } else { format!("Plan “{what}” defined.") };
                    view! { <Notice tone="ok">{text}</Notice> }
                });
                view! {
                    <PageHeader title="Billing" description=description />
                    {notice}
                    {match overview {
                        // Non-operators without customers of their own see only their account.
                        Ok(o) if operator || filtered || o.total > 0 => view! { <Overview overview=o /> }.into_any(),
                        Ok(_) => ().into_any(),
                        Err(error) => view! { <ErrorView error /> }.into_any(),
                    }}
                    {plans.map(|p| match p {
                        Ok(plans) => view! { <Plans plans /> }.into_any(),
                        Err(error) => view! { <ErrorView error /> }.into_any(),
                    })}
                    <Account account />
                }
                    .into_any()
            })}
        </Suspense>
    }
}

/// The signed-in person's own billing account.
#[component]
fn Account(
    account: Result<Option<crate::model::fleet::billing::BillingAccount>, crate::error::AppError>,
) -> impl IntoView {
    let body = match account {
        Ok(Some(account)) => view! {
            <dl class="props">
                <dt>"Account id"</dt>
                <dd class="mono">{account.id.clone()}</dd>
                <dt>"Owner"</dt>
                <dd class="mono">{account.subject.clone()}</dd>
                <dt>"Email"</dt>
                <dd>{account.email.clone().unwrap_or_else(|| "–".into())}</dd>
                <dt>"Billing time zone"</dt>
                <dd>{account.time_zone.clone()}</dd>
                <dt>"Created"</dt>
                <dd>{timestamp(account.created_at)}</dd>
            </dl>
            <BillingAccountForm display_name=account.display_name.clone().unwrap_or_default() time_zone=account.time_zone.clone() exists=true />
        }
        .into_any(),
        Ok(None) => view! {
            <p class="muted">"You have no billing account yet. It names who pays for the customers you create."</p>
            <BillingAccountForm display_name=String::new() time_zone="UTC".to_owned() exists=false />
        }
        .into_any(),
        Err(error) => view! { <ErrorView error /> }.into_any(),
    };
    view! {
        <section class="card" id="billing-account">
            <h2>"Your billing account"</h2>
            {body}
        </section>
    }
}

fn money(amount: &str, currency: Option<&str>) -> String {
    currency.map_or_else(|| "—".to_owned(), |c| format!("{amount} {c}"))
}

/// The month's totals, one line per currency, the forecast labelled as one.
#[component]
fn Totals(totals: Vec<CurrencyTotal>, open: bool, elapsed: u32, length: u32) -> impl IntoView {
    if totals.is_empty() {
        return view! { <p class="totals muted" id="billing-totals">"Nothing billed this month."</p> }.into_any();
    }
    let lines = totals
        .into_iter()
        .map(|t| {
            let forecast = t.forecast.filter(|_| open).map(|f| {
                format!(" · forecast for the month's end {f} {} (linear on {elapsed} of {length} days)", t.currency)
            });
            view! {
                <p class="totals" data-currency=t.currency.clone()>
                    {if open { "Month to date " } else { "Month " }}
                    <strong>{format!("{} {}", t.amount, t.currency)}</strong>
                    <span class="muted">{forecast}</span>
                </p>
            }
        })
        .collect_view();
    view! { <div id="billing-totals">{lines}</div> }.into_any()
}

/// The overview: filters, totals, trend, the table by account and the pages.
#[component]
fn Overview(overview: BillingOverview) -> impl IntoView {
    let BillingOverview { month, open, days_elapsed, days_in_month, totals, items, total, page, plans, charts, .. } =
        overview;
    let query = use_query_map().with_untracked(|q| {
        let text = |key: &str| q.get(key).unwrap_or_default();
        (text("q"), text("plan"), text("status"))
    });
    let (q, plan, status) = query;
    let plan_options =
        plans.iter().map(|p| view! { <option value=p.clone() selected=plan == *p>{p.clone()}</option> }).collect_view();
    let status_options = [("billed", "Billed"), ("unbilled", "Unbilled"), ("draft", "Draft"), ("final", "Final")]
        .into_iter()
        .map(|(v, label)| view! { <option value=v selected=status == v>{label}</option> })
        .collect_view();
    let href = {
        let (month, q, plan, status) = (month.clone(), q.clone(), plan.clone(), status.clone());
        move |p: i64| {
            let mut href = format!("/billing?month={month}&page={p}");
            for (key, value) in [("q", &q), ("plan", &plan), ("status", &status)] {
                if !value.is_empty() {
                    href = forms::with_query(&href, key, value);
                }
            }
            href
        }
    };
    let charts = charts
        .into_iter()
        .map(|(currency, svg)| view! { <div class="chart" data-currency=currency inner_html=svg></div> })
        .collect_view();
    let table = if items.is_empty() {
        view! { <EmptyState title="No customers match" body="Change the search or the filters, or clear them." /> }
            .into_any()
    } else {
        let mut rows = Vec::new();
        let mut account: Option<Option<String>> = None;
        for row in items {
            let this = row.account.as_ref().map(|a| a.id.clone());
            if account.as_ref() != Some(&this) {
                let label = row.account.as_ref().map_or_else(
                    || "No billing account (unbilled: its owners have none)".to_owned(),
                    |a| format!("Account {}", a.name),
                );
                rows.push(view! { <tr class="group"><th colspan="7" scope="colgroup">{label}</th></tr> }.into_any());
                account = Some(this);
            }
            rows.push(view! { <Row row month=month.clone() /> }.into_any());
        }
        view! {
            <DataTable headers=&["Customer", "Plan", "Seats", "Month to date", "Forecast (month's end)", "Statement", ""]>{rows}</DataTable>
            <Pagination
                page=i64::from(page)
                per_page=i64::try_from(BILLING_PAGE_SIZE).unwrap_or(50)
                total=i64::try_from(total).unwrap_or(0)
                href=href
            />
        }
        .into_any()
    };
    let filtered = !(q.is_empty() && plan.is_empty() && status.is_empty());
    view! {
        <section class="card" id="billing-overview" aria-label="Billing overview">
            <form class="filters" method="get" action="/billing" role="search">
                <label>"Month" <input type="month" name="month" value=month.clone() /></label>
                <label>"Search" <input type="search" name="q" value=q.clone() placeholder="customer or account" /></label>
                <label>
                    "Plan"
                    <select name="plan">
                        <option value="">"All"</option>
                        <option value="none" selected=plan == "none">"No plan"</option>
                        {plan_options}
                    </select>
                </label>
                <label>
                    "Status"
                    <select name="status">
                        <option value="">"All"</option>
                        {status_options}
                    </select>
                </label>
                <button type="submit" class="btn">"Show"</button>
                {filtered.then(|| view! { <a class="btn ghost" href=format!("/billing?month={month}")>"Clear"</a> })}
            </form>
            <Totals totals open elapsed=days_elapsed length=days_in_month />
            {charts}
            {table}
        </section>
    }
}

/// One customer's row.
#[component]
fn Row(row: BillingRow, month: String) -> impl IntoView {
    let href = format!("/billing/{}?month={month}", url_encode(&row.cluster_tenant));
    let currency = row.currency.as_deref();
    let status = if row.status == "final" {
        view! { <Badge text="final" tone="ok" /> }.into_any()
    } else {
        view! { <Badge text="draft" tone="warn" /> }.into_any()
    };
    let plan = match (&row.plan, row.deleted) {
        (Some(p), _) => p.clone(),
        (None, _) => "— unbilled".to_owned(),
    };
    let name = if row.deleted { format!("{} (deleted)", row.display_name) } else { row.display_name.clone() };
    view! {
        <tr data-customer=row.cluster_tenant.clone()>
            <td>
                <a href=href.clone()>{name}</a>
                <span class="muted mono">{format!(" {}", row.cluster_tenant)}</span>
            </td>
            <td>{plan}</td>
            <td class="num">{row.seats.map_or_else(|| "—".to_owned(), |s| s.to_string())}</td>
            <td class="num" data-field="month-to-date">{money(&row.month_to_date, currency)}</td>
            <td class="num" data-field="forecast">
                {row.forecast.as_deref().map_or_else(|| "—".to_owned(), |f| money(f, currency))}
            </td>
            <td>{status}</td>
            <td><a class="btn small" href=href aria-label=format!("Open the billing of {}", row.cluster_tenant)>"Open"</a></td>
        </tr>
    }
}

/// The plans, and the form that defines one (operators).
#[component]
fn Plans(plans: Vec<PlanView>) -> impl IntoView {
    let list = if plans.is_empty() {
        view! { <p class="muted">"No plans yet. Define one below, then put customers on it from their billing page."</p> }
            .into_any()
    } else {
        let rows = plans
            .into_iter()
            .map(|p| {
                view! {
                    <tr data-plan=p.name.clone()>
                        <td>{p.name.clone()}</td>
                        <td>{p.currency.clone()}</td>
                        <td class="num">{p.seat_price.clone()}</td>
                        <td class="num">{p.included_seats}</td>
                        <td class="num">{format!("{}%", p.markup_percent)}</td>
                        <td class="num">{p.monthly_minimum.clone().unwrap_or_else(|| "—".into())}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <DataTable headers=&["Plan", "Currency", "Seat per month", "Included seats", "LLM markup", "Monthly minimum"]>
                {rows}
            </DataTable>
        }
        .into_any()
    };
    view! {
        <section class="card" id="billing-plans">
            <h2>"Plans"</h2>
            {list}
            <PlanForm />
        </section>
    }
}

/// The plan form: a plain post; after a refused post it shows what was typed and each message
/// under its field.
#[component]
fn PlanForm() -> impl IntoView {
    let echo = forms::echo(PLAN_FORM);
    let value = |key: &str, default: &str| {
        echo.as_ref().map_or_else(|| default.to_owned(), |e| e.value(key).unwrap_or_default())
    };
    let error = |key: &str| echo.as_ref().and_then(|e| e.errors.get(key).map(str::to_owned));
    let message = echo.as_ref().and_then(|e| e.message.clone()).map(|m| view! { <Notice tone="bad">{m}</Notice> });
    let input = |id: &'static str,
                 key: &'static str,
                 label: &'static str,
                 hint: &'static str,
                 default: &str,
                 required: bool| TextInput {
        id,
        key,
        label,
        hint,
        value: value(key, default),
        error: error(key),
        kind: "text",
        required,
    };
    let fields = [
        input("plan-name", "name", "Name", "Unique, e.g. Team or Enterprise.", "", true),
        input("plan-currency", "currency", "Currency", "ISO 4217, e.g. EUR or USD.", "EUR", true),
        input("plan-seat-price", "seatPrice", "Price per seat per month", "A decimal amount, e.g. 12.50.", "", true),
        input("plan-included", "includedSeats", "Included seats", "Seats not charged each day.", "0", false),
        input("plan-markup", "markupPercent", "LLM markup (%)", "Added to the provider's spend, e.g. 20.", "0", false),
        input("plan-minimum", "monthlyMinimum", "Monthly minimum", "Optional: the least a month costs.", "", false),
    ]
    .into_iter()
    .map(TextInput::view)
    .collect_view();
    view! {
        <details open=echo.is_some()>
            <summary class="btn">"New plan…"</summary>
            <form method="post" id=PLAN_FORM class="form" novalidate>
                <PostedFields form=PLAN_FORM posted=Posted::BillingPlan />
                {message}
                {fields}
                <div class="form-actions">
                    <button type="submit" class="btn primary">"Define the plan"</button>
                </div>
            </form>
        </details>
    }
}
