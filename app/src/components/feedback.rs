//! Status badges, notices and error views.

use leptos::prelude::*;

use crate::{error::AppError, model::fleet::cluster_tenant::Phase};

/// A ClusterTenant phase as a coloured badge with a shape, so colour is never the only signal.
#[component]
pub fn PhaseBadge(phase: Phase) -> impl IntoView {
    let (class, glyph) = match phase {
        Phase::Ready => ("badge ok", "●"),
        Phase::Pending => ("badge idle", "○"),
        Phase::Provisioning | Phase::Deleting => ("badge busy", "◐"),
        Phase::Failed => ("badge bad", "✕"),
        Phase::Suspended => ("badge warn", "‖"),
    };
    view! {
        <span class=class>
            <span aria-hidden="true">{glyph}</span>
            {phase.label()}
        </span>
    }
}

/// A neutral badge (role, status strings).
#[component]
pub fn Badge(#[prop(into)] text: String, #[prop(optional, into)] tone: Option<&'static str>) -> impl IntoView {
    let class = format!("badge {}", tone.unwrap_or("idle"));
    view! { <span class=class>{text}</span> }
}

/// A one-line message above the content. `tone`: `info`, `ok`, `warn`, `bad`.
#[component]
pub fn Notice(tone: &'static str, children: Children) -> impl IntoView {
    let role = if tone == "bad" { "alert" } else { "status" };
    view! {
        <div class=format!("notice {tone}") role=role>
            {children()}
        </div>
    }
}

/// A failed page load: what went wrong and what to do next. On the server it also sets the
/// response status from the error.
#[component]
pub fn ErrorView(error: AppError) -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(options) = use_context::<leptos_axum::ResponseOptions>()
        && let Ok(status) = http::StatusCode::from_u16(error.status())
    {
        options.set_status(status);
    }
    let (title, hint) = match &error {
        AppError::Unauthorized => ("Sign-in required", "Sign in to continue."),
        AppError::Forbidden { .. } => ("Not allowed", "Ask a platform operator for access."),
        AppError::NotFound { .. } => ("Not found", "It may have been deleted, or the address is mistyped."),
        AppError::Unavailable { .. } => {
            ("Temporarily unavailable", "The database is not answering. Try again shortly.")
        }
        _ => ("Something went wrong", "Try again; if it keeps failing, give an operator the request id."),
    };
    let sign_in =
        matches!(error, AppError::Unauthorized) && use_context::<crate::UiContext>().is_some_and(|ui| ui.sign_in);
    let here = leptos_router::hooks::use_location().pathname.get_untracked();
    view! {
        <section class="error-view" role="alert">
            <h1>{title}</h1>
            <p>{error.to_string()}</p>
            <p class="muted">{hint}</p>
            {sign_in.then(|| view! { <p><a class="btn primary sign-in" href=crate::components::layout::sign_in_href(&here)>"Sign in"</a></p> })}
        </section>
    }
}
