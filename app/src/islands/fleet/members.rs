//! A customer's members on the fleet: the add-or-change form (a posted form without wasm too, see
//! [`crate::forms`]) and each member's row actions (suspend, reactivate, remove after a
//! confirmation step; plain posted forms). The seat cap and the last-owner rule are the server's; their refusals are shown
//! in words where the action was taken.

use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::error::AppError;
use crate::{
    components::form::{ConfirmPost, Field, PostButton},
    error::FieldErrors,
    forms::{self, Posted, PostedFields},
    islands::enhance::{EnhanceForm, alert_id},
    model::href::url_encode,
};

const FORM_ID: &str = "member-form";
const SUBJECT_ID: &str = "member-subject";
const EMAIL_ID: &str = "member-email";
const ROLE_ID: &str = "member-role";
const ROLES: [(&str, &str); 3] = [("member", "Member"), ("admin", "Admin"), ("owner", "Owner")];

/// The members page of `cluster_tenant`, with `saved` saying what a form did.
#[cfg(feature = "ssr")]
pub(crate) fn members_page(cluster_tenant: &str, saved: &str) -> String {
    format!("/cluster-tenants/{}/members?saved={saved}", url_encode(cluster_tenant))
}

/// Adds `subject` with `role` or changes their role — or, with an e-mail address and no subject,
/// invites that person; the page to go to next. The form layer's, for the island's post and the
/// no-wasm post alike.
#[cfg(feature = "ssr")]
pub(crate) async fn save(
    cluster_tenant: String,
    subject: String,
    email: String,
    role: String,
) -> Result<String, AppError> {
    let email = Some(email).filter(|e| !e.trim().is_empty());
    use crate::api::fleet::{add_member, invite_member};
    let request = crate::model::fleet::members::MemberRequest { subject, email, role: Some(role) };
    if request.subject.trim().is_empty() && request.email.is_some() {
        let change = invite_member(cluster_tenant.clone(), request).await?;
        return Ok(members_page(&cluster_tenant, if change.created { "invited" } else { "invitation-changed" }));
    }
    let change = add_member(cluster_tenant.clone(), request).await?;
    Ok(members_page(&cluster_tenant, if change.created { "member-added" } else { "member-changed" }))
}

/// Withdraws the invitation of `email`; the page to go to next (a plain post, answered by the
/// server's form layer with or without wasm).
#[cfg(feature = "ssr")]
pub(crate) async fn withdraw(cluster_tenant: String, email: String) -> Result<String, AppError> {
    crate::api::fleet::cancel_invitation(cluster_tenant.clone(), email).await?;
    Ok(members_page(&cluster_tenant, "invitation-cancelled"))
}

/// The form id of the "Invite owner" form.
const OWNER_FORM_ID: &str = "invite-owner-form";

/// "Invite owner", for a customer without an active owner (one created by a machine caller): a
/// plain posted form (works with or without wasm), the role fixed to Owner.
#[component]
pub fn InviteOwner(cluster_tenant: String) -> impl IntoView {
    let echo = forms::echo(OWNER_FORM_ID);
    let email = echo.as_ref().and_then(|e| e.value("email")).unwrap_or_default();
    let error = echo.as_ref().and_then(|e| e.errors.get("email").map(str::to_owned));
    let message = echo.and_then(|e| e.message);
    let posted = Posted::Member { cluster_tenant };
    view! {
        <form class="form inline" id=OWNER_FORM_ID method="post" novalidate>
            <PostedFields form=OWNER_FORM_ID posted=posted />
            <input type="hidden" name="role" value="owner" />
            {message.map(|m| view! { <p class="error" role="alert">{m}</p> })}
            <Field id="owner-email" label="Owner's e-mail" error=Signal::derive(move || error.clone())>
                <input id="owner-email" name="email" type="email" autocomplete="off" value=email />
            </Field>
            <div class="form-actions">
                <button type="submit" class="btn primary">"Invite owner"</button>
            </div>
        </form>
    }
}

/// "Withdraw" for one pending invitation: a plain posted form (works with or without wasm).
#[component]
pub fn WithdrawInvitation(cluster_tenant: String, email: String) -> impl IntoView {
    let form = format!("withdraw-{}", url_encode(&email));
    let posted = Posted::CancelInvitation { cluster_tenant };
    let aria = format!("Withdraw the invitation of {email}");
    view! { <PostButton form posted label="Withdraw" aria fields=vec![("email", email)] /> }
}

