//! Creating or changing one's own billing account (display name, billing time zone); a posted
//! form without wasm too ([`crate::forms`]).

use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::error::AppError;
use crate::{
    components::form::{Field, described_by},
    error::FieldErrors,
    forms::{self, Posted, PostedFields},
    islands::enhance::{EnhanceForm, alert_id},
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
#[cfg(feature = "ssr")]
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

/// The markup behind [`BillingAccountForm`], taken over by [`EnhanceForm`] when the wasm runs.
#[component]
fn AccountForm(
    display_name: String,
    time_zone: String,
    exists: bool,
    errors: FieldErrors,
    message: Option<String>,
) -> impl IntoView {
    let error = |key: &str| Signal::stored(errors.get(key).map(str::to_owned));
    let name_describe = described_by(INPUT_ID, true, true);
    let zone_describe = described_by(ZONE_ID, true, true);
    let alert_hidden = message.is_none();
    view! {
        <form class="form narrow" id=FORM_ID method="post">
            <PostedFields form=FORM_ID posted=Posted::BillingAccount />
            <p class="error" role="alert" id=alert_id(FORM_ID) hidden=alert_hidden>{message}</p>
            <Field id=INPUT_ID label="Display name" hint="Shown to the platform's operators with your customers." error=error("displayName")>
                <input id=INPUT_ID name="displayName" type="text" value=display_name aria-describedby=name_describe />
            </Field>
            <Field id=ZONE_ID label="Billing time zone" hint="An IANA name, e.g. Europe/Berlin: your customers' usage days and months are this zone's." error=error("timeZone")>
                <input id=ZONE_ID name="timeZone" type="text" value=time_zone aria-describedby=zone_describe />
            </Field>
            <div class="form-actions">
                <button type="submit" class="btn primary">{if exists { "Save" } else { "Create billing account" }}</button>
            </div>
            <EnhanceForm form=FORM_ID.to_owned() />
        </form>
    }
}
