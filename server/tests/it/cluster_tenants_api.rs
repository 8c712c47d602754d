//! The ClusterTenant REST API: the reference's contract, field-named errors, and no 500s or
//! lost data for bad input.

use axum::http::{Method, StatusCode, header};
use serde_json::json;
use sqlx::PgPool;

use crate::support::{self, Features, create_body, send};

#[sqlx::test(migrations = false)]
async fn create_read_update_delete(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet(db.clone(), Features::default(), false);

    let created = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("acme")), true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    assert_eq!(created.headers[header::LOCATION], "/api/v1/cluster-tenants/acme");
    let body = created.json();
    assert_eq!(body["name"], "acme");
    assert_eq!(body["status"]["phase"], "pending");
    assert_eq!(body["resources"]["quota"], json!({"cpu": "4", "pods": 20}));
    assert_eq!(body["seatsUsed"], 1, "the owner takes the first seat");

    let got = send(&fleet, Method::GET, "/api/v1/cluster-tenants/acme", None, true).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.json()["displayName"], "acme Corp");
    let status = send(&fleet, Method::GET, "/api/v1/cluster-tenants/acme/status", None, true).await;
    assert_eq!(status.json(), json!({"phase": "pending", "generation": 1}));

    let updated = send(
        &fleet,
        Method::PUT,
        "/api/v1/cluster-tenants/acme",
        Some(r#"{"displayName": "Acme Two", "vanityDomain": "portal.acme.io", "seatCap": null}"#),
        true,
    )
    .await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.text);
    let u = updated.json();
    assert_eq!((u["displayName"].clone(), u["vanityDomain"].clone()), (json!("Acme Two"), json!("portal.acme.io")));
    assert!(u.get("seatCap").is_none(), "seatCap: null removes the cap");
    assert_eq!(u["resources"]["quota"]["pods"], 20, "absent fields keep their value");

    let cleared =
        send(&fleet, Method::PUT, "/api/v1/cluster-tenants/acme", Some(r#"{"vanityDomain": ""}"#), true).await;
    assert!(cleared.json().get("vanityDomain").is_none(), "an empty vanity domain clears it");

    let listed = send(&fleet, Method::GET, "/api/v1/cluster-tenants", None, true).await;
    assert_eq!(listed.headers["x-total-count"], "1");
    assert_eq!(listed.json().as_array().unwrap().len(), 1);

    let deleted = send(&fleet, Method::DELETE, "/api/v1/cluster-tenants/acme", None, true).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED, "{}", deleted.text);
    assert_eq!(deleted.json(), json!({"name": "acme", "status": "deleting", "terminationPolicy": "Retain"}));
    let deleting = send(&fleet, Method::GET, "/api/v1/cluster-tenants/acme/status", None, true).await;
    assert_eq!(deleting.json()["phase"], "deleting", "the row stays until the teardown finished");
    let again = send(&fleet, Method::DELETE, "/api/v1/cluster-tenants/acme", None, true).await;
    assert_eq!(again.status, StatusCode::ACCEPTED, "asking twice is harmless");
    // The provisioner's teardown (here one without a cluster, which provisioned nothing) removes
    // the row.
    let unavailable =
        opencrane::fleet::provisioner::ProvisioningUnavailable { reason: "no cluster".into(), action: "-".into() };
    let outcome = opencrane_provision::reconcile::reconcile(&db, &unavailable, "acme").await.unwrap();
    assert_eq!(outcome, opencrane_provision::reconcile::Outcome::Deleted);
    let gone = send(&fleet, Method::GET, "/api/v1/cluster-tenants/acme", None, true).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(gone.json()["code"], "CLUSTER_TENANT_NOT_FOUND");
    let again = send(&fleet, Method::DELETE, "/api/v1/cluster-tenants/acme", None, true).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
}

