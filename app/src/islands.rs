//! The interactive parts, hydrated in the browser as WASM islands. Everything else on a page is
//! plain server-rendered HTML.
//!
//! Islands get their data as serialisable props, validate with the same functions the server
//! uses (`crate::model`), and talk to the server only through server functions. By role: [`fleet`]
//! (the customer form, delete dialog, checklist, billing form) and [`silo`] (the described portal
//! form, the portal tools, the token form); [`session_actions`] serves both.

pub mod fleet;
pub mod session_actions;
pub mod silo;

/// Sends the browser to `href` (a full navigation: the next page is server-rendered).
pub(crate) fn navigate(href: &str) {
    if let Err(err) = leptos::prelude::window().location().set_href(href) {
        leptos::logging::error!("navigation to {href} failed: {err:?}");
    }
}
