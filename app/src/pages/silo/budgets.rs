//! Silo `/budgets`: limits for the silo, groups and users in calendar periods of the silo's time
//! zone (enforced through LiteLLM), threshold notices, the silo settings, and spend per user,
//! group and model with a daily chart and CSV export.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::{EnforcementBanner, LimitTable};
use crate::{
    api::silo::load_budgets,
    components::{feedback::ErrorView, format::timestamp, layout::PageHeader, table::DataTable},
    forms,
    islands::silo::portal_form::{FieldKind, FormField, FormTarget, PortalForm, RowAction, RowActionButton},
    model::silo::BudgetOverview,
};

fn limit_fields(o: &BudgetOverview) -> Vec<FormField> {
    let groups: Vec<(String, String)> = o.groups.iter().map(|(id, name)| (id.clone(), name.clone())).collect();
    let users: Vec<(String, String)> = o.users.iter().map(|u| (u.clone(), u.clone())).collect();
    let targets = FieldKind::Grouped {
        follows: "level".into(),
        groups: vec![("group".into(), "Groups".into(), groups), ("user".into(), "Users".into(), users)],
    };
    vec![
        FormField::new(
            "level",
            "Applies to",
            FieldKind::Select(vec![
                ("silo".into(), "the whole silo".into()),
                ("group".into(), "a group (its members together)".into()),
                ("user".into(), "one user".into()),
            ]),
        )
        .value("silo"),
        FormField::new("target", "Which group or user", targets).hint(
            "A user's limit set here is the one on the user's page: saving replaces it. Leave empty for the whole silo.",
        ),
        FormField::new("amount", "Amount", FieldKind::Text)
            .required()
            .hint("Per period, e.g. 500 or 99.50; 0 blocks all spending."),
        FormField::new("currency", "Currency", FieldKind::Text)
            .value(o.settings.currency.clone())
            .hint("LiteLLM reports spend in this currency."),
        FormField::new(
            "period",
            "Period",
            FieldKind::Select(vec![
                ("month".into(), "calendar month".into()),
                ("week".into(), "calendar week (Monday to Monday)".into()),
                ("day".into(), "calendar day".into()),
            ]),
        )
        .value("month"),
        FormField::new("thresholds", "Alert at (%)", FieldKind::Numbers)
            .value("50, 80, 100")
            .hint("Percentages; each gives one notice per period."),
    ]
}

fn settings_fields(o: &BudgetOverview) -> Vec<FormField> {
    vec![
        FormField::new("timeZone", "Time zone", FieldKind::Text)
            .value(o.settings.time_zone.clone())
            .hint("IANA name, e.g. Europe/Berlin: periods start at its midnight."),
        FormField::new("currency", "Currency", FieldKind::Text).value(o.settings.currency.clone()),
        FormField::new(
            "defaultModelAccess",
            "Models without a grant are",
            FieldKind::Select(vec![("allow".into(), "allowed".into()), ("deny".into(), "denied".into())]),
        )
        .value(o.settings.default_model_access.clone()),
    ]
}

/// Rows per spend table; the rest are in the CSV.
const SPEND_ROWS: usize = 20;

/// `/budgets?period=`.
#[component]
pub fn BudgetsPage() -> impl IntoView {
    let period = use_query_map().with_untracked(|q| q.get("period"));
    view! {
        <Title text="Budgets" />
        <PageHeader title="Budgets" description="Spending limits for the whole silo, groups and users. A reached limit blocks the keys it covers until its period resets." />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match load_budgets(period).await {
                    Ok(o) => view! { <Budgets o /> }.into_any(),
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Budgets(o: BudgetOverview) -> impl IntoView {
    let notices = o
        .notices
        .iter()
        .map(|n| view! {
            <li class="notice warn">
                {n.message.clone()}
                <span class="muted small">{format!(" ({}) ", timestamp(n.created_at))}</span>
                <RowActionButton action=RowAction::DismissNotice(n.id) label="Dismiss".to_owned() done="/budgets".to_owned() of="notice".to_owned() />
            </li>
        })
        .collect_view();
    let spend = o.spend.clone();
    // The biggest spenders on the page; everything in the CSV, so a silo of thousands of users
    // does not render thousands of rows here.
    let table = |rows: Vec<(String, String)>| {
        if rows.is_empty() {
            return view! { <tr><td class="muted" colspan="2">"No spend this period."</td></tr> }.into_any();
        }
        let more = rows.len().saturating_sub(SPEND_ROWS);
        let top =
            rows.into_iter().take(SPEND_ROWS).map(|(k, v)| view! { <tr><td>{k}</td><td class="num">{v}</td></tr> });
        view! {
            {top.collect_view()}
            {(more > 0).then(|| view! { <tr class="more"><td class="muted" colspan="2">{format!("and {more} more in the CSV")}</td></tr> })}
        }
        .into_any()
    };
    let periods = ["day", "week", "month"].map(|p| {
        let current = p == spend.period;
        view! { <a class=if current { "btn small primary" } else { "btn small" } href=format!("/budgets?period={p}") aria-current=current.then_some("page")>{p}</a> }
    });
    view! {
        <EnforcementBanner sync=o.enforcement.clone() />
        {(!o.notices.is_empty()).then(|| view! { <section><h2>"Notices"</h2><ul class="notices">{notices}</ul></section> })}
        <section>
            <h2>"Limits"</h2>
            <p class="muted">{format!("Calendar periods in {}: each resets at midnight there.", o.settings.time_zone)}</p>
            <LimitTable limits=o.limits.clone() show_binding=false />
            <details class="card" open=o.limits.is_empty() || forms::echoed("new-limit")>
                <summary>"Set a limit"</summary>
                <PortalForm id="new-limit".to_owned() fields=limit_fields(&o) target=FormTarget::SetLimit submit_label="Set limit".to_owned() done="/budgets".to_owned() />
            </details>
        </section>
        <section class="spend">
            <h2>{format!("Spend this {}: {} {}", spend.period, spend.total, o.settings.currency)}</h2>
            <p class="muted">{format!("{} to {}", timestamp(spend.start), timestamp(spend.end))}" " {periods} " "
                <a class="btn small" href=format!("/api/v1/ai-budget/spend.csv?period={}", spend.period) download="spend.csv">"CSV"</a>
            </p>
            <div class="chart" inner_html=spend.chart_svg.clone()></div>
            <div class="columns">
                <DataTable headers=&["User", "Spent"]>{table(spend.by_user.clone())}</DataTable>
                <DataTable headers=&["Group", "Spent"]>{table(spend.by_group.clone())}</DataTable>
                <DataTable headers=&["Model", "Spent"]>{table(spend.by_model.clone())}</DataTable>
            </div>
        </section>
        <section>
            <h2>"Silo settings"</h2>
            <PortalForm id="settings".to_owned() fields=settings_fields(&o) target=FormTarget::UpdateSettings submit_label="Save settings".to_owned() done="/budgets".to_owned() />
        </section>
    }
}
