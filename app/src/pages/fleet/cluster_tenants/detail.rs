//! `/cluster-tenants/:name`: one customer — its silo's live provisioning checklist, its desired
//! state, and the Open silo, Suspend/Resume, Edit and Delete actions.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    UiContext,
    api::fleet::{get_cluster_tenant, get_provisioning},
    authz::{Action, can},
    components::{
        feedback::{ErrorView, Notice},
        format::timestamp,
        layout::PageHeader,
    },
    current_principal,
    error::AppError,
    islands::{
        fleet::delete_cluster_tenant::DeleteClusterTenant,
        fleet::provisioning::{ProvisioningChecklist, SuspendButton},
    },
    model::{
        fleet::cluster_tenant::{ClusterTenant, ComputeMode, Phase},
        fleet::provisioning::ProvisioningView,
    },
};

/// The customer detail page.
#[component]
pub fn ClusterTenantDetail() -> impl IntoView {
    let ui = expect_context::<UiContext>();
    let name = use_params_map().with_untracked(|p| p.get("name").unwrap_or_default());
    let deleting = use_query_map().with_untracked(|q| q.get("deleting").is_some());
    let notice = use_query_map().with_untracked(|q| {
        if q.get("created").is_some() {
            Some("Customer created. Its silo is being provisioned; the checklist below follows every step.")
        } else if q.get("saved").is_some() {
            Some("Changes saved.")
        } else {
            None
        }
    });
    view! {
        {notice.map(|n| view! { <Notice tone="ok">{n}</Notice> })}
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {{
                let base = ui.base_domain.clone();
                Suspend::new(async move {
                    let loaded = match get_cluster_tenant(name.clone()).await {
                        Ok(ct) => get_provisioning(name.clone()).await.map(|p| (ct, p)),
                        Err(error) => Err(error),
                    };
                    match loaded {
                        Ok((ct, provisioning)) => {
                            let started = deleting.then(|| view! {
                                <Notice tone="ok">"Deletion started. The checklist below follows the teardown; reload to see how far it got."</Notice>
                            });
                            view! { {started} <Detail ct provisioning base /> }.into_any()
                        }
                        // Asked for after a deletion (a post without wasm): gone means done.
                        Err(AppError::NotFound { .. }) if deleting => view! {
                            <Notice tone="ok">{format!("Customer “{name}” was deleted.")}</Notice>
                            <p><a href="/cluster-tenants">"Back to the customers"</a></p>
                        }
                        .into_any(),
                        Err(error) => view! { <ErrorView error /> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn Detail(ct: ClusterTenant, provisioning: ProvisioningView, base: Option<String>) -> impl IntoView {
    let quota = &ct.resources.quota;
    let quota_text = [
        quota.cpu.as_ref().map(|v| format!("cpu {v}")),
        quota.memory.as_ref().map(|v| format!("memory {v}")),
        quota.pods.map(|v| format!("pods {v}")),
        quota.storage.as_ref().map(|v| format!("storage {v}")),
        quota.gpu.map(|v| format!("gpu {v}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    let compute = match (ct.compute.mode, &ct.compute.node_pool) {
        (ComputeMode::Dedicated, Some(pool)) => format!("Dedicated (node pool {pool})"),
        _ => "Shared".to_owned(),
    };
    let seats = match (ct.seats_used, ct.seat_cap) {
        (Some(used), Some(cap)) => format!("{used} of {cap} in use"),
        (Some(used), None) => format!("{used} in use, uncapped"),
        (None, Some(cap)) => format!("capped at {cap}"),
        (None, None) => "uncapped".into(),
    };
    let host = base.map(|b| format!("{}.{b}", ct.name));
    let edit_href = format!("/cluster-tenants/{}/edit", ct.name);
    let members_href = format!("/cluster-tenants/{}/members", ct.name);
    let billing_href = format!("/billing/{}", ct.name);
    let billing = expect_context::<crate::UiContext>().billing_enabled;
    let members = ct.seats_used.unwrap_or(0);
    let name = ct.name.clone();
    let display_name = ct.display_name.clone();
    // Only owners (and operators) may delete; admins do not see the button.
    let principal = current_principal();
    let can_delete = can(principal.as_ref(), Action::DeleteClusterTenant(&ct.name));
    let can_change = can(principal.as_ref(), Action::UpdateClusterTenant(&ct.name));
    // Suspension is the platform's decision: a customer's admins cannot lift it.
    let is_operator = principal.as_ref().is_some_and(|p| p.is_platform_operator);
    let deleting = ct.status.phase == Phase::Deleting;
    let suspended = ct.suspended;
    let policy = ct.termination_policy;
    let version = ct.silo_version.clone().unwrap_or_else(|| "the fleet's default".into());
    view! {
        <Title text=ct.display_name.clone() />
        <PageHeader title=ct.display_name.clone() description=format!("Customer {}", ct.name)>
            {(is_operator && !deleting).then(|| view! { <SuspendButton name=name.clone() suspended /> })}
            <a class="btn" href=members_href>"Members"</a>
            {billing.then(|| view! { <a class="btn" href=billing_href>"Billing"</a> })}
            {(!deleting).then(|| view! { <a class="btn" href=edit_href>"Edit"</a> })}
            {(can_delete && !deleting).then(|| view! { <DeleteClusterTenant name display_name members policy /> })}
        </PageHeader>
        <ProvisioningChecklist initial=provisioning can_retry=can_change />
        <div class="cards">
            <SignInOrganisation ids=ct.zitadel.clone() />
            <CustomerDnsCard name=ct.name.clone() />
            <section class="card" aria-labelledby="spec-h">
                <h2 id="spec-h">"Desired state"</h2>
                <dl class="props">
                    <dt>"Name"</dt>
                    <dd class="mono">{ct.name.clone()}</dd>
                    <dt>"Namespace"</dt>
                    <dd class="mono">{ct.namespace()}</dd>
                    <dt>"Host"</dt>
                    <dd class="mono">{host.unwrap_or_else(|| "– (no base domain configured)".into())}</dd>
                    <dt>"Vanity domain"</dt>
                    <dd class="mono">{ct.vanity_domain.clone().unwrap_or_else(|| "–".into())}</dd>
                    <dt>"Isolation tier"</dt>
                    <dd>{ct.isolation_tier.label()}</dd>
                    <dt>"Compute"</dt>
                    <dd>{compute}</dd>
                    <dt>"Quota"</dt>
                    <dd>{if quota_text.is_empty() { "none".to_owned() } else { quota_text }}</dd>
                    <dt>"Seats"</dt>
                    <dd>{seats}</dd>
                    <dt>"On deletion"</dt>
                    <dd>{policy.label()}</dd>
                    <dt>"Silo version"</dt>
                    <dd>{version}</dd>
                    <dt>"Suspended"</dt>
                    <dd>{if suspended { "yes: scaled to zero, sign-ins blocked" } else { "no" }}</dd>
                    <dt>"Created"</dt>
                    <dd>{timestamp(ct.created_at)}</dd>
                    <dt>"Updated"</dt>
                    <dd>{timestamp(ct.updated_at)}</dd>
                </dl>
            </section>
        </div>
    }
}

/// The customer's own sign-in organisation in Zitadel (the identity step's ids).
/// The customer's DNS record and served certificate, with *Check now*.
#[component]
fn CustomerDnsCard(name: String) -> impl IntoView {
    let done = format!("/cluster-tenants/{}", crate::model::href::url_encode(&name));
    view! {
        <section class="card" aria-labelledby="dns-h">
            <h2 id="dns-h">"DNS and certificate"</h2>
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {Suspend::new(async move {
                    match crate::api::fleet::get_customer_dns(name.clone()).await {
                        Ok(dns) => view! {
                            <crate::pages::fleet::dns::DnsHosts hosts=dns.hosts cluster_tenant=name done probing=dns.probing />
                        }
                        .into_any(),
                        Err(error) => view! { <ErrorView error /> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn SignInOrganisation(ids: Option<crate::model::fleet::cluster_tenant::ZitadelIds>) -> impl IntoView {
    let dash = |v: Option<String>| v.unwrap_or_else(|| "–".into());
    view! {
        <section class="card" aria-labelledby="identity-h">
            <h2 id="identity-h">"Sign-in organisation"</h2>
            {match ids {
                None => view! {
                    <p class="muted">"No Zitadel organisation yet: the silo signs in with the fallback client. The identity step makes one when the fleet has Zitadel configured."</p>
                }
                .into_any(),
                Some(ids) => view! {
                    <dl class="props">
                        <dt>"Organisation"</dt>
                        <dd class="mono" id="zitadel-org">{dash(ids.org_id.clone())}</dd>
                        <dt>"Login client"</dt>
                        <dd class="mono" id="zitadel-client">{dash(ids.client_id.clone())}</dd>
                        <dt>"Callback"</dt>
                        <dd class="mono">{dash(ids.redirect_uri.clone())}</dd>
                    </dl>
                    {ids.console_url.map(|href| view! {
                        <p><a href=href rel="noopener noreferrer" target="_blank">"Open the organisation in Zitadel"</a></p>
                    })}
                }
                .into_any(),
            }}
        </section>
    }
}
