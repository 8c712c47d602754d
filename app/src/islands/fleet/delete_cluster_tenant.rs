//! Deleting a customer: an inventory of what goes, an explicit choice of what happens to its data
//! (preset from its termination policy), and a typed-name confirmation that the server checks
//! again. It works without the wasm too (see [`DeleteClusterTenant`]); with it, a DOM-level
//! island ([`DeleteDialogControl`]) opens the same server-rendered dialog in place (a modal: Tab
//! stays in it, Escape closes it and gives focus back), arms its button once the name is typed,
//! posts it in the background and follows the teardown.

use leptos::prelude::*;

use crate::{
    forms::{self, Posted, PostedFields},
    model::{fleet::cluster_tenant::TerminationPolicy, href::url_encode},
};

/// The DOM id of the dialog's form (a refused post without wasm echoes to it).
const FORM_ID: &str = "delete-form";

/// The "Delete…" button and its confirmation dialog. Both work without the wasm: the button is a
/// GET form that asks for this page with `?delete=1`, which renders the dialog open; the dialog is
/// a form posted to the page (the server checks the typed name, with or without the wasm); a
/// refused post comes back open with what was typed and why; Cancel is then a link back.
#[component]
pub fn DeleteClusterTenant(
    name: String,
    display_name: String,
    members: i64,
    policy: TerminationPolicy,
) -> impl IntoView {
    let asked = leptos_router::hooks::use_query_map().with_untracked(|q| q.get("delete").is_some());
    let refused = forms::echo(FORM_ID).map(|e| Refused {
        why: e.reason(),
        typed: e.value("confirmation").unwrap_or_default(),
        policy: e.value("termination-policy").and_then(|p| TerminationPolicy::parse(&p)),
    });
    view! { <DeleteDialog name display_name members policy asked refused /> }
}

/// A refused deletion, as posted.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Refused {
    why: String,
    typed: String,
    policy: Option<TerminationPolicy>,
}

/// The dialog, rendered by the server: open when the page was asked for it (`?delete=1`, the
/// button without the wasm) or answers a refused post; otherwise kept in a `<template>` (inert,
/// not part of the page) for the island to open in place.
#[component]
fn DeleteDialog(
    name: String,
    display_name: String,
    members: i64,
    policy: TerminationPolicy,
    /// The page was asked for with `?delete=1` (the button, without wasm).
    asked: bool,
    refused: Option<Refused>,
) -> impl IntoView {
    let page = format!("/cluster-tenants/{}", url_encode(&name));
    let policy = refused.as_ref().and_then(|r| r.policy).unwrap_or(policy);
    let open = asked || refused.is_some();
    let typed = refused.as_ref().map(|r| r.typed.clone()).unwrap_or_default();
    let why = refused.map(|r| r.why);
    let posted = Posted::DeleteClusterTenant { cluster_tenant: name.clone() };
    let members_line = match members {
        0 => "no memberships".to_owned(),
        1 => "its 1 membership".to_owned(),
        n => format!("its {n} memberships"),
    };
    let why_hidden = why.is_none();
    let dialog = view! {
        <div class="overlay" id=OVERLAY_ID>
            <div class="dialog" role="dialog" aria-modal="true" aria-labelledby="delete-title">
                <form class="dialog-body" method="post" id=FORM_ID>
                    <PostedFields form=FORM_ID posted=posted />
                    <h2 id="delete-title">{format!("Delete “{display_name}”?")}</h2>
                    <p>"This tears the silo down, in this order, and removes:"</p>
                    <ul class="inventory">
                        <li>"the silo release (its clustertenant-manager and runtime planes), so nobody can sign in"</li>
                        <li>"its DNS record and certificate"</li>
                        <li>"its network policies, quota and limit range"</li>
                        <li>{format!("its namespace opencrane-{name} (unless the database is kept in it)")}</li>
                        <li>{format!("the customer record {name} and {members_line}")}</li>
                    </ul>
                    <fieldset class="retention">
                        <legend>"Data"</legend>
                        <label>
                            <input type="radio" name="termination-policy" value="Retain" checked=policy == TerminationPolicy::Retain />
                            " Keep the database and its volumes (they can be re-attached)"
                        </label>
                        <label>
                            <input type="radio" name="termination-policy" value="Delete" checked=policy == TerminationPolicy::Delete />
                            " Delete all data"
                        </label>
                    </fieldset>
                    <label for="delete-confirm">"Type " <code>{name.clone()}</code> " to confirm"</label>
                    // Until the wasm runs, the server checks the typed name; then the button waits for it.
                    <input id="delete-confirm" name="confirmation" value=typed type="text" autocomplete="off" spellcheck="false"
                        data-expect=name.clone() />
                    <p class="error" role="alert" id=format!("{FORM_ID}-alert") hidden=why_hidden>{why}</p>
                    <p class="muted teardown-progress" role="status" id=PROGRESS_ID hidden></p>
                    <div class="form-actions">
                        <button type="submit" class="btn danger">"Delete customer"</button>
                        // A link back to the page until the wasm runs; then it closes in place.
                        <a class="btn ghost" href=page>"Cancel"</a>
                    </div>
                </form>
            </div>
        </div>
    };
    let dialog =
        if open { dialog.into_any() } else { view! { <template id=TEMPLATE_ID>{dialog}</template> }.into_any() };
    view! {
        <form method="get" class="inline-form" id=OPENER_ID>
            <input type="hidden" name="delete" value="1" />
            <button type="submit" class="btn danger" aria-haspopup="dialog">"Delete…"</button>
        </form>
        {dialog}
        <DeleteDialogControl name />
    }
}

