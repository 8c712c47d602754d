//! The sign-in flow against a scripted OpenID Provider: a faithful fake on loopback (discovery,
//! JWKS, a token endpoint that checks the code once and PKCE S256), built from the OpenID Connect
//! Core and Discovery specifications, whose ID tokens each test shapes — correctly signed ones
//! with wrong claims, `alg: none`, broken signatures, unknown keys. The happy path against a real
//! provider is the browser test (`end2end`). Here every broken variant must be refused with no
//! session created, and the cookie attributes, id rotation and sign-out are checked.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Form, Json, Router,
    extract::State,
    http::{Method, StatusCode},
    routing::{get, post},
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use chrono::Utc;
use opencrane::http::{
    AuthConfig,
    auth::{
        AuthInner, OidcSetup, Scope,
        oidc::{ClientConfig, Provider, SignInPolicy},
    },
    ratelimit::RateLimiter,
};
use openidconnect::{
    Audience, EmptyAdditionalClaims, EndUserEmail, IssuerUrl, JsonWebKeyId, Nonce, PrivateSigningKey, StandardClaims,
    SubjectIdentifier,
    core::{CoreIdToken, CoreIdTokenClaims, CoreJwsSigningAlgorithm, CoreRsaPrivateSigningKey},
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::support::{self, Features, Reply, send_with};

const KEY_A: &str = include_str!("fixtures/oidc-key-a.pem");
const KEY_B: &str = include_str!("fixtures/oidc-key-b.pem");
const CLIENT: &str = "fleet-console";
const SECRET: &str = "fleet-console-secret";
const REDIRECT: &str = "https://fleet.test/api/v1/auth/callback";

/// How the fake provider shapes the next ID token.
#[derive(Clone, Debug, Default)]
struct Twist {
    nonce: Option<String>,
    audience: Option<String>,
    issuer: Option<String>,
    expired: bool,
    alg_none: bool,
    bad_signature: bool,
    key_b: bool,
    email_verified: Option<bool>,
    groups: Vec<String>,
}

#[derive(Default)]
struct OpState {
    issuer: String,
    /// code → (PKCE challenge, nonce)
    codes: HashMap<String, (String, String)>,
    used: Vec<String>,
    twist: Twist,
    publish_key_b: bool,
    jwks_fetches: usize,
}

type Shared = Arc<Mutex<OpState>>;

fn key(pem: &str, kid: &str) -> CoreRsaPrivateSigningKey {
    CoreRsaPrivateSigningKey::from_pem(pem, Some(JsonWebKeyId::new(kid.into()))).unwrap()
}

async fn discovery(State(op): State<Shared>) -> Json<Value> {
    let issuer = op.lock().unwrap().issuer.clone();
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/auth"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "end_session_endpoint": format!("{issuer}/session/end"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"]
    }))
}

async fn jwks(State(op): State<Shared>) -> Json<Value> {
    let mut state = op.lock().unwrap();
    state.jwks_fetches += 1;
    let mut keys = vec![serde_json::to_value(key(KEY_A, "a").as_verification_key()).unwrap()];
    if state.publish_key_b {
        keys.push(serde_json::to_value(key(KEY_B, "b").as_verification_key()).unwrap());
    }
    Json(json!({ "keys": keys }))
}

