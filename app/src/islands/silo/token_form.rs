//! Creating an access token: the secret is shown once, with a copy button; and revoking one
//! (after a confirmation step, a plain posted form).
//! The form also works without wasm ([`crate::forms`]): the post is answered with this page
//! showing the secret, never cached.

use leptos::{ev, prelude::*, task::spawn_local};

use crate::{
    api::silo::create_token,
    components::form::{ConfirmPost, Field},
    forms::{self, Posted, PostedFields},
    model::session::{CreatedAccessToken, NewAccessTokenRequest},
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

#[cfg_attr(any(feature = "ssr", feature = "silo-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "silo-islands")), component)]
fn NewToken(
    /// A token created by a post answered without wasm.
    created: Option<CreatedAccessToken>,
    name: String,
    name_error: Option<String>,
    error: Option<String>,
) -> impl IntoView {
    let initial_name = StoredValue::new(name.clone());
    let name = RwSignal::new(forms::typed("token-name").unwrap_or(name));
    let role = RwSignal::new(forms::typed("token-role").unwrap_or_else(|| "member".to_owned()));
    let days = RwSignal::new(forms::typed("token-expiry").unwrap_or_else(|| "90".to_owned()));
    let pending = RwSignal::new(false);
    let error = RwSignal::new(error);
    let name_error = RwSignal::new(name_error);
    let created = RwSignal::new(created);
    let copied = RwSignal::new(false);
    let submit = move |ev: ev::SubmitEvent| {
        ev.prevent_default();
        pending.set(true);
        let request = NewAccessTokenRequest {
            name: name.get_untracked(),
            role: role.get_untracked(),
            expires_in_days: days.get_untracked().parse().ok(),
        };
        spawn_local(async move {
            match create_token(request).await {
                Ok(token) => {
                    created.set(Some(token));
                    error.set(None);
                    name_error.set(None);
                }
                Err(err) => {
                    let fields = err.field_errors();
                    name_error.set(fields.get("name").map(str::to_owned));
                    error.set(Some(err.to_string()));
                }
            }
            pending.set(false);
        });
    };
    let copy = move |_| {
        if let Some(token) = created.get_untracked() {
            let clipboard = window().navigator().clipboard();
            let _ = clipboard.write_text(&token.plain_text_token);
            copied.set(true);
        }
    };
    view! {
        {move || match created.get() {
            Some(token) => {
                view! {
                    <section class="card secret" aria-live="polite">
                        <h2>{format!("Token “{}” created", token.token.name)}</h2>
                        <p class="notice warn">"Copy it now: you will not be able to see it again."</p>
                        <input id="new-token" type="text" readonly prop:value=token.plain_text_token.clone() class="mono" />
                        <div class="form-actions">
                            <button type="button" class="btn primary" on:click=copy>
                                {move || if copied.get() { "Copied" } else { "Copy" }}
                            </button>
                            <a class="btn ghost" href="/tokens">"Done: show all tokens"</a>
                        </div>
                    </section>
                }
                    .into_any()
            }
            None => {
                view! {
                    <form class="form narrow" id=FORM_ID method="post" novalidate on:submit=submit>
                        <PostedFields form=FORM_ID posted=Posted::Token />
                        <Field id="token-name" label="Name" required=true hint="What the token is for, e.g. “CI pipeline”." error=Signal::derive(move || name_error.get())>
                            <input id="token-name" name="name" type="text" value=initial_name.get_value() prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev)) />
                        </Field>
                        <Field id="token-role" label="Role" error=Signal::derive(|| None::<String>)>
                            <select id="token-role" name="role" on:change=move |ev| role.set(event_target_value(&ev))>
                                <option value="member" selected=true>"member"</option>
                                <option value="admin">"admin"</option>
                            </select>
                        </Field>
                        <Field id="token-expiry" label="Expires" error=Signal::derive(|| None::<String>)>
                            <select id="token-expiry" name="expiresInDays" on:change=move |ev| days.set(event_target_value(&ev))>
                                <option value="7">"in 7 days"</option>
                                <option value="30">"in 30 days"</option>
                                <option value="90" selected=true>"in 90 days"</option>
                                <option value="365">"in a year"</option>
                                <option value="never">"never"</option>
                            </select>
                        </Field>
                        {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                        <div class="form-actions">
                            <button type="submit" class="btn primary" disabled=move || pending.get()>"Create token"</button>
                        </div>
                    </form>
                }
                    .into_any()
            }
        }}
    }
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