const OPENER_ID: &str = "delete-open";
const OVERLAY_ID: &str = "delete-overlay";
const TEMPLATE_ID: &str = "delete-dialog";
const PROGRESS_ID: &str = "delete-progress";

/// Opens and closes the server-rendered dialog in place, keeps Tab in it, arms its button once
/// the name is typed, posts it in the background and follows the teardown: how far it got, the
/// list when the customer is gone, its page (with the failed step and Retry) when a step fails
/// or it takes longer than ten minutes. Renders nothing.
#[cfg_attr(any(feature = "ssr", feature = "fleet-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "fleet-islands")), component)]
fn DeleteDialogControl(name: String) -> impl IntoView {
    #[cfg(feature = "fleet-islands")]
    control::take_over(name);
    #[cfg(not(feature = "fleet-islands"))]
    let _ = name;
}

/// The browser side of [`DeleteDialogControl`].
#[cfg(feature = "fleet-islands")]
mod control {
    use std::rc::Rc;

    use leptos::{
        prelude::{document, set_timeout},
        task::spawn_local,
        wasm_bindgen::JsCast,
        web_sys::{Element, HtmlElement, HtmlTemplateElement, KeyboardEvent},
    };

    use super::{FORM_ID, OPENER_ID, OVERLAY_ID, PROGRESS_ID, TEMPLATE_ID};
    use crate::{api::fleet::provisioning_update, error::AppError, islands::enhance::live, model::href::url_encode};

    fn focus(el: Option<Element>) {
        if let Some(el) = el.and_then(|e| e.dyn_into::<HtmlElement>().ok()) {
            let _ = el.focus();
        }
    }

    fn opener_button() -> Option<Element> {
        document().query_selector(&format!("#{OPENER_ID} button")).ok().flatten()
    }

