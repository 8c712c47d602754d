//! Deleting a customer: an inventory of what goes, an explicit choice of what happens to its data
//! (preset from its termination policy), and a typed-name confirmation that the server checks
//! again. It works without the wasm too (see [`DeleteClusterTenant`]).

use leptos::{ev, html, prelude::*, task::spawn_local};

use crate::{
    api::fleet::get_provisioning,
    error::AppError,
    forms::{self, Posted, PostedFields},
    model::{
        fleet::cluster_tenant::{Phase, TerminationPolicy},
        fleet::provisioning::StepState,
        href::url_encode,
    },
};

/// Follows the teardown from the dialog: shows how far it got, goes to the list when the
/// customer is gone, and to its page (with the failed step and Retry) when a step fails or it
/// takes longer than ten minutes.
async fn follow_teardown(name: String, progress: RwSignal<Option<String>>) {
    let page = format!("/cluster-tenants/{}", url_encode(&name));
    for _ in 0..1200 {
        match get_provisioning(name.clone()).await {
            Err(AppError::NotFound { .. }) => {
                crate::islands::navigate(&format!("/cluster-tenants?deleted={}", url_encode(&name)));
                return;
            }
            // The deletion queues earlier failures, so a failed step while deleting is the teardown's.
            Ok(view) if view.phase == Phase::Deleting && view.steps.iter().any(|s| s.state == StepState::Failed) => {
                break;
            }
            Ok(view) => {
                let finished =
                    view.steps.iter().filter(|s| matches!(s.state, StepState::Removed | StepState::Retained)).count();
                progress.set(Some(format!("Tearing down… {finished} of {} steps finished.", view.steps.len())));
            }
            Err(_) => {}
        }
        sleep(500).await;
    }
    crate::islands::navigate(&page);
}

