//! Cross-site request forgery protection for every state-changing request that relies on the
//! session cookie: the browser's fetch metadata (`Sec-Fetch-Site`) must say same-origin, or the
//! `Origin` must be this server's; a request with neither is refused. Bearer-token requests carry
//! no ambient credential and pass. (Server functions also take JSON bodies only, which a foreign
//! page cannot send without a CORS preflight, and none answers GET.)

use axum::{
    extract::Request,
    http::{HeaderMap, Method, StatusCode, header},
    middleware::Next,
    response::Response,
};

use super::error::{envelope, request_id_of};
use app::error::FieldErrors;

/// Why a request was refused, or `None` when it may proceed.
pub fn check(method: &Method, headers: &HeaderMap, https: bool) -> Option<&'static str> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    if headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("Bearer ")) {
        return None;
    }
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if let Some(site) = site
        && site != "same-origin"
    {
        return Some("CSRF_CROSS_SITE");
    }
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    match headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) {
        Some(origin) => {
            let scheme = if https { "https" } else { "http" };
            let expected = host.map(|h| format!("{scheme}://{h}"));
            if expected.as_deref() == Some(origin) { None } else { Some("CSRF_ORIGIN_MISMATCH") }
        }
        None if site.is_some() => None,
        None => Some("CSRF_ORIGIN_MISSING"),
    }
}

/// The middleware; `https` says which scheme this server's own origin has.
pub async fn protect(https: bool, req: Request, next: Next) -> Response {
    match check(req.method(), req.headers(), https) {
        None => next.run(req).await,
        Some(code) => envelope(
            StatusCode::FORBIDDEN,
            code,
            "Cross-site request refused. Reload the page and try again.",
            &request_id_of(&req),
            &FieldErrors::new(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, "admin.example.com".parse().unwrap());
        for (k, v) in pairs {
            h.insert(axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn the_matrix() {
        let post = Method::POST;
        let ok = |pairs: &[(&str, &str)]| check(&post, &headers(pairs), true).is_none();
        assert!(ok(&[("sec-fetch-site", "same-origin"), ("origin", "https://admin.example.com")]));
        assert!(ok(&[("origin", "https://admin.example.com")]));
        assert!(ok(&[("sec-fetch-site", "same-origin")]));
        assert!(ok(&[("authorization", "Bearer x")]), "no ambient credential");
        assert!(!ok(&[("sec-fetch-site", "cross-site"), ("origin", "https://admin.example.com")]));
        assert!(!ok(&[("sec-fetch-site", "same-site")]));
        assert!(!ok(&[("sec-fetch-site", "none")]));
        assert!(!ok(&[("origin", "https://evil.test")]));
        assert!(!ok(&[("origin", "http://admin.example.com")]), "scheme matters");
        assert!(!ok(&[("origin", "null")]));
        assert!(!ok(&[]), "neither header");
        assert!(check(&Method::GET, &headers(&[("origin", "https://evil.test")]), true).is_none());
        for method in [Method::PUT, Method::PATCH, Method::DELETE] {
            assert!(check(&method, &headers(&[("origin", "https://evil.test")]), true).is_some());
        }
    }
}