/// A teardown with nothing to remove (no cluster: the local backend of `opencrane dev`) may delete
/// the row the moment the deletion commits. The deletion still succeeded and says so (it used to
/// read the customer back after the commit and answer 404, which the console showed as "No
/// customer named … exists" in the delete dialog). A deferred trigger removes the row at commit,
/// which is that race made certain.
#[sqlx::test(migrations = false)]
async fn a_teardown_that_finishes_at_once_does_not_turn_the_deletion_into_a_404(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet(db.clone(), Features::default(), false);
    let created = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("acme")), true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    sqlx::raw_sql(
        "CREATE FUNCTION teardown_at_once() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN DELETE FROM cluster_tenants WHERE name = NEW.name; RETURN NULL; END $$;
         CREATE CONSTRAINT TRIGGER teardown_at_once AFTER UPDATE ON cluster_tenants
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.phase = 'deleting')
         EXECUTE FUNCTION teardown_at_once();",
    )
    .execute(&db)
    .await
    .unwrap();
    let deleted = send(&fleet, Method::DELETE, "/api/v1/cluster-tenants/acme", None, true).await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED, "{}", deleted.text);
    assert_eq!(deleted.json()["status"], "deleting");
    let gone = send(&fleet, Method::GET, "/api/v1/cluster-tenants/acme", None, true).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "the row really went at the commit");
}

#[sqlx::test(migrations = false)]
async fn errors_name_the_field_and_carry_the_request_id(pool: PgPool) {
    let fleet = support::fleet(support::fleet_db(&pool).await, Features::default(), false);

    let invalid = send(
        &fleet,
        Method::POST,
        "/api/v1/cluster-tenants",
        Some(r#"{"name": "Bad_Name", "displayName": "", "compute": {"mode": "dedicated"}, "resources": {"quota": {"memory": "lots"}}, "seatCap": -1}"#),
        true,
    )
    .await;
    assert_eq!(invalid.status, StatusCode::BAD_REQUEST);
    let body = invalid.json();
    assert_eq!(body["code"], "VALIDATION_ERROR");
    for field in ["name", "displayName", "isolationTier", "compute.nodePool", "resources.quota.memory", "seatCap"] {
        assert!(body["fields"][field].is_string(), "{field} missing in {body}");
    }
    assert_eq!(body["requestId"], invalid.headers["x-request-id"].to_str().unwrap());

    let wrong_type = send(
        &fleet,
        Method::POST,
        "/api/v1/cluster-tenants",
        Some(r#"{"name": "acme", "compute": {"mode": "huge"}}"#),
        true,
    )
    .await;
    assert_eq!(wrong_type.status, StatusCode::BAD_REQUEST);
    assert!(wrong_type.json()["fields"]["compute.mode"].as_str().unwrap().contains("huge"), "{}", wrong_type.text);

    let unknown_field =
        send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(r#"{"displayname": "x"}"#), true).await;
    assert_eq!(unknown_field.status, StatusCode::BAD_REQUEST);
    assert!(unknown_field.text.contains("displayname"));

    let not_json = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some("{not json"), true).await;
    assert_eq!(not_json.status, StatusCode::BAD_REQUEST);

    let mut dedicated: serde_json::Value = serde_json::from_str(&create_body("acme")).unwrap();
    dedicated["isolationTier"] = json!("dedicatedCluster");
    let tier = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&dedicated.to_string()), true).await;
    assert_eq!(tier.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", tier.text);
    assert_eq!(tier.json()["code"], "TIER_UNAVAILABLE");

    let bad_limit = send(&fleet, Method::GET, "/api/v1/cluster-tenants?limit=abc", None, true).await;
    assert_eq!(bad_limit.status, StatusCode::BAD_REQUEST);
    assert!(bad_limit.json()["fields"]["limit"].is_string());
}

#[sqlx::test(migrations = false)]
async fn duplicates_conflict_without_touching_the_stored_row(pool: PgPool) {
    let fleet = support::fleet(support::fleet_db(&pool).await, Features::default(), false);
    let first = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("acme")), true).await;
    assert_eq!(first.status, StatusCode::CREATED);
    let mut dup = serde_json::from_str::<serde_json::Value>(&create_body("acme")).unwrap();
    dup["displayName"] = json!("Impostor");
    let again = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&dup.to_string()), true).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.json()["code"], "CONFLICT");
    assert!(again.json()["fields"]["name"].as_str().unwrap().contains("already exists"));
    let stored = send(&fleet, Method::GET, "/api/v1/cluster-tenants/acme", None, true).await;
    assert_eq!(stored.json()["displayName"], "acme Corp");

    // The vanity domain is unique too, on update as on create.
    send(&fleet, Method::PUT, "/api/v1/cluster-tenants/acme", Some(r#"{"vanityDomain": "acme.io"}"#), true).await;
    send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("beta")), true).await;
    let taken =
        send(&fleet, Method::PUT, "/api/v1/cluster-tenants/beta", Some(r#"{"vanityDomain": "ACME.io"}"#), true).await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.text);
    assert!(taken.json()["fields"]["vanityDomain"].is_string());
}

#[sqlx::test(migrations = false)]
async fn callers_need_a_valid_token(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet(db.clone(), Features::default(), false);
    let anonymous = send(&fleet, Method::GET, "/api/v1/cluster-tenants", None, false).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert_eq!(anonymous.json()["code"], "UNAUTHORIZED");
    let req = axum::http::Request::builder()
        .uri("/api/v1/cluster-tenants")
        .header(header::AUTHORIZATION, "Bearer wrong-token")
        .body(axum::body::Body::empty())
        .unwrap();
    let res = tower::ServiceExt::oneshot(fleet.clone(), req).await.unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    // An operator's token may create a customer without an owner (the original's clients do, then
    // add members): machines own nothing, so it starts with none and provisioning still runs.
    let mut body: serde_json::Value = serde_json::from_str(&create_body("ownerless")).unwrap();
    body.as_object_mut().unwrap().remove("owner");
    let ownerless = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&body.to_string()), true).await;
    assert_eq!(ownerless.status, StatusCode::CREATED, "{}", ownerless.text);
    assert_eq!(ownerless.json()["seatsUsed"], 0, "{}", ownerless.text);
    let members = send(&fleet, Method::GET, "/api/v1/cluster-tenants/ownerless/members", None, true).await;
    assert_eq!(members.json(), serde_json::json!([]));
    let due = opencrane_fleet_db::provisioning::due(&db).await.unwrap();
    assert!(due.iter().any(|d| d.name == "ownerless"), "provisioning runs");
    let page = send(&fleet, Method::GET, "/cluster-tenants/ownerless/members", None, true).await;
    assert!(page.text.contains("no active owner yet"), "the members page says so: {}", page.status);
}