/// Waits `ms` milliseconds in the browser (a no-op on the server, where this never runs).
async fn sleep(ms: u64) {
    #[cfg(feature = "hydrate")]
    {
        let (tx, rx) = futures_channel::oneshot::channel::<()>();
        set_timeout(
            move || {
                let _ = tx.send(());
            },
            std::time::Duration::from_millis(ms),
        );
        let _ = rx.await;
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = ms;
}

/// Keeps Tab and Shift+Tab inside the dialog (the WAI-ARIA modal dialog pattern): from the last
/// control Tab goes to the first, from the first Shift+Tab to the last.
fn trap_focus(dialog: Option<web_sys::HtmlDivElement>, ev: &ev::KeyboardEvent) {
    #[cfg(feature = "hydrate")]
    {
        use leptos::wasm_bindgen::JsCast as _;
        let Some(dialog) = dialog else { return };
        // What Tab can reach: an unchecked radio button is skipped within its group.
        let reachable =
            "button:not([disabled]), a[href], input:not([disabled]):not([type=radio]), input[type=radio]:checked";
        let Ok(list) = dialog.query_selector_all(reachable) else { return };
        let items: Vec<web_sys::HtmlElement> =
            (0..list.length()).filter_map(|i| list.item(i)).filter_map(|n| n.dyn_into().ok()).collect();
        let (Some(first), Some(last)) = (items.first(), items.last()) else { return };
        let active = document().active_element();
        let at =
            |el: &web_sys::HtmlElement| active.as_ref().is_some_and(|a| a == el.unchecked_ref::<web_sys::Element>());
        if ev.shift_key() && at(first) {
            ev.prevent_default();
            let _ = last.focus();
        } else if !ev.shift_key() && at(last) {
            ev.prevent_default();
            let _ = first.focus();
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (dialog, ev);
}

/// The DOM id of the dialog's form (a refused post without wasm echoes to it).
const FORM_ID: &str = "delete-form";

/// The "Delete…" button and its confirmation dialog. Both work without the wasm: the button is a
/// GET form that asks for this page with `?delete=1`, which renders the dialog open; the dialog is
/// a form posted to the page (the server checks the typed name as the island's call does); a
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

/// The island behind [`DeleteClusterTenant`].
#[cfg_attr(any(feature = "ssr", feature = "fleet-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "fleet-islands")), component)]
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
    let initial_policy = refused.as_ref().and_then(|r| r.policy).unwrap_or(policy);
    let policy = RwSignal::new(initial_policy);
    let progress = RwSignal::new(None::<String>);
    let open = RwSignal::new(asked || refused.is_some());
    // What was posted, or what was typed before the island woke.
    let initial_typed =
        refused.as_ref().map(|r| r.typed.clone()).or_else(|| forms::typed("delete-confirm")).unwrap_or_default();
    let typed = RwSignal::new(initial_typed.clone());
    let pending = RwSignal::new(false);
    let error = RwSignal::new(refused.map(|r| r.why));
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let input = NodeRef::<html::Input>::new();
    let opener = NodeRef::<html::Button>::new();
    let dialog = NodeRef::<html::Div>::new();
    let posted = Posted::DeleteClusterTenant { cluster_tenant: name.clone() };
    let name = StoredValue::new(name);
    let matches = move || name.with_value(|n| typed.with(|t| t.trim() == n));

    let show = move |ev: ev::SubmitEvent| {
        ev.prevent_default();
        open.set(true);
        request_animation_frame(move || {
            if let Some(el) = input.get_untracked() {
                let _ = el.focus();
            }
        });
    };
    // Focus goes back to the button that opened the dialog.
    let close = move || {
        open.set(false);
        typed.set(String::new());
        error.set(None);
        request_animation_frame(move || {
            if let Some(el) = opener.get_untracked() {
                let _ = el.focus();
            }
        });
    };
    let confirm = move |ev: ev::SubmitEvent| {
        ev.prevent_default();
        if !matches() || pending.get_untracked() {
            return;
        }
        pending.set(true);
        let target = name.get_value();
        let sent = crate::islands::post_form(FORM_ID);
        spawn_local(async move {
            match sent.await {
                Ok(_) => follow_teardown(target, progress).await,
                Err(err) => {
                    error.set(Some(err.to_string()));
                    pending.set(false);
                }
            }
        });
    };
    let members_line = match members {
        0 => "no memberships".to_owned(),
        1 => "its 1 membership".to_owned(),
        n => format!("its {n} memberships"),
    };

    view! {
        <form method="get" class="inline-form" on:submit=show>
            <input type="hidden" name="delete" value="1" />
            <button type="submit" class="btn danger" aria-haspopup="dialog" node_ref=opener>"Delete…"</button>
        </form>
        <Show when=move || open.get()>
            <div class="overlay">
                <div
                    class="dialog"
                    role="dialog"
                    aria-modal="true"
                    aria-labelledby="delete-title"
                    node_ref=dialog
                    on:keydown=move |ev: ev::KeyboardEvent| {
                        match ev.key().as_str() {
                            "Escape" => close(),
                            "Tab" => trap_focus(dialog.get_untracked(), &ev),
                            _ => {}
                        }
                    }
                >
                <form class="dialog-body" method="post" id=FORM_ID on:submit=confirm>
                    <PostedFields form=FORM_ID posted=posted.clone() />
                    <h2 id="delete-title">{format!("Delete “{display_name}”?")}</h2>
                    <p>"This tears the silo down, in this order, and removes:"</p>
                    <ul class="inventory">
                        <li>"the silo release (its clustertenant-manager and runtime planes), so nobody can sign in"</li>
                        <li>"its DNS record and certificate"</li>
                        <li>"its network policies, quota and limit range"</li>
                        <li>{format!("its namespace opencrane-{} (unless the database is kept in it)", name.get_value())}</li>
                        <li>{format!("the customer record {} and {}", name.get_value(), members_line.clone())}</li>
                    </ul>
                    <fieldset class="retention">
                        <legend>"Data"</legend>
                        <label>
                            <input type="radio" name="termination-policy" value="Retain"
                                checked=initial_policy == TerminationPolicy::Retain
                                prop:checked=move || policy.get() == TerminationPolicy::Retain
                                on:change=move |_| policy.set(TerminationPolicy::Retain) />
                            " Keep the database and its volumes (they can be re-attached)"
                        </label>
                        <label>
                            <input type="radio" name="termination-policy" value="Delete"
                                checked=initial_policy == TerminationPolicy::Delete
                                prop:checked=move || policy.get() == TerminationPolicy::Delete
                                on:change=move |_| policy.set(TerminationPolicy::Delete) />
                            " Delete all data"
                        </label>
                    </fieldset>
                    <label for="delete-confirm">
                        "Type " <code>{name.get_value()}</code> " to confirm"
                    </label>
                    <input
                        id="delete-confirm"
                        name="confirmation"
                        value=initial_typed.clone()
                        node_ref=input
                        type="text"
                        autocomplete="off"
                        spellcheck="false"
                        prop:value=move || typed.get()
                        on:input=move |ev| typed.set(event_target_value(&ev))
                    />
                    {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                    {move || progress.get().map(|p| view! { <p class="muted teardown-progress" role="status">{p}</p> })}
                    <div class="form-actions">
                        // Until the wasm runs, the server checks the typed name; then the button waits for it.
                        <button type="submit" class="btn danger" disabled=move || (hydrated.get() && !matches()) || pending.get()>
                            {move || if pending.get() { "Deleting…" } else { "Delete customer" }}
                        </button>
                        // A link back to the page until the wasm runs; then it closes in place.
                        <a class="btn ghost" href=page.clone() on:click=move |ev| { ev.prevent_default(); close(); }>
                            {move || if pending.get() { "Close (the deletion goes on)" } else { "Cancel" }}
                        </a>
                    </div>
                </form>
                </div>
            </div>
        </Show>
    }
}
