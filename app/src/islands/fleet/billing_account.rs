//! Creating or renaming one's own billing account; a posted form without wasm too
//! ([`crate::forms`]).

use leptos::{ev, prelude::*, task::spawn_local};

use crate::{
    api::fleet::save_billing_account,
    components::form::Field,
    error::AppError,
    forms::{self, Posted, PostedFields},
    model::fleet::billing::BillingAccountRequest,
};

const FORM_ID: &str = "billing-form";
const INPUT_ID: &str = "billing-name";

/// Saves the account; the page to go to next. The island and the no-wasm post both end here.
pub(crate) async fn save(display_name: String) -> Result<String, AppError> {
    let display_name = Some(display_name).filter(|v| !v.trim().is_empty());
    save_billing_account(BillingAccountRequest { display_name }).await.map(|_| "/billing?saved=account".to_owned())
}

/// The billing-account form: one optional display name.
#[component]
pub fn BillingAccountForm(display_name: String, exists: bool) -> impl IntoView {
    let (display_name, error) = match forms::echo(FORM_ID) {
        Some(echo) => (
            echo.value("displayName").unwrap_or(display_name),
            echo.errors.get("displayName").map(str::to_owned).or(echo.message),
        ),
        None => (display_name, None),
    };
    view! { <AccountForm display_name exists error /> }
}

#[island]
fn AccountForm(display_name: String, exists: bool, error: Option<String>) -> impl IntoView {
    let initial = display_name.clone();
    let value = RwSignal::new(forms::typed(INPUT_ID).unwrap_or(display_name));
    let pending = RwSignal::new(false);
    let error = RwSignal::new(error);
    let submit = move |ev: ev::SubmitEvent| {
        ev.prevent_default();
        pending.set(true);
        spawn_local(async move {
            match save(value.get_untracked()).await {
                Ok(href) => crate::islands::navigate(&href),
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
        <form class="form narrow" id=FORM_ID method="post" on:submit=submit>
            <PostedFields form=FORM_ID posted=Posted::BillingAccount />
            <Field id=INPUT_ID label="Display name" hint="Shown to the platform's operators with your customers." error=Signal::derive(move || error.get())>
                <input
                    id=INPUT_ID
                    name="displayName"
                    type="text"
                    value=initial
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