/// Deterministic pseudo-random bodies (a small LCG, so failures reproduce): whatever arrives,
/// the answer is 2xx or 4xx, never 5xx, and the row created first survives untouched.
#[sqlx::test(migrations = false)]
async fn malformed_input_never_causes_a_server_error_or_data_loss(pool: PgPool) {
    let fleet = support::fleet(support::fleet_db(&pool).await, Features::default(), false);
    send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("keeper")), true).await;
    let before = send(&fleet, Method::GET, "/api/v1/cluster-tenants/keeper", None, true).await.text;

    let samples = [
        "",
        " ",
        "keeper",
        "KEEPER",
        "a",
        "-",
        "ü",
        "\u{0}",
        "a\nb",
        "x".repeat(300).leak(),
        "1e999",
        "-1",
        "9999999999999",
        "portal.acme.io",
        "keeper.example.com",
        "500m",
        "8Gi",
        "null",
        "dedicated",
        "shared",
        "dedicatedCluster",
        "'; drop table x; --",
    ];
    let values = |i: u64| -> serde_json::Value {
        match i % 7 {
            0 => json!(samples[(i as usize / 7) % samples.len()]),
            1 => json!(i as i64 - 50),
            2 => json!(null),
            3 => json!(true),
            4 => {
                json!({"mode": samples[(i as usize) % samples.len()], "nodePool": samples[(i as usize / 3) % samples.len()]})
            }
            5 => json!({"quota": {"cpu": samples[(i as usize) % samples.len()], "pods": i as i64 - 3}}),
            _ => json!([i]),
        }
    };
    let fields = ["name", "displayName", "vanityDomain", "isolationTier", "compute", "resources", "seatCap"];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    for _ in 0..300 {
        let mut body = serde_json::Map::new();
        for field in fields {
            if next() % 3 != 0 {
                body.insert(field.into(), values(next()));
            }
        }
        body.insert("owner".into(), json!({"subject": "fuzz"}));
        let text = serde_json::Value::Object(body).to_string();
        let (method, path) = if next() % 2 == 0 {
            (Method::POST, "/api/v1/cluster-tenants")
        } else {
            (Method::PUT, "/api/v1/cluster-tenants/keeper")
        };
        let reply = send(&fleet, method.clone(), path, Some(&text), true).await;
        assert!(!reply.status.is_server_error(), "{method} {path} {text} → {} {}", reply.status, reply.text);
        if method == Method::PUT && reply.status.is_success() {
            // A valid update may legitimately change the row; restore it for the final check.
            send(&fleet, Method::PUT, path, Some(r#"{"displayName":"keeper Corp","vanityDomain":null,"isolationTier":"shared","compute":{"mode":"shared"},"resources":{"quota":{"cpu":"4","pods":20}},"seatCap":10}"#), true).await;
        }
    }
    let after = send(&fleet, Method::GET, "/api/v1/cluster-tenants/keeper", None, true).await;
    let strip = |t: &str| {
        let mut v: serde_json::Value = serde_json::from_str(t).unwrap();
        v.as_object_mut().unwrap().remove("updatedAt");
        v
    };
    assert_eq!(strip(&after.text), strip(&before));
}

/// A database failure answers 500 with only a request id: no driver, SQL or table names leak.
#[sqlx::test(migrations = false)]
async fn internal_errors_do_not_leak_details(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet(db.clone(), Features::default(), false);
    sqlx::query("ALTER TABLE cluster_tenants RENAME TO cluster_tenants_gone").execute(&db).await.unwrap();
    let reply = send(&fleet, Method::GET, "/api/v1/cluster-tenants", None, true).await;
    assert_eq!(reply.status, StatusCode::INTERNAL_SERVER_ERROR);
    let body = reply.json();
    assert_eq!(body["code"], "INTERNAL_ERROR");
    assert_eq!(body["requestId"], reply.headers["x-request-id"].to_str().unwrap());
    for leak in ["sqlx", "SQLSTATE", "relation", "cluster_tenants", "panicked", "src/"] {
        assert!(!reply.text.contains(leak), "{leak} leaked: {}", reply.text);
    }
}

/// A customer deleted with Retain holds its name (its database, users and sealed provider keys
/// still exist under it): another person creating the name gets 409 NAME_RETAINED and nothing is
/// created; an operator must ask for the re-attach explicitly, which is audited with the former
/// owners. Before tombstones the new customer silently inherited the silo.
#[sqlx::test(migrations = false)]
async fn a_name_whose_data_was_kept_is_held_and_only_an_operator_reattaches_it(pool: PgPool) {
    use crate::support::{browser, send_as, session_cookie};
    let db = support::fleet_db(&pool).await;
    sqlx::query("INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme')").execute(&db).await.unwrap();
    sqlx::query("INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'otto', 'owner')")
        .execute(&db)
        .await
        .unwrap();
    let kept = json!(["CloudNativePG cluster silo-db and its volumes are kept (terminationPolicy Retain)."]);
    opencrane_fleet_db::tombstones::record(&db, "acme", &kept, Some("org-kept")).await.unwrap();
    sqlx::query("DELETE FROM cluster_tenants WHERE name = 'acme'").execute(&db).await.unwrap();

    // Another person, allowed to create customers (a billing account), asks for the name.
    sqlx::query("INSERT INTO billing_accounts (subject, display_name) VALUES ('eve', 'Eve')")
        .execute(&db)
        .await
        .unwrap();
    let people = support::fleet_signed_in(db.clone());
    let eve = browser(&session_cookie(&db, "eve", false, false).await);
    let mut body: serde_json::Value = serde_json::from_str(&create_body("acme")).unwrap();
    body["owner"] = json!({ "subject": "eve" });
    let refused = send_as(&people, Method::POST, "/api/v1/cluster-tenants", Some(&body.to_string()), &eve).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.text);
    assert_eq!(refused.json()["code"], "NAME_RETAINED");
    assert!(refused.json()["error"].as_str().unwrap().contains("data was kept"), "{}", refused.text);
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM cluster_tenants").fetch_one(&db).await.unwrap();
    assert_eq!(rows, 0, "nothing was created");
    // The same person may still pick another name.
    let other = json!({ "name": "acme-new", "owner": { "subject": "eve" } });
    let mut other_body: serde_json::Value = serde_json::from_str(&create_body("acme-new")).unwrap();
    other_body["owner"] = other["owner"].clone();
    let fine = send_as(&people, Method::POST, "/api/v1/cluster-tenants", Some(&other_body.to_string()), &eve).await;
    assert_eq!(fine.status, StatusCode::CREATED, "{}", fine.text);

    // An operator without the explicit switch is refused too; with it, the name is re-attached.
    let fleet = support::fleet(db.clone(), Features::default(), false);
    let plain = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("acme")), true).await;
    assert_eq!((plain.status, plain.json()["code"].clone()), (StatusCode::CONFLICT, json!("NAME_RETAINED")));
    let mut reattach: serde_json::Value = serde_json::from_str(&create_body("acme")).unwrap();
    reattach["reattachRetained"] = json!(true);
    let created = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&reattach.to_string()), true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    assert!(opencrane_fleet_db::tombstones::get(&db, "acme").await.unwrap().is_none(), "the name is released");
    let audit: serde_json::Value = sqlx::query_scalar(
        "SELECT metadata FROM audit_log WHERE action = 'cluster_tenant.reattach' AND target = 'acme'",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(audit["formerOwners"], json!(["otto"]), "{audit}");
    // The kept sign-in organisation comes back with the data (not a second one beside it).
    assert_eq!(audit["zitadelOrgId"], "org-kept", "{audit}");
    let org: Option<String> = sqlx::query_scalar("SELECT zitadel_org_id FROM cluster_tenants WHERE name = 'acme'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(org.as_deref(), Some("org-kept"));
    // A person cannot use the switch.
    sqlx::query("INSERT INTO cluster_tenant_tombstones (name) VALUES ('held')").execute(&db).await.unwrap();
    let mut theirs: serde_json::Value = serde_json::from_str(&create_body("held")).unwrap();
    theirs["owner"] = json!({ "subject": "eve" });
    theirs["reattachRetained"] = json!(true);
    let denied = send_as(&people, Method::POST, "/api/v1/cluster-tenants", Some(&theirs.to_string()), &eve).await;
    assert_eq!((denied.status, denied.json()["code"].clone()), (StatusCode::CONFLICT, json!("NAME_RETAINED")));
}

/// Issue 20: the customers list's substring search has its trigram index where pg_trgm can be
/// made (it can on the tests' PostgreSQL), and the statements the list really runs — the page
/// and its count — are planned through it: `auto_explain` (PostgreSQL's contrib module) sends
/// each statement's plan back as a notice, which sqlx logs. With the two `ILIKE`s on the raw
/// columns the page's plan named no `cluster_tenants_search_trgm`. The search also folds case and
/// finds its text in either column (ASCII case folding only: the test database's locale decides
/// the rest), and treats `%` and `_` literally. Rows written go straight into the index, not into
/// GIN's pending list (which every search would read whole until a vacuum).
#[sqlx::test(migrations = false)]
async fn the_customer_search_is_served_by_its_trigram_index(pool: PgPool) {
    use opencrane_fleet_db::cluster_tenants::{self, ListFilter, SortKey, Start};
    let db = support::fleet_db(&pool).await;
    assert!(cluster_tenants::search_indexed(&db).await.unwrap());
    sqlx::query(
        "INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme Corp'), ('globex', 'Ünïcode ACMÉ'), \
         ('initech', 'Init_ech 100%'), ('hooli', 'Hooli')",
    )
    .execute(&db)
    .await
    .unwrap();
    let mut conn = db.acquire().await.unwrap();
    for setting in [
        "LOAD 'auto_explain'",
        "SET auto_explain.log_min_duration = 0",
        "SET auto_explain.log_level = notice",
        "SET enable_seqscan = off",
    ] {
        sqlx::query(setting).execute(&mut *conn).await.unwrap();
    }
    let search = |q: &str| ListFilter { search: Some(q.into()), ..ListFilter::default() };
    let notices =
        || tracing_subscriber::filter::Targets::new().with_target("sqlx::postgres::notice", tracing::Level::INFO);
    let (logs, guard) = support::Logs::capture(notices());
    let page =
        cluster_tenants::list(&mut conn, &search("CME"), SortKey::Name, false, 50, Start::Offset(0)).await.unwrap();
    let plans = logs.text();
    drop(guard);
    let names: Vec<&str> = page.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["acme"], "ACMÉ is not ACME");
    assert!(plans.contains("Index Scan on cluster_tenants_search_trgm"), "the page's plan: {plans}");

    let (logs, guard) = support::Logs::capture(notices());
    assert_eq!(cluster_tenants::count(&mut *conn, &search("acmÉ")).await.unwrap(), 1);
    let plans = logs.text();
    drop(guard);
    assert!(plans.contains("Index Scan on cluster_tenants_search_trgm"), "the count's plan: {plans}");

    // Either column, any case, wildcards literal, a line break never bridges name and display name.
    for (q, expected) in [("HOOLI", 1), ("corp", 1), ("_", 1), ("100%", 1), ("1%0", 0), ("%", 1), ("acme\nacme", 0)] {
        assert_eq!(cluster_tenants::count(&mut *conn, &search(q)).await.unwrap(), expected, "search {q:?}");
    }

    // Rows written go straight into the index: GIN's pending list, which every search reads
    // whole until a vacuum merges it, stays empty (merging it finds no page to merge).
    sqlx::query("INSERT INTO cluster_tenants (name, display_name) SELECT 'more-' || i, 'More ' || i FROM generate_series(1, 200) i")
        .execute(&mut *conn)
        .await
        .unwrap();
    let pending: i64 = sqlx::query_scalar("SELECT gin_clean_pending_list('cluster_tenants_search_trgm'::regclass)")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(pending, 0, "pages of new entries left in the search index's pending list");
}

