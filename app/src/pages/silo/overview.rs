//! Silo `/`: which customer this silo serves and what it holds.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    api::silo::silo_overview,
    components::{feedback::ErrorView, format::thousands, layout::PageHeader},
};

/// The silo overview page.
#[component]
pub fn SiloOverviewPage() -> impl IntoView {
    view! {
        <Title text="Overview" />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match silo_overview().await {
                    Ok(o) => {
                        view! {
                            <PageHeader
                                title=o.cluster_tenant.clone()
                                description="This silo's own console. Its database and planes serve this customer only."
                            />
                            <div class="cards">
                                <section class="card">
                                    <h2>"Silo"</h2>
                                    <dl class="props">
                                        <dt>"Customer"</dt>
                                        <dd class="mono">{o.cluster_tenant.clone()}</dd>
                                        <dt>"Namespace"</dt>
                                        <dd class="mono">{o.namespace.clone()}</dd>
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
