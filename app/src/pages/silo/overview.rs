//! Silo `/`: which customer this silo serves and what it holds.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    api::silo::silo_overview,
    components::{
        feedback::{ErrorView, Notice, PhaseBadge},
        format::{thousands, timestamp},
        layout::PageHeader,
    },
};

/// The silo overview page.
#[component]
pub fn SiloOverviewPage() -> impl IntoView {
    view! {
        <Title text="Overview" />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match silo_overview().await {
                    Ok(o) => {
                        view! {
                            <PageHeader
                                title=o.own.as_ref().map_or_else(|| o.cluster_tenant.clone(), |own| own.display_name.clone())
                                description="This silo's own console. Its database and planes serve this customer only."
                            />
                            {o.own.as_ref().filter(|own| own.suspended).map(|_| view! {
                                <Notice tone="warn">
                                    "This customer is suspended: its sign-ins are blocked. Ask the platform operator to resume it."
                                </Notice>
                            })}
                            <div class="cards">
                                <section class="card">
                                    <h2>"Silo"</h2>
                                    <dl class="props">
                                        <dt>"Customer"</dt>
                                        <dd class="mono">{o.cluster_tenant.clone()}</dd>
                                        <dt>"Namespace"</dt>
                                        <dd class="mono">{o.namespace.clone()}</dd>
                                        {o.own.clone().map(|own| view! {
                                            <dt>"Phase"</dt>
                                            <dd><PhaseBadge phase=own.phase /></dd>
                                            <dt>"Vanity host"</dt>
                                            <dd class="mono">{own.vanity_domain.unwrap_or_else(|| "–".into())}</dd>
                                            <dt>"Learnt"</dt>
                                            <dd class="muted">{format!(
                                                "from the {} at {}",
                                                if own.source == "resource" { "ClusterTenant resource" } else { "fleet" },
                                                timestamp(own.updated_at)
                                            )}</dd>
                                        })}
                                    </dl>
                                </section>
                                <section class="card">
                                    <h2>"Members"</h2>
                                    <p class="stat">{thousands(o.active_members)}</p>
                                    <p class="muted">{format!("active of {} projected from the fleet", thousands(o.members))}</p>
                                    <a href="/members">"View members"</a>
                                </section>
                                <section class="card">
                                    <h2>"Audit"</h2>
                                    <p class="stat">{thousands(o.audit_entries)}</p>
                                    <p class="muted">"entries recorded"</p>
                                    <a href="/audit">"View audit log"</a>
                                </section>
                            </div>
                        }
                            .into_any()
                    }
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}