/// Statements and rows of one `GET path` on the fleet (sqlx's own statement log).
async fn statements(app: &axum::Router, path: &str) -> (usize, usize) {
    let filter = tracing_subscriber::filter::Targets::new().with_target("sqlx::query", tracing::Level::DEBUG);
    let (logs, guard) = support::Logs::capture(filter);
    let reply = send(app, Method::GET, path, None, true).await;
    drop(guard);
    assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.text);
    let body = reply.json();
    let rows = body.as_array().or_else(|| body["items"].as_array()).map_or(0, Vec::len);
    (logs.text().lines().filter(|l| l.contains("sqlx::query")).count(), rows)
}

/// Issue 20: the fleet's list routes (customers, one customer's members) cost the same number of
/// statements for a few rows as for many (30 customers, 9 members).
#[sqlx::test(migrations = false)]
async fn fleet_list_routes_cost_a_constant_number_of_statements(pool: PgPool) {
    const ROUTES: &[&str] = &["/api/v1/cluster-tenants?limit=100", "/api/v1/cluster-tenants/c00/members"];
    let db = support::fleet_db(&pool).await;
    let app = support::fleet(db.clone(), Features::default(), false);
    let add = |i: usize| {
        let app = app.clone();
        async move {
            let name = format!("c{i:02}");
            let created = send(&app, Method::POST, "/api/v1/cluster-tenants", Some(&create_body(&name)), true).await;
            assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
            // c00's seat cap is 10 (its owner holds one).
            if i < 8 {
                let member = json!({ "subject": format!("m{i:02}"), "role": "member" }).to_string();
                let added = send(&app, Method::POST, "/api/v1/cluster-tenants/c00/members", Some(&member), true).await;
                assert!(added.status.is_success(), "{}", added.text);
            }
        }
    };
    add(0).await;
    let mut one = Vec::new();
    for path in ROUTES {
        one.push(statements(&app, path).await);
    }
    for i in 1..30 {
        add(i).await;
    }
    for (path, (count, rows)) in ROUTES.iter().zip(one) {
        let (count_30, rows_30) = statements(&app, path).await;
        assert!(rows_30 > rows, "{path}: {rows} rows, then {rows_30}");
        assert_eq!(count_30, count, "{path}: {count} statements for {rows} rows, {count_30} for {rows_30}");
    }
}

