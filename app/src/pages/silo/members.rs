//! Silo `/members`: the OrgMembership read-model as the fleet last projected it.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    api::silo::list_members,
    components::{
        feedback::{Badge, ErrorView},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
};

/// The members page.
#[component]
pub fn MembersPage() -> impl IntoView {
    view! {
        <Title text="Members" />
        <PageHeader title="Members" description="Who belongs to this customer, as the fleet reports it." />
        {manage_link()}
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match list_members().await {
                    Ok(members) if members.is_empty() => {
                        view! {
                            <EmptyState title="No members projected yet" body="Members appear here once the fleet reports them." />
                        }
                            .into_any()
                    }
                    Ok(members) => {
                        let rows = members
                            .into_iter()
                            .map(|m| {
                                let tone = if m.status == "active" { "ok" } else { "warn" };
                                view! {
                                    <tr>
                                        <td class="mono">{m.subject}</td>
                                        <td>{m.role}</td>
                                        <td><Badge text=m.status tone=tone /></td>
                                        <td>{timestamp(m.updated_at)}</td>
                                    </tr>
                                }
                            })
                            .collect_view();
                        view! {
                            <DataTable headers=&["Subject", "Role", "Status", "Updated"]>{rows}</DataTable>
                        }
                            .into_any()
                    }
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// Where membership is managed: the customer's members page on the fleet console.
fn manage_link() -> impl IntoView {
    let ui = use_context::<crate::UiContext>();
    let href = ui.and_then(|ui| {
        let ct = ui.cluster_tenant?;
        Some(format!("{}/cluster-tenants/{}/members", ui.fleet_console?, crate::model::href::url_encode(&ct)))
    });
    match href {
        Some(href) => view! {
            <p id="manage-members">"Members are invited, changed and removed on the fleet console: "<a href=href>"manage this customer's members"</a>"."</p>
        }
        .into_any(),
        None => view! { <p class="muted" id="manage-members">"Members are invited, changed and removed on the fleet console."</p> }.into_any(),
    }
}
