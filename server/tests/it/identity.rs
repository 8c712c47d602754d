//! Sessions, access tokens, the audit log (including failing closed), security headers and the
//! sign-in rate limit.

use axum::http::{Method, StatusCode};
use serde_json::json;
use sqlx::PgPool;

use crate::support::{self, Features, browser, create_body, send, send_as, session_cookie};

#[sqlx::test(migrations = false)]
async fn silo_admins_end_members_sessions_and_members_cannot_end_others(pool: PgPool) {
    let (db, app, owner) = support::silo_with_otto_and_mia(&pool).await;
    let mia_laptop = browser(&session_cookie(&db, "mia", false, false).await);
    let mia_phone = browser(&session_cookie(&db, "mia", false, false).await);

    // The owner sees the member's two sessions and their own; the member sees only hers.
    let seen = send_as(&app, Method::POST, "/api/silo/sessions/list", Some("{}"), &owner).await.json();
    assert_eq!(seen.as_array().unwrap().len(), 3, "{seen}");
    let hers = send_as(&app, Method::POST, "/api/silo/sessions/list", Some("{}"), &mia_laptop).await.json();
    assert_eq!(hers.as_array().unwrap().len(), 2);
    assert!(hers.as_array().unwrap().iter().all(|s| s["subject"] == "mia"));
    assert_eq!(hers.as_array().unwrap().iter().filter(|s| s["current"] == true).count(), 1);
    assert!(!hers.to_string().contains("opencrane-session"), "handles, never session ids");

    // A member cannot end someone else's sessions.
    let refused = send_as(
        &app,
        Method::POST,
        "/api/silo/sessions/revoke",
        Some(r#"{"what":{"scope":"allOf","subject":"otto"}}"#),
        &mia_laptop,
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text);

    // "Sign out my other sessions" keeps the current one.
    let ended =
        send_as(&app, Method::POST, "/api/silo/sessions/revoke", Some(r#"{"what":{"scope":"myOthers"}}"#), &mia_laptop)
            .await;
    assert_eq!(ended.json(), json!(1));
    let me = |headers: Vec<(&'static str, String)>| {
        let app = app.clone();
        async move { send_as(&app, Method::GET, "/api/v1/auth/me", None, &headers).await.json()["authenticated"].clone() }
    };
    assert_eq!(me(mia_phone.clone()).await, json!(false), "the other session ended");
    assert_eq!(me(mia_laptop.clone()).await, json!(true));

    // The owner ends all of the member's sessions: effective on her next request.
    let all = send_as(
        &app,
        Method::POST,
        "/api/silo/sessions/revoke",
        Some(r#"{"what":{"scope":"allOf","subject":"mia"}}"#),
        &owner,
    )
    .await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.text);
    assert_eq!(me(mia_laptop).await, json!(false));
    let audit: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'session.revoke' AND outcome = 'success'")
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(audit, 2);
}

#[sqlx::test(migrations = false)]
async fn access_tokens_act_with_at_most_their_creators_role(pool: PgPool) {
    let (db, app, owner) = support::silo_with_otto_and_mia(&pool).await;

    let bad = send_as(
        &app,
        Method::POST,
        "/api/silo/tokens/create",
        Some(r#"{"request":{"name":" ","role":"owner","expiresInDays":0}}"#),
        &owner,
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let fields = bad.json()["fields"].clone();
    for field in ["name", "role", "expiresInDays"] {
        assert!(fields[field].is_string(), "{field} in {fields}");
    }
    let created = send_as(
        &app,
        Method::POST,
        "/api/silo/tokens/create",
        Some(r#"{"request":{"name":"ci","role":"admin","expiresInDays":30}}"#),
        &owner,
    )
    .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let secret = created.json()["plainTextToken"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("ocp_") && secret.len() == 52, "{secret}");
    let stored: Vec<u8> = sqlx::query_scalar("SELECT token_hash FROM access_tokens").fetch_one(&db).await.unwrap();
    assert_eq!(stored.len(), 32, "only the SHA-256 is stored");
    let listed = send_as(&app, Method::POST, "/api/silo/tokens/list", Some("{}"), &owner).await;
    assert!(!listed.text.contains(&secret[4..]), "the secret never comes back");

    let bearer = vec![("authorization", format!("Bearer {secret}")), ("accept", "application/json".to_owned())];
    let as_token = send_as(&app, Method::POST, "/api/silo/members/list", Some("{}"), &bearer).await;
    assert_eq!(as_token.status, StatusCode::OK, "an admin token administers: {}", as_token.text);

    // The creator is demoted to member: the token drops to member rights with them.
    opencrane_silo_db::memberships::upsert(&db, "acme", "otto", "member", "active").await.unwrap();
    let demoted = send_as(&app, Method::POST, "/api/silo/members/list", Some("{}"), &bearer).await;
    assert_eq!(demoted.status, StatusCode::FORBIDDEN);
    // The creator is suspended: the token stops working.
    opencrane_silo_db::memberships::upsert(&db, "acme", "otto", "owner", "suspended").await.unwrap();
    let suspended = send_as(&app, Method::POST, "/api/silo/overview", Some("{}"), &bearer).await;
    assert_eq!(suspended.status, StatusCode::UNAUTHORIZED);
    // A member cannot mint an admin token.
    let mia = browser(&session_cookie(&db, "mia", false, false).await);
    let escalation = send_as(
        &app,
        Method::POST,
        "/api/silo/tokens/create",
        Some(r#"{"request":{"name":"x","role":"admin"}}"#),
        &mia,
    )
    .await;
    assert_eq!(escalation.status, StatusCode::FORBIDDEN, "members do not administer tokens at all");
}

#[sqlx::test(migrations = false)]
async fn every_mutation_is_audited_and_fails_closed_without_its_record(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let app = support::fleet(db.clone(), Features::default(), false);
    let created = send(&app, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("acme")), true).await;
    assert_eq!(created.status, StatusCode::CREATED);
    let forged =
        send(&app, Method::PUT, "/api/v1/cluster-tenants/acme", Some(r#"{"displayName":"Acme\r\nINFO forged"}"#), true)
            .await;
    assert_eq!(forged.status, StatusCode::BAD_REQUEST, "control characters are refused at the door");
    send(&app, Method::PUT, "/api/v1/cluster-tenants/acme", Some(r#"{"displayName":"Acme Two"}"#), true).await;
    send(&app, Method::DELETE, "/api/v1/cluster-tenants/acme", None, true).await;
    let rows: Vec<(String, String, String, String, Option<String>)> =
        sqlx::query_as("SELECT actor, actor_role, action, outcome, request_id FROM audit_log ORDER BY id")
            .fetch_all(&db)
            .await
            .unwrap();
    let actions: Vec<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(actions, ["cluster_tenant.create", "cluster_tenant.update", "cluster_tenant.delete"]);
    assert!(rows.iter().all(|r| r.0 == "token:test" && r.1 == "service token" && r.3 == "success" && r.4.is_some()));
    let meta: serde_json::Value =
        sqlx::query_scalar("SELECT metadata FROM audit_log WHERE action = 'cluster_tenant.update'")
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(meta["before"]["displayName"], "acme Corp");
    assert_eq!(meta["after"]["displayName"], "Acme Two", "before and after values are recorded");

    // The audit log refuses writes: the mutation must not happen.
    sqlx::query("ALTER TABLE audit_log ADD CONSTRAINT audit_frozen CHECK (false) NOT VALID")
        .execute(&db)
        .await
        .unwrap();
    let refused = send(&app, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("beta")), true).await;
    assert_eq!(refused.status, StatusCode::INTERNAL_SERVER_ERROR);
    let gone = send(&app, Method::GET, "/api/v1/cluster-tenants/beta", None, true).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "no audit record, no customer");
}

#[sqlx::test(migrations = false)]
async fn html_pages_carry_a_nonce_csp_and_the_security_headers(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let app = support::fleet(db, Features::default(), true);
    let page = send(&app, Method::GET, "/cluster-tenants/new", None, false).await;
    assert_eq!(page.status, StatusCode::OK);
    let csp = page.headers["content-security-policy"].to_str().unwrap().to_owned();
    let nonce = csp.split("'nonce-").nth(1).and_then(|rest| rest.split('\'').next()).expect("a nonce in script-src");
    assert!(nonce.len() >= 16, "{csp}");
    assert!(page.text.contains(&format!("nonce=\"{nonce}\"")), "the loader script carries the same nonce");
    for directive in ["'wasm-unsafe-eval'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"] {
        assert!(csp.contains(directive), "{directive} missing: {csp}");
    }
    assert!(!csp.contains("unsafe-inline") && !csp.contains("'unsafe-eval'"), "{csp}");
    let again = send(&app, Method::GET, "/cluster-tenants/new", None, false).await;
    assert_ne!(
        again.headers["content-security-policy"], page.headers["content-security-policy"],
        "a nonce per response"
    );
    assert_eq!(page.headers["x-content-type-options"], "nosniff");
    assert!(page.headers["strict-transport-security"].to_str().unwrap().contains("max-age=31536000"));
    assert!(page.headers.contains_key("referrer-policy"));
    let api = send(&app, Method::GET, "/api/v1/openapi.json", None, false).await;
    assert!(api.headers["content-security-policy"].to_str().unwrap().starts_with("default-src 'none'"));
}

#[sqlx::test(migrations = false)]
async fn sign_in_attempts_are_rate_limited(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let app = support::fleet(db, Features::default(), false);
    let mut statuses = Vec::new();
    for _ in 0..25 {
        statuses.push(send(&app, Method::GET, "/api/v1/auth/login", None, false).await.status);
    }
    assert!(statuses[..20].iter().all(|s| *s != StatusCode::TOO_MANY_REQUESTS), "{statuses:?}");
    assert!(statuses[20..].iter().all(|s| *s == StatusCode::TOO_MANY_REQUESTS), "{statuses:?}");
}
