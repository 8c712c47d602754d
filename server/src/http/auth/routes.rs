//! `/api/v1/auth/{login,callback,logout,me}`.
//!
//! Sign-in keeps its transaction (state, nonce, PKCE verifier, return path, client) in a
//! short-lived `SameSite=Lax` cookie, so the provider's redirect back can carry it; the callback
//! deletes it, rotates the session id and records the session. Every sign-in, failed sign-in and
//! sign-out is audited.

use app::{
    model::principal::{OrgRole, Principal, PrincipalKind},
    state::{AppState, Caller},
};
use axum::{
    Extension, Json, Router,
    extract::{Query, Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Redirect, Response},
    routing::{get, post},
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tower_sessions::{
    Session,
    cookie::{Cookie, SameSite, time::Duration as CookieDuration},
};

use super::{AuthConfig, SessionUser, USER_KEY, constant_time_eq, oidc::ClientConfig};
use crate::http::{error::envelope, ratelimit};

/// Login transactions older than this are refused (and the cookie expires then too).
const LOGIN_TTL_SECONDS: i64 = 600;

/// The auth routes (mounted under `/api/v1`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/auth/login", get(login))
        .route("/auth/callback", get(callback))
        .route("/auth/logout", post(logout))
        .route("/auth/me", get(me))
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct LoginTransaction {
    state: String,
    nonce: String,
    verifier: String,
    return_to: String,
    client_id: String,
    created: i64,
}

/// Only same-origin paths: `/x`, never `//evil`, `/\evil` or a URL.
pub fn safe_return_to(raw: Option<&str>) -> String {
    match raw {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.starts_with("/\\")
                && !path.chars().any(|c| c.is_control())
                && !path.starts_with("/api/v1/auth/") =>
        {
            path.to_owned()
        }
        _ => "/".to_owned(),
    }
}

fn host(headers: &HeaderMap) -> String {
    headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("localhost").to_owned()
}

fn hostname(host: &str) -> &str {
    // `[::1]:3000` → `[::1]`; `acme.example.com:443` → `acme.example.com`.
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) && !name.is_empty() => name,
        _ => host,
    }
}

/// The client to use for a request: on a silo, the organisation's client when the request came
/// to one of its hosts (redirect URI on that host); otherwise the configured client.
fn choose_client(auth: &AuthConfig, headers: &HeaderMap) -> Option<(ClientConfig, String)> {
    let oidc = auth.0.oidc.as_ref()?;
    let host = host(headers);
    if let Some(org) = &oidc.org
        && org.hosts.iter().any(|h| h.eq_ignore_ascii_case(hostname(&host)))
    {
        let scheme = if auth.0.secure { "https" } else { "http" };
        return Some((org.client.clone(), format!("{scheme}://{host}/api/v1/auth/callback")));
    }
    oidc.fallback.clone()
}

/// The client a callback names — only one this server is configured with.
fn client_by_id(auth: &AuthConfig, headers: &HeaderMap, client_id: &str) -> Option<(ClientConfig, String)> {
    choose_client(auth, headers).filter(|(client, _)| client.client_id == client_id)
}

fn login_cookie(auth: &AuthConfig, value: String, max_age: i64) -> HeaderValue {
    let cookie = Cookie::build((auth.login_cookie_name(), value))
        .path("/")
        .http_only(true)
        .secure(auth.0.secure)
        .same_site(SameSite::Lax)
        .max_age(CookieDuration::seconds(max_age))
        .build();
    HeaderValue::from_str(&cookie.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""))
}

fn read_login_cookie(auth: &AuthConfig, headers: &HeaderMap) -> Option<LoginTransaction> {
    let value = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == auth.login_cookie_name())?
        .value()
        .to_owned();
    let bytes = URL_SAFE_NO_PAD.decode(value).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn client_ip(auth: &AuthConfig, req: &Request) -> Option<std::net::IpAddr> {
    ratelimit::client_ip(req, &auth.0.trusted_proxies)
}

fn too_many(request_id: &str) -> Response {
    let mut res = envelope(
        StatusCode::TOO_MANY_REQUESTS,
        "RATE_LIMITED",
        "Too many sign-in attempts. Wait a minute and try again.",
        request_id,
        &app::error::FieldErrors::new(),
    );
    res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
    res
}

