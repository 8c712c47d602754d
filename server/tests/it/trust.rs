//! The trust between the fleet and its silos: each customer's silo has its own credential for the
//! fleet's internal API (minted by the provisioner, stored only as its SHA-256), which answers
//! only about that customer — another's is a 404 exactly like a missing one — opens nothing else
//! on the fleet, stops at rotation and at deletion; and no credential the fleet holds is accepted
//! by a silo.

use axum::http::{Method, StatusCode};
use sqlx::PgPool;

use crate::support::{self, Features, TOKEN, send, send_with};

/// Issues a fresh credential to `name`'s silo, as the provisioner does, and returns it.
pub async fn issue(db: &PgPool, name: &str) -> String {
    let credential = opencrane_provision::credential::mint().unwrap();
    let print = opencrane_provision::credential::fingerprint(credential.expose());
    opencrane_fleet_db::silo_credentials::record(db, name, &print).await.unwrap();
    credential.expose().to_owned()
}

async fn get(router: &axum::Router, path: &str, bearer: &str) -> crate::support::Reply {
    let auth = format!("Bearer {bearer}");
    send_with(router, Method::GET, path, None, &[("authorization", auth.as_str()), ("accept", "application/json")])
        .await
}

#[sqlx::test(migrations = false)]
async fn a_silo_credential_opens_only_its_own_customer_on_the_internal_api(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    sqlx::query("INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme'), ('globex', 'Globex')")
        .execute(&db)
        .await
        .unwrap();
    let (a, b) = (issue(&db, "acme").await, issue(&db, "globex").await);
    let stored: Vec<String> = sqlx::query_scalar(
        "SELECT silo_credential_sha256 FROM cluster_tenants WHERE silo_credential_sha256 IS NOT NULL",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|h| *h != a && *h != b), "only the hashes are stored");
    let fleet = support::fleet_internal(db.clone());
    let public = support::fleet(db.clone(), Features::default(), false);

    // Its own customer: the record and the members.
    let own = get(&fleet, "/api/internal/cluster-tenants/acme", &a).await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.text);
    assert_eq!(own.json()["name"], "acme");
    assert_eq!(get(&fleet, "/api/internal/cluster-tenants/acme/members", &a).await.status, StatusCode::OK);

    // Another customer answers exactly like one that does not exist.
    let foreign = get(&fleet, "/api/internal/cluster-tenants/globex", &a).await;
    let missing = get(&fleet, "/api/internal/cluster-tenants/nobody", &a).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(foreign.json()["code"], missing.json()["code"]);
    assert_eq!(get(&fleet, "/api/internal/cluster-tenants/globex/members", &a).await.status, StatusCode::NOT_FOUND);
    assert_eq!(get(&fleet, "/api/internal/cluster-tenants/acme", &b).await.status, StatusCode::NOT_FOUND);

    // A silo credential is no operator anywhere else on the fleet.
    for path in ["/api/v1/cluster-tenants", "/api/v1/cluster-tenants/acme", "/api/v1/auth/me"] {
        let reply = get(&public, path, &a).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{path}: {}", reply.text);
    }
    let forged = opencrane_provision::credential::mint().unwrap();
    assert_eq!(
        get(&fleet, "/api/internal/cluster-tenants/acme", forged.expose()).await.status,
        StatusCode::UNAUTHORIZED
    );

    // Rotation (operators only, audited) revokes at once; the provisioner installs the next one.
    let rotate = "/api/v1/cluster-tenants/acme/silo-credential/rotate";
    let rotated = send(&public, Method::POST, rotate, Some("{}"), true).await;
    assert_eq!(rotated.status, StatusCode::ACCEPTED, "{}", rotated.text);
    assert_eq!(rotated.json()["revoked"], true);
    assert!(!rotated.text.contains("ocs_"), "no credential in the answer");
    assert_eq!(get(&fleet, "/api/internal/cluster-tenants/acme", &a).await.status, StatusCode::UNAUTHORIZED);
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'cluster_tenant.silo_credential.rotate' AND outcome = 'success'",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(audited, 1);
    let leaked: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE metadata::text LIKE '%ocs_%'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(leaked, 0, "no credential in the audit log");

    // A customer being deleted has no voice any more.
    opencrane_fleet_db::provisioning::request_deletion(&db, "globex").await.unwrap();
    assert_eq!(get(&fleet, "/api/internal/cluster-tenants/globex", &b).await.status, StatusCode::UNAUTHORIZED);
}

#[sqlx::test(migrations = false)]
async fn no_credential_the_fleet_holds_opens_a_silo(pool: PgPool) {
    let fleet_db = support::fleet_db(&pool).await;
    sqlx::query("INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme')")
        .execute(&fleet_db)
        .await
        .unwrap();
    let credential = issue(&fleet_db, "acme").await;
    // A silo as production wires it: no inbound operator token (the chart sets none).
    let silo_db = support::silo_db(&pool).await;
    let scope =
        opencrane::http::auth::Scope::Silo { cluster_tenant: "acme".into(), org_admin_groups: Vec::new(), fleet: None };
    let state = opencrane::silo::silo_state(support::options(), silo_db, "acme".into(), None, false);
    let silo = opencrane::http::router(state, opencrane::http::AuthConfig::tokens_only(Vec::new(), false, scope, true));
    for bearer in [TOKEN, credential.as_str()] {
        let reply = get(&silo, "/api/v1/tenants", bearer).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{}", reply.text);
    }
    // And a silo refuses to start with its outbound credential (or any silo credential) inbound.
    let outbound = opencrane::silo::sync::FleetToken::Value(credential.clone());
    assert!(opencrane::silo::refuse_outbound_inbound(Some(&outbound), Some(&credential)).is_err());
    let other = opencrane_provision::credential::mint().unwrap();
    assert!(opencrane::silo::refuse_outbound_inbound(None, Some(other.expose())).is_err());
    assert!(opencrane::silo::refuse_outbound_inbound(Some(&outbound), Some("an-operator-token-of-its-own")).is_ok());
}
