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
    fleet::attach_dns_probes(&mut state, Some(settings), stopped);
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