    pub(super) fn take_over(name: String) {
        // The dialog: in the page when it was asked for, else made from its template.
        let overlay = document().get_element_by_id(OVERLAY_ID).or_else(|| {
            let template = document().get_element_by_id(TEMPLATE_ID)?.dyn_into::<HtmlTemplateElement>().ok()?;
            template.content().first_element_child()
        });
        let (Some(overlay), Some(opener)) = (overlay, document().get_element_by_id(OPENER_ID)) else { return };
        let overlay = Rc::new(overlay);
        let Some(form) = overlay.query_selector(&format!("#{FORM_ID}")).ok().flatten() else { return };
        live::refresh(&form);
        let input = overlay.query_selector("#delete-confirm").ok().flatten();
        if let Some(input) = &input {
            let form = form.clone();
            live::on(input, "input", move |_| live::refresh(&form));
        }
        let close = {
            let (overlay, form, input) = (overlay.clone(), form.clone(), input.clone());
            move || {
                // Cleared while still in the page (the sentence is found by its id).
                live::say(FORM_ID, None);
                if let Some(input) = input.as_ref().and_then(|i| i.dyn_ref::<leptos::web_sys::HtmlInputElement>()) {
                    input.set_value("");
                }
                live::refresh(&form);
                overlay.remove();
                focus(opener_button());
            }
        };
        let close = Rc::new(close);
        // Open in place, and put the focus in the name field.
        {
            let (overlay, input) = (overlay.clone(), input.clone());
            live::on(&opener, "submit", move |ev| {
                ev.prevent_default();
                if overlay.is_connected() {
                    return;
                }
                if let Some(body) = document().body() {
                    let _ = body.append_child(&overlay);
                }
                focus(input.clone());
            });
        }
        // Escape closes; Tab stays inside (the WAI-ARIA modal dialog pattern).
        {
            let (close, dialog) = (close.clone(), overlay.clone());
            live::on(&overlay, "keydown", move |ev| {
                let Some(key) = ev.dyn_ref::<KeyboardEvent>() else { return };
                match key.key().as_str() {
                    "Escape" => close(),
                    "Tab" => trap_focus(&dialog, key),
                    _ => {}
                }
            });
        }
        if let Some(cancel) = overlay.query_selector(".btn.ghost").ok().flatten() {
            let close = close.clone();
            live::on(&cancel, "click", move |ev| {
                ev.prevent_default();
                close();
            });
        }
        let at = form.clone();
        live::on(&form, "submit", move |ev| {
            ev.prevent_default();
            if at.has_attribute("aria-busy") {
                return;
            }
            let sent = crate::islands::post_form(FORM_ID);
            live::set_busy(&at, true);
            if let Some(go) = at.query_selector("button[type=submit]").ok().flatten() {
                go.set_text_content(Some("Deleting…"));
            }
            let (at, name) = (at.clone(), name.clone());
            spawn_local(async move {
                match sent.await {
                    Ok(_) => {
                        if let Some(cancel) = at.query_selector(".btn.ghost").ok().flatten() {
                            cancel.set_text_content(Some("Close (the deletion goes on)"));
                        }
                        follow_teardown(name).await;
                    }
                    Err(err) => {
                        live::say(FORM_ID, Some(&err.to_string()));
                        if let Some(go) = at.query_selector("button[type=submit]").ok().flatten() {
                            go.set_text_content(Some("Delete customer"));
                        }
                        live::set_busy(&at, false);
                    }
                }
            });
        });
    }

    /// Keeps Tab and Shift+Tab inside the dialog: from the last control Tab goes to the first,
    /// from the first Shift+Tab to the last.
    fn trap_focus(dialog: &Element, ev: &KeyboardEvent) {
        // What Tab can reach: an unchecked radio button is skipped within its group.
        let reachable =
            "button:not([disabled]), a[href], input:not([disabled]):not([type=radio]), input[type=radio]:checked";
        let items = live::all(dialog, reachable);
        let (Some(first), Some(last)) = (items.first(), items.last()) else { return };
        let active = document().active_element();
        let at = |el: &Element| active.as_ref() == Some(el);
        if ev.shift_key() && at(first) {
            ev.prevent_default();
            focus(Some(last.clone()));
        } else if !ev.shift_key() && at(last) {
            ev.prevent_default();
            focus(Some(first.clone()));
        }
    }

    async fn follow_teardown(name: String) {
        let page = format!("/cluster-tenants/{}", url_encode(&name));
        for _ in 0..1200 {
            match provisioning_update(name.clone()).await {
                Err(AppError::NotFound { .. }) => {
                    crate::islands::navigate(&format!("/cluster-tenants?deleted={}", url_encode(&name)));
                    return;
                }
                // The deletion queues earlier failures, so a failed step while deleting is the teardown's.
                Ok(u) if u.deleting && u.failed => break,
                Ok(u) => {
                    if let Some(progress) = document().get_element_by_id(PROGRESS_ID) {
                        progress.set_text_content(Some(&format!(
                            "Tearing down… {} of {} steps finished.",
                            u.finished, u.steps
                        )));
                        let _ = progress.remove_attribute("hidden");
                    }
                }
                Err(_) => {}
            }
            sleep(500).await;
        }
        crate::islands::navigate(&page);
    }

    async fn sleep(ms: u64) {
        let (tx, rx) = futures_channel::oneshot::channel::<()>();
        set_timeout(
            move || {
                let _ = tx.send(());
            },
            std::time::Duration::from_millis(ms),
        );
        let _ = rx.await;
    }
}
