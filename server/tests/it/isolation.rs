//! Role isolation: every server function of one role answers 404 on the other role's server,
//! exactly like a path that does not exist.

use axum::http::{Method, StatusCode};
use sqlx::PgPool;

use crate::support::{self, Features, send};

fn paths_with_prefix(prefix: &str) -> Vec<&'static str> {
    let paths: Vec<_> = server_fn::axum::server_fn_paths().map(|(p, _)| p).filter(|p| p.starts_with(prefix)).collect();
    assert!(!paths.is_empty(), "no server functions registered under {prefix}");
    paths
}

#[sqlx::test(migrations = false)]
async fn the_fleet_answers_404_for_every_silo_server_function(pool: PgPool) {
    let fleet = support::fleet(support::fleet_db(&pool).await, Features::default(), true);
    let unknown = send(&fleet, Method::POST, "/api/silo/does-not-exist", Some("{}"), true).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    for path in paths_with_prefix("/api/silo/") {
        let reply = send(&fleet, Method::POST, path, Some("{}"), true).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path} reachable on the fleet: {}", reply.text);
        assert_eq!(reply.json()["code"], "NOT_FOUND");
    }
}

#[sqlx::test(migrations = false)]
async fn a_silo_answers_404_for_every_fleet_server_function(pool: PgPool) {
    let silo = support::silo(support::silo_db(&pool).await, true);
    for path in paths_with_prefix("/api/fleet/") {
        let reply = send(&silo, Method::POST, path, Some("{}"), true).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path} reachable on a silo: {}", reply.text);
    }
    // And the fleet's REST API does not exist there either.
    let rest = send(&silo, Method::GET, "/api/v1/cluster-tenants", None, true).await;
    assert_eq!(rest.status, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrations = false)]
async fn each_role_serves_its_own_server_functions(pool: PgPool) {
    let fleet = support::fleet(support::fleet_db(&pool).await, Features::default(), false);
    let silo = support::silo(support::silo_db(&pool).await, false);
    let listed = send(&fleet, Method::POST, "/api/fleet/cluster-tenants/list", Some(r#"{"query":{"search":null,"phase":null,"tier":null,"sort":"name","descending":false,"limit":10,"offset":0}}"#), true).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    let overview = send(&silo, Method::POST, "/api/silo/overview", Some("{}"), true).await;
    assert_eq!(overview.status, StatusCode::OK, "{}", overview.text);
    assert_eq!(overview.json()["clusterTenant"], "acme");
}
