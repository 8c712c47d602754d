//! The interactive parts, hydrated in the browser as WASM islands, and the forms they take over.
//! Everything else on a page is plain server-rendered HTML.
//!
//! A form is server-rendered markup that works without the wasm; with it, [`enhance`]'s island
//! takes the form over where it stands instead of drawing it again (an island's view code is
//! what a role's bundle weighs). Only what must redraw itself is a view island: the fleet's
//! delete dialog and provisioning checklist. Islands get their data as serialisable props,
//! validate with the same functions the server uses (`crate::model`), and talk to the server only
//! through server functions: a form is sent as the browser would post it, through the one
//! function of the form layer ([`post_form`]). By role: [`fleet`] (the customer form and its
//! checks, delete dialog, checklist, members and billing forms) and [`silo`] (the described
//! portal form and row actions, the portal tools, the token form); [`session_actions`] serves
//! both.

pub mod enhance;
pub mod fleet;
pub mod session_actions;
pub mod silo;

/// Sends the form with DOM id `form` in the background, as the browser would post it without
/// the wasm (every named control, URL-encoded, the hidden `_target` and `_form` included), to the
/// form layer ([`crate::api::forms::post_form`]): where to go next, or the error for its fields.
#[cfg(feature = "hydrate")]
pub(crate) fn post_form(form: &str) -> impl Future<Output = Result<String, crate::error::AppError>> + 'static {
    crate::api::forms::post_form(form_fields(form))
}

/// The fields of the form with DOM id `form`, URL-encoded as the browser would post them.
#[cfg(feature = "hydrate")]
pub(crate) fn form_fields(form: &str) -> String {
    use leptos::{wasm_bindgen::JsCast, web_sys};
    let form = leptos::prelude::document().get_element_by_id(form);
    let data = form.and_then(|f| web_sys::FormData::new_with_form(f.unchecked_ref()).ok());
    let params = data.and_then(|d| web_sys::UrlSearchParams::new_with_str_sequence_sequence(&d).ok());
    params.map(|p| String::from(p.to_string())).unwrap_or_default()
}

/// Sends the browser to `href` (a full navigation: the next page is server-rendered).
#[cfg(feature = "hydrate")]
pub(crate) fn navigate(href: &str) {
    if let Err(err) = leptos::prelude::window().location().set_href(href) {
        leptos::logging::error!("navigation to {href} failed: {err:?}");
    }
}
