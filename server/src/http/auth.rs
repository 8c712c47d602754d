//! Who is calling. Resolves, in order: a bearer token (the role's static token, or on a silo an
//! `ocp_` access token), the signed-in session (tower-sessions, stored in the role's own
//! Postgres), or — in dev mode on loopback only — the development identity. The result is a
//! [`Principal`] in the request's extensions, with the caller's memberships loaded from the
//! role's own database, for pages, server functions and REST handlers alike.
//!
//! Sessions: the id is rotated at sign-in, the cookie is `__Host-` prefixed, `Secure`,
//! `HttpOnly`, `SameSite=Strict`, `Path=/`, with no `Domain` (plain HTTP only in explicit
//! insecure loopback mode); sessions end after an idle period and at an absolute lifetime.

pub mod oidc;
pub mod routes;
pub mod store;

use std::{sync::Arc, time::Duration};

use app::{
    error::FieldErrors,
    model::principal::{Membership, OrgRole, Principal, PrincipalKind},
    state::CurrentSession,
};
use axum::{
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::Next,
    response::Response,
};
use chrono::Utc;
use opencrane_db::PgPool;
use serde::{Deserialize, Serialize};
use tower_sessions::Session;

use self::oidc::{ClientConfig, Provider, SignInPolicy, VerifiedUser};
use super::{
    error::{envelope, request_id_of},
    ratelimit::{IpNet, RateLimiter},
};

/// Session key of the signed-in user.
pub const USER_KEY: &str = "user";
/// Session key of the last activity mark (written at most once a minute, which is what extends
/// the idle expiry).
const SEEN_KEY: &str = "seen";

/// What a signed-in session holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionUser {
    /// The verified identity.
    pub user: VerifiedUser,
    /// The client the person signed in with (for the logout hint).
    pub client_id: String,
    /// Unix time of sign-in.
    pub authenticated_at: i64,
    /// Unix time after which the session is over, whatever the activity.
    pub expires_at: i64,
}

/// The role-specific part of authentication.
#[derive(Clone, Debug)]
pub enum Scope {
    /// The fleet: memberships come from the registry's `org_memberships`.
    Fleet,
    /// A silo: memberships come from its read-model; tokens may be `ocp_` access tokens.
    Silo {
        /// The silo's ClusterTenant.
        cluster_tenant: String,
        /// IdP groups whose members are admins of this silo's organisation.
        org_admin_groups: Vec<String>,
        /// The fleet, which admits each person signing in (`None`: a standalone silo).
        fleet: Option<crate::silo::sync::FleetLink>,
    },
}

/// The organisation's own login client on a silo (Zitadel: a public PKCE client per org).
#[derive(Clone, Debug)]
pub struct OrgClient {
    /// The client (no secret; the org-restricting scope among its scopes).
    pub client: ClientConfig,
    /// Host names it serves: `<ct>.<base>` and the vanity domain.
    pub hosts: Vec<String>,
}

/// OIDC sign-in settings.
#[derive(Clone, Debug)]
pub struct OidcSetup {
    /// The provider.
    pub provider: Arc<Provider>,
    /// Who may sign in and who is an operator.
    pub policy: SignInPolicy,
    /// The configured client (`OIDC_CLIENT_ID`) and its redirect URI; on a silo, the fallback.
    pub fallback: Option<(ClientConfig, String)>,
    /// On a silo: the organisation's client, chosen by request host.
    pub org: Option<OrgClient>,
    /// Where the provider sends people after sign-out (default: this server's `/`).
    pub post_logout_redirect: Option<String>,
}

/// Everything authentication needs.
#[derive(Debug)]
pub struct AuthInner {
    /// Static bearer tokens (name, secret), holding the operator role.
    pub tokens: Vec<(String, String)>,
    /// Dev mode: token-less requests are the development operator.
    pub dev_identity: bool,
    /// Fleet or silo.
    pub scope: Scope,
    /// OIDC, when configured.
    pub oidc: Option<OidcSetup>,
    /// `false` only in explicit insecure loopback mode (plain HTTP, no `__Host-` prefix).
    pub secure: bool,
    /// Absolute session lifetime.
    pub session_max_age: Duration,
    /// Idle timeout.
    pub session_idle: Duration,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<IpNet>,
    /// Limits sign-in attempts per client.
    pub limiter: RateLimiter,
}

/// Shared authentication settings (cheap to clone).
#[derive(Clone, Debug)]
pub struct AuthConfig(pub Arc<AuthInner>);