/// A small HTML page for sign-in outcomes (the callback is a top-level navigation).
fn page(status: StatusCode, title: &str, body: &str, link: (&str, &str)) -> Response {
    let escape = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    let html = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
         <link rel=\"stylesheet\" href=\"/pkg/opencrane.css\"></head><body><main class=\"error-view\">\
         <h1>{t}</h1><p>{b}</p><p><a class=\"btn primary\" href=\"{h}\">{l}</a></p></main></body></html>",
        t = escape(title),
        b = escape(body),
        h = escape(link.0),
        l = escape(link.1)
    );
    (status, Html(html)).into_response()
}

/// The page for a sign-in that failed on our side (storage, audit): nothing to fix but waiting.
fn try_later() -> Response {
    page(StatusCode::SERVICE_UNAVAILABLE, "Sign-in unavailable", "Please try again in a moment.", ("/", "Home"))
}

#[derive(Deserialize)]
struct LoginQuery {
    #[serde(rename = "returnTo")]
    return_to: Option<String>,
    prompt: Option<String>,
}

/// `GET /auth/login?returnTo=`: redirect to the provider.
async fn login(
    Extension(auth): Extension<AuthConfig>,
    caller: Caller,
    Query(query): Query<LoginQuery>,
    req: Request,
) -> Response {
    if !auth.0.limiter.allow(client_ip(&auth, &req)) {
        return too_many(&caller.request_id);
    }
    let Some(oidc) = auth.0.oidc.as_ref() else {
        return envelope(
            StatusCode::SERVICE_UNAVAILABLE,
            "OIDC_NOT_CONFIGURED",
            "Sign-in is not configured on this server.",
            &caller.request_id,
            &app::error::FieldErrors::new(),
        );
    };
    let Some((client, redirect)) = choose_client(&auth, req.headers()) else {
        return page(StatusCode::NOT_FOUND, "No sign-in here", "This host has no sign-in client.", ("/", "Home"));
    };
    match oidc.provider.begin(&client, &redirect, &oidc.policy).await {
        Ok((mut url, secrets)) => {
            if let Some(prompt) =
                query.prompt.filter(|p| ["login", "consent", "select_account", "none"].contains(&p.as_str()))
            {
                url.query_pairs_mut().append_pair("prompt", &prompt);
            }
            let transaction = LoginTransaction {
                state: secrets.state,
                nonce: secrets.nonce,
                verifier: secrets.verifier,
                return_to: safe_return_to(query.return_to.as_deref()),
                client_id: client.client_id,
                created: Utc::now().timestamp(),
            };
            let value = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&transaction).unwrap_or_default());
            let mut res = Redirect::to(url.as_str()).into_response();
            res.headers_mut().append(header::SET_COOKIE, login_cookie(&auth, value, LOGIN_TTL_SECONDS));
            res
        }
        Err(err) => {
            tracing::warn!(request_id = %caller.request_id, error = %err, "sign-in could not start");
            page(StatusCode::SERVICE_UNAVAILABLE, "Sign-in unavailable", err.public(), ("/", "Home"))
        }
    }
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /auth/callback`: finish the sign-in and start the session.
async fn callback(
    Extension(auth): Extension<AuthConfig>,
    State(state): State<AppState>,
    caller: Caller,
    session: Session,
    Query(query): Query<CallbackQuery>,
    req: Request,
) -> Response {
    if !auth.0.limiter.allow(client_ip(&auth, &req)) {
        return too_many(&caller.request_id);
    }
    let headers = req.headers().clone();
    let clear = login_cookie(&auth, String::new(), 0);
    let fail = |reason: String, public: &str| {
        let state = state.clone();
        let caller = caller.clone();
        let public = public.to_owned();
        let clear = clear.clone();
        async move {
            tracing::warn!(request_id = %caller.request_id, reason = %reason, "sign-in failed");
            let meta = json!({ "reason": reason });
            if let Err(err) = app::service::record_sign_in(&state, &caller, "auth.sign_in", "failure", meta).await {
                tracing::warn!(error = %err, "could not record a failed sign-in");
            }
            let mut res = page(StatusCode::BAD_REQUEST, "Sign-in failed", &public, ("/api/v1/auth/login", "Try again"));
            res.headers_mut().append(header::SET_COOKIE, clear);
            res
        }
    };
    let Some(oidc) = auth.0.oidc.as_ref() else {
        return fail("OIDC not configured".into(), "Sign-in is not configured on this server.").await;
    };
    let Some(transaction) = read_login_cookie(&auth, &headers) else {
        return fail(
            "no login transaction cookie".into(),
            "The sign-in expired or was started elsewhere. Please start again.",
        )
        .await;
    };
    if Utc::now().timestamp() - transaction.created > LOGIN_TTL_SECONDS {
        return fail("login transaction expired".into(), "The sign-in took too long. Please start again.").await;
    }
    if let Some(error) = query.error {
        return fail(format!("provider error: {error}"), "The identity provider did not sign you in.").await;
    }
    let (Some(code), Some(returned_state)) = (query.code, query.state) else {
        return fail("code or state missing".into(), "Sign-in could not be completed. Please try again.").await;
    };
    if !constant_time_eq(returned_state.as_bytes(), transaction.state.as_bytes()) {
        return fail("state mismatch".into(), "Sign-in could not be completed. Please try again.").await;
    }
    let Some((client, redirect)) = client_by_id(&auth, &headers, &transaction.client_id) else {
        return fail("unknown client in transaction".into(), "Sign-in could not be completed. Please try again.").await;
    };
    let secrets = super::oidc::LoginSecrets {
        state: transaction.state.clone(),
        nonce: transaction.nonce.clone(),
        verifier: transaction.verifier.clone(),
    };
    let user = match oidc.provider.finish(&client, &redirect, &code, &secrets, &oidc.policy).await {
        Ok(user) => user,
        Err(err) => return fail(err.to_string(), err.public()).await,
    };
    if let Some(mut refused) = admit_on_silo(&auth, &state, &caller, &user).await {
        refused.headers_mut().append(header::SET_COOKIE, clear);
        return refused;
    }

    // A new session id for the new identity (no fixation), then the session's record and index.
    let now = Utc::now();
    let max_age = chrono::Duration::from_std(auth.0.session_max_age).unwrap_or(chrono::Duration::hours(12));
    let stored = SessionUser {
        user: user.clone(),
        client_id: client.client_id.clone(),
        authenticated_at: now.timestamp(),
        expires_at: (now + max_age).timestamp(),
    };
    let started = async {
        session.cycle_id().await?;
        session.insert(USER_KEY, &stored).await?;
        session.save().await?;
        Ok::<_, tower_sessions::session::Error>(session.id().map(|id| id.to_string()))
    }
    .await;
    let Ok(Some(session_id)) = started else {
        tracing::error!(request_id = %caller.request_id, "could not store the session");
        return try_later();
    };
    let ip = client_ip(&auth, &req).map(|ip| ip.to_string()).unwrap_or_default();
    let agent: String =
        headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default().chars().take(300).collect();
    let row = opencrane_common_db::sessions::SessionRow {
        session_id,
        subject: user.subject.clone(),
        email: user.email.clone(),
        display_name: user.name.clone().unwrap_or_default(),
        user_agent: agent,
        ip,
        created_at: now,
        last_seen_at: now,
        expires_at: now + max_age,
    };
    let principal = match super::session_principal(&state.pool, &auth.0.scope, &user).await {
        Ok(p) => p,
        Err(err) => {
            tracing::error!(request_id = %caller.request_id, error = %err, "could not load memberships");
            let _ = session.flush().await;
            return try_later();
        }
    };
    let signed_in = Caller { principal: Some(principal), ..caller.clone() };
    let meta = json!({ "client": client.client_id, "operator": user.is_platform_operator });
    let recorded = async {
        opencrane_common_db::sessions::insert(&state.pool, &row).await.map_err(|e| e.to_string())?;
        app::service::record_sign_in(&state, &signed_in, "auth.sign_in", "success", meta)
            .await
            .map_err(|e| e.to_string())
    }
    .await;
    if recorded.is_ok() && matches!(state.role, app::state::RoleSettings::Silo(_)) {
        // A member's first sign-in creates their user record; their IdP groups are mirrored.
        // Best effort: the sign-in stands even if this fails (it is retried at the next one).
        if let Err(err) = app::service::silo::users::adopt(&state, &signed_in).await {
            tracing::warn!(request_id = %caller.request_id, error = %err, "could not adopt the member");
        }
    }
    if let Err(err) = recorded {
        // Fail closed: no audit record, no session.
        tracing::error!(request_id = %caller.request_id, error = %err, "could not record the sign-in");
        let _ = opencrane_common_db::sessions::delete(&state.pool, &row.session_id).await;
        let _ = session.flush().await;
        return try_later();
    }
    // A same-origin step before the return path: a `SameSite=Strict` session cookie is not sent
    // on a navigation that a cross-site redirect (the provider's) started.
    let target = transaction.return_to;
    let escaped = target.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;");
    let html = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"0;url={escaped}\">\
         <title>Signed in</title></head><body><p>Signed in. <a href=\"{escaped}\">Continue</a></p></body></html>"
    );
    let mut res = (StatusCode::OK, Html(html)).into_response();
    res.headers_mut().append(header::SET_COOKIE, clear);
    res
}

/// On a silo run by a fleet, the fleet admits each person signing in: it records the sign-in,
/// accepts an invitation for their verified address, adopts a newcomer as a member within the seat
/// cap, and refuses a suspended member. `Some` is the page for a refusal (no session starts).
/// When the fleet cannot be asked, an active member of the silo's read-model signs in (the last
/// known good state) and anybody else is asked to try again.
async fn admit_on_silo(
    auth: &AuthConfig,
    state: &AppState,
    caller: &Caller,
    user: &super::oidc::VerifiedUser,
) -> Option<Response> {
    use crate::silo::sync::{self, AdmitError};
    let super::Scope::Silo { cluster_tenant, fleet: Some(link), .. } = &auth.0.scope else { return None };
    if user.is_platform_operator {
        return None;
    }
    let request = app::model::fleet::members::AdmitRequest {
        subject: user.subject.clone(),
        email: user.email.clone(),
        email_verified: user.email_verified == Some(true),
    };
    let client = openidconnect::reqwest::Client::new();
    let (status, title, body, reason) = match sync::admit(&client, link, cluster_tenant, &request).await {
        Ok(admitted) => {
            // The read-model learns it now rather than at the next pull.
            let stored = opencrane_silo_db::memberships::upsert(
                &state.pool,
                cluster_tenant,
                &admitted.subject,
                &admitted.role,
                "active",
            )
            .await;
            if let Err(err) = stored {
                tracing::warn!(request_id = %caller.request_id, error = %err, "could not store the admitted membership");
            }
            return None;
        }
        Err(AdmitError::Suspended) => (
            StatusCode::FORBIDDEN,
            "Your access is suspended",
            "An owner or admin of your organisation has suspended your membership. Ask them to reactivate it, then sign in again.",
            "MEMBER_SUSPENDED".to_owned(),
        ),
        Err(AdmitError::NoSeat) => (
            StatusCode::CONFLICT,
            "No free seat",
            "Every seat of your organisation is taken. Ask an owner to free a seat or to raise the seat cap, then sign in again.",
            "SEAT_CAP_EXCEEDED".to_owned(),
        ),
        Err(AdmitError::Refused(code)) => (
            StatusCode::FORBIDDEN,
            "No access here",
            "This organisation does not admit new sign-ins right now. Ask your administrator.",
            code,
        ),
        Err(AdmitError::Unavailable(err)) => {
            tracing::warn!(request_id = %caller.request_id, error = %format!("{err:#}"), "the fleet could not admit a sign-in");
            let known = opencrane_silo_db::memberships::for_subject(&state.pool, cluster_tenant, &user.subject).await;
            if matches!(known, Ok(Some(ref m)) if m.status == "active") {
                return None;
            }
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "Sign-in unavailable",
                "We could not confirm your membership just now. Please try again in a moment.",
                "FLEET_UNAVAILABLE".to_owned(),
            )
        }
    };
    let meta = json!({ "reason": reason, "subject": user.subject });
    if let Err(err) = app::service::record_sign_in(state, caller, "auth.sign_in", "denied", meta).await {
        tracing::warn!(request_id = %caller.request_id, error = %err, "could not record a refused sign-in");
    }
    Some(page(status, title, body, ("/", "Home")))
}

/// `POST /auth/logout`: end the session; answers `{endSessionUrl}` (JSON), or for a browser
/// form post a redirect to the provider's logout (or home).
async fn logout(
    Extension(auth): Extension<AuthConfig>,
    State(state): State<AppState>,
    caller: Caller,
    session: Session,
    headers: HeaderMap,
) -> Response {
    let stored: Option<SessionUser> = session.get(USER_KEY).await.ok().flatten();
    let mut end_session_url = None;
    if let Some(stored) = &stored {
        if let Some(id) = session.id().map(|id| id.to_string()) {
            let _ = opencrane_common_db::sessions::delete(&state.pool, &id).await;
        }
        if let Err(err) = app::service::record_sign_in(&state, &caller, "auth.sign_out", "success", json!({})).await {
            tracing::warn!(request_id = %caller.request_id, error = %err, "could not record a sign-out");
        }
        if let Some(oidc) = auth.0.oidc.as_ref() {
            let scheme = if auth.0.secure { "https" } else { "http" };
            let home = format!("{scheme}://{}/", host(&headers));
            let after = oidc.post_logout_redirect.clone().unwrap_or(home);
            end_session_url =
                oidc.provider.end_session_url(&stored.user.id_token, &stored.client_id, Some(&after)).await;
        }
    }
    if let Err(err) = session.flush().await {
        tracing::warn!(request_id = %caller.request_id, error = %err, "could not delete the session record");
    }
    let wants_html = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("text/html"));
    if wants_html {
        Redirect::to(end_session_url.as_deref().unwrap_or("/")).into_response()
    } else {
        Json(json!({ "endSessionUrl": end_session_url })).into_response()
    }
}

/// `GET /auth/me`: who the server thinks is calling, with the original's `isOrgAdmin` (an operator,
/// or an active owner or admin of a customer), `ownedOrgs` (those customers, with the role) and, on
/// a silo, `clusterTenant` (the silo's customer).
async fn me(
    State(state): State<AppState>,
    caller: Caller,
    Extension(auth): Extension<AuthConfig>,
) -> Json<serde_json::Value> {
    let mode = match caller.principal.as_ref().map(|p| p.kind) {
        Some(PrincipalKind::Development) => "development",
        Some(PrincipalKind::User) => "oidc",
        Some(PrincipalKind::Token) => "token",
        None if auth.0.oidc.is_some() => "oidc",
        None => "token",
    };
    let user = caller.principal.as_ref().map(|p| {
        json!({
            "sub": p.subject,
            "email": p.email,
            "name": p.display_name,
            "kind": p.kind,
            "role": p.role_label(),
            "isPlatformOperator": p.is_platform_operator,
            "groups": p.groups,
            "memberships": p.memberships,
            "isOrgAdmin": p.is_platform_operator || !owned_orgs(p).is_empty(),
            "ownedOrgs": owned_orgs(p),
        })
    });
    let mut body = json!({ "mode": mode, "authenticated": user.is_some(), "user": user });
    if let Ok(silo) = state.silo() {
        body["clusterTenant"] = json!(silo.cluster_tenant);
    }
    Json(body)
}

/// The customers `p` administers (active owner or admin), as the original's `ownedOrgs`.
fn owned_orgs(p: &Principal) -> Vec<serde_json::Value> {
    p.memberships
        .iter()
        .filter(|m| m.active && matches!(m.role, OrgRole::Owner | OrgRole::Admin))
        .map(|m| json!({ "clusterTenant": m.cluster_tenant, "role": m.role }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_paths_stay_on_this_origin() {
        assert_eq!(safe_return_to(Some("/cluster-tenants?q=a")), "/cluster-tenants?q=a");
        for bad in ["//evil.test/x", "/\\evil.test", "https://evil.test", "evil", "", "/api/v1/auth/logout", "/a\nb"] {
            assert_eq!(safe_return_to(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(safe_return_to(None), "/");
    }

    #[test]
    fn hostnames_drop_the_port() {
        assert_eq!(hostname("acme.example.com:3001"), "acme.example.com");
        assert_eq!(hostname("acme.example.com"), "acme.example.com");
        assert_eq!(hostname("[::1]:80"), "[::1]");
    }
}
