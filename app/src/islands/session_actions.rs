//! Ending sessions from the Sessions page.

use leptos::{prelude::*, task::spawn_local};

use crate::{Role, model::session::RevokeSessions};

/// A button that ends the sessions `what` names, then reloads the page.
#[island]
pub fn RevokeButton(role: Role, what: RevokeSessions, label: String) -> impl IntoView {
    let pending = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let what = StoredValue::new(what);
    let click = move |_| {
        pending.set(true);
        let what = what.get_value();
        spawn_local(async move {
            let result = match role {
                Role::Fleet => crate::api::fleet::revoke_fleet_sessions(what).await,
                Role::Silo => crate::api::silo::revoke_silo_sessions(what).await,
            };
            match result {
                Ok(_) => crate::islands::navigate("/sessions"),
                Err(err) => {
                    error.set(Some(err.to_string()));
                    pending.set(false);
                }
            }
        });
    };
    view! {
        <button type="button" class="btn" on:click=click disabled=move || pending.get()>
            {label}
        </button>
        {move || error.get().map(|e| view! { <span class="error" role="alert">{e}</span> })}
    }
}
