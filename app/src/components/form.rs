//! Form building blocks: a labelled field with hint and inline error, wired for screen readers,
//! and the posted one-button and confirm-first actions (see [`crate::forms`]).

use leptos::prelude::*;

use crate::forms::{self, Posted, PostedFields};

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

/// A one-button posted form: it works with or without the wasm, and the page it answers shows
/// the result, or the server's refusal beside the button ([`crate::forms::refusal`]).
#[component]
pub fn PostButton(
    /// The form's DOM id (where a refusal comes back).
    #[prop(into)]
    form: String,
    /// What it does.
    posted: Posted,
    /// The button text.
    #[prop(into)]
    label: String,
    /// The accessible name when the label alone does not say which row ("Suspend ana").
    #[prop(optional, into)]
    aria: Option<String>,
    /// A tooltip saying what happens.
    #[prop(optional, into)]
    title: Option<String>,
    /// The button's classes.
    #[prop(default = "btn small")]
    class: &'static str,
    /// More fields posted with it (name, value).
    #[prop(optional)]
    fields: Vec<(&'static str, String)>,
) -> impl IntoView {
    let refused = forms::refusal(&form);
    let id = form.clone();
    let fields =
        fields.into_iter().map(|(name, value)| view! { <input type="hidden" name=name value=value /> }).collect_view();
    view! {
        <form method="post" class="inline-form" id=id>
            <PostedFields form posted />
            {fields}
            <button type="submit" class=class aria-label=aria title=title>{label}</button>
        </form>
        {refused.map(|e| view! { <span class="error" role="alert">{e}</span> })}
    }
}

/// A destructive posted action behind a confirmation step: the button opens a disclosure that
/// says what happens, and its *Yes, …* button posts (with or without the wasm). A refusal comes
/// back with the disclosure open and the server's sentence beside it.
#[component]
pub fn ConfirmPost(
    /// The form's DOM id (where a refusal comes back).
    #[prop(into)]
    form: String,
    /// What it does.
    posted: Posted,
    /// The button text ("Remove").
    #[prop(into)]
    label: String,
    /// The accessible name, saying which row ("Remove ana").
    #[prop(into)]
    aria: String,
    /// What happens, as a question ("Remove ana? They lose access…").
    #[prop(into)]
    question: String,
) -> impl IntoView {
    let refused = forms::refusal(&form);
    let open = refused.is_some();
    let id = form.clone();
    let confirm = format!("Yes, {}", label.to_lowercase());
    view! {
        <span class="row-action">
            <details class="confirm-details" open=open>
                <summary class="btn danger small" aria-label=aria>{label}</summary>
                <form method="post" class="confirm" id=id>
                    <PostedFields form posted />
                    <span>{question}</span>
                    <button type="submit" class="btn danger small confirm-go">{confirm}</button>
                </form>
            </details>
            {refused.map(|e| view! { <span class="error" role="alert">{e}</span> })}
        </span>
    }
}

/// One labelled text input of a posted form, with what to show in it (what was typed, after a
/// refused post) and its message.
pub struct TextInput {
    /// The input's DOM id.
    pub id: &'static str,
    /// The posted field's name.
    pub key: &'static str,
    /// The label.
    pub label: &'static str,
    /// The help under it.
    pub hint: &'static str,
    /// What it holds.
    pub value: String,
    /// Its message.
    pub error: Option<String>,
    /// The input's `type`.
    pub kind: &'static str,
    /// Marked as required.
    pub required: bool,
}

impl TextInput {
    /// The field.
    pub fn view(self) -> impl IntoView {
        let describe = described_by(self.id, true, self.error.is_some());
        let error = self.error;
        view! {
            <Field id=self.id label=self.label hint=self.hint required=self.required error=Signal::derive(move || error.clone())>
                <input id=self.id name=self.key type=self.kind value=self.value aria-describedby=describe autocomplete="off" />
            </Field>
        }
    }
}
