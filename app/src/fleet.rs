//! `FleetApp`: the fleet-manager's root component and its routes.

use leptos::prelude::*;
use leptos_meta::{Title, provide_meta_context};
use leptos_router::{
    SsrMode,
    components::{Route, Router, Routes},
    path,
};

use crate::{
    Role, UiContext,
    authz::{Action, can},
    components::layout::{NavItem, Shell},
    current_principal,
    pages::{
        fleet::{
            billing::BillingPage,
            cluster_tenants::{
                ClusterTenantDetail, ClusterTenantList, ClusterTenantMembers, EditClusterTenant, NewClusterTenant,
            },
            customer_billing::CustomerBillingPage,
            dns::DnsPage,
            home::FleetHome,
            identity::IdentityPage,
            migrations::MigrationsPage,
        },
        shared::{NotFound, audit::AuditLogPage, sessions::SessionsPage},
    },
};

/// The fleet console: customers (ClusterTenants) and billing.
#[component]
pub fn FleetApp(ui: UiContext) -> impl IntoView {
    provide_meta_context();
    let principal = current_principal();
    let signed_in = principal.is_some();
    let mut nav = Vec::new();
    if ui.cluster_tenants_enabled && signed_in {
        nav.push(NavItem { href: "/cluster-tenants", label: "Customers" });
    }
    if ui.billing_enabled && principal.as_ref().is_some_and(|p| p.is_person()) {
        nav.push(NavItem { href: "/billing", label: "Billing" });
    }
    if principal.as_ref().is_some_and(|p| p.is_platform_operator) {
        nav.push(NavItem { href: "/dns", label: "DNS" });
        nav.push(NavItem { href: "/identity", label: "Identity" });
        if ui.shared_migration {
            nav.push(NavItem { href: "/migrations", label: "Migration" });
        }
    }
    if can(principal.as_ref(), Action::ReadFleetAudit) {
        nav.push(NavItem { href: "/audit", label: "Audit" });
    }
    if can(principal.as_ref(), Action::ManageOwnSessions) {
        nav.push(NavItem { href: "/sessions", label: "Sessions" });
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
                    <Route path=path!("/cluster-tenants/:name/members") view=ClusterTenantMembers ssr=SsrMode::Async />
                    <Route path=path!("/billing") view=BillingPage ssr=SsrMode::Async />
                    <Route path=path!("/billing/:name") view=CustomerBillingPage ssr=SsrMode::Async />
                    <Route path=path!("/dns") view=DnsPage ssr=SsrMode::Async />
                    <Route path=path!("/identity") view=IdentityPage ssr=SsrMode::Async />
                    <Route path=path!("/migrations") view=MigrationsPage ssr=SsrMode::Async />
                    <Route path=path!("/audit") view=|| view! { <AuditLogPage role=Role::Fleet /> } ssr=SsrMode::Async />
                    <Route path=path!("/sessions") view=|| view! { <SessionsPage role=Role::Fleet /> } ssr=SsrMode::Async />
                </Routes>
            </Shell>
        </Router>
    }
}
