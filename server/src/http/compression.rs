//! Compressed pages without a compression oracle. HTML is gzip-compressed for a browser that
//! accepts it, except where compression could leak a secret (BREACH: an attacker who can make a
//! victim's browser send requests with chosen text, and can see the responses' sizes, guesses a
//! secret in the page byte by byte):
//!
//! - only a request the browser says this site started, or the user typed (`Sec-Fetch-Site:
//!   same-origin` or `none`), is answered compressed: a request another site started — the only
//!   kind an attacker can make the browser send — is answered in full, as is a client that does
//!   not say (the session cookie is `SameSite=Strict` as well, so such a request is not signed in);
//! - a response marked `Cache-Control: no-store` — the page that shows a new token's secret once,
//!   a form answered with what was posted — is never compressed, whoever asked.
//!
//! The bundle is served precompressed by [`super::assets`] (already encoded, so passed through).

use axum::{body::HttpBody, extract::Request, middleware::Next, response::Response};
use http::header;
use tower_http::compression::{
    CompressionLayer,
    predicate::{Predicate, SizeAbove},
};

/// Whether the browser says this site started the request, or the user did (typed, bookmark).
fn started_here(req: &Request) -> bool {
    matches!(req.headers().get("sec-fetch-site").and_then(|v| v.to_str().ok()), Some("same-origin" | "none"))
}

/// Marks the answer to a request this site did not start (see [`PagesWithoutSecrets`]).
#[derive(Clone, Copy, Debug)]
struct StartedElsewhere;

/// Notes on the response whether this site started the request (inside [`layer`]).
pub async fn note_who_started(req: Request, next: Next) -> Response {
    let elsewhere = !started_here(&req);
    let mut response = next.run(req).await;
    if elsewhere {
        response.extensions_mut().insert(StartedElsewhere);
    }
    response
}

/// HTML that is not marked `no-store`, answering a request this site started.
#[derive(Clone, Copy, Debug)]
pub struct PagesWithoutSecrets;

impl Predicate for PagesWithoutSecrets {
    fn should_compress<B>(&self, response: &http::Response<B>) -> bool
    where
        B: HttpBody,
    {
        let header = |name| response.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
        response.extensions().get::<StartedElsewhere>().is_none()
            && header(header::CONTENT_TYPE).starts_with("text/html")
            && !header(header::CACHE_CONTROL).contains("no-store")
    }
}

/// The compression layer: gzip, for [`PagesWithoutSecrets`] above 1 KiB (outside
/// [`note_who_started`]).
pub fn layer() -> CompressionLayer<impl Predicate> {
    CompressionLayer::new().compress_when(PagesWithoutSecrets.and(SizeAbove::new(1024)))
}
