//! Who is calling: a bearer token, or the development identity. Puts a
//! [`Principal`] into the request's extensions for pages, server functions and REST handlers.
//! OIDC sign-in and sessions arrive in a later release; until then a server without the
//! development identity serves only token holders.

use std::sync::Arc;

use app::{error::FieldErrors, model::principal::Principal};
use axum::{
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::Next,
    response::Response,
};

use super::error::{envelope, request_id_of};

/// The credentials a server accepts.
#[derive(Clone, Debug, Default)]
pub struct AuthConfig {
    tokens: Arc<Vec<(String, String)>>,
    dev_identity: bool,
}

impl AuthConfig {
    /// Accepts `tokens` (name, secret) as operator bearer tokens; `dev_identity` makes every
    /// request without a token the development operator.
    pub fn new(tokens: Vec<(String, String)>, dev_identity: bool) -> Self {
        let tokens = tokens.into_iter().filter(|(_, secret)| !secret.is_empty()).collect();
        Self { tokens: Arc::new(tokens), dev_identity }
    }

    fn token_name(&self, presented: &str) -> Option<&str> {
        // Compare against every token, always, in constant time per token.
        let mut found = None;
        for (name, secret) in self.tokens.iter() {
            if constant_time_eq(secret.as_bytes(), presented.as_bytes()) {
                found = Some(name.as_str());
            }
        }
        found
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Resolves the caller; an unknown or malformed bearer token is refused with 401 right away.
pub async fn authenticate(State(config): State<AuthConfig>, mut req: Request, next: Next) -> Response {
    let bearer = req.headers().get(header::AUTHORIZATION).map(|v| {
        v.to_str().ok().and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer "))).map(str::trim)
    });
    let principal = match bearer {
        Some(Some(token)) => match config.token_name(token) {
            Some(name) => Some(Principal::api_token(name)),
            None => return unauthorized(&req, "Invalid token."),
        },
        Some(None) => return unauthorized(&req, "Malformed Authorization header; expected “Bearer <token>”."),
        None if config.dev_identity => Some(Principal::development()),
        None => None,
    };
    if let Some(principal) = principal {
        req.extensions_mut().insert(principal);
    }
    next.run(req).await
}

fn unauthorized(req: &Request, message: &str) -> Response {
    envelope(StatusCode::UNAUTHORIZED, "INVALID_TOKEN", message, &request_id_of(req), &FieldErrors::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_exactly() {
        let config = AuthConfig::new(vec![("dev".into(), "ocd_abc".into()), ("empty".into(), String::new())], false);
        assert_eq!(config.token_name("ocd_abc"), Some("dev"));
        assert_eq!(config.token_name("ocd_ab"), None);
        assert_eq!(config.token_name("ocd_abcd"), None);
        assert_eq!(config.token_name(""), None, "an empty configured token must never match");
    }
}