async fn token(State(op): State<Shared>, Form(form): Form<HashMap<String, String>>) -> (StatusCode, Json<Value>) {
    let bad =
        |why: &str| (StatusCode::BAD_REQUEST, Json(json!({ "error": "invalid_grant", "error_description": why })));
    let mut state = op.lock().unwrap();
    let code = form.get("code").cloned().unwrap_or_default();
    if state.used.contains(&code) {
        return bad("code already used");
    }
    let Some((challenge, nonce)) = state.codes.get(&code).cloned() else { return bad("unknown code") };
    state.used.push(code);
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != challenge {
        return bad("PKCE verification failed");
    }
    let twist = state.twist.clone();
    let now = Utc::now();
    let expires = if twist.expired { now - chrono::Duration::minutes(5) } else { now + chrono::Duration::minutes(5) };
    let issuer = twist.issuer.clone().unwrap_or_else(|| state.issuer.clone());
    let mut standard = StandardClaims::new(SubjectIdentifier::new("sub-ana".into()))
        .set_email(Some(EndUserEmail::new("ana@example.com".into())));
    standard = standard.set_email_verified(twist.email_verified.or(Some(true)));
    let claims = CoreIdTokenClaims::new(
        IssuerUrl::new(issuer).unwrap(),
        vec![Audience::new(twist.audience.clone().unwrap_or_else(|| CLIENT.into()))],
        expires,
        now,
        standard,
        EmptyAdditionalClaims {},
    )
    .set_nonce(Some(Nonce::new(twist.nonce.clone().unwrap_or(nonce))));
    let signer = if twist.key_b { key(KEY_B, "b") } else { key(KEY_A, "a") };
    let signed = CoreIdToken::new(claims, &signer, CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256, None, None)
        .unwrap()
        .to_string();
    let mut parts: Vec<String> = signed.split('.').map(str::to_owned).collect();
    if !twist.groups.is_empty() {
        // Re-sign with a groups claim added to the payload.
        let mut payload: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[1]).unwrap()).unwrap();
        payload["groups"] = json!(twist.groups);
        parts[1] = URL_SAFE_NO_PAD.encode(payload.to_string());
        let input = format!("{}.{}", parts[0], parts[1]);
        parts[2] = URL_SAFE_NO_PAD
            .encode(signer.sign(&CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256, input.as_bytes()).unwrap());
    }
    if twist.alg_none {
        parts[0] = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
        parts[2] = String::new();
    }
    if twist.bad_signature {
        let mut sig = URL_SAFE_NO_PAD.decode(&parts[2]).unwrap();
        sig[10] ^= 0xff;
        parts[2] = URL_SAFE_NO_PAD.encode(sig);
    }
    (
        StatusCode::OK,
        Json(
            json!({ "access_token": "at-123", "token_type": "Bearer", "expires_in": 300, "id_token": parts.join(".") }),
        ),
    )
}

/// Starts the fake provider; returns its issuer and shared state.
async fn fake_provider() -> (String, Shared) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let state: Shared = Arc::new(Mutex::new(OpState { issuer: issuer.clone(), ..Default::default() }));
    let app = Router::new()
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/jwks", get(jwks))
        .route("/token", post(token))
        .with_state(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (issuer, state)
}

fn fleet_with_oidc(pool: PgPool, issuer: &str) -> Router {
    let provider = Provider::new(issuer, Duration::ZERO).unwrap();
    let policy = SignInPolicy {
        scopes: vec!["openid".into(), "email".into(), "profile".into()],
        groups_claim: "groups".into(),
        roles_claim: "roles".into(),
        operator_groups: vec!["platform-ops".into()],
        ..Default::default()
    };
    let client =
        ClientConfig { client_id: CLIENT.into(), client_secret: Some(SECRET.into()), extra_scopes: Vec::new() };
    let auth = AuthConfig::new(AuthInner {
        tokens: Vec::new(),
        dev_identity: false,
        scope: Scope::Fleet,
        oidc: Some(OidcSetup {
            provider,
            policy,
            fallback: Some((client, REDIRECT.into())),
            org: None,
            post_logout_redirect: None,
        }),
        secure: true,
        session_max_age: Duration::from_secs(3600),
        session_idle: Duration::from_secs(600),
        trusted_proxies: Vec::new(),
        limiter: RateLimiter::new(1000, 1000),
    });
    let state = opencrane::fleet::fleet_state(
        opencrane::start::leptos_options(
            std::path::Path::new("target/site"),
            "127.0.0.1:0".parse().unwrap(),
            leptos::config::Env::DEV,
        ),
        pool,
        Some("example.com".into()),
        Features::default().cluster_tenants,
        true,
        true,
    );
    opencrane::http::router(state, auth)
}

