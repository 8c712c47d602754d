//! The page chrome of both roles: sidebar with the role's areas, a header that always shows the
//! role, the tenant context and the signed-in identity, and the page header.

use leptos::prelude::*;
use leptos_router::hooks::use_location;

use crate::{Role, UiContext, VERSION, current_principal, model::href::url_encode, model::principal::PrincipalKind};

/// The sign-in link that returns to `path` afterwards.
pub fn sign_in_href(path: &str) -> String {
    format!("/api/v1/auth/login?returnTo={}", url_encode(path))
}

/// One sidebar entry.
#[derive(Clone, Debug)]
pub struct NavItem {
    /// Where it leads.
    pub href: &'static str,
    /// What it says.
    pub label: &'static str,
}

/// Sidebar + header + main content.
#[component]
pub fn Shell(nav: Vec<NavItem>, children: Children) -> impl IntoView {
    let ui = expect_context::<UiContext>();
    let path = use_location().pathname;
    let role = ui.role;
    let context_label = match (role, &ui.cluster_tenant) {
        (Role::Silo, Some(ct)) => ct.clone(),
        _ => "Fleet".to_owned(),
    };
    let host = ui.host();
    let sign_in = ui.sign_in;
    let principal = current_principal();
    let items = nav
        .into_iter()
        .map(|item| {
            let current = move || {
                let p = path.get();
                let active = if item.href == "/" {
                    p == "/"
                } else {
                    p == item.href || p.starts_with(&format!("{}/", item.href))
                };
                active.then_some("page")
            };
            view! {
                <li>
                    <a href=item.href aria-current=current>{item.label}</a>
                </li>
            }
        })
        .collect_view();
    view! {
        <a class="skip-link" href="#content">"Skip to content"</a>
        <div class="app">
            <aside class="sidebar">
                <div class="brand">
                    <span class="logo" aria-hidden="true">"◆"</span>
                    "OpenCrane"
                </div>
                <nav aria-label="Areas">
                    <ul>{items}</ul>
                </nav>
                <p class="version">{format!("v{VERSION} · {}", role.as_str())}</p>
            </aside>
            <div class="main">
                <header class="topbar">
                    // Inside the banner, and rendered only where the menu button shows (narrow
                    // screens): on a desktop it is no invisible tab stop.
                    <label class="menu-button">
                        <input type="checkbox" id="nav-toggle" class="nav-toggle" aria-label="Show navigation" />
                        "☰ Menu"
                    </label>
                    <div class="context">
                        <span class=format!("role-badge {}", role.as_str())>
                            {match role {
                                Role::Fleet => "Fleet",
                                Role::Silo => "Silo",
                            }}
                        </span>
                        <strong>{context_label}</strong>
                        {host.map(|h| view! { <span class="muted">" · "{h}</span> })}
                    </div>
                    <div class="identity">
                        {match principal {
                            Some(p) => {
                                let sign_out = (p.kind == PrincipalKind::User).then(|| {
                                    view! {
                                        <form method="post" action="/api/v1/auth/logout" class="inline">
                                            <button type="submit" class="btn ghost">"Sign out"</button>
                                        </form>
                                    }
                                });
                                view! {
                                    <span class="who">{p.email.clone().unwrap_or(p.display_name.clone())}</span>
                                    <span class="badge idle">{p.role_label()}</span>
                                    {sign_out}
                                }
                                    .into_any()
                            }
                            None if sign_in => {
                                view! { <a class="btn primary sign-in" href=sign_in_href(&path.get_untracked())>"Sign in"</a> }.into_any()
                            }
                            None => view! { <span class="muted">"Not signed in"</span> }.into_any(),
                        }}
                    </div>
                </header>
                <main id="content" tabindex="-1">
                    {children()}
                </main>
            </div>
        </div>
    }
}

/// Title, one-line explanation and the primary action of a page.
#[component]
pub fn PageHeader(
    #[prop(into)] title: String,
    #[prop(optional, into)] description: Option<String>,
    /// The page's actions (buttons, links), shown on the right.
    #[prop(optional)]
    children: Option<Children>,
) -> impl IntoView {
    // After a form succeeded (`?saved=<form id>`), what it did, once, at the top of the page.
    let saved = leptos_router::hooks::use_query_map()
        .with_untracked(|q| q.get("saved"))
        .and_then(|form| crate::islands::silo::portal_form::confirmation(&form));
    view! {
        <div class="page-header">
            <div>
                <h1>{title}</h1>
                {description.map(|d| view! { <p class="muted">{d}</p> })}
            </div>
            {children.map(|a| view! { <div class="actions">{a()}</div> })}
        </div>
        {saved.map(|text| view! { <super::feedback::Notice tone="ok">{text}</super::feedback::Notice> })}
    }
}