/// Issue 20: a page of the customers list is given again from what was last read — the data
/// generation is the one statement it costs, its rows' HTML the one last rendered from them —
/// until the customers or their memberships change,
/// through a route or straight in the database on another connection; and a customer's own
/// owner, who sees only their customers, never gets the whole fleet's kept page.
#[sqlx::test(migrations = false)]
async fn kept_customer_pages_follow_every_write_and_stay_the_operators(pool: PgPool) {
    use support::{browser, send_as, session_cookie};
    let db = support::fleet_db(&pool).await;
    let app = support::fleet_signed_in(db.clone());
    let created = send(&app, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("c00")), true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    sqlx::query("INSERT INTO cluster_tenants (name, display_name) VALUES ('c01', 'Other Corp')")
        .execute(&db)
        .await
        .unwrap();

    let page = |path: &'static str| {
        let app = app.clone();
        async move {
            let filter = tracing_subscriber::filter::Targets::new().with_target("sqlx::query", tracing::Level::DEBUG);
            let (logs, guard) = support::Logs::capture(filter);
            let reply = send(&app, Method::GET, path, None, true).await;
            drop(guard);
            assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.text);
            (reply.text, logs.text())
        }
    };
    let (first, read) = page("/cluster-tenants").await;
    assert!(first.contains("c00 Corp") && first.contains("Other Corp"), "{first}");
    assert!(read.contains("FROM cluster_tenants ct"), "the first request reads the page: {read}");
    let (again, log) = page("/cluster-tenants").await;
    assert_eq!(again.matches("1 / 10").count(), 1, "c00's owner holds a seat: {again}");
    let rows =
        |page: &str| page.split_once("<tbody>").and_then(|(_, r)| r.split_once("</tbody>")).map(|(r, _)| r.to_owned());
    assert_eq!(rows(&again), rows(&first), "the rows' kept HTML is what rendering them gave");
    assert!(!log.contains("cluster_tenants"), "the page again costs no read of the customers: {log}");
    assert_eq!(log.matches("data_generation").count(), 1, "{log}");

    sqlx::query("UPDATE cluster_tenants SET display_name = 'Direct Corp' WHERE name = 'c01'")
        .execute(&db)
        .await
        .unwrap();
    let (renamed, _) = page("/cluster-tenants").await;
    assert!(renamed.contains("Direct Corp") && !renamed.contains("Other Corp"), "{renamed}");
    sqlx::query("INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('c00', 'mia', 'member')")
        .execute(&db)
        .await
        .unwrap();
    let (seats, _) = page("/cluster-tenants").await;
    assert_eq!(seats.matches("2 / 10").count(), 1, "a membership written elsewhere is a seat: {seats}");
    let (searched, _) = page("/cluster-tenants?q=direct").await;
    assert!(searched.contains("Direct Corp") && !searched.contains("c00 Corp"), "each request its own page");
    let member = send(
        &app,
        Method::POST,
        "/api/v1/cluster-tenants/c00/members",
        Some(&json!({ "subject": "bo", "role": "member" }).to_string()),
        true,
    )
    .await;
    assert!(member.status.is_success(), "{}", member.text);
    let (through_route, _) = page("/cluster-tenants").await;
    assert_eq!(through_route.matches("3 / 10").count(), 1, "{through_route}");

    let owner = browser(&session_cookie(&db, "owner-subject", false, false).await);
    let own = send_as(&app, Method::GET, "/cluster-tenants", None, &owner).await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.text);
    assert!(own.text.contains("c00 Corp") && !own.text.contains("Direct Corp"), "{}", own.text);
}