/// What the members page says after `saved`.
pub fn confirmation(saved: &str) -> Option<&'static str> {
    match saved {
        "member-added" => Some("Member added; they take a seat."),
        "member-changed" => Some("Role changed."),
        "invited" => Some(
            "Invitation saved. It takes a seat when that person first signs in through the organisation with this address verified.",
        ),
        "invitation-changed" => Some("The invitation's role changed."),
        "invitation-cancelled" => Some("Invitation withdrawn."),
        "member-suspended" => Some("Member suspended; their seat is free."),
        "member-reactivated" => Some("Member reactivated; they take a seat again."),
        "member-removed" => Some("Member removed; their seat is free."),
        _ => None,
    }
}

/// The add-or-change form.
#[component]
pub fn MemberForm(cluster_tenant: String) -> impl IntoView {
    let (subject, email, role, errors, message) = match forms::echo(FORM_ID) {
        Some(echo) => (
            echo.value("subject").unwrap_or_default(),
            echo.value("email").unwrap_or_default(),
            echo.value("role").unwrap_or_else(|| "member".into()),
            echo.errors,
            echo.message,
        ),
        None => (String::new(), String::new(), "member".to_owned(), FieldErrors::new(), None),
    };
    view! { <AddMember cluster_tenant subject email role errors message /> }
}

/// The markup behind [`MemberForm`], taken over by [`EnhanceForm`] when the wasm runs.
#[component]
fn AddMember(
    cluster_tenant: String,
    subject: String,
    email: String,
    role: String,
    /// Messages from a post answered without wasm.
    errors: FieldErrors,
    /// The sentence for it.
    message: Option<String>,
) -> impl IntoView {
    let posted = Posted::Member { cluster_tenant };
    let error_of = |key: &str| Signal::stored(errors.get(key).map(str::to_owned));
    let alert_hidden = message.is_none();
    view! {
        <form class="form narrow" id=FORM_ID method="post" novalidate>
            <PostedFields form=FORM_ID posted=posted />
            <p class="error" role="alert" id=alert_id(FORM_ID) hidden=alert_hidden>{message}</p>
            <Field id=SUBJECT_ID label="Subject" hint="The person's id at the identity provider (the token's sub claim). An existing member's role is changed." error=error_of("subject")>
                <input id=SUBJECT_ID name="subject" type="text" autocomplete="off" spellcheck="false" value=subject />
            </Field>
            <Field id=EMAIL_ID label="Or invite by e-mail" hint="Leave the subject empty: the invitation waits, holding no seat, until that person first signs in through the organisation with this address verified." error=error_of("email")>
                <input id=EMAIL_ID name="email" type="email" autocomplete="off" spellcheck="false" value=email />
            </Field>
            <Field id=ROLE_ID label="Role" error=error_of("role")>
                <select id=ROLE_ID name="role">
                    {ROLES.map(|(value, label)| view! { <option value=value selected=value == role>{label}</option> })}
                </select>
            </Field>
            <div class="form-actions">
                <button type="submit" class="btn primary">"Add or change"</button>
            </div>
            <EnhanceForm form=FORM_ID.to_owned() />
        </form>
    }
}

/// Whether the form shows a message for the error key `field`.
pub fn shows(field: &str) -> bool {
    matches!(field, "subject" | "email" | "role")
}

/// Suspend or reactivate, and remove (after a confirmation step), for one member: plain posted
/// forms (they work with or without wasm; the page they answer shows the new state, or the
/// server's refusal in words beside the button).
#[component]
pub fn MemberActions(cluster_tenant: String, subject: String, suspended: bool) -> impl IntoView {
    let (toggle_label, toggle_title) = if suspended {
        ("Reactivate", "Give access back (takes a seat)")
    } else {
        ("Suspend", "Take access away (frees the seat)")
    };
    let toggle = Posted::SuspendMember {
        cluster_tenant: cluster_tenant.clone(),
        subject: subject.clone(),
        suspended: !suspended,
    };
    let remove = Posted::RemoveMember { cluster_tenant, subject: subject.clone() };
    view! {
        <span class="row-action">
            <PostButton form=forms::dom_id(&format!("member-status {subject}")) posted=toggle label=toggle_label
                aria=format!("{toggle_label} {subject}") title=toggle_title />
            <ConfirmPost form=forms::dom_id(&format!("member-remove {subject}")) posted=remove label="Remove"
                aria=format!("Remove {subject}")
                question=format!("Remove {subject}? They lose access to the silo and their seat is freed.") />
        </span>
    }
}
