//! The browser bundle under `/pkg` (the wasm, its JS glue and the stylesheet): the precompressed
//! copy the browser accepts (`.gz`, written beside each file by `cargo xtask build`; Chromium
//! fetched the dev bundle's 7 MB uncompressed before), and `Cache-Control: no-cache` with
//! `Last-Modified`, so a repeat visit costs a `304` without a body and a deploy is picked up at
//! once (without the header browsers cached it heuristically, and could pair a new page with an
//! old bundle). Everything else of the site root is still served by Leptos' file handler.

use std::path::Path;

use axum::{
    Router,
    http::{HeaderValue, header},
};
use leptos::config::LeptosOptions;
use tower_http::{services::ServeDir, set_header::SetResponseHeaderLayer};

/// The service for `/pkg`.
pub fn bundle(options: &LeptosOptions) -> Router {
    let dir = Path::new(&*options.site_root).join(&*options.site_pkg_dir);
    Router::new()
        .fallback_service(ServeDir::new(dir).precompressed_gzip())
        .layer(SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, HeaderValue::from_static("no-cache")))
}
