//! A customer's members on the fleet, through the REST API: the reference's contract and codes,
//! the seat cap under concurrent requests, the last-owner rule, and who may give the Owner role.

use axum::http::{Method, StatusCode};
use serde_json::json;
use sqlx::PgPool;

use crate::support::{self, Features, browser, create_body, send, send_as, session_cookie};

const BASE: &str = "/api/v1/cluster-tenants/acme/members";

#[sqlx::test(migrations = false)]
async fn members_follow_the_reference_contract(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet(db.clone(), Features::default(), false);
    let created = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("acme")), true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);

    let added = send(&fleet, Method::POST, BASE, Some(r#"{"subject":"ana","role":"Admin"}"#), true).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text);
    let body = added.json();
    assert_eq!(
        (body["subject"].clone(), body["role"].clone(), body["status"].clone()),
        (json!("ana"), json!("admin"), json!("active"))
    );
    assert_eq!((body["created"].clone(), body["zitadelSeated"].clone()), (json!(true), json!(false)));
    let changed = send(&fleet, Method::POST, BASE, Some(r#"{"subject":"ana","role":"member"}"#), true).await;
    assert_eq!((changed.status, changed.json()["created"].clone()), (StatusCode::OK, json!(false)));

    let listed = send(&fleet, Method::GET, BASE, None, true).await;
    let subjects: Vec<String> =
        listed.json().as_array().unwrap().iter().map(|m| m["subject"].as_str().unwrap().to_owned()).collect();
    assert_eq!(subjects, ["owner-subject", "ana"], "owners first");

    let bad = send(&fleet, Method::POST, BASE, Some(r#"{"subject":" ","role":"boss"}"#), true).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.json()["fields"]["subject"].is_string() && bad.json()["fields"]["role"].is_string(), "{}", bad.text);

    let suspended = send(&fleet, Method::POST, &format!("{BASE}/ana/suspend"), None, true).await;
    assert_eq!((suspended.status, suspended.json()["status"].clone()), (StatusCode::OK, json!("suspended")));
    let back = send(&fleet, Method::POST, &format!("{BASE}/ana/reactivate"), None, true).await;
    assert_eq!((back.status, back.json()["status"].clone()), (StatusCode::OK, json!("active")));
    let removed = send(&fleet, Method::DELETE, &format!("{BASE}/ana"), None, true).await;
    assert_eq!(removed.json(), json!({ "subject": "ana", "status": "removed" }));
    let missing = send(&fleet, Method::DELETE, &format!("{BASE}/ana"), None, true).await;
    assert_eq!(
        (missing.status, missing.json()["code"].clone()),
        (StatusCode::NOT_FOUND, json!("MEMBERSHIP_NOT_FOUND"))
    );
    let no_customer = send(&fleet, Method::GET, "/api/v1/cluster-tenants/nobody/members", None, true).await;
    assert_eq!(no_customer.json()["code"], "CLUSTER_TENANT_NOT_FOUND");

    // The last active owner can be neither suspended, demoted nor removed.
    for (method, path, body) in [
        (Method::POST, format!("{BASE}/owner-subject/suspend"), None),
        (Method::POST, BASE.to_owned(), Some(r#"{"subject":"owner-subject","role":"member"}"#)),
        (Method::DELETE, format!("{BASE}/owner-subject"), None),
    ] {
        let refused = send(&fleet, method, &path, body, true).await;
        assert_eq!(
            (refused.status, refused.json()["code"].clone()),
            (StatusCode::CONFLICT, json!("LAST_OWNER")),
            "{path}"
        );
    }
    let audit: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action LIKE 'membership.%' AND outcome = 'success'")
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(audit, 5, "every change is audited");
}

/// Twenty people asked for at once on a customer with five seats (one taken by its owner): exactly
/// four get in, the rest 409 SEAT_CAP_EXCEEDED; reactivation takes a seat the same way.
#[sqlx::test(migrations = false)]
async fn the_seat_cap_holds_under_concurrent_adds(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet(db.clone(), Features::default(), false);
    let mut body: serde_json::Value = serde_json::from_str(&create_body("acme")).unwrap();
    body["seatCap"] = json!(5);
    let created = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&body.to_string()), true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);

    let mut requests = tokio::task::JoinSet::new();
    for i in 0..20 {
        let fleet = fleet.clone();
        requests.spawn(async move {
            let body = format!(r#"{{"subject":"person-{i}"}}"#);
            send(&fleet, Method::POST, BASE, Some(&body), true).await
        });
    }
    let replies = requests.join_all().await;
    let admitted = replies.iter().filter(|r| r.status == StatusCode::CREATED).count();
    let refused =
        replies.iter().filter(|r| r.status == StatusCode::CONFLICT && r.json()["code"] == "SEAT_CAP_EXCEEDED").count();
    assert_eq!((admitted, refused), (4, 16), "{:?}", replies.iter().map(|r| r.status).collect::<Vec<_>>());
    let active: i64 =
        sqlx::query_scalar("SELECT count(*) FROM org_memberships WHERE cluster_tenant = 'acme' AND status = 'active'")
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(active, 5, "never more active members than seats");

    let member = replies.iter().find(|r| r.status == StatusCode::CREATED).unwrap().json()["subject"]
        .as_str()
        .unwrap()
        .to_owned();
    send(&fleet, Method::POST, &format!("{BASE}/{member}/suspend"), None, true).await;
    let taken = send(&fleet, Method::POST, BASE, Some(r#"{"subject":"late"}"#), true).await;
    assert_eq!(taken.status, StatusCode::CREATED, "the freed seat is taken: {}", taken.text);
    let full = send(&fleet, Method::POST, &format!("{BASE}/{member}/reactivate"), None, true).await;
    assert_eq!((full.status, full.json()["code"].clone()), (StatusCode::CONFLICT, json!("SEAT_CAP_EXCEEDED")));
}

/// A customer's admin manages members but cannot give or take the Owner role.
#[sqlx::test(migrations = false)]
async fn only_owners_give_the_owner_role(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    sqlx::query("INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme')").execute(&db).await.unwrap();
    sqlx::query(
        "INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'otto', 'owner'), ('acme', 'ada', 'admin')",
    )
    .execute(&db)
    .await
    .unwrap();
    let app = support::fleet_signed_in(db.clone());
    let admin = browser(&session_cookie(&db, "ada", false, false).await);
    let owner = browser(&session_cookie(&db, "otto", false, false).await);
    let plain = send_as(&app, Method::POST, BASE, Some(r#"{"subject":"max","role":"member"}"#), &admin).await;
    assert_eq!(plain.status, StatusCode::CREATED, "{}", plain.text);
    for body in [r#"{"subject":"max","role":"owner"}"#, r#"{"subject":"otto","role":"member"}"#] {
        let refused = send_as(&app, Method::POST, BASE, Some(body), &admin).await;
        assert_eq!(
            (refused.status, refused.json()["code"].clone()),
            (StatusCode::FORBIDDEN, json!("FORBIDDEN_ORG_SCOPE")),
            "{body}"
        );
    }
    let removed = send_as(&app, Method::DELETE, &format!("{BASE}/otto"), None, &admin).await;
    assert_eq!(removed.status, StatusCode::FORBIDDEN);
    let suspended = send_as(&app, Method::POST, &format!("{BASE}/otto/suspend"), None, &admin).await;
    assert_eq!(suspended.status, StatusCode::FORBIDDEN, "an admin cannot suspend an owner");
    let promoted = send_as(&app, Method::POST, BASE, Some(r#"{"subject":"max","role":"owner"}"#), &owner).await;
    assert_eq!((promoted.status, promoted.json()["role"].clone()), (StatusCode::OK, json!("owner")));
}

/// Invitations by e-mail through the same `POST …/members` (no subject): pending, listed,
/// changed in place, withdrawn; bad input named under its field. The internal admission a silo
/// asks for: only with that customer's own credential (another's is a 404), the invitation of a
/// verified address accepted with its role, a newcomer adopted as `member`, the last sign-in
/// shown, 403 `MEMBER_SUSPENDED` and 409 `SEAT_CAP_EXCEEDED`.
#[sqlx::test(migrations = false)]
async fn invitations_and_admissions_follow_the_contract(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet(db.clone(), Features::default(), false);
    let mut body: serde_json::Value = serde_json::from_str(&create_body("acme")).unwrap();
    body["seatCap"] = json!(3);
    let created = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&body.to_string()), true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("globex")), true).await;

    let invited = send(&fleet, Method::POST, BASE, Some(r#"{"email":"Ana@Example.com","role":"admin"}"#), true).await;
    assert_eq!(invited.status, StatusCode::CREATED, "{}", invited.text);
    assert_eq!(
        (invited.json()["email"].clone(), invited.json()["role"].clone(), invited.json()["status"].clone()),
        (json!("ana@example.com"), json!("admin"), json!("invited"))
    );
    let again = send(&fleet, Method::POST, BASE, Some(r#"{"email":"ana@example.com","role":"member"}"#), true).await;
    assert_eq!((again.status, again.json()["created"].clone()), (StatusCode::OK, json!(false)));
    send(&fleet, Method::POST, BASE, Some(r#"{"email":"cy@example.com"}"#), true).await;
    let listed = send(&fleet, Method::GET, "/api/v1/cluster-tenants/acme/invitations", None, true).await;
    let emails: Vec<String> =
        listed.json().as_array().unwrap().iter().map(|i| i["email"].as_str().unwrap().to_owned()).collect();
    assert_eq!(emails, ["ana@example.com", "cy@example.com"], "{}", listed.text);
    let members = send(&fleet, Method::GET, BASE, None, true).await;
    assert_eq!(members.json().as_array().unwrap().len(), 1, "an invitation is not a member and holds no seat");
    for (body, field) in [
        (r#"{"email":"not-an-address"}"#, "email"),
        (r#"{"subject":"ana","email":"ana@example.com"}"#, "email"),
        (r#"{"subject":"","email":""}"#, "subject"),
    ] {
        let bad = send(&fleet, Method::POST, BASE, Some(body), true).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{body}: {}", bad.text);
        assert!(bad.json()["fields"][field].is_string(), "{body}: {}", bad.text);
    }
    let withdrawn =
        send(&fleet, Method::DELETE, "/api/v1/cluster-tenants/acme/invitations/CY@example.com", None, true).await;
    assert_eq!(withdrawn.json(), json!({ "email": "cy@example.com", "status": "cancelled" }));
    let gone =
        send(&fleet, Method::DELETE, "/api/v1/cluster-tenants/acme/invitations/cy@example.com", None, true).await;
    assert_eq!((gone.status, gone.json()["code"].clone()), (StatusCode::NOT_FOUND, json!("INVITATION_NOT_FOUND")));

    // The admission, as the silo asks for it, with its own credential.
    let internal = support::fleet_internal(db.clone());
    let acme = crate::trust::issue(&db, "acme").await;
    let globex = crate::trust::issue(&db, "globex").await;
    let admit = |credential: String, body: &'static str| {
        let internal = internal.clone();
        async move {
            let auth = format!("Bearer {credential}");
            support::send_with(
                &internal,
                Method::POST,
                "/api/internal/cluster-tenants/acme/members/adopt",
                Some(body),
                &[("authorization", auth.as_str())],
            )
            .await
        }
    };
    let foreign = admit(globex, r#"{"subject":"s-ana","email":"ana@example.com","emailVerified":true}"#).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND, "another customer's silo learns nothing: {}", foreign.text);
    let unverified =
        admit(acme.clone(), r#"{"subject":"s-eve","email":"ana@example.com","emailVerified":false}"#).await;
    assert_eq!(
        (unverified.status, unverified.json()["role"].clone(), unverified.json()["admission"].clone()),
        (StatusCode::OK, json!("member"), json!("adopted")),
        "an unverified address accepts no invitation: {}",
        unverified.text
    );
    let ana = admit(acme.clone(), r#"{"subject":"s-ana","email":"ana@example.com","emailVerified":true}"#).await;
    assert_eq!(
        (ana.status, ana.json()["role"].clone(), ana.json()["admission"].clone()),
        (StatusCode::OK, json!("member"), json!("invited")),
        "{}",
        ana.text
    );
    let full = admit(acme.clone(), r#"{"subject":"s-zed"}"#).await;
    assert_eq!((full.status, full.json()["code"].clone()), (StatusCode::CONFLICT, json!("SEAT_CAP_EXCEEDED")));
    let members = send(&fleet, Method::GET, BASE, None, true).await;
    let ana_row = members.json().as_array().unwrap().iter().find(|m| m["subject"] == "s-ana").cloned().unwrap();
    assert!(ana_row["lastSignInAt"].is_string(), "{ana_row}");
    let owner_row =
        members.json().as_array().unwrap().iter().find(|m| m["subject"] == "owner-subject").cloned().unwrap();
    assert!(owner_row["lastSignInAt"].is_null(), "{owner_row}");
    send(&fleet, Method::POST, &format!("{BASE}/s-ana/suspend"), None, true).await;
    let suspended = admit(acme.clone(), r#"{"subject":"s-ana"}"#).await;
    assert_eq!(
        (suspended.status, suspended.json()["code"].clone()),
        (StatusCode::FORBIDDEN, json!("MEMBER_SUSPENDED"))
    );
    let bad = admit(acme, r#"{"subject":"  "}"#).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let audited: Vec<String> =
        sqlx::query_scalar("SELECT outcome FROM audit_log WHERE action = 'membership.admit' ORDER BY id")
            .fetch_all(&db)
            .await
            .unwrap();
    assert_eq!(audited, ["success", "success", "denied", "denied"]);
}