fn set_cookies(reply: &Reply) -> Vec<String> {
    reply.headers.get_all("set-cookie").iter().filter_map(|v| v.to_str().ok().map(str::to_owned)).collect()
}

fn cookie_value(set_cookie: &[String], name: &str) -> Option<String> {
    set_cookie
        .iter()
        .filter_map(|c| c.split(';').next()?.split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_owned())
}

/// A sign-in started at the application: the provider URL's parameters and the login cookie.
struct Started {
    state: String,
    nonce: String,
    challenge: String,
    login_cookie: String,
    reply: Reply,
}

async fn start(app: &Router) -> Started {
    let reply =
        send_with(app, Method::GET, "/api/v1/auth/login?returnTo=/cluster-tenants", None, &[("host", "fleet.test")])
            .await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "{}", reply.text);
    let location = reply.headers["location"].to_str().unwrap().to_owned();
    let url = openidconnect::url::Url::parse(&location).unwrap();
    let param = |k: &str| url.query_pairs().find(|(n, _)| n == k).map(|(_, v)| v.into_owned()).unwrap_or_default();
    assert_eq!(param("code_challenge_method"), "S256");
    assert_eq!(param("client_id"), CLIENT);
    let cookies = set_cookies(&reply);
    let login_cookie = cookie_value(&cookies, "__Host-opencrane-login").expect("a login cookie");
    Started { state: param("state"), nonce: param("nonce"), challenge: param("code_challenge"), login_cookie, reply }
}

async fn callback(app: &Router, code: &str, state: &str, login_cookie: &str, extra_cookie: Option<&str>) -> Reply {
    let cookie = match extra_cookie {
        Some(extra) => format!("__Host-opencrane-login={login_cookie}; {extra}"),
        None => format!("__Host-opencrane-login={login_cookie}"),
    };
    let path = format!("/api/v1/auth/callback?code={code}&state={state}");
    send_with(app, Method::GET, &path, None, &[("host", "fleet.test"), ("cookie", &cookie)]).await
}

async fn sessions(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM user_sessions").fetch_one(pool).await.unwrap()
}