impl AuthConfig {
    /// Settings with only static tokens and, optionally, the development identity (no OIDC).
    /// `secure: false` is plain HTTP on loopback.
    pub fn tokens_only(tokens: Vec<(String, String)>, dev_identity: bool, scope: Scope, secure: bool) -> Self {
        Self::new(AuthInner {
            tokens,
            dev_identity,
            scope,
            oidc: None,
            secure,
            session_max_age: Duration::from_secs(12 * 3600),
            session_idle: Duration::from_secs(30 * 60),
            trusted_proxies: Vec::new(),
            limiter: RateLimiter::new(20, 20),
        })
    }

    /// Wraps settings; empty token secrets are dropped so they can never match.
    pub fn new(mut inner: AuthInner) -> Self {
        inner.tokens.retain(|(_, secret)| !secret.is_empty());
        Self(Arc::new(inner))
    }

    /// The session cookie's name: `__Host-` prefixed whenever cookies are `Secure`.
    pub fn cookie_name(&self) -> &'static str {
        if self.0.secure { "__Host-opencrane-session" } else { "opencrane-session" }
    }

    /// The login-transaction cookie's name.
    pub fn login_cookie_name(&self) -> &'static str {
        if self.0.secure { "__Host-opencrane-login" } else { "opencrane-login" }
    }

    fn token_name(&self, presented: &str) -> Option<&str> {
        // Compare against every token, always, each in constant time.
        let mut found = None;
        for (name, secret) in &self.0.tokens {
            if constant_time_eq(secret.as_bytes(), presented.as_bytes()) {
                found = Some(name.as_str());
            }
        }
        found
    }
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn unauthorized(req: &Request, code: &str, message: &str) -> Response {
    envelope(StatusCode::UNAUTHORIZED, code, message, &request_id_of(req), &FieldErrors::new())
}

fn unavailable(req: &Request) -> Response {
    envelope(
        StatusCode::SERVICE_UNAVAILABLE,
        "SERVICE_UNAVAILABLE",
        "The service is temporarily unavailable. Try again in a moment.",
        &request_id_of(req),
        &FieldErrors::new(),
    )
}

/// The caller's memberships, from the role's own database.
async fn memberships(
    pool: &PgPool,
    scope: &Scope,
    subject: &str,
    groups: &[String],
) -> Result<Vec<Membership>, opencrane_db::Error> {
    match scope {
        Scope::Fleet => Ok(opencrane_fleet_db::memberships::for_subject(pool, subject)
            .await?
            .into_iter()
            .filter_map(|m| {
                Some(Membership {
                    role: OrgRole::parse(&m.role)?,
                    active: m.status == "active",
                    cluster_tenant: m.cluster_tenant,
                })
            })
            .collect()),
        Scope::Silo { cluster_tenant, org_admin_groups, .. } => {
            let projected = opencrane_silo_db::memberships::for_subject(pool, cluster_tenant, subject).await?;
            let mut membership = projected.and_then(|m| {
                // Unknown statuses grant nothing (the original treated them as active).
                let active = m.status == "active";
                Some(Membership { cluster_tenant: cluster_tenant.clone(), role: OrgRole::parse(&m.role)?, active })
            });
            if groups.iter().any(|g| org_admin_groups.contains(g)) {
                match &mut membership {
                    Some(m) if m.active && m.role == OrgRole::Owner => {}
                    Some(m) if !m.active => {} // A suspended member stays suspended.
                    Some(m) => m.role = OrgRole::Admin,
                    None => {
                        membership = Some(Membership {
                            cluster_tenant: cluster_tenant.clone(),
                            role: OrgRole::Admin,
                            active: true,
                        })
                    }
                }
            }
            Ok(membership.into_iter().collect())
        }
    }
}

/// The principal of a signed-in session user.
pub async fn session_principal(
    pool: &PgPool,
    scope: &Scope,
    user: &VerifiedUser,
) -> Result<Principal, opencrane_db::Error> {
    Ok(Principal {
        kind: PrincipalKind::User,
        subject: user.subject.clone(),
        email: user.email.clone(),
        display_name: user.name.clone().or_else(|| user.email.clone()).unwrap_or_else(|| user.subject.clone()),
        is_platform_operator: user.is_platform_operator,
        groups: user.groups.clone(),
        memberships: memberships(pool, scope, &user.subject, &user.groups).await?,
        silo: None,
    })
}

