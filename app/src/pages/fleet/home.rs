//! `/`: the customers list when that area is mounted, otherwise a short overview.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{UiContext, components::layout::PageHeader};

/// The fleet start page.
#[component]
pub fn FleetHome() -> impl IntoView {
    let ui = expect_context::<UiContext>();
    if ui.cluster_tenants_enabled {
        #[cfg(feature = "ssr")]
        leptos_axum::redirect("/cluster-tenants");
        return view! { <p><a href="/cluster-tenants">"Customers"</a></p> }.into_any();
    }
    view! {
        <Title text="Overview" />
        <PageHeader title="Fleet" description="The ClusterTenant area is disabled on this fleet-manager (OPENCRANE_CLUSTER_TENANT_MANAGER_ENABLED=false)." />
        {ui.billing_enabled.then(|| view! { <p><a href="/billing">"Billing account"</a></p> })}
    }
    .into_any()
}
