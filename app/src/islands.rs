//! The interactive parts, hydrated in the browser as WASM islands. Everything else on a page is
//! plain server-rendered HTML.
//!
//! Islands get their data as serialisable props, validate with the same functions the server
//! uses (`crate::model`), and talk to the server only through server functions.

pub mod billing_account;
pub mod cluster_tenant_editor;
pub mod delete_cluster_tenant;
pub mod portal_form;
pub mod portal_tools;
pub mod provisioning;
pub mod session_actions;
pub mod token_form;

/// Sends the browser to `href` (a full navigation: the next page is server-rendered).
pub(crate) fn navigate(href: &str) {
    if let Err(err) = leptos::prelude::window().location().set_href(href) {
        leptos::logging::error!("navigation to {href} failed: {err:?}");
    }
}
