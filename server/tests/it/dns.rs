//! The DNS truth through the fleet's HTTP surface, against a real authoritative nameserver
//! (BIND 9 on loopback, changed with `nsupdate` as external-dns' rfc2136 provider does): the
//! original's `POST /cluster-tenants/{name}/refresh` answers the fresh check, the `/dns` page and
//! the customer's page render what was stored, and people who are not operators never see `/dns`.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use opencrane::{
    fleet,
    http::{AuthConfig, auth::Scope},
};
use opencrane_provision::{dns_truth::DnsTruthSettings, probe::bind::Bind};
use sqlx::PgPool;

use crate::support::{self, TOKEN, create_body, send};

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn refresh_checks_the_record_now_and_the_pages_show_it(pool: PgPool) {
    let bind = Bind::start("example.com").unwrap();
    let mut state = fleet::fleet_state(support::options(), pool.clone(), Some("example.com".into()), true, true, false);
    let settings = DnsTruthSettings {
        base_domain: "example.com".into(),
        ingress_ip: Some("127.0.0.1".parse().unwrap()),
        nameservers: vec![bind.addr],
        // Nothing serves TLS here: the certificate reads as not served.
        tls_port: support::free_port(),
        timeout: Duration::from_secs(2),
        concurrency: 2,
        interval: Duration::ZERO,
    };
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    fleet::attach_dns_probes(&mut state, Some(settings), None, stopped);
    let router = opencrane::http::router(
        state,
        AuthConfig::tokens_only(vec![("test".into(), TOKEN.into())], true, Scope::Fleet, true),
    );
    let created = send(&router, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("acme")), true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);

    let page = send(&router, Method::GET, "/dns", None, false).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text.contains("Not checked yet"), "before any check: {}", page.text);

    let fresh = send(&router, Method::POST, "/api/v1/cluster-tenants/acme/refresh", None, true).await;
    assert_eq!(fresh.status, StatusCode::OK, "{}", fresh.text);
    let body = fresh.json();
    assert_eq!(body["probing"], true);
    assert_eq!(body["dns"][0]["host"], "acme.example.com");
    assert_eq!(body["dns"][0]["recordState"], "missing", "{body}");
    assert_eq!(body["dns"][0]["certHealth"], "unreachable");

    bind.set_address("acme.example.com", "127.0.0.1".parse().unwrap());
    let body = send(&router, Method::POST, "/api/v1/cluster-tenants/acme/refresh", None, true).await.json();
    assert_eq!(body["dns"][0]["recordState"], "resolves", "{body}");
    assert_eq!(body["dns"][0]["expected"], "127.0.0.1");

    bind.set_address("acme.example.com", "198.51.100.9".parse().unwrap());
    let body = send(&router, Method::POST, "/api/v1/cluster-tenants/acme/refresh", None, true).await.json();
    assert_eq!(body["dns"][0]["recordState"], "wrongAddress", "{body}");
    assert_eq!(body["dns"][0]["got"][0], "198.51.100.9");

    // The pages render the stored result.
    let page = send(&router, Method::GET, "/dns", None, false).await;
    assert!(page.text.contains("acme.example.com"), "{}", page.text);
    assert!(page.text.contains("Wrong address: 198.51.100.9 (expected 127.0.0.1)"), "{}", page.text);
    let detail = send(&router, Method::GET, "/cluster-tenants/acme", None, false).await;
    assert!(detail.text.contains("Wrong address: 198.51.100.9"), "the customer's page shows it too");

    let missing = send(&router, Method::POST, "/api/v1/cluster-tenants/nobody/refresh", None, true).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

/// Without a base domain or an ingress address nothing is probed, and the answer says so.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn without_probes_refresh_says_nothing_is_checked(pool: PgPool) {
    let router = support::fleet(pool, support::Features::default(), true);
    let created = send(&router, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("acme")), true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let body = send(&router, Method::POST, "/api/v1/cluster-tenants/acme/refresh", None, true).await.json();
    assert_eq!(body["probing"], false);
    assert_eq!(body["dns"], serde_json::json!([]));
    let page = send(&router, Method::GET, "/dns", None, false).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text.contains("--ingress-ip"), "the page says how to turn the probes on: {}", page.text);
}

