//! `/billing/:name`: one customer's billing, read-only — its plan history, a month's statement
//! (each line with the usage days it came from) with CSV and JSON downloads, and the month's usage
//! as its silo reported it, with charts. Operators see every customer's, put it on a plan (a
//! plain post) and finalise a closed month's statement; a customer's owners and admins see their
//! own, read-only. Plain server-rendered HTML (the month picker is a GET form): nothing here
//! needs the wasm.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    api::fleet::customer_billing,
    components::{
        feedback::{Badge, ErrorView, Notice},
        form::{Field, PostButton, described_by},
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    forms::{self, Posted, PostedFields},
    model::fleet::billing::CustomerBilling,
};

/// The plan form's DOM id.
const ASSIGN_FORM: &str = "assign-plan";

/// The page.
#[component]
pub fn CustomerBillingPage() -> impl IntoView {
    let name = use_params_map().with_untracked(|p| p.get("name").unwrap_or_default());
    let (month, saved) = use_query_map().with_untracked(|q| (q.get("month"), q.get("saved")));
    view! {
        <Title text=format!("Billing · {name}") />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match customer_billing(name.clone(), month).await {
                    Ok(billing) => view! { <Billing name billing saved /> }.into_any(),
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Billing(name: String, billing: CustomerBilling, saved: Option<String>) -> impl IntoView {
    let s = billing.statement;
    let notice = saved.map(|what| {
        let text = if what == "final" {
            format!("The statement of {} is final.", s.month)
        } else {
            "The plan is assigned.".to_owned()
        };
        view! { <Notice tone="ok">{text}</Notice> }
    });
    let finalise = (billing.manage && s.status != "final" && billing.closed).then(|| {
        let posted = Posted::FinaliseStatement { cluster_tenant: name.clone(), month: s.month.clone() };
        view! {
            <PostButton
                form="finalise-statement"
                posted
                label="Finalise"
                title="Freeze this month's numbers: later corrections land on the next statement"
                class="btn small primary"
            />
        }
    });
    let assign =
        billing.manage.then(|| view! { <AssignForm name=name.clone() plans=billing.plans_available.clone() /> });
    let charts = billing
        .charts
        .iter()
        .map(|(aria, svg)| view! { <div class="chart" data-chart=aria.clone() inner_html=svg.clone()></div> })
        .collect_view();
    let base = format!("/api/v1/billing/{name}/statements/{}/export", s.month);
    let usage_export = format!("/api/v1/billing/{name}/usage/export?format=csv&from={}-01", s.month);
    let status = if s.status == "final" {
        view! { <Badge text="final" tone="ok" /> }.into_any()
    } else {
        view! { <Badge text="draft" tone="warn" /> }.into_any()
    };
    let currency = s.currency.clone().unwrap_or_default();
    let plans = if billing.plans.is_empty() {
        view! { <EmptyState title="No plan" body="This customer is not billed until a platform operator puts it on a plan." /> }.into_any()
    } else {
        let rows = billing
            .plans
            .iter()
            .map(|a| {
                view! {
                    <tr>
                        <td>{a.plan.name.clone()}</td>
                        <td class="nowrap">{a.effective_from.to_string()}</td>
                        <td class="nowrap">{a.effective_to.map_or_else(|| "in force".to_owned(), |d| d.to_string())}</td>
                        <td>{format!("{} {} per seat per month, {} included, {}% markup", a.plan.seat_price, a.plan.currency, a.plan.included_seats, a.plan.markup_percent)}</td>
                    </tr>
                }
            })
            .collect_view();
        view! { <DataTable headers=&["Plan", "From", "Until", "Prices"]>{rows}</DataTable> }.into_any()
    };
    let lines = s
        .lines
        .iter()
        .map(|l| {
            // The usage rows a line came from: a link to its first day in the table below.
            let days = match (l.days.first(), l.days.last()) {
                (Some(first), Some(last)) => {
                    let text = if first == last {
                        first.to_string()
                    } else {
                        format!("{first} – {last} ({} days)", l.days.len())
                    };
                    view! { <a href=format!("#day-{first}")>{text}</a> }.into_any()
                }
                _ => "—".into_any(),
            };
            view! {
                <tr>
                    <td>{l.kind.clone()}</td>
                    <td>{l.description.clone()}</td>
                    <td class="nowrap">{days}</td>
                    <td class="num">{l.amount.clone()}</td>
                </tr>
            }
        })
        .collect_view();
    let usage = billing
        .usage
        .iter()
        .map(|d| {
            let spend = d
                .spend
                .iter()
                .map(|l| format!("{} {} {}", l.model, l.amount, l.currency))
                .collect::<Vec<_>>()
                .join("; ");
            view! {
                <tr id=format!("day-{}", d.day)>
                    <td class="nowrap">{d.day.to_string()}</td>
                    <td class="num">{d.active_seats}</td>
                    <td>{if spend.is_empty() { "—".to_owned() } else { spend }}</td>
                    <td class="num">{d.revision}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <PageHeader title=format!("Billing · {name}") description=format!("The customer's plan, its statement for the month, and the usage its silo reported (days in {}).", billing.time_zone)>
            <a class="btn" href=format!("/cluster-tenants/{name}")>"Customer"</a>
        </PageHeader>
        {notice}
        <form method="get" class="filters">
            <label>"Month" <input id="billing-month" type="month" name="month" value=s.month.clone() /></label>
            <button type="submit" class="btn">"Show"</button>
        </form>
        <section class="card" id="plan-history">
            <h2>"Plan"</h2>
            {plans}
            {assign}
        </section>
        <section class="card" id="statement">
            <h2>{format!("Statement {} ", s.month)}{status}</h2>
            {if s.lines.is_empty() {
                view! { <p class="muted">"No lines: the customer is on no plan this month."</p> }.into_any()
            } else {
                view! { <DataTable headers=&["Kind", "Line", "Usage days", "Amount"]>{lines}</DataTable> }.into_any()
            }}
            <p class="stat">{format!("Total {} {currency}", s.total).trim_end().to_owned()}</p>
            <p class="actions">
                <a class="btn small" href=format!("{base}?format=csv")>"Download CSV"</a>
                <a class="btn small" href=format!("{base}?format=json")>"Download JSON"</a>
                {finalise}
            </p>
        </section>
        <section class="card" id="usage">
            <h2>"Usage"</h2>
            {charts}
            <DataTable headers=&["Day", "Seats", "Spend", "Revision"]>{usage}</DataTable>
            <p class="actions"><a class="btn small" href=usage_export>"Download usage CSV"</a></p>
        </section>
    }
}

/// Puts the customer on a plan from a day: a plain post; after a refused post it shows what was
/// chosen and the message under its field.
#[component]
fn AssignForm(name: String, plans: Vec<String>) -> impl IntoView {
    let echo = forms::echo(ASSIGN_FORM);
    let value = |key: &str| echo.as_ref().and_then(|e| e.value(key)).unwrap_or_default();
    let error = |key: &str| echo.as_ref().and_then(|e| e.errors.get(key).map(str::to_owned));
    let message = echo.as_ref().and_then(|e| e.message.clone()).map(|m| view! { <Notice tone="bad">{m}</Notice> });
    let chosen = value("plan");
    let options = plans
        .iter()
        .map(|p| view! { <option value=p.clone() selected=chosen == *p>{p.clone()}</option> })
        .collect_view();
    let from = Some(value("effectiveFrom"))
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| chrono::Utc::now().date_naive().to_string());
    let (plan_error, from_error) = (error("plan"), error("effectiveFrom"));
    let plan_describe = described_by("assign-plan-plan", true, plan_error.is_some());
    let from_describe = described_by("assign-plan-from", true, from_error.is_some());
    if plans.is_empty() {
        return view! { <p class="muted">"Define a plan on the billing page first."</p> }.into_any();
    }
    view! {
        <form method="post" id=ASSIGN_FORM class="form" novalidate>
            <PostedFields form=ASSIGN_FORM posted=Posted::AssignPlan { cluster_tenant: name } />
            {message}
            <Field id="assign-plan-plan" label="Plan" hint="The plan in force from the day below." required=true error=Signal::derive(move || plan_error.clone())>
                <select id="assign-plan-plan" name="plan" aria-describedby=plan_describe>
                    <option value="" selected=chosen.is_empty()>"Choose…"</option>
                    {options}
                </select>
            </Field>
            <Field id="assign-plan-from" label="From" hint="A day of this month or later; a change mid-month prorates by seat-days." required=true error=Signal::derive(move || from_error.clone())>
                <input id="assign-plan-from" name="effectiveFrom" type="date" value=from aria-describedby=from_describe />
            </Field>
            <div class="form-actions">
                <button type="submit" class="btn primary">"Put on the plan"</button>
            </div>
        </form>
    }
    .into_any()
}
