//! `/cluster-tenants/:name`: one customer — its desired state, status, and the edit and delete
//! actions.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::{
    UiContext,
    api::fleet::get_cluster_tenant,
    authz::{Action, can},
    components::{
        feedback::{ErrorView, Notice, PhaseBadge},
        format::timestamp,
        layout::PageHeader,
    },
    current_principal,
    islands::delete_cluster_tenant::DeleteClusterTenant,
    model::cluster_tenant::{ClusterTenant, ComputeMode},
};

/// The customer detail page.
#[component]
pub fn ClusterTenantDetail() -> impl IntoView {
    let ui = expect_context::<UiContext>();
    let name = use_params_map().with_untracked(|p| p.get("name").unwrap_or_default());
    let notice = use_query_map().with_untracked(|q| {
        if q.get("created").is_some() {
            Some("Customer created. It stays Pending: provisioning its silo arrives in a later release.")
        } else if q.get("saved").is_some() {
            Some("Changes saved.")
        } else {
            None
        }
    });
    view! {
        {notice.map(|n| view! { <Notice tone="ok">{n}</Notice> })}
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || {
                let name = name.clone();
                let base = ui.base_domain.clone();
                Suspend::new(async move {
                    match get_cluster_tenant(name).await {
                        Ok(ct) => view! { <Detail ct base /> }.into_any(),
                        Err(error) => view! { <ErrorView error /> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

#[component]
fn Detail(ct: ClusterTenant, base: Option<String>) -> impl IntoView {
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
    let members = ct.seats_used.unwrap_or(0);
    let name = ct.name.clone();
    let display_name = ct.display_name.clone();
    // Only owners (and operators) may delete; admins do not see the button.
    let can_delete = can(current_principal().as_ref(), Action::DeleteClusterTenant(&ct.name));
    view! {
        <Title text=ct.display_name.clone() />
        <PageHeader title=ct.display_name.clone() description=format!("Customer {}", ct.name)>
            <a class="btn" href=edit_href>"Edit"</a>
            {can_delete.then(|| view! { <DeleteClusterTenant name display_name members /> })}
        </PageHeader>
        <div class="cards">
            <section class="card" aria-labelledby="status-h">
                <h2 id="status-h">"Status"</h2>
                <p>
                    <PhaseBadge phase=ct.status.phase />
                </p>
                <p class="muted">
                    {ct.status.message.clone().unwrap_or_else(|| {
                        "Recorded in the fleet registry. Provisioning of the silo (namespace, database, release) is not part of this release."
                            .into()
                    })}
                </p>
            </section>
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
                    <dt>"Created"</dt>
                    <dd>{timestamp(ct.created_at)}</dd>
                    <dt>"Updated"</dt>
                    <dd>{timestamp(ct.updated_at)}</dd>
                </dl>
            </section>
        </div>
    }
}
