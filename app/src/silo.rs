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
        silo::{
            access::AccessPage,
            budgets::BudgetsPage,
            groups::GroupsPage,
            members::MembersPage,
            models::ModelsPage,
            overview::SiloOverviewPage,
            policies::PoliciesPage,
            tokens::TokensPage,
            users::{UserPage, UsersPage},
        },
    },
};

/// One customer's console: the silo overview, the portal (users, groups, policies, effective
/// access, budgets, models), members, the audit log, sessions and access tokens, under one
/// navigation.
#[component]
pub fn SiloApp(ui: UiContext) -> impl IntoView {
    provide_meta_context();
    let tenant = ui.cluster_tenant.clone().unwrap_or_default();
    let principal = current_principal();
    let admin = can(principal.as_ref(), Action::AdministerSilo(&tenant));
    let mut nav = vec![NavItem { href: "/", label: "Overview" }];
    if admin {
        nav.extend([
            NavItem { href: "/users", label: "Users" },
            NavItem { href: "/groups", label: "Groups" },
            NavItem { href: "/policies", label: "Policies" },
            NavItem { href: "/access", label: "Access" },
            NavItem { href: "/budgets", label: "Budgets" },
            NavItem { href: "/models", label: "Models" },
            NavItem { href: "/members", label: "Members" },
            NavItem { href: "/audit", label: "Audit" },
        ]);
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
                    <Route path=path!("/users") view=UsersPage ssr=SsrMode::Async />
                    <Route path=path!("/users/:name") view=UserPage ssr=SsrMode::Async />
                    <Route path=path!("/groups") view=GroupsPage ssr=SsrMode::Async />
                    <Route path=path!("/policies") view=PoliciesPage ssr=SsrMode::Async />
                    <Route path=path!("/access") view=AccessPage ssr=SsrMode::Async />
                    <Route path=path!("/budgets") view=BudgetsPage ssr=SsrMode::Async />
                    <Route path=path!("/models") view=ModelsPage ssr=SsrMode::Async />
                    <Route path=path!("/members") view=MembersPage ssr=SsrMode::Async />
                    <Route path=path!("/audit") view=|| view! { <AuditLogPage role=Role::Silo /> } ssr=SsrMode::Async />
                    <Route path=path!("/sessions") view=|| view! { <SessionsPage role=Role::Silo /> } ssr=SsrMode::Async />
                    <Route path=path!("/tokens") view=TokensPage ssr=SsrMode::Async />
                </Routes>
            </Shell>
        </Router>
    }
}
