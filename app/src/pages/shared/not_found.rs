//! The 404 page.

use leptos::prelude::*;
use leptos_meta::Title;

/// The 404 page (also sets the status).
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(options) = use_context::<leptos_axum::ResponseOptions>() {
        options.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <Title text="Not found" />
        <section class="error-view">
            <h1>"Page not found"</h1>
            <p class="muted">"There is no page at this address."</p>
            <p>
                <a href="/">"Go to the start page"</a>
            </p>
        </section>
    }
}
