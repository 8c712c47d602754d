//! Form building blocks: a labelled field with hint and inline error, wired for screen readers.

use leptos::prelude::*;

/// A labelled form field. `error` is reactive; when it has a message the input's
/// `aria-describedby` should point at `{id}-error` (see [`described_by`]).
#[component]
pub fn Field(
    /// The id of the input inside.
    #[prop(into)]
    id: String,
    /// The label text.
    #[prop(into)]
    label: String,
    /// Help text under the input.
    #[prop(optional, into)]
    hint: Option<String>,
    /// Marks the field as required in the label.
    #[prop(optional)]
    required: bool,
    /// The current error message, if any.
    #[prop(into)]
    error: Signal<Option<String>>,
    children: Children,
) -> impl IntoView {
    view! {
        <div class="field" class:invalid=move || error.with(Option::is_some)>
            <label for=id.clone()>
                {label}
                {required.then(|| view! { <span class="req" aria-hidden="true">" *"</span> })}
            </label>
            {children()}
            {hint.map(|h| view! { <p class="hint" id=format!("{id}-hint")>{h}</p> })}
            <p class="error" id=format!("{id}-error") aria-live="polite">
                {move || error.get()}
            </p>
        </div>
    }
}

/// The `aria-describedby` of an input: its hint, and its error when there is one.
pub fn described_by(id: &str, has_hint: bool, has_error: bool) -> String {
    let mut ids = Vec::new();
    if has_hint {
        ids.push(format!("{id}-hint"));
    }
    if has_error {
        ids.push(format!("{id}-error"));
    }
    ids.join(" ")
}
