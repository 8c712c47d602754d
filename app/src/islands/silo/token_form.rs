//! Creating an access token: the secret is shown once, with a copy button; and revoking one.

use leptos::{ev, prelude::*, task::spawn_local};

use crate::{
    api::silo::{create_token, revoke_token},
    components::form::Field,
    model::session::{CreatedAccessToken, NewAccessTokenRequest},
};

/// The "new token" form.
#[island]
pub fn TokenForm() -> impl IntoView {
    let name = RwSignal::new(String::new());
    let role = RwSignal::new("member".to_owned());
    let days = RwSignal::new("90".to_owned());
    let pending = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let name_error = RwSignal::new(None::<String>);
    let created = RwSignal::new(None::<CreatedAccessToken>);
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
                            <a class="btn ghost" href="/tokens">"Done"</a>
                        </div>
                    </section>
                }
                    .into_any()
            }
            None => {
                view! {
                    <form class="form narrow" on:submit=submit>
                        <Field id="token-name" label="Name" required=true hint="What the token is for, e.g. “CI pipeline”." error=Signal::derive(move || name_error.get())>
                            <input id="token-name" type="text" prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev)) />
                        </Field>
                        <Field id="token-role" label="Role" error=Signal::derive(|| None::<String>)>
                            <select id="token-role" on:change=move |ev| role.set(event_target_value(&ev))>
                                <option value="member" selected=true>"member"</option>
                                <option value="admin">"admin"</option>
                            </select>
                        </Field>
                        <Field id="token-expiry" label="Expires" error=Signal::derive(|| None::<String>)>
                            <select id="token-expiry" on:change=move |ev| days.set(event_target_value(&ev))>
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

/// Revokes one token, then reloads the page.
#[island]
pub fn RevokeTokenButton(id: String, name: String) -> impl IntoView {
    let pending = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let id = StoredValue::new(id);
    let click = move |_| {
        pending.set(true);
        let id = id.get_value();
        spawn_local(async move {
            match revoke_token(id).await {
                Ok(_) => crate::islands::navigate("/tokens"),
                Err(err) => {
                    error.set(Some(err.to_string()));
                    pending.set(false);
                }
            }
        });
    };
    view! {
        <button type="button" class="btn danger" on:click=click disabled=move || pending.get() aria-label=format!("Revoke {name}")>
            "Revoke"
        </button>
        {move || error.get().map(|e| view! { <span class="error" role="alert">{e}</span> })}
    }
}
