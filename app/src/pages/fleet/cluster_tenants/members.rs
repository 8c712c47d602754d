//! `/cluster-tenants/:name/members`: a customer's members (OrgMemberships) with their role and
//! status and last sign-in, seat use against the seat cap, pending invitations, the
//! add-or-invite form, each member's actions, and "Invite owner" for a customer without one.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    api::fleet::{get_cluster_tenant, list_invitations, list_members},
    authz::{Action, can},
    components::{
        feedback::{Badge, ErrorView, Notice},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    current_principal,
    islands::fleet::members::{InviteOwner, MemberActions, MemberForm, WithdrawInvitation, confirmation},
    model::href::url_encode,
};

/// The members page of one customer.
#[component]
pub fn ClusterTenantMembers() -> impl IntoView {
    let name = use_params_map().with_untracked(|p| p.get("name").unwrap_or_default());
    let saved = use_query_map().with_untracked(|q| q.get("saved")).and_then(|s| confirmation(&s));
    view! {
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                let fetched =
                    (get_cluster_tenant(name.clone()).await, list_members(name.clone()).await, list_invitations(name).await);
                let (ct, members, invitations) = match fetched {
                    (Ok(ct), Ok(members), Ok(invitations)) => (ct, members, invitations),
                    (Err(error), _, _) | (_, Err(error), _) | (_, _, Err(error)) => {
                        return view! { <ErrorView error /> }.into_any();
                    }
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
                        let last = m.last_sign_in_at.map_or_else(|| "Not yet".to_owned(), timestamp);
                        view! {
                            <tr>
                                <td class="mono">{m.subject}</td>
                                <td>{m.role}</td>
                                <td><Badge text=m.status tone=tone /></td>
                                <td>{last}</td>
                                <td>{timestamp(m.created_at)}</td>
                                <td class="actions">{actions}</td>
                            </tr>
                        }
                    })
                    .collect_view();
                let pending = (!invitations.is_empty()).then(|| {
                    let rows = invitations
                        .into_iter()
                        .map(|i| {
                            let withdraw = can_manage.then(|| {
                                view! { <WithdrawInvitation cluster_tenant=ct.name.clone() email=i.email.clone() /> }
                            });
                            view! {
                                <tr>
                                    <td>{i.email}</td>
                                    <td>{i.role}</td>
                                    <td><Badge text="invited".to_owned() tone="busy" /></td>
                                    <td class="mono">{i.invited_by}</td>
                                    <td>{timestamp(i.created_at)}</td>
                                    <td class="actions">{withdraw}</td>
                                </tr>
                            }
                        })
                        .collect_view();
                    view! {
                        <section aria-labelledby="invitations-h">
                            <h2 id="invitations-h">"Pending invitations"</h2>
                            <p class="muted">"An invitation holds no seat. It becomes a membership at that person's first sign-in through the organisation, with the address verified, if a seat is free."</p>
                            <DataTable headers=&["E-mail", "Role", "Status", "Invited by", "Invited", ""]>{rows}</DataTable>
                        </section>
                    }
                });
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
                        <Notice tone="warn">
                            "This customer has no active owner yet (it was created by an API client, or its owners are suspended). Invite the person who should own it; they become the owner at their first sign-in."
                        </Notice>
                        {can_manage.then(|| view! { <InviteOwner cluster_tenant=ct.name.clone() /> })}
                    })}
                    {if rows.is_empty() {
                        view! { <EmptyState title="No members yet" body="Add the customer's people by their subject at the identity provider, or invite them by e-mail address." /> }.into_any()
                    } else {
                        view! { <DataTable headers=&["Subject", "Role", "Status", "Last sign-in", "Member since", ""]>{rows}</DataTable> }.into_any()
                    }}
                    {pending}
                    {can_manage.then(|| view! {
                        <section class="card" aria-labelledby="add-member-h">
                            <h2 id="add-member-h">"Add or invite a member, or change a role"</h2>
                            <MemberForm cluster_tenant=ct.name.clone() />
                        </section>
                    })}
                }
                    .into_any()
            })}
        </Suspense>
    }
}
