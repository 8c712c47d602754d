//! Creating or changing one's own billing account (display name, billing time zone); a posted
//! form without wasm too ([`crate::forms`]).

use leptos::{ev, prelude::*, task::spawn_local};

#[cfg(feature = "ssr")]
use crate::error::AppError;
use crate::{
    components::form::{Field, described_by},
    error::FieldErrors,
    forms::{self, Posted, PostedFields},
};

const FORM_ID: &str = "billing-form";
const INPUT_ID: &str = "billing-name";
const ZONE_ID: &str = "billing-time-zone";

/// Saves the account; the page to go to next. The form layer's, for the island's post and the
/// no-wasm post alike.
#[cfg(feature = "ssr")]
pub(crate) async fn save(display_name: String, time_zone: String) -> Result<String, AppError> {
    let display_name = Some(display_name).filter(|v| !v.trim().is_empty());
    let time_zone = Some(time_zone).filter(|v| !v.trim().is_empty());
    crate::api::fleet::save_billing_account(crate::model::fleet::billing::BillingAccountRequest {
        display_name,
        time_zone,
    })
    .await
    .map(|_| "/billing?saved=account".to_owned())
}

/// Whether `key` is one of the form's own fields (a message for another goes above it).
pub(crate) fn shows(key: &str) -> bool {
    matches!(key, "displayName" | "timeZone")
}

/// The billing-account form: an optional display name and the billing time zone.
#[component]
pub fn BillingAccountForm(display_name: String, time_zone: String, exists: bool) -> impl IntoView {
    let (display_name, time_zone, errors, message) = match forms::echo(FORM_ID) {
        Some(echo) => (
            echo.value("displayName").unwrap_or(display_name),
            echo.value("timeZone").unwrap_or(time_zone),
            echo.errors.clone(),
            echo.message.clone(),
        ),
        None => (display_name, time_zone, FieldErrors::new(), None),
    };
    view! { <AccountForm display_name time_zone exists errors message /> }
}

#[cfg_attr(any(feature = "ssr", feature = "fleet-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "fleet-islands")), component)]
fn AccountForm(
    display_name: String,
    time_zone: String,
    exists: bool,
    errors: FieldErrors,
    message: Option<String>,
) -> impl IntoView {
    let (initial_name, initial_zone) = (display_name.clone(), time_zone.clone());
    let name = RwSignal::new(forms::typed(INPUT_ID).unwrap_or(display_name));
    let zone = RwSignal::new(forms::typed(ZONE_ID).unwrap_or(time_zone));
    let pending = RwSignal::new(false);
    let errors = RwSignal::new(errors);
    let message = RwSignal::new(message);
    let error = move |key: &'static str| Signal::derive(move || errors.with(|e| e.get(key).map(str::to_owned)));
    let submit = move |ev: ev::SubmitEvent| {
        ev.prevent_default();
        pending.set(true);
        let sent = crate::islands::post_form(FORM_ID);
        spawn_local(async move {
            match sent.await {
                Ok(href) => crate::islands::navigate(&href),
                Err(err) => {
                    let fields = err.field_errors();
                    message.set(fields.0.keys().all(|k| !shows(k)).then(|| err.to_string()));
                    errors.set(fields);
                    pending.set(false);
                }
            }
        });
    };
    let name_describe = described_by(INPUT_ID, true, true);
    let zone_describe = described_by(ZONE_ID, true, true);
    view! {
        <form class="form narrow" id=FORM_ID method="post" on:submit=submit>
            <PostedFields form=FORM_ID posted=Posted::BillingAccount />
            {move || message.get().map(|m| view! { <p class="error" role="alert">{m}</p> })}
            <Field id=INPUT_ID label="Display name" hint="Shown to the platform's operators with your customers." error=error("displayName")>
                <input
                    id=INPUT_ID
                    name="displayName"
                    type="text"
                    value=initial_name
                    aria-describedby=name_describe
                    prop:value=move || name.get()
                    on:input=move |ev| {
                        name.set(event_target_value(&ev));
                        errors.update(|e| {
                            e.0.remove("displayName");
                        });
                    }
                />
            </Field>
            <Field id=ZONE_ID label="Billing time zone" hint="An IANA name, e.g. Europe/Berlin: your customers' usage days and months are this zone's." error=error("timeZone")>
                <input
                    id=ZONE_ID
                    name="timeZone"
                    type="text"
                    value=initial_zone
                    aria-describedby=zone_describe
                    prop:value=move || zone.get()
                    on:input=move |ev| {
                        zone.set(event_target_value(&ev));
                        errors.update(|e| {
                            e.0.remove("timeZone");
                        });
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
