//! `/billing/:name`: one customer's billing, read-only — its plan history, a month's statement
//! (each line with the usage days it came from) with CSV and JSON downloads, and the month's usage
//! as its silo reported it. Operators see every customer's; a customer's owners and admins their
//! own. Plain server-rendered HTML (the month picker is a GET form): nothing here needs the wasm.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    api::fleet::customer_billing,
    components::{
        feedback::{Badge, ErrorView},
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    model::fleet::billing::CustomerBilling,
};

/// The page.
#[component]
pub fn CustomerBillingPage() -> impl IntoView {
    let name = use_params_map().with_untracked(|p| p.get("name").unwrap_or_default());
    let month = use_query_map().with_untracked(|q| q.get("month"));
    view! {
        <Title text=format!("Billing · {name}") />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || {
                let (name, month) = (name.clone(), month.clone());
                Suspend::new(async move {
                    match customer_billing(name.clone(), month).await {
                        Ok(billing) => view! { <Billing name billing /> }.into_any(),
                        Err(error) => view! { <ErrorView error /> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn Billing(name: String, billing: CustomerBilling) -> impl IntoView {
    let s = billing.statement;
    let base = format!("/api/v1/billing/{name}/statements/{}/export", s.month);
    let usage_export = format!("/api/v1/billing/{name}/usage/export?format=csv&from={}-01", s.month);
    let status = if s.status == "final" {
        view! { <Badge text="final" tone="ok" /> }.into_any()
    } else {
        view! { <Badge text="draft" tone="warn" /> }.into_any()
    };
    let currency = s.currency.clone().unwrap_or_default();
    let plans = if billing.plans.is_empty() {
        view! { <EmptyState title="No plan" body="This customer is not billed: a platform operator puts it on a plan (PUT /api/v1/billing/{name}/plan)." /> }.into_any()
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
            let days = match (l.days.first(), l.days.last()) {
                (Some(first), Some(last)) if first == last => first.to_string(),
                (Some(first), Some(last)) => format!("{first} – {last} ({} days)", l.days.len()),
                _ => "—".to_owned(),
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
                <tr>
                    <td class="nowrap">{d.day.to_string()}</td>
                    <td class="num">{d.active_seats}</td>
                    <td>{if spend.is_empty() { "—".to_owned() } else { spend }}</td>
                    <td class="num">{d.revision}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <PageHeader title=format!("Billing · {name}") description="The customer's plan, its statement for the month, and the usage its silo reported (UTC days).">
            <a class="btn" href=format!("/cluster-tenants/{name}")>"Customer"</a>
        </PageHeader>
        <form method="get" class="filters">
            <label for="billing-month">"Month"</label>
            <input id="billing-month" type="month" name="month" value=s.month.clone() />
            <button type="submit" class="btn">"Show"</button>
        </form>
        <section class="card" id="plan-history">
            <h2>"Plan"</h2>
            {plans}
        </section>
        <section class="card" id="statement">
            <h2>{format!("Statement {} ", s.month)}{status}</h2>
            <DataTable headers=&["Kind", "Line", "Usage days", "Amount"]>{lines}</DataTable>
            <p class="stat">{format!("Total {} {currency}", s.total)}</p>
            <p class="actions">
                <a class="btn small" href=format!("{base}?format=csv")>"Download CSV"</a>
                <a class="btn small" href=format!("{base}?format=json")>"Download JSON"</a>
            </p>
        </section>
        <section class="card" id="usage">
            <h2>"Usage"</h2>
            <DataTable headers=&["Day", "Seats", "Spend", "Revision"]>{usage}</DataTable>
            <p class="actions"><a class="btn small" href=usage_export>"Download usage CSV"</a></p>
        </section>
    }
}