async fn failed_sign_ins(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'auth.sign_in' AND outcome = 'failure'")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Runs one sign-in with `twist`; the code is registered with `challenge` (the real one unless
/// overridden) and returned with `returned_state` (the real one unless overridden).
async fn attempt(
    app: &Router,
    op: &Shared,
    twist: Twist,
    challenge: Option<&str>,
    returned_state: Option<&str>,
) -> Reply {
    let started = start(app).await;
    let code = format!("code-{}", uuid::Uuid::new_v4().simple());
    {
        let mut state = op.lock().unwrap();
        state.twist = twist;
        state.codes.insert(code.clone(), (challenge.unwrap_or(&started.challenge).to_owned(), started.nonce.clone()));
    }
    callback(app, &code, returned_state.unwrap_or(&started.state), &started.login_cookie, None).await
}

#[sqlx::test(migrations = false)]
async fn a_valid_sign_in_creates_a_rotated_session_with_strict_cookies(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let (issuer, op) = fake_provider().await;
    let app = fleet_with_oidc(db.clone(), &issuer);

    let started = start(&app).await;
    let login_set = set_cookies(&started.reply).join("\n");
    assert!(
        login_set.contains("SameSite=Lax") && login_set.contains("HttpOnly") && login_set.contains("Secure"),
        "{login_set}"
    );
    assert!(
        login_set.contains("Max-Age=600") && login_set.contains("Path=/") && !login_set.contains("Domain"),
        "{login_set}"
    );

    op.lock().unwrap().codes.insert("good".into(), (started.challenge.clone(), started.nonce.clone()));
    op.lock().unwrap().twist = Twist { groups: vec!["platform-ops".into()], ..Default::default() };
    // A planted session id must not survive the sign-in (no fixation).
    let planted = "__Host-opencrane-session=AAAAAAAAAAAAAAAAAAAAAA";
    let reply = callback(&app, "good", &started.state, &started.login_cookie, Some(planted)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert!(reply.text.contains("url=/cluster-tenants"), "a same-origin step to the return path");
    let set = set_cookies(&reply);
    let session = set.iter().find(|c| c.starts_with("__Host-opencrane-session=")).expect("a session cookie");
    for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
        assert!(session.contains(attribute), "{attribute} missing: {session}");
    }
    assert!(!session.contains("Domain"), "{session}");
    let value = cookie_value(&set, "__Host-opencrane-session").unwrap();
    assert_ne!(value, "AAAAAAAAAAAAAAAAAAAAAA", "the session id is new");
    let cleared = set.iter().find(|c| c.starts_with("__Host-opencrane-login=")).expect("the login cookie is deleted");
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    assert_eq!(sessions(&db).await, 1);

    let cookie = format!("__Host-opencrane-session={value}");
    let me =
        send_with(&app, Method::GET, "/api/v1/auth/me", None, &[("cookie", &cookie), ("accept", "application/json")])
            .await;
    assert_eq!(me.json()["user"]["sub"], "sub-ana");
    assert_eq!(me.json()["user"]["isPlatformOperator"], true, "the groups claim made ana an operator");

    // Sign-out from this origin ends the session: the old cookie no longer authenticates.
    let out = send_with(
        &app,
        Method::POST,
        "/api/v1/auth/logout",
        None,
        &[
            ("cookie", &cookie),
            ("origin", "https://fleet.test"),
            ("host", "fleet.test"),
            ("accept", "application/json"),
        ],
    )
    .await;
    assert_eq!(out.status, StatusCode::OK, "{}", out.text);
    assert!(out.json()["endSessionUrl"].as_str().unwrap().contains("id_token_hint="));
    let after =
        send_with(&app, Method::GET, "/api/v1/auth/me", None, &[("cookie", &cookie), ("accept", "application/json")])
            .await;
    assert_eq!(after.json()["authenticated"], false);
    assert_eq!(sessions(&db).await, 0);
    // A sign-out from another site is refused.
    let forged = send_with(
        &app,
        Method::POST,
        "/api/v1/auth/logout",
        None,
        &[("origin", "https://evil.test"), ("host", "fleet.test")],
    )
    .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
}

/// Every broken variant is refused, audited as a failure, and leaves no session.
#[sqlx::test(migrations = false)]
async fn the_negative_suite_creates_no_session(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let (issuer, op) = fake_provider().await;
    let app = fleet_with_oidc(db.clone(), &issuer);
    let cases: Vec<(&str, Twist, Option<&str>, Option<&str>)> = vec![
        ("wrong state", Twist::default(), None, Some("not-the-state")),
        ("wrong PKCE verifier", Twist::default(), Some("a-different-challenge"), None),
        ("nonce mismatch", Twist { nonce: Some("other-nonce".into()), ..Default::default() }, None, None),
        ("wrong audience", Twist { audience: Some("someone-else".into()), ..Default::default() }, None, None),
        ("wrong issuer", Twist { issuer: Some("https://evil.test".into()), ..Default::default() }, None, None),
        ("expired token", Twist { expired: true, ..Default::default() }, None, None),
        ("alg none", Twist { alg_none: true, ..Default::default() }, None, None),
        ("bad signature", Twist { bad_signature: true, ..Default::default() }, None, None),
        ("unknown kid", Twist { key_b: true, ..Default::default() }, None, None),
        ("unverified email", Twist { email_verified: Some(false), ..Default::default() }, None, None),
    ];
    let total = cases.len();
    for (name, twist, challenge, state) in cases {
        let reply = attempt(&app, &op, twist, challenge, state).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{name}: {}", reply.text);
        assert!(
            !set_cookies(&reply).iter().any(|c| c.starts_with("__Host-opencrane-session=") && !c.contains("Max-Age=0")),
            "{name}"
        );
        assert_eq!(sessions(&db).await, 0, "{name} created a session");
        assert!(!reply.text.contains("nonce") && !reply.text.contains("signature"), "{name}: internals leaked");
    }
    assert_eq!(failed_sign_ins(&db).await, i64::try_from(total).unwrap());

    // Reused code: the first use succeeds, the replay (same code, same login cookie) does not.
    let started = start(&app).await;
    op.lock().unwrap().codes.insert("once".into(), (started.challenge.clone(), started.nonce.clone()));
    op.lock().unwrap().twist = Twist::default();
    let first = callback(&app, "once", &started.state, &started.login_cookie, None).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    let replay = callback(&app, "once", &started.state, &started.login_cookie, None).await;
    assert_eq!(replay.status, StatusCode::BAD_REQUEST);
    assert_eq!(sessions(&db).await, 1, "only the first use made a session");

    // No login cookie at all (a callback forged elsewhere).
    let forged =
        send_with(&app, Method::GET, "/api/v1/auth/callback?code=x&state=y", None, &[("host", "fleet.test")]).await;
    assert_eq!(forged.status, StatusCode::BAD_REQUEST);
}

/// A key rotation at the provider: a token signed with a new key is accepted after one JWKS
/// refetch.
#[sqlx::test(migrations = false)]
async fn a_rotated_signing_key_is_picked_up_with_one_refetch(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let (issuer, op) = fake_provider().await;
    let app = fleet_with_oidc(db.clone(), &issuer);
    let warm = attempt(&app, &op, Twist::default(), None, None).await;
    assert_eq!(warm.status, StatusCode::OK);
    let fetches_before = op.lock().unwrap().jwks_fetches;
    op.lock().unwrap().publish_key_b = true;
    let rotated = attempt(&app, &op, Twist { key_b: true, ..Default::default() }, None, None).await;
    assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.text);
    assert_eq!(op.lock().unwrap().jwks_fetches, fetches_before + 1, "exactly one refetch");
}

