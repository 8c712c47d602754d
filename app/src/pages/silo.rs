//! Silo pages, and the pieces the portal's pages share (the enforcement banner, the limit table).

pub mod access;
pub mod budgets;
pub mod groups;
pub mod members;
pub mod models;
pub mod overview;
pub mod policies;
pub mod tokens;
pub mod users;

use leptos::prelude::*;

use crate::{
    components::{
        feedback::{Badge, Notice},
        format::timestamp,
        table::{DataTable, EmptyState},
    },
    model::silo::{LimitView, SyncView},
};

/// Whether LiteLLM enforces what the pages show, and how its last pass went.
#[component]
pub fn EnforcementBanner(sync: SyncView) -> impl IntoView {
    let when = sync.finished_at.map(|t| format!(" (last pass {})", timestamp(t))).unwrap_or_default();
    match (sync.configured, sync.ok) {
        (false, _) => view! { <Notice tone="info">{sync.message}</Notice> }.into_any(),
        (true, true) => {
            view! { <Notice tone="ok">{format!("Enforced through LiteLLM: {}{when}.", sync.message)}</Notice> }
                .into_any()
        }
        (true, false) => {
            view! { <Notice tone="bad">{format!("LiteLLM enforcement is failing: {}{when}.", sync.message)}</Notice> }
                .into_any()
        }
    }
}

/// Limits in their current period; with `show_binding` the first row is marked as binding first.
#[component]
pub fn LimitTable(limits: Vec<LimitView>, show_binding: bool) -> impl IntoView {
    if limits.is_empty() {
        return view! { <EmptyState title="No limits" body="Nothing limits spending." /> }.into_any();
    }
    let rows = limits
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let status = if l.reached {
                view! { <Badge text="reached: blocked" tone="bad" /> }.into_any()
            } else if l.thresholds.iter().any(|t| l.used_percent >= u32::from(*t)) {
                view! { <Badge text=format!("{} % alert", l.used_percent) tone="warn" /> }.into_any()
            } else {
                view! { <Badge text=format!("{} %", l.used_percent) tone="ok" /> }.into_any()
            };
            let binding = (show_binding && i == 0).then(|| view! { <Badge text="binds first" tone="warn" /> });
            let width = l.used_percent.min(100);
            view! {
                <tr class="limit-row">
                    <td>{l.target.clone()}" "{binding}</td>
                    <td class="num">{format!("{} {}", l.amount, l.currency)}</td>
                    <td>{format!("calendar {}", l.period)}</td>
                    <td class="num">{format!("{} spent · {} left", l.spent, l.remaining)}</td>
                    <td><meter min="0" max="100" value=width title=format!("{} %", l.used_percent)></meter>" "{status}</td>
                    <td class="nowrap" title=timestamp(l.resets_at)>{l.resets_local.clone()}</td>
                    <td class="actions">
                        {(!show_binding).then(|| view! {
                            <crate::islands::silo::portal_form::RowActionButton action=crate::islands::silo::portal_form::RowAction::DeleteLimit(l.id.clone()) label="Remove".to_owned() done="/budgets".to_owned() of=format!("the {} limit of {}", l.period, l.target) />
                        })}
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! { <DataTable headers=&["Applies to", "Limit", "Period", "This period", "Used", "Resets", ""]>{rows}</DataTable> }.into_any()
}
