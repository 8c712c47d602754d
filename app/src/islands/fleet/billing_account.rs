//! Creating or renaming one's own billing account.

use leptos::{ev, prelude::*, task::spawn_local};

use crate::{api::fleet::save_billing_account, components::form::Field, model::fleet::billing::BillingAccountRequest};

/// The billing-account form: one optional display name.
#[island]
pub fn BillingAccountForm(display_name: String, exists: bool) -> impl IntoView {
    let value = RwSignal::new(display_name);
    let pending = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let submit = move |ev: ev::SubmitEvent| {
        ev.prevent_default();
        pending.set(true);
        let display_name = Some(value.get_untracked()).filter(|v| !v.trim().is_empty());
        spawn_local(async move {
            match save_billing_account(BillingAccountRequest { display_name }).await {
                Ok(_) => crate::islands::navigate("/billing?saved=1"),
                Err(err) => {
                    error.set(Some(
                        err.field_errors().get("displayName").map(str::to_owned).unwrap_or_else(|| err.to_string()),
                    ));
                    pending.set(false);
                }
            }
        });
    };
    view! {
        <form class="form narrow" on:submit=submit>
            <Field id="billing-name" label="Display name" hint="Shown to the platform's operators with your customers." error=Signal::derive(move || error.get())>
                <input
                    id="billing-name"
                    type="text"
                    prop:value=move || value.get()
                    on:input=move |ev| {
                        value.set(event_target_value(&ev));
                        error.set(None);
                    }
                />
            </Field>
            <div class="form-actions">
                <button type="submit" class="btn primary" disabled=move || pending.get()>
                    {if exists { "Save" } else { "Create billing account" }}
                </button>
            </div>
        </form>
    }
}