/// A silo with sign-in against the fake provider, admitted by the fleet at `fleet_url` with
/// `credential` (its own).
fn silo_with_oidc(pool: PgPool, issuer: &str, fleet_url: &str, credential: &str) -> Router {
    let provider = Provider::new(issuer, Duration::ZERO).unwrap();
    let policy = SignInPolicy {
        scopes: vec!["openid".into(), "email".into(), "profile".into()],
        groups_claim: "groups".into(),
        roles_claim: "roles".into(),
        ..Default::default()
    };
    let client =
        ClientConfig { client_id: CLIENT.into(), client_secret: Some(SECRET.into()), extra_scopes: Vec::new() };
    let fleet = opencrane::silo::sync::FleetLink {
        url: fleet_url.into(),
        token: opencrane::silo::sync::FleetToken::Value(credential.into()),
    };
    let auth = AuthConfig::new(AuthInner {
        tokens: Vec::new(),
        dev_identity: false,
        scope: Scope::Silo { cluster_tenant: "acme".into(), org_admin_groups: Vec::new(), fleet: Some(fleet) },
        oidc: Some(OidcSetup {
            provider,
            policy,
            fallback: Some((client, REDIRECT.into())),
            org: None,
            post_logout_redirect: None,
        }),
        secure: true,
        session_max_age: Duration::from_secs(3600),
        session_idle: Duration::from_secs(600),
        trusted_proxies: Vec::new(),
        limiter: RateLimiter::new(1000, 1000),
    });
    let state = opencrane::silo::silo_state(support::options(), pool, "acme".into(), Some("example.com".into()), true);
    opencrane::http::router(state, auth)
}