/// An `ocp_` access token's principal: it acts for its creator, with the lesser of the token's
/// role and the creator's current role, and stops working when the creator is no longer an
/// active member.
async fn access_token_principal(
    pool: &PgPool,
    scope: &Scope,
    token: &str,
) -> Result<Option<Principal>, opencrane_db::Error> {
    let Scope::Silo { cluster_tenant, .. } = scope else { return Ok(None) };
    let Some(row) =
        opencrane_silo_db::access_tokens::authenticate(pool, &app::service::silo::tokens::hash(token)).await?
    else {
        return Ok(None);
    };
    let owner = opencrane_silo_db::memberships::for_subject(pool, cluster_tenant, &row.owner_subject).await?;
    let (Some(owner), Some(token_role)) = (owner, OrgRole::parse(&row.role)) else { return Ok(None) };
    let Some(owner_role) = OrgRole::parse(&owner.role).filter(|_| owner.status == "active") else { return Ok(None) };
    Ok(Some(Principal {
        kind: PrincipalKind::Token,
        subject: row.owner_subject.clone(),
        email: None,
        display_name: format!("token “{}”", row.name),
        is_platform_operator: false,
        groups: Vec::new(),
        // `Ord` ranks Owner < Admin < Member: the larger is the lesser right.
        memberships: vec![Membership {
            cluster_tenant: cluster_tenant.clone(),
            role: token_role.max(owner_role),
            active: true,
        }],
        silo: None,
    }))
}

