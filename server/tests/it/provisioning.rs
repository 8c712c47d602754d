//! Provisioning seen from the HTTP side: the fleet's internal members endpoint a silo pulls its
//! read-model from (one customer's rows; on its own listener, bearer credentials only), the
//! silo's pull over a real socket, and the agreement of the UI's step list with the provisioner's.

use axum::http::{Method, StatusCode};
use sqlx::PgPool;

use crate::support::{self, Features, browser, send, send_as, session_cookie};

async fn seed(db: &PgPool) {
    sqlx::query("INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme'), ('other', 'Other')")
        .execute(db)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO org_memberships (cluster_tenant, subject, role, status) VALUES
           ('acme', 'otto', 'owner', 'active'), ('acme', 'mia', 'member', 'suspended'),
           ('other', 'bea', 'owner', 'active')",
    )
    .execute(db)
    .await
    .unwrap();
}

#[sqlx::test(migrations = false)]
async fn the_members_endpoint_answers_one_customer_to_operator_tokens_only(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    seed(&db).await;
    let fleet = support::fleet_internal(db.clone());
    let path = "/api/internal/cluster-tenants/acme/members";
    // Only on its own listener: the public one (behind the Ingress) does not have it.
    let public = support::fleet(db.clone(), Features::default(), false);
    let hidden = send(&public, Method::GET, path, None, true).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND, "{}", hidden.text);
    assert_eq!(hidden.json()["code"], "NOT_FOUND");
    // And the internal listener serves nothing else: no pages, no REST, no server functions.
    for other in ["/cluster-tenants", "/api/v1/cluster-tenants", "/api/fleet/cluster-tenants/list"] {
        assert_eq!(send(&fleet, Method::GET, other, None, true).await.status, StatusCode::NOT_FOUND, "{other}");
    }

    let reply = send(&fleet, Method::GET, path, None, true).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(
        reply.json(),
        serde_json::json!([
            {"subject": "otto", "role": "owner", "status": "active"},
            {"subject": "mia", "role": "member", "status": "suspended"},
        ]),
        "exactly acme's rows, never another customer's"
    );
    assert_eq!(send(&fleet, Method::GET, path, None, false).await.status, StatusCode::UNAUTHORIZED);
    let owner = browser(&session_cookie(&db, "otto", false, false).await);
    // The internal listener takes no session cookies: even the customer's owner is not a silo.
    let refused = send_as(&fleet, Method::GET, path, None, &owner).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{}", refused.text);
    let missing = send(&fleet, Method::GET, "/api/internal/cluster-tenants/nobody/members", None, true).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(send(&fleet, Method::GET, "/api/internal/other", None, true).await.status, StatusCode::NOT_FOUND);

    // Its own record, under the same rule.
    let own = send(&fleet, Method::GET, "/api/internal/cluster-tenants/acme", None, true).await;
    assert_eq!(own.json()["displayName"], "Acme");
    let refused = send_as(&fleet, Method::GET, "/api/internal/cluster-tenants/acme", None, &owner).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);

    // A customer being deleted has no members any more.
    opencrane_fleet_db::provisioning::request_deletion(&db, "acme").await.unwrap();
    assert_eq!(send(&fleet, Method::GET, path, None, true).await.json(), serde_json::json!([]));

    // A silo does not serve the internal API at all.
    let silo = support::silo(support::silo_db(&pool).await, false);
    assert_eq!(send(&silo, Method::GET, path, None, true).await.status, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrations = false)]
async fn a_silo_pulls_exactly_its_own_members_and_keeps_them_when_the_fleet_is_away(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    seed(&db).await;
    let silo_db = support::silo_db(&pool).await;
    // Stale rows: a member the fleet dropped, and a row of another customer that must not be here.
    for (ct, subject) in [("acme", "gone"), ("other", "bea")] {
        opencrane_silo_db::memberships::upsert(&silo_db, ct, subject, "member", "active").await.unwrap();
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let fleet = support::fleet_internal(db.clone());
    let server = tokio::spawn(opencrane::http::serve(listener, fleet, async move {
        let _ = stopped.wait_for(|s| *s).await;
    }));
    let client = openidconnect::reqwest::Client::new();
    // The silo presents its own credential, the one the fleet issued to acme.
    let credential = crate::trust::issue(&db, "acme").await;
    let link = opencrane::silo::sync::FleetLink {
        url: format!("http://{addr}"),
        token: opencrane::silo::sync::FleetToken::Value(credential),
    };

    let pulled = opencrane::silo::sync::pull_once(&client, &link, "acme", &silo_db).await.unwrap();
    assert_eq!(pulled.members, 2);
    let rows = opencrane_silo_db::memberships::list(&silo_db).await.unwrap();
    let got: Vec<(&str, &str, &str)> =
        rows.iter().map(|r| (r.subject.as_str(), r.role.as_str(), r.status.as_str())).collect();
    // The member the fleet dropped stays as `removed` (no access, their key kept blocked); the
    // other customer's row is gone.
    assert_eq!(got, [("otto", "owner", "active"), ("gone", "member", "removed"), ("mia", "member", "suspended")]);

    // The silo learns its own ClusterTenant from the fleet too, and the overview shows it.
    opencrane::silo::sync::pull_own(&client, &link, "acme", &silo_db).await.unwrap();
    let own = opencrane_silo_db::own::get(&silo_db, "acme").await.unwrap().unwrap();
    assert_eq!((own.display_name.as_str(), own.phase.as_str(), own.source.as_str()), ("Acme", "pending", "fleet"));
    let silo = support::silo(silo_db.clone(), true);
    let overview = send(&silo, Method::POST, "/api/silo/overview", Some("{}"), true).await;
    assert_eq!(overview.json()["own"]["displayName"], "Acme", "{}", overview.text);

    // A wrong token is refused and changes nothing.
    let other = crate::trust::issue(&db, "other").await;
    let wrong = opencrane::silo::sync::FleetLink {
        token: opencrane::silo::sync::FleetToken::Value("not-the-token-at-all".into()),
        ..link.clone()
    };
    let err = opencrane::silo::sync::pull_once(&client, &wrong, "acme", &silo_db).await.unwrap_err();
    assert!(format!("{err:#}").contains("401"), "{err:#}");
    assert_eq!(opencrane_silo_db::memberships::list(&silo_db).await.unwrap().len(), 3);
    // Another customer's silo credential learns nothing about acme (404, as for a missing one).
    let foreign =
        opencrane::silo::sync::FleetLink { token: opencrane::silo::sync::FleetToken::Value(other), ..link.clone() };
    let err = opencrane::silo::sync::pull_once(&client, &foreign, "acme", &silo_db).await.unwrap_err();
    assert!(format!("{err:#}").contains("404"), "{err:#}");
    assert_eq!(opencrane_silo_db::memberships::list(&silo_db).await.unwrap().len(), 3);

    // The fleet goes away: the pull fails, the silo keeps its last copy.
    let _ = stop.send(true);
    server.await.unwrap().unwrap();
    assert!(opencrane::silo::sync::pull_once(&client, &link, "acme", &silo_db).await.is_err());
    assert_eq!(opencrane_silo_db::memberships::list(&silo_db).await.unwrap().len(), 3);
}
