//! `/audit` on either role: the audit log, newest first, filterable by actor, action and outcome,
//! paged by cursor. Each entry's detail (before/after values) opens in place.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    Role,
    components::{
        feedback::{Badge, ErrorView},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    model::audit::{AuditPage, AuditQuery},
};

async fn fetch(role: Role, query: AuditQuery) -> Result<AuditPage, crate::error::AppError> {
    match role {
        Role::Fleet => crate::api::fleet::list_fleet_audit(query).await,
        Role::Silo => crate::api::silo::list_silo_audit(query).await,
    }
}

/// The audit page of `role`.
#[component]
pub fn AuditLogPage(role: Role) -> impl IntoView {
    let query = use_query_map().with_untracked(|q| AuditQuery::from_params(|k| q.get(k)));
    let scope = match role {
        Role::Fleet => "Sign-ins and every change on the fleet, newest first. Times are UTC.",
        Role::Silo => "Sign-ins and every change in this silo, newest first. Times are UTC.",
    };
    let filters = query.clone();
    view! {
        <Title text="Audit" />
        <PageHeader title="Audit log" description=scope />
        <form class="filters" method="get" action="/audit" role="search">
            <label>
                "Actor"
                <input type="search" name="actor" value=filters.actor.clone().unwrap_or_default() placeholder="subject" />
            </label>
            <label>
                "Action"
                <input type="search" name="action" value=filters.action.clone().unwrap_or_default() placeholder="e.g. auth. or cluster_tenant." />
            </label>
            <label>
                "Outcome"
                <select name="outcome">
                    <option value="">"All"</option>
                    {["success", "failure", "denied"]
                        .into_iter()
                        .map(|o| view! { <option value=o selected=filters.outcome.as_deref() == Some(o)>{o}</option> })
                        .collect_view()}
                </select>
            </label>
            <button type="submit" class="btn">"Apply"</button>
        </form>
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match fetch(role, query.clone()).await {
                    Ok(page) if page.entries.is_empty() => {
                        view! { <EmptyState title="Nothing recorded" body="No entries match. Sign-ins and changes appear here." /> }
                            .into_any()
                    }
                    Ok(page) => view! { <Entries page query /> }.into_any(),
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Entries(page: AuditPage, query: AuditQuery) -> impl IntoView {
    let rows = page
        .entries
        .into_iter()
        .map(|e| {
            let tone = match e.outcome.as_str() {
                "success" => "ok",
                "denied" => "warn",
                _ => "bad",
            };
            let detail = (e.metadata != serde_json::json!({})).then(|| {
                let text = serde_json::to_string_pretty(&e.metadata).unwrap_or_default();
                view! {
                    <details>
                        <summary>"detail"</summary>
                        <pre class="detail">{text}</pre>
                    </details>
                }
            });
            view! {
                <tr>
                    <td class="nowrap">{timestamp(e.occurred_at)}</td>
                    <td>
                        <span class="mono">{e.actor}</span>
                        <span class="cell-note">{e.actor_role}</span>
                    </td>
                    <td class="mono">{e.action}</td>
                    <td class="mono">{e.target} {detail}</td>
                    <td><Badge text=e.outcome tone=tone /></td>
                    <td class="mono small">{e.request_id.unwrap_or_default()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable headers=&["Time (UTC)", "Actor", "Action", "Target", "Outcome", "Request"]>{rows}</DataTable>
        {page.next_before.map(|b| view! { <p><a class="btn" href=query.next_href(b)>"Older entries ›"</a></p> })}
    }
}