/// The platform's issuer over REST and the `/dns` form (no wasm), against the fake API server
/// (`opencrane-fake-kube`: no cluster runs here): operators only, each bad field named, the
/// original's 422 for a provider without its token, and the token in no answer, page or audit
/// entry.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn the_platform_issuer_is_for_operators_and_its_token_never_comes_back(pool: PgPool) {
    use opencrane_provision::platform_dns::IssuerSettings;
    // The page offers exactly the providers the server accepts.
    let offered: Vec<&str> = app::model::fleet::dns::PLATFORM_DNS_PROVIDERS.iter().map(|p| p.0).collect();
    assert_eq!(offered, opencrane_provision::platform_dns::provider_names());
    let fake = opencrane_fake_kube::FakeApiServer::start().await.unwrap();
    let client = opencrane_provision::kubernetes::client_for(&fake.url(), Duration::from_secs(2)).unwrap();
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "cert-manager"}})).unwrap();
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .create(&kube::api::PostParams::default(), &ns)
        .await
        .unwrap();
    let mut state = fleet::fleet_state(support::options(), pool.clone(), Some("example.com".into()), true, true, false);
    let settings = IssuerSettings {
        issuer_name: "opencrane-issuer".into(),
        cert_manager_namespace: "cert-manager".into(),
        managed: true,
        ingress_class: None,
    };
    fleet::attach_platform_dns(&mut state, settings, Some(client));
    let router = opencrane::http::router(
        state,
        AuthConfig::tokens_only(vec![("test".into(), TOKEN.into())], true, Scope::Fleet, true),
    );

    let empty = send(&router, Method::GET, "/api/v1/platform/dns", None, true).await;
    assert_eq!(empty.status, StatusCode::OK, "{}", empty.text);
    assert_eq!(empty.json()["configured"], false);
    assert_eq!(empty.json()["available"], true);

    let put = |body: serde_json::Value| {
        let router = router.clone();
        async move { send(&router, Method::PUT, "/api/v1/platform/dns", Some(&body.to_string()), true).await }
    };
    for (body, field) in [
        (serde_json::json!({"zone": "example.com", "email": "ops@example.com"}), "provider"),
        (serde_json::json!({"provider": "cloudflare", "email": "ops@example.com"}), "zone"),
        (serde_json::json!({"provider": "cloudflare", "zone": "example.com"}), "email"),
    ] {
        let refused = put(body).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
        assert_eq!(refused.json()["code"], "VALIDATION_ERROR");
        assert!(refused.json()["fields"][field].is_string(), "{field} is named: {}", refused.text);
    }
    let misconfigured =
        put(serde_json::json!({"provider": "cloudflare", "zone": "example.com", "email": "ops@example.com"})).await;
    assert_eq!(misconfigured.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", misconfigured.text);
    assert_eq!(misconfigured.json()["code"], "DNS_PROVIDER_MISCONFIGURED");

    let token = "cf-token-that-must-not-leak";
    let saved = put(serde_json::json!({"provider": "cloudflare", "zone": "example.com", "email": "ops@example.com", "apiToken": token})).await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.text);
    let body = saved.json();
    assert_eq!(body["status"], "configured");
    assert_eq!(body["provider"], "cloudflare");
    assert_eq!(body["secretName"], "opencrane-dns01-cloudflare");
    assert_eq!(body["tokenSet"], true);
    assert!(!saved.text.contains(token));
    assert!(fake.object("/api/v1/namespaces/cert-manager/secrets/opencrane-dns01-cloudflare").is_some());

    let page = send(&router, Method::GET, "/dns", None, false).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text.contains("set, last changed"), "the page says the token is set: {}", page.text);
    assert!(page.text.contains(r#"id="platform-dns""#) && page.text.contains(r#"method="post""#), "a real form");
    assert!(!page.text.contains(token));

    // The form without wasm: a bad zone comes back under its field, the token is not echoed.
    let hidden = [
        ("_form", "platform-dns".to_owned()),
        ("_target", app::forms::Posted::PlatformDns.hidden()),
        ("provider", "cloudflare".to_owned()),
        ("zone", "not a zone".to_owned()),
        ("email", "ops@example.com".to_owned()),
        ("server", String::new()),
        ("apiToken", token.to_owned()),
        ("solverConfig", String::new()),
    ];
    let mut form = form_urlencoded::Serializer::new(String::new());
    for (k, v) in &hidden {
        form.append_pair(k, v);
    }
    let form = form.finish();
    let posted = support::send_with(
        &router,
        Method::POST,
        "/dns",
        Some(&form),
        &[
            ("content-type", "application/x-www-form-urlencoded"),
            ("host", "localhost:3000"),
            ("origin", "https://localhost:3000"),
            ("sec-fetch-site", "same-origin"),
            ("accept", "text/html"),
        ],
    )
    .await;
    assert_eq!(posted.status, StatusCode::BAD_REQUEST, "{}", posted.text);
    assert!(posted.text.contains(r#"value="not a zone""#), "what was typed stays");
    let slot = posted.text.find(r#"id="issuer-zone-error""#).expect("the zone's error slot");
    assert!(
        posted.text[slot..slot + 300].contains("Enter a fully qualified domain name"),
        "{}",
        &posted.text[slot..slot + 300]
    );
    assert!(!posted.text.contains(token), "the token is never echoed");

    // The audit log has the change, never the token (who may call these routes at all is the
    // access matrix's to prove).
    let entries: Vec<String> =
        sqlx::query_scalar("SELECT action || ' ' || outcome || ' ' || metadata::text FROM audit_log ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert!(
        entries.iter().any(|e| e.starts_with("dns.issuer.configure success") && e.contains("\"tokenChanged\": true")),
        "{entries:?}"
    );
    assert!(entries.iter().all(|e| !e.contains(token)), "{entries:?}");
}
