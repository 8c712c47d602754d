//! `FleetApp`: the fleet-manager's root component and its routes.

use leptos::prelude::*;
use leptos_meta::{Title, provide_meta_context};
use leptos_router::{
    SsrMode,
    components::{Route, Router, Routes},
    path,
};

use crate::{
    UiContext,
    components::layout::{NavItem, Shell},
    pages::{
        fleet::{
            billing::BillingPage,
            cluster_tenants::{ClusterTenantDetail, ClusterTenantList, EditClusterTenant, NewClusterTenant},
            home::FleetHome,
        },
        shared::NotFound,
    },
};

/// The fleet console: customers (ClusterTenants) and billing.
#[component]
pub fn FleetApp(ui: UiContext) -> impl IntoView {
    provide_meta_context();
    let mut nav = Vec::new();
    if ui.cluster_tenants_enabled {
        nav.push(NavItem { href: "/cluster-tenants", label: "Customers" });
    }
    if ui.billing_enabled {
        nav.push(NavItem { href: "/billing", label: "Billing" });
    }
    provide_context(ui);
    view! {
        <Title formatter=|title: String| format!("{title} · OpenCrane Fleet") />
        <Router>
            <Shell nav>
                <Routes fallback=NotFound>
                    <Route path=path!("/") view=FleetHome ssr=SsrMode::Async />
                    <Route path=path!("/cluster-tenants") view=ClusterTenantList ssr=SsrMode::Async />
                    <Route path=path!("/cluster-tenants/new") view=NewClusterTenant ssr=SsrMode::Async />
                    <Route path=path!("/cluster-tenants/:name") view=ClusterTenantDetail ssr=SsrMode::Async />
                    <Route path=path!("/cluster-tenants/:name/edit") view=EditClusterTenant ssr=SsrMode::Async />
                    <Route path=path!("/billing") view=BillingPage ssr=SsrMode::Async />
                </Routes>
            </Shell>
        </Router>
    }
}
