//! Server functions: thin wrappers (context → service → status) that the pages and islands call.
//! Fleet functions live under `/api/fleet/…`, silo functions under `/api/silo/…`; a server of one
//! role answers 404 for the other's prefix, and every function checks its role and permission
//! again through the service layer. The islands send their forms through one function of both
//! roles, [`forms::post_form`], which runs the form layer (it checks the form's role).
//!
//! All take JSON bodies: a JSON POST cannot be sent cross-site without a CORS preflight, and no
//! function here answers GET, so none can be triggered by a link or an image.

pub mod fleet;
pub mod forms;
pub mod silo;

/// Sets the HTTP status of a failed call so that clients and logs see 4xx/5xx, not 200/500.
#[cfg(feature = "ssr")]
pub(crate) fn respond<T>(result: Result<T, crate::error::AppError>) -> Result<T, crate::error::AppError> {
    if let Err(err) = &result
        && let Some(options) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>()
        && let Ok(status) = http::StatusCode::from_u16(err.status())
    {
        options.set_status(status);
    }
    result
}
