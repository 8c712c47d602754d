//! Deleting a customer: an inventory of what goes, and a typed-name confirmation that the server
//! checks again.

use leptos::{ev, html, prelude::*, task::spawn_local};

use crate::api::fleet::delete_cluster_tenant;

/// The "Delete…" button and its confirmation panel.
#[island]
pub fn DeleteClusterTenant(name: String, display_name: String, members: i64) -> impl IntoView {
    let open = RwSignal::new(false);
    let typed = RwSignal::new(String::new());
    let pending = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let input = NodeRef::<html::Input>::new();
    let name = StoredValue::new(name);
    let matches = move || name.with_value(|n| typed.with(|t| t.trim() == n));

    let show = move |_| {
        open.set(true);
        request_animation_frame(move || {
            if let Some(el) = input.get_untracked() {
                let _ = el.focus();
            }
        });
    };
    let close = move || {
        open.set(false);
        typed.set(String::new());
        error.set(None);
    };
    let confirm = move |ev: ev::SubmitEvent| {
        ev.prevent_default();
        if !matches() || pending.get_untracked() {
            return;
        }
        pending.set(true);
        let target = name.get_value();
        let confirmation = typed.get_untracked();
        spawn_local(async move {
            match delete_cluster_tenant(target.clone(), confirmation).await {
                Ok(()) => crate::islands::navigate(&format!(
                    "/cluster-tenants?deleted={}",
                    crate::model::cluster_tenant::url_encode(&target)
                )),
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
        <button type="button" class="btn danger" on:click=show aria-haspopup="dialog">
            "Delete…"
        </button>
        <Show when=move || open.get()>
            <div class="overlay">
                <form
                    class="dialog"
                    role="dialog"
                    aria-modal="true"
                    aria-labelledby="delete-title"
                    on:submit=confirm
                    on:keydown=move |ev: ev::KeyboardEvent| {
                        if ev.key() == "Escape" {
                            close();
                        }
                    }
                >
                    <h2 id="delete-title">{format!("Delete “{display_name}”?")}</h2>
                    <p>"This permanently removes:"</p>
                    <ul class="inventory">
                        <li>{format!("the customer record {}", name.get_value())}</li>
                        <li>{members_line.clone()}</li>
                    </ul>
                    <p class="muted small">
                        "No cluster resources exist for it yet: provisioning is not part of this release."
                    </p>
                    <label for="delete-confirm">
                        "Type " <code>{name.get_value()}</code> " to confirm"
                    </label>
                    <input
                        id="delete-confirm"
                        node_ref=input
                        type="text"
                        autocomplete="off"
                        spellcheck="false"
                        prop:value=move || typed.get()
                        on:input=move |ev| typed.set(event_target_value(&ev))
                    />
                    {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
                    <div class="form-actions">
                        <button type="submit" class="btn danger" disabled=move || !matches() || pending.get()>
                            {move || if pending.get() { "Deleting…" } else { "Delete customer" }}
                        </button>
                        <button type="button" class="btn ghost" on:click=move |_| close()>
                            "Cancel"
                        </button>
                    </div>
                </form>
            </div>
        </Show>
    }
}
