//! The browser bundle under `/pkg` (the wasm, its JS glue and the stylesheet): the precompressed
//! copy the browser accepts (`.gz`, written beside each file by `cargo xtask build`; Chromium
//! fetched the dev bundle's 7 MB uncompressed before). The content-hashed files the pages refer
//! to (`opencrane.<hash>.<ext>`, see `app::bundle`) are `immutable` for a year: a repeat visit
//! fetches none of them, and a deploy brings new names. Any other file (the unhashed names) is
//! `no-cache` with `Last-Modified`, so it is revalidated (`304` without a body) and never paired
//! stale with a new page. Everything else of the site root is still served by Leptos' file
//! handler.

use std::path::Path;

use axum::{
    Router,
    extract::Request,
    http::{HeaderValue, header},
    middleware::{self, Next},
    response::Response,
};
use leptos::config::LeptosOptions;
use tower_http::services::ServeDir;

/// What a content-hashed file may be cached as.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// The service for `/pkg`.
pub fn bundle(options: &LeptosOptions) -> Router {
    let dir = Path::new(&*options.site_root).join(&*options.site_pkg_dir);
    Router::new().fallback_service(ServeDir::new(dir).precompressed_gzip()).layer(middleware::from_fn(cache_control))
}

async fn cache_control(request: Request, next: Next) -> Response {
    let hashed = request.uri().path().rsplit('/').next().is_some_and(app::bundle::is_hashed);
    let mut response = next.run(request).await;
    if response.status().is_success() || response.status() == axum::http::StatusCode::NOT_MODIFIED {
        let value = if hashed { IMMUTABLE } else { "no-cache" };
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(value));
    }
    response
}
