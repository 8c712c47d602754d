//! The no-wasm path of the console's forms (see [`app::forms`]): a URL-encoded `POST` to a page is
//! run by the same server function the island calls, then answered with a redirect (303) or with
//! the page rendered again — the posted values kept, each message under its field — with the
//! error's status. Everything else passes through untouched.
//!
//! This layer sits inside authentication and CSRF protection, so a posted form is checked exactly
//! like a server-function call (same-origin, signed-in caller).

use app::{
    forms::{Outcome, submit},
    state::AppState,
};
use axum::{
    body::Body,
    extract::{Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Redirect, Response},
};

use super::MAX_BODY_BYTES;

fn is_form_post(req: &Request) -> bool {
    req.method() == Method::POST
        && !req.uri().path().starts_with("/api/")
        && req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"))
}

/// The middleware.
pub async fn handle(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if !is_form_post(&req) {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let mut response = submitted(state, parts, body, next).await;
    response.extensions_mut().insert(crate::metrics::RouteLabel("(form post)".into()));
    response
}

async fn submitted(state: AppState, mut parts: axum::http::request::Parts, body: Body, next: Next) -> Response {
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "The form is too large.").into_response();
    };
    let values: Vec<(String, String)> = form_urlencoded::parse(&bytes).into_owned().collect();
    match submit(state, parts.clone(), values).await {
        None => {
            (StatusCode::BAD_REQUEST, "This form cannot be sent here. Reload the page and try again.").into_response()
        }
        Some(Outcome::Redirect(href)) => Redirect::to(&href).into_response(),
        Some(Outcome::Render(echo, status)) => {
            // Render the page itself (a GET of the same URL), with the echo for its form.
            parts.method = Method::GET;
            parts.headers.remove(header::CONTENT_TYPE);
            parts.headers.remove(header::CONTENT_LENGTH);
            parts.extensions.insert(*echo);
            let mut response = next.run(Request::from_parts(parts, Body::empty())).await;
            if response.status() == StatusCode::OK {
                *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            }
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
    }
}
