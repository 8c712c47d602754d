//! Silo `/audit`: the audit log, newest first, paged by cursor (`?before=<id>`).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    api::silo::list_audit,
    components::{
        feedback::{Badge, ErrorView},
        format::timestamp,
        layout::PageHeader,
        table::EmptyState,
    },
};

/// Entries per page.
const PAGE: i64 = 50;

/// The audit page.
#[component]
pub fn AuditPage() -> impl IntoView {
    let before = use_query_map().with_untracked(|q| q.get("before").and_then(|b| b.parse::<i64>().ok()));
    view! {
        <Title text="Audit" />
        <PageHeader title="Audit log" description="Who did what in this silo, newest first. Times are UTC." />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match list_audit(before, PAGE).await {
                    Ok(page) if page.entries.is_empty() => {
                        view! { <EmptyState title="Nothing recorded yet" body="Sign-ins and changes will appear here." /> }.into_any()
                    }
                    Ok(page) => {
                        let rows = page
                            .entries
                            .into_iter()
                            .map(|e| {
                                let tone = match e.outcome.as_str() {
                                    "success" => "ok",
                                    "denied" => "warn",
                                    _ => "bad",
                                };
                                view! {
                                    <tr>
                                        <td>{timestamp(e.occurred_at)}</td>
                                        <td class="mono">{e.actor}</td>
                                        <td>{e.action}</td>
                                        <td class="mono">{e.target}</td>
                                        <td><Badge text=e.outcome tone=tone /></td>
                                        <td class="mono small">{e.request_id.unwrap_or_default()}</td>
                                    </tr>
                                }
                            })
                            .collect_view();
                        view! {
                            <div class="table-wrap">
                                <table class="data">
                                    <thead>
                                        <tr>
                                            <th scope="col">"Time"</th>
                                            <th scope="col">"Actor"</th>
                                            <th scope="col">"Action"</th>
                                            <th scope="col">"Target"</th>
                                            <th scope="col">"Outcome"</th>
                                            <th scope="col">"Request"</th>
                                        </tr>
                                    </thead>
                                    <tbody>{rows}</tbody>
                                </table>
                            </div>
                            {page.next_before.map(|b| view! { <p><a class="btn" href=format!("/audit?before={b}")>"Older entries ›"</a></p> })}
                        }
                            .into_any()
                    }
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}