/// A person signing in to a silo is admitted by the fleet, over the fleet's real internal API:
/// their invitation (verified address) becomes a membership with its role and the sign-in is
/// recorded; a suspended member, a newcomer without a free seat and — while the fleet is away —
/// anybody the silo does not know as an active member get a page saying why, and no session.
#[sqlx::test(migrations = false)]
async fn the_fleet_admits_each_sign_in_to_a_silo(pool: PgPool) {
    let fleet_db = support::fleet_db(&pool).await;
    let silo_db = support::silo_db(&pool).await;
    sqlx::query("INSERT INTO cluster_tenants (name, display_name, seat_cap) VALUES ('acme', 'Acme', 2)")
        .execute(&fleet_db)
        .await
        .unwrap();
    sqlx::query("INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'otto', 'owner')")
        .execute(&fleet_db)
        .await
        .unwrap();
    opencrane_fleet_db::invitations::put(&fleet_db, "acme", "ana@example.com", "admin", "otto").await.unwrap();
    let credential = crate::trust::issue(&fleet_db, "acme").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let fleet_url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let server =
        tokio::spawn(opencrane::http::serve(listener, support::fleet_internal(fleet_db.clone()), async move {
            let _ = stopped.wait_for(|s| *s).await;
        }));
    let (issuer, op) = fake_provider().await;
    let silo = silo_with_oidc(silo_db.clone(), &issuer, &fleet_url, &credential);
    let membership = |db: PgPool| async move {
        sqlx::query_as::<_, (String, String, bool)>(
            "SELECT role, status, last_sign_in_at IS NOT NULL FROM org_memberships WHERE subject = 'sub-ana'",
        )
        .fetch_optional(&db)
        .await
        .unwrap()
    };

    // The invitation is accepted: admin, active, the sign-in recorded; the silo knows at once.
    let reply = attempt(&silo, &op, Twist::default(), None, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(membership(fleet_db.clone()).await, Some(("admin".into(), "active".into(), true)));
    let local = opencrane_silo_db::memberships::for_subject(&silo_db, "acme", "sub-ana").await.unwrap().unwrap();
    assert_eq!((local.role.as_str(), local.status.as_str()), ("admin", "active"));
    assert_eq!(sessions(&silo_db).await, 1);
    assert!(opencrane_fleet_db::invitations::list(&fleet_db, "acme").await.unwrap().is_empty());

    // Suspended on the fleet: refused with a page saying so, no session.
    sqlx::query("UPDATE org_memberships SET status = 'suspended' WHERE subject = 'sub-ana'")
        .execute(&fleet_db)
        .await
        .unwrap();
    let reply = attempt(&silo, &op, Twist::default(), None, None).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.text);
    assert!(reply.text.contains("Your access is suspended"), "{}", reply.text);
    assert_eq!(sessions(&silo_db).await, 1, "no new session");
    assert_eq!(membership(fleet_db.clone()).await.unwrap().1, "suspended", "a sign-in never reactivates");

    // Removed, and the one free seat taken by someone else: a newcomer without a seat.
    sqlx::query("DELETE FROM org_memberships WHERE subject = 'sub-ana'").execute(&fleet_db).await.unwrap();
    sqlx::query("INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'bea', 'member')")
        .execute(&fleet_db)
        .await
        .unwrap();
    let reply = attempt(&silo, &op, Twist::default(), None, None).await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.text);
    assert!(reply.text.contains("No free seat"), "{}", reply.text);
    assert_eq!(membership(fleet_db.clone()).await, None);
    let denied: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'auth.sign_in' AND outcome = 'denied'")
            .fetch_one(&silo_db)
            .await
            .unwrap();
    assert_eq!(denied, 2, "each refusal is audited on the silo");

    // The fleet goes away: a person the silo knows as an active member signs in (last known
    // good); one it does not know is asked to try again.
    let _ = stop.send(true);
    server.await.unwrap().unwrap();
    opencrane_silo_db::memberships::upsert(&silo_db, "acme", "sub-ana", "admin", "suspended").await.unwrap();
    let reply = attempt(&silo, &op, Twist::default(), None, None).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{}", reply.text);
    assert!(reply.text.contains("could not confirm your membership"), "{}", reply.text);
    opencrane_silo_db::memberships::upsert(&silo_db, "acme", "sub-ana", "admin", "active").await.unwrap();
    let reply = attempt(&silo, &op, Twist::default(), None, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(sessions(&silo_db).await, 2);
}

