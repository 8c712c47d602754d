//! `SiloApp`: the clustertenant-manager's root component and its routes.

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
        shared::{NotFound, audit::AuditLogPage, sessions::SessionsPage},
        silo::{members::MembersPage, overview::SiloOverviewPage, tokens::TokensPage},
    },
};

/// One customer's console. Users, groups, policies, budgets and models arrive with the silo
/// portal; today it shows the silo, its members, the audit log, sessions and access tokens.
#[component]
pub fn SiloApp(ui: UiContext) -> impl IntoView {
    provide_meta_context();
    let tenant = ui.cluster_tenant.clone().unwrap_or_default();
    let principal = current_principal();
    let admin = can(principal.as_ref(), Action::AdministerSilo(&tenant));
    let mut nav = vec![NavItem { href: "/", label: "Overview" }];
    if admin {
        nav.push(NavItem { href: "/members", label: "Members" });
        nav.push(NavItem { href: "/audit", label: "Audit" });
    }
    if can(principal.as_ref(), Action::ManageOwnSessions) {
        nav.push(NavItem { href: "/sessions", label: "Sessions" });
    }
    if admin {
        nav.push(NavItem { href: "/tokens", label: "Access tokens" });
    }
    provide_context(ui);
    view! {
        <Title formatter=move |title: String| format!("{title} · {tenant} · OpenCrane") />
        <Router>
            <Shell nav>
                <Routes fallback=NotFound>
                    <Route path=path!("/") view=SiloOverviewPage ssr=SsrMode::Async />
                    <Route path=path!("/members") view=MembersPage ssr=SsrMode::Async />
                    <Route path=path!("/audit") view=|| view! { <AuditLogPage role=Role::Silo /> } ssr=SsrMode::Async />
                    <Route path=path!("/sessions") view=|| view! { <SessionsPage role=Role::Silo /> } ssr=SsrMode::Async />
                    <Route path=path!("/tokens") view=TokensPage ssr=SsrMode::Async />
                </Routes>
            </Shell>
        </Router>
    }
}
