//! `/cluster-tenants/:name/members`: a customer's members (OrgMemberships) with their role and
//! status, seat use against the seat cap, the add-or-change form and each member's actions.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    api::fleet::{get_cluster_tenant, list_members},
    authz::{Action, can},
    components::{
        feedback::{Badge, ErrorView, Notice},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    current_principal,
    islands::fleet::members::{MemberActions, MemberForm, confirmation},
    model::href::url_encode,
};

/// The members page of one customer.
#[component]
pub fn ClusterTenantMembers() -> impl IntoView {
    let name = use_params_map().with_untracked(|p| p.get("name").unwrap_or_default());
    let saved = use_query_map().with_untracked(|q| q.get("saved")).and_then(|s| confirmation(&s));
    view! {
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || {
                let name = name.clone();
                Suspend::new(async move {
                    let (ct, members) = match (get_cluster_tenant(name.clone()).await, list_members(name).await) {
                        (Ok(ct), Ok(members)) => (ct, members),
                        (Err(error), _) | (_, Err(error)) => return view! { <ErrorView error /> }.into_any(),
                    };
                    let can_manage = can(current_principal().as_ref(), Action::UpdateClusterTenant(&ct.name));
                    let used = members.iter().filter(|m| m.status == "active").count();
                    let seats = match ct.seat_cap {
                        Some(cap) => format!("{used} of {cap} seats in use"),
                        None => format!("{used} seats in use (no seat cap)"),
                    };
                    let owners = members.iter().filter(|m| m.role == "owner" && m.status == "active").count();
                    let back = format!("/cluster-tenants/{}", url_encode(&ct.name));
                    let rows = members
                        .into_iter()
                        .map(|m| {
                            let tone = if m.status == "active" { "ok" } else { "warn" };
                            let suspended = m.status != "active";
                            let actions = can_manage.then(|| {
                                view! { <MemberActions cluster_tenant=ct.name.clone() subject=m.subject.clone() suspended /> }
                            });
                            view! {
                                <tr>
                                    <td class="mono">{m.subject}</td>
                                    <td>{m.role}</td>
                                    <td><Badge text=m.status tone=tone /></td>
                                    <td>{timestamp(m.created_at)}</td>
                                    <td class="actions">{actions}</td>
                                </tr>
                            }
                        })
                        .collect_view();
                    view! {
                        <Title text=format!("Members of {}", ct.display_name) />
                        <PageHeader
                            title=format!("Members of {}", ct.display_name)
                            description=format!("{seats}. Suspended members hold no seat. The last active owner cannot be demoted, suspended or removed.")
                        >
                            <a class="btn ghost" href=back>"Back to the customer"</a>
                        </PageHeader>
                        {saved.map(|text| view! { <Notice tone="ok">{text}</Notice> })}
                        {(owners == 0).then(|| view! {
                            <Notice tone="warn">"This customer has no active owner yet: add one with the Owner role."</Notice>
                        })}
                        {if rows.is_empty() {
                            view! { <EmptyState title="No members yet" body="Add the customer's people by their subject at the identity provider." /> }.into_any()
                        } else {
                            view! { <DataTable headers=&["Subject", "Role", "Status", "Member since", ""]>{rows}</DataTable> }.into_any()
                        }}
                        {can_manage.then(|| view! {
                            <section class="card" aria-labelledby="add-member-h">
                                <h2 id="add-member-h">"Add a member or change a role"</h2>
                                <MemberForm cluster_tenant=ct.name.clone() />
                            </section>
                        })}
                    }
                        .into_any()
                })
            }}
        </Suspense>
    }
}