/// A silo credential's principal: only the fleet accepts one, only on its internal API, and only
/// while it is the credential in force for a customer not being deleted — except for that
/// customer's usage routes, which stay open while it is being deleted so its silo can report its
/// last days for billing. Anything else is `None` (401): a silo credential opens nothing but its
/// own silo's facts.
async fn silo_credential_principal(
    pool: &PgPool,
    scope: &Scope,
    path: &str,
    token: &str,
) -> Result<Option<Principal>, opencrane_db::Error> {
    if !matches!(scope, Scope::Fleet) || !path.starts_with("/api/internal/") {
        return Ok(None);
    }
    let fingerprint = opencrane_provision::credential::fingerprint(token);
    let usage = path
        .strip_prefix("/api/internal/cluster-tenants/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(_, rest)| rest == "usage" || rest.starts_with("usage/"));
    let holder = opencrane_fleet_db::silo_credentials::holder(pool, &fingerprint, usage).await?;
    // The usage routes still check the name in the path against the holder's own.
    Ok(holder.map(|name| Principal::silo(&name)))
}

/// Whether `host` (a `Host` header: a name and an optional port) names this machine's loopback
/// in a way no outside DNS can: `localhost` and its subdomains (RFC 6761: browsers resolve them
/// to loopback themselves), `127.0.0.1`, `[::1]`.
pub fn loopback_host(host: &str) -> bool {
    let is_port = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = host.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else { return false };
        return inside == "::1" && (after.is_empty() || after.strip_prefix(':').is_some_and(is_port));
    }
    let name = match host.rsplit_once(':') {
        Some((name, port)) if is_port(port) => name,
        Some(_) => return false,
        None => host,
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost") || name == "127.0.0.1"
}

/// The authentication middleware (state: the role's pool and settings).
pub async fn authenticate(State((auth, pool)): State<(AuthConfig, PgPool)>, mut req: Request, next: Next) -> Response {
    // The development identity signs in whoever reaches the server; a page on another site that
    // rebinds its own name to 127.0.0.1 would reach it too. In dev, only loopback names are served.
    if auth.0.dev_identity {
        // HTTP/2 carries it as the authority; a request with neither is no browser's.
        let host = req
            .headers()
            .get(header::HOST)
            .map(|h| h.to_str().unwrap_or("\u{0}").to_owned())
            .or_else(|| req.uri().authority().map(ToString::to_string));
        if host.is_some_and(|h| !loopback_host(&h)) {
            return envelope(
                StatusCode::MISDIRECTED_REQUEST,
                "MISDIRECTED_REQUEST",
                "In development this server answers only for localhost, 127.0.0.1 and [::1].",
                &request_id_of(&req),
                &FieldErrors::new(),
            );
        }
    }
    let bearer = req.headers().get(header::AUTHORIZATION).map(|v| {
        v.to_str().ok().and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer "))).map(str::trim)
    });
    let principal = match bearer {
        Some(Some(token)) => match auth.token_name(token) {
            Some(name) => Some(Principal::api_token(name)),
            None if token.starts_with(opencrane_provision::credential::PREFIX) => {
                match silo_credential_principal(&pool, &auth.0.scope, req.uri().path(), token).await {
                    Ok(Some(p)) => Some(p),
                    Ok(None) => return unauthorized(&req, "INVALID_TOKEN", "Invalid or revoked silo credential."),
                    Err(_) => return unavailable(&req),
                }
            }
            None if token.starts_with(app::service::silo::tokens::PREFIX) => {
                match access_token_principal(&pool, &auth.0.scope, token).await {
                    Ok(Some(p)) => Some(p),
                    Ok(None) => return unauthorized(&req, "INVALID_TOKEN", "Invalid, expired or revoked token."),
                    Err(_) => return unavailable(&req),
                }
            }
            None => return unauthorized(&req, "INVALID_TOKEN", "Invalid token."),
        },
        Some(None) => {
            return unauthorized(&req, "INVALID_TOKEN", "Malformed Authorization header; expected “Bearer <token>”.");
        }
        None => match req.extensions().get::<Session>().cloned() {
            Some(session) => match session_user(&auth, &pool, &session).await {
                Ok(Some((principal, id))) => {
                    req.extensions_mut().insert(CurrentSession(id));
                    Some(principal)
                }
                Ok(None) => None,
                Err(()) => return unavailable(&req),
            },
            None => None,
        }
        .or_else(|| auth.0.dev_identity.then(Principal::development)),
    };
    if let Some(principal) = principal {
        req.extensions_mut().insert(principal);
    }
    next.run(req).await
}

/// The signed-in user of `session`, if any and still within its lifetime; marks activity at most
/// once a minute (which extends the idle expiry). `Err` when the session store is unreachable.
async fn session_user(auth: &AuthConfig, pool: &PgPool, session: &Session) -> Result<Option<(Principal, String)>, ()> {
    let stored: Option<SessionUser> = match session.get(USER_KEY).await {
        Ok(stored) => stored,
        Err(err) => {
            tracing::warn!(error = %err, "session store unavailable");
            return Err(());
        }
    };
    let Some(stored) = stored else { return Ok(None) };
    let Some(id) = session.id().map(|id| id.to_string()) else { return Ok(None) };
    let now = Utc::now().timestamp();
    if now >= stored.expires_at {
        // Past the absolute lifetime: end it for good.
        let _ = opencrane_common_db::sessions::delete(pool, &id).await;
        let _ = session.flush().await;
        return Ok(None);
    }
    let seen: i64 = session.get(SEEN_KEY).await.ok().flatten().unwrap_or(0);
    if now - seen >= 60 {
        let _ = session.insert(SEEN_KEY, now).await;
        if let Err(err) = opencrane_common_db::sessions::touch(pool, &id, Utc::now()).await {
            tracing::warn!(error = %err, "could not record session activity");
        }
    }
    let principal = session_principal(pool, &auth.0.scope, &stored.user).await.map_err(|_| ())?;
    Ok(Some((principal, id)))
}

#[cfg(test)]
mod host_tests {
    use super::loopback_host;

    #[test]
    fn only_loopback_names_pass_in_dev() {
        for good in [
            "localhost",
            "localhost:3000",
            "127.0.0.1",
            "127.0.0.1:3000",
            "[::1]",
            "[::1]:3000",
            "demo.localhost:3901",
            "LOCALHOST.",
        ] {
            assert!(loopback_host(good), "{good}");
        }
        for bad in [
            "evil.example",
            "evil.example:3000",
            "127.0.0.1.nip.io",
            "localhost.evil.example",
            "[::2]:3000",
            "[::1]x",
            "127.0.0.2",
            "",
            "localhost:http",
        ] {
            assert!(!loopback_host(bad), "{bad}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_exactly() {
        let config = AuthConfig::tokens_only(
            vec![("dev".into(), "ocd_abc".into()), ("empty".into(), String::new())],
            false,
            Scope::Fleet,
            true,
        );
        assert_eq!(config.token_name("ocd_abc"), Some("dev"));
        assert_eq!(config.token_name("ocd_ab"), None);
        assert_eq!(config.token_name("ocd_abcd"), None);
        assert_eq!(config.token_name(""), None, "an empty configured token must never match");
    }

    #[test]
    fn cookie_names_carry_the_host_prefix_when_secure() {
        let secure = AuthConfig::tokens_only(Vec::new(), false, Scope::Fleet, true);
        assert_eq!(secure.cookie_name(), "__Host-opencrane-session");
        let plain = AuthConfig::tokens_only(Vec::new(), false, Scope::Fleet, false);
        assert_eq!(plain.cookie_name(), "opencrane-session");
    }
}