/// A session ended while a request holding it is in flight stays ended: the request saves its
/// record at its end, and that save only updates an existing record (an upsert re-created it,
/// outside the sessions index, signed in again). A record without its index row never loads.
#[sqlx::test(migrations = false)]
async fn a_session_ended_during_a_request_stays_ended(pool: PgPool) {
    use tower_sessions::{SessionStore as _, session::Id};
    let db = support::fleet_db(&pool).await;
    let cookie = support::session_cookie(&db, "otto", false, false).await;
    let id: Id = cookie.split_once('=').unwrap().1.parse().unwrap();
    let store = opencrane::http::auth::store::PgSessionStore::new(db.clone());
    // The request in flight has loaded its session…
    let held = store.load(&id).await.unwrap().expect("the session loads");
    // …the person signs out everywhere meanwhile…
    assert_eq!(opencrane_common_db::sessions::delete_for_subject(&db, "otto", None).await.unwrap().len(), 1);
    // …and the request ends, saving what it holds.
    store.save(&held).await.unwrap();
    let records: i64 = sqlx::query_scalar("SELECT count(*) FROM tower_sessions.session WHERE id = $1")
        .bind(id.to_string())
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(records, 0, "the ended session was not re-created");
    assert!(store.load(&id).await.unwrap().is_none());
    let fleet = support::fleet_signed_in(db.clone());
    let me = support::send_as(&fleet, Method::GET, "/api/v1/auth/me", None, &support::browser(&cookie)).await;
    assert_eq!(me.json()["authenticated"], false, "{}", me.text);

    // A record whose index row is gone (written around the index) is no session.
    let orphan = support::session_cookie(&db, "mia", false, false).await;
    let orphan_id = orphan.split_once('=').unwrap().1.to_owned();
    sqlx::query("DELETE FROM user_sessions WHERE session_id = $1").bind(&orphan_id).execute(&db).await.unwrap();
    assert!(store.load(&orphan_id.parse().unwrap()).await.unwrap().is_none());
    let me = support::send_as(&fleet, Method::GET, "/api/v1/auth/me", None, &support::browser(&orphan)).await;
    assert_eq!(me.json()["authenticated"], false, "{}", me.text);
}

/// Dev mode's loopback identity is not reachable through DNS rebinding: with the development
/// identity on, a request naming any other host is refused (421) before anyone is signed in.
#[sqlx::test(migrations = false)]
async fn the_development_identity_answers_loopback_names_only(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet(db, support::Features::default(), true);
    for (host, status) in [
        ("127.0.0.1:3000", StatusCode::OK),
        ("localhost:3000", StatusCode::OK),
        ("[::1]:3000", StatusCode::OK),
        ("demo.localhost:3001", StatusCode::OK),
        ("rebound.attacker.example:3000", StatusCode::MISDIRECTED_REQUEST),
        ("127.0.0.1.nip.io", StatusCode::MISDIRECTED_REQUEST),
    ] {
        let reply = support::send_as(&fleet, Method::GET, "/api/v1/auth/me", None, &[("host", host.to_owned())]).await;
        assert_eq!(reply.status, status, "{host}: {}", reply.text);
        if status == StatusCode::OK {
            assert_eq!(reply.json()["user"]["sub"], "dev-local-subject", "{}", reply.text);
        } else {
            assert_eq!(reply.json()["code"], "MISDIRECTED_REQUEST");
        }
    }
}
