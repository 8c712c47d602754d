//! `SiloApp`: the clustertenant-manager's root component and its routes.

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
        shared::NotFound,
        silo::{audit::AuditPage, members::MembersPage, overview::SiloOverviewPage},
    },
};

/// One customer's console. Users, groups, policies, budgets and models arrive with the silo
/// portal; today it shows the silo, its members and its audit log.
#[component]
pub fn SiloApp(ui: UiContext) -> impl IntoView {
    provide_meta_context();
    let nav = vec![
        NavItem { href: "/", label: "Overview" },
        NavItem { href: "/members", label: "Members" },
        NavItem { href: "/audit", label: "Audit" },
    ];
    let tenant = ui.cluster_tenant.clone().unwrap_or_default();
    provide_context(ui);
    view! {
        <Title formatter=move |title: String| format!("{title} · {tenant} · OpenCrane") />
        <Router>
            <Shell nav>
                <Routes fallback=NotFound>
                    <Route path=path!("/") view=SiloOverviewPage ssr=SsrMode::Async />
                    <Route path=path!("/members") view=MembersPage ssr=SsrMode::Async />
                    <Route path=path!("/audit") view=AuditPage ssr=SsrMode::Async />
                </Routes>
            </Shell>
        </Router>
    }
}
