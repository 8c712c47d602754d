//! Creating an access token: the secret is shown once, with a copy button; and revoking one
//! (after a confirmation step). Both are plain posted forms ([`crate::forms`]): the creation's
//! post is answered with this page showing the secret, never cached.

use leptos::prelude::*;

use crate::{
    components::form::{ConfirmPost, Field},
    forms::{self, Posted, PostedFields},
    islands::enhance::CopyButton,
    model::session::CreatedAccessToken,
};

const FORM_ID: &str = "token-form";

/// The "new token" form; when this page answers its own post, the new secret (or the refusal).
#[component]
pub fn TokenForm() -> impl IntoView {
    let (created, name, name_error, error) = match forms::echo(FORM_ID) {
        Some(echo) => (
            echo.created_token.clone(),
            echo.value("name").unwrap_or_default(),
            echo.errors.get("name").map(str::to_owned),
            echo.message.filter(|_| echo.created_token.is_none()),
        ),
        None => (None, String::new(), None, None),
    };
    view! { <NewToken created name name_error error /> }
}

/// The markup behind [`TokenForm`]: a plain posted form (the form layer refuses it in the
/// background, so only the page that answers the post shows the secret, never cached), or that
/// secret with a Copy button ([`CopyButton`], shown by the wasm: the clipboard needs it).
#[component]
fn NewToken(
    /// A token created by the post this page answers.
    created: Option<CreatedAccessToken>,
    name: String,
    name_error: Option<String>,
    error: Option<String>,
) -> impl IntoView {
    if let Some(token) = created {
        return view! {
            <section class="card secret" aria-live="polite">
                <h2>{format!("Token “{}” created", token.token.name)}</h2>
                <p class="notice warn">"Copy it now: you will not be able to see it again."</p>
                <input id="new-token" type="text" readonly value=token.plain_text_token class="mono" />
                <div class="form-actions">
                    <button type="button" class="btn primary" id="new-token-copy" hidden>"Copy"</button>
                    <CopyButton input="new-token".to_owned() />
                    <a class="btn ghost" href="/tokens">"Done: show all tokens"</a>
                </div>
            </section>
        }
        .into_any();
    }
    view! {
        <form class="form narrow" id=FORM_ID method="post" novalidate>
            <PostedFields form=FORM_ID posted=Posted::Token />
            <Field id="token-name" label="Name" required=true hint="What the token is for, e.g. “CI pipeline”." error=Signal::stored(name_error)>
                <input id="token-name" name="name" type="text" value=name />
            </Field>
            <Field id="token-role" label="Role" error=Signal::stored(None::<String>)>
                <select id="token-role" name="role">
                    <option value="member" selected=true>"member"</option>
                    <option value="admin">"admin"</option>
                </select>
            </Field>
            <Field id="token-expiry" label="Expires" error=Signal::stored(None::<String>)>
                <select id="token-expiry" name="expiresInDays">
                    <option value="7">"in 7 days"</option>
                    <option value="30">"in 30 days"</option>
                    <option value="90" selected=true>"in 90 days"</option>
                    <option value="365">"in a year"</option>
                    <option value="never">"never"</option>
                </select>
            </Field>
            {error.map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <div class="form-actions">
                <button type="submit" class="btn primary">"Create token"</button>
            </div>
        </form>
    }
    .into_any()
}

/// Revokes one token after a confirmation step: a plain posted form (with or without the wasm).
#[component]
pub fn RevokeTokenButton(id: String, name: String) -> impl IntoView {
    let form = format!("revoke-token-{}", forms::dom_id(&id));
    view! {
        <ConfirmPost form posted=Posted::RevokeToken { id } label="Revoke" aria=format!("Revoke {name}")
            question=format!("Revoke “{name}”? Whatever uses it is refused from then on.") />
    }
}
