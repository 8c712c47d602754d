//! Ending sessions from the Sessions page.

use leptos::prelude::*;

use crate::{
    components::form::PostButton,
    forms::{Posted, dom_id},
    model::session::RevokeSessions,
};

/// A button that ends the sessions `what` names: a plain posted form (with or without the wasm);
/// the page it answers lists what is left, or says beside it why not.
#[component]
pub fn RevokeButton(
    what: RevokeSessions,
    label: String,
    #[prop(optional, into)] aria: Option<String>,
) -> impl IntoView {
    let form = match &what {
        RevokeSessions::One { handle } => format!("revoke-session-{}", dom_id(handle)),
        RevokeSessions::MyOthers => "revoke-my-other-sessions".to_owned(),
        RevokeSessions::AllOf { subject } => format!("revoke-sessions-of-{}", dom_id(subject)),
    };
    let aria = aria.unwrap_or_else(|| label.clone());
    view! { <PostButton form posted=Posted::RevokeSessions { what } label aria class="btn" /> }
}
