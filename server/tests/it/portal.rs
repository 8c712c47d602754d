//! The silo portal through the real router and a real silo database: the REST contract of the
//! portal routes (status codes, error codes, named fields, what is stored and audited), the CSV
//! export, and first-sign-in adoption with the IdP groups mirror.

use axum::http::{Method, StatusCode, header};
use opencrane_silo_db::budgets::{self, SpendEvent};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::support::{self, send};

async fn call(app: &axum::Router, method: Method, path: &str, body: Option<Value>) -> support::Reply {
    let body = body.map(|b| b.to_string());
    send(app, method, path, body.as_deref(), true).await
}

#[sqlx::test(migrations = false)]
async fn the_portal_rest_api_validates_stores_audits_and_explains(pool: PgPool) {
    let db = support::silo_db(&pool).await;
    let app = support::silo(db.clone(), false);

    // Bad input names every field; good input answers the reference's 201 {name, status}.
    let bad = call(&app, Method::POST, "/api/v1/tenants", Some(json!({}))).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.text);
    for field in ["name", "displayName", "email", "subject"] {
        assert!(bad.json()["fields"][field].is_string(), "{field}: {}", bad.text);
    }
    let ana = json!({ "name": "ana", "displayName": "Ana", "email": "ana@acme.test", "subject": "s-ana", "team": "eng", "monthlyBudgetUsd": 25 });
    let created = call(&app, Method::POST, "/api/v1/tenants", Some(ana.clone())).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    assert_eq!((created.json()["name"].clone(), created.json()["status"].clone()), (json!("ana"), json!("created")));
    assert_eq!(created.headers[header::LOCATION], "/api/v1/tenants/ana");
    assert_eq!(created.json()["ownLimit"], "25.00 USD per month");
    let again = call(&app, Method::POST, "/api/v1/tenants", Some(ana)).await;
    assert_eq!((again.status, again.json()["code"].clone()), (StatusCode::CONFLICT, json!("TENANT_EXISTS")));
    assert_eq!(
        call(&app, Method::GET, "/api/v1/tenants?team=eng", None).await.json().as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(
        call(&app, Method::GET, "/api/v1/tenants?q=nobody", None).await.json().as_array().map(Vec::len),
        Some(0)
    );
    let paged = call(&app, Method::GET, "/api/v1/tenants?page=2", None).await;
    assert_eq!((paged.json(), paged.headers["x-total-count"].to_str().ok()), (json!([]), Some("1")), "{}", paged.text);
    let bad_page = call(&app, Method::GET, "/api/v1/tenants?page=0", None).await;
    assert!(bad_page.json()["fields"]["page"].is_string(), "{}", bad_page.text);
    let missing = call(&app, Method::GET, "/api/v1/tenants/nobody", None).await;
    assert_eq!((missing.status, missing.json()["code"].clone()), (StatusCode::NOT_FOUND, json!("TENANT_NOT_FOUND")));

    // Groups name unknown members; models; a grant previewed changes nothing until made.
    let ghost = call(
        &app,
        Method::POST,
        "/api/v1/groups",
        Some(json!({ "name": "eng", "scope": "team", "members": ["ghost"] })),
    )
    .await;
    assert!(ghost.json()["fields"]["members"].as_str().unwrap_or_default().contains("ghost"), "{}", ghost.text);
    let group =
        call(&app, Method::POST, "/api/v1/groups", Some(json!({ "name": "eng", "scope": "team", "members": ["ana"] })))
            .await;
    assert_eq!(group.status, StatusCode::CREATED, "{}", group.text);
    let model = call(
        &app,
        Method::POST,
        "/api/v1/models",
        Some(json!({ "publicName": "fast", "upstreamModel": "openai/gpt-4o-mini" })),
    )
    .await;
    assert_eq!(model.status, StatusCode::CREATED, "{}", model.text);
    let deny = json!({ "payloadType": "model", "payloadId": "fast", "subjectType": "group", "subjectId": "eng", "access": "deny", "priority": 5 });
    let preview = call(&app, Method::POST, "/api/v1/grants/preview", Some(deny.clone())).await;
    assert_eq!(
        preview.json()["changes"],
        json!([{ "tenant": "ana", "model": "fast", "before": true, "after": false, "why": "Denied by a grant on this model to group “eng” (priority 5)" }])
    );
    assert_eq!(call(&app, Method::GET, "/api/v1/grants", None).await.json(), json!([]), "a preview stores nothing");
    let unknown_model = call(&app, Method::POST, "/api/v1/grants", Some(json!({ "payloadType": "model", "payloadId": "nope", "subjectType": "tenant", "subjectId": "ana", "access": "allow" }))).await;
    assert!(unknown_model.json()["fields"]["payloadId"].is_string(), "{}", unknown_model.text);

    // The reference's global ceiling is the silo's monthly limit; the currency must be the silo's.
    let eur =
        call(&app, Method::PUT, "/api/v1/ai-budget/global", Some(json!({ "currency": "EUR", "ceilingAmount": 100 })))
            .await;
    assert!(eur.json()["fields"]["currency"].as_str().unwrap_or_default().contains("USD"), "{}", eur.text);
    let put =
        call(&app, Method::PUT, "/api/v1/ai-budget/global", Some(json!({ "currency": "USD", "ceilingAmount": 100 })))
            .await;
    assert_eq!(put.status, StatusCode::NO_CONTENT, "{}", put.text);
    let global = call(&app, Method::GET, "/api/v1/ai-budget/global", None).await.json();
    assert_eq!((global["ceilingAmount"].clone(), global["set"].clone()), (json!("100.00"), json!(true)));
    let raised =
        call(&app, Method::PUT, "/api/v1/ai-budget/global", Some(json!({ "currency": "USD", "ceilingAmount": 120 })))
            .await;
    assert_eq!(raised.status, StatusCode::NO_CONTENT, "{}", raised.text);

    // The reference's per-account ceilings are the users' own limits.
    let accounts = call(&app, Method::GET, "/api/v1/ai-budget/accounts", None).await.json();
    assert_eq!(accounts, json!([{ "userId": "ana", "currency": "USD", "ceilingAmount": "25.00", "period": "month" }]));
    let nobody =
        call(&app, Method::PUT, "/api/v1/ai-budget/accounts/nobody", Some(json!({ "ceilingAmount": 5 }))).await;
    assert!(nobody.json()["fields"]["target"].is_string(), "{}", nobody.text);

    // Spend: the effective limits see it; the CSV exports it.
    let now = chrono::Utc::now();
    let event = SpendEvent {
        request_id: "r-1".into(),
        tenant: Some("ana".into()),
        model: "fast".into(),
        amount: 12_500_000,
        occurred_at: now,
        ..Default::default()
    };
    budgets::record_spend(&db, &[event]).await.unwrap();
    let access = call(&app, Method::GET, "/api/v1/tenants/ana/effective-access", None).await.json();
    let limits = access["limits"].as_array().cloned().unwrap_or_default();
    assert_eq!(limits.len(), 2, "{access}");
    assert_eq!(
        (limits[0]["target"].clone(), limits[0]["spent"].clone()),
        (json!("user ana"), json!("12.50")),
        "her own limit binds first"
    );
    assert_eq!(limits[1]["target"], "the whole silo");

    // Notices show while they hold: this period, spend still over the threshold.
    let own = budgets::list(&db).await.unwrap().into_iter().find(|b| b.tenant.as_deref() == Some("ana")).unwrap();
    let start: chrono::DateTime<chrono::Utc> = serde_json::from_value(limits[0]["periodStart"].clone()).unwrap();
    for (period_start, threshold, message) in [
        (start, 50, "now, crossed"),
        (start, 80, "now, not crossed"),
        (start - chrono::Duration::days(40), 50, "an earlier period"),
    ] {
        assert!(budgets::notify(&db, own.id, period_start, threshold, 12_500_000, message).await.unwrap());
    }
    let page = call(&app, Method::POST, "/api/silo/budgets/overview", Some(json!({}))).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let shown: Vec<Value> = page.json()["notices"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|n| n["message"].clone())
        .collect();
    assert_eq!(shown, vec![json!("now, crossed")]);
    let csv = call(&app, Method::GET, "/api/v1/ai-budget/spend.csv", None).await;
    assert!(csv.headers[header::CONTENT_TYPE].to_str().unwrap_or_default().starts_with("text/csv"));
    assert!(csv.text.starts_with("kind,name,amount,currency,period_start,period_end\n"), "{}", csv.text);
    assert!(csv.text.contains("\nuser,ana,12.50,USD,"), "{}", csv.text);
    assert!(csv.text.contains("\ngroup,eng,12.50,USD,"), "{}", csv.text);
    assert!(csv.text.contains("\nmodel,fast,12.50,USD,"), "{}", csv.text);
    let route = call(&app, Method::POST, "/api/v1/model-routing/test", Some(json!({ "user": "ana", "model": "fast" })))
        .await
        .json();
    assert_eq!((route["ok"].clone(), route["model"].clone()), (json!(true), json!("fast")), "{route}");

    // Every mutation was audited; deleting the user keeps the spend, unattributed.
    let actions: Vec<String> = sqlx::query_scalar("SELECT action FROM audit_log WHERE outcome = 'success' ORDER BY id")
        .fetch_all(&db)
        .await
        .unwrap();
    for action in ["tenant.create", "group.create", "model.create", "budget.set"] {
        assert!(actions.iter().any(|a| a == action), "{action} in {actions:?}");
    }
    let raise = json!({ "displayName": "Ana", "email": "ana@acme.test", "subject": "s-ana", "team": "eng", "monthlyBudgetUsd": 30 });
    let changed = call(&app, Method::PUT, "/api/v1/tenants/ana", Some(raise)).await;
    assert_eq!(changed.json()["ownLimit"], "30.00 USD per month", "{}", changed.text);
    assert_eq!(call(&app, Method::DELETE, "/api/v1/tenants/ana", None).await.status, StatusCode::NO_CONTENT);
    let kept: Option<String> =
        sqlx::query_scalar("SELECT tenant FROM spend_events WHERE request_id = 'r-1'").fetch_one(&db).await.unwrap();
    assert_eq!(kept, None);
    let csv = call(&app, Method::GET, "/api/v1/ai-budget/spend.csv", None).await;
    assert!(csv.text.contains("(deleted users),12.50"), "the silo's total does not shrink: {}", csv.text);

    // Changes and deletions keep what was there before in the audit log.
    let before = |action: &'static str| {
        let db = db.clone();
        async move {
            sqlx::query_scalar::<_, Value>(
                "SELECT metadata->'before' FROM audit_log WHERE action = $1 AND outcome = 'success' ORDER BY id",
            )
            .bind(action)
            .fetch_all(&db)
            .await
            .unwrap()
        }
    };
    let limits = before("budget.set").await;
    assert_eq!(limits.first().map(|b| b.is_null()), Some(true), "a first limit replaced nothing: {limits:?}");
    assert_eq!(limits.last().map(|b| b["amount"].clone()), Some(json!("100.00")), "{limits:?}");
    let updated = before("tenant.update").await;
    assert_eq!(updated.first().map(|b| b["monthlyBudget"].clone()), Some(json!("25.00")), "{updated:?}");
    let deleted = before("tenant.delete").await;
    assert_eq!(
        deleted.first().map(|b| (b["email"].clone(), b["team"].clone())),
        Some((json!("ana@acme.test"), json!("eng")))
    );
}

#[sqlx::test(migrations = false)]
async fn a_members_first_sign_in_adopts_them_and_mirrors_their_groups(pool: PgPool) {
    use app::{
        model::principal::{Membership, OrgRole, Principal, PrincipalKind},
        state::Caller,
    };
    let db = support::silo_db(&pool).await;
    let state = opencrane::silo::silo_state(
        opencrane::start::leptos_options(
            std::path::Path::new("target/site"),
            "127.0.0.1:0".parse().unwrap(),
            leptos::config::Env::DEV,
        ),
        db.clone(),
        "acme".into(),
        None,
        true,
    );
    let person = |groups: &[&str], member: bool| Caller {
        principal: Some(Principal {
            kind: PrincipalKind::User,
            subject: "s-mia".into(),
            email: Some("mia@acme.test".into()),
            display_name: "Mia".into(),
            is_platform_operator: false,
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            memberships: if member {
                vec![Membership { cluster_tenant: "acme".into(), role: OrgRole::Member, active: true }]
            } else {
                Vec::new()
            },
            silo: None,
        }),
        request_id: "test".into(),
        session_id: None,
    };
    let adopt = app::service::silo::users::adopt;
    assert_eq!(adopt(&state, &person(&["Platform Team"], false)).await.unwrap(), None, "not a member: not adopted");
    let name = adopt(&state, &person(&["Platform Team", "/org/eng"], true)).await.unwrap().unwrap();
    assert_eq!(name, app::service::silo::users::adopted_name("s-mia"));
    let row = opencrane_silo_db::tenants::get(&db, &name).await.unwrap().unwrap();
    assert_eq!((row.origin.as_str(), row.email.as_str()), ("sign-in", "mia@acme.test"));
    let groups: Vec<String> = opencrane_silo_db::groups::memberships_of(&db, &name)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.group_name)
        .collect();
    assert_eq!(groups, ["org-eng", "platform-team"]);

    // The next sign-in finds the same user and follows the claim: a group left is left.
    assert_eq!(adopt(&state, &person(&["/org/eng"], true)).await.unwrap(), Some(name.clone()));
    let groups: Vec<String> = opencrane_silo_db::groups::memberships_of(&db, &name)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.group_name)
        .collect();
    assert_eq!(groups, ["org-eng"]);
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM tenants").fetch_one(&db).await.unwrap();
    assert_eq!(users, 1);
    let audited: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'tenant.adopt'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(audited, 1);
}

#[sqlx::test(migrations = false)]
async fn suspending_a_user_ends_their_sessions_and_effective_access_counts_them(pool: PgPool) {
    use support::{browser, send_as, session_cookie};
    let (db, app, owner) = support::silo_with_otto_and_mia(&pool).await;
    let mia_laptop = browser(&session_cookie(&db, "mia", false, false).await);
    let mia_phone = browser(&session_cookie(&db, "mia", false, false).await);
    let user = json!({ "name": "mia", "displayName": "Mia", "email": "mia@acme.test", "subject": "mia" });
    let created = send_as(&app, Method::POST, "/api/v1/tenants", Some(&user.to_string()), &owner).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);

    let sessions = |app: axum::Router, owner: Vec<(&'static str, String)>| async move {
        let access = send_as(&app, Method::GET, "/api/v1/tenants/mia/effective-access", None, &owner).await;
        assert_eq!(access.status, StatusCode::OK, "{}", access.text);
        access.json()["activeSessions"].clone()
    };
    assert_eq!(sessions(app.clone(), owner.clone()).await, json!(2));

    let suspended = send_as(&app, Method::POST, "/api/v1/tenants/mia/suspend", None, &owner).await;
    assert_eq!(suspended.status, StatusCode::OK, "{}", suspended.text);
    for mia in [mia_laptop, mia_phone] {
        let me = send_as(&app, Method::GET, "/api/v1/auth/me", None, &mia).await.json();
        assert_eq!(me["authenticated"], json!(false), "a suspended user's session ended: {me}");
    }
    let me = send_as(&app, Method::GET, "/api/v1/auth/me", None, &owner).await.json();
    assert_eq!(me["authenticated"], json!(true), "the admin's own session stays");
    assert_eq!(sessions(app.clone(), owner.clone()).await, json!(0));
    let ended: Value = sqlx::query_scalar("SELECT metadata FROM audit_log WHERE action = 'tenant.suspend'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(ended["sessionsEnded"], json!(2), "{ended}");
}

/// `GET /api/v1/groups` costs one statement whatever the number of groups (it issued one more
/// per group: 11 for these 10, then 2: the groups, then every membership). Counted from sqlx's
/// own statement log (every statement it runs is a `sqlx::query` event), captured on this thread.
#[sqlx::test(migrations = false)]
async fn the_groups_list_costs_one_statement_whatever_the_number_of_groups(pool: PgPool) {
    let db = support::silo_db(&pool).await;
    let app = support::silo(db.clone(), false);
    for user in ["ana", "bo"] {
        let body = json!({ "name": user, "displayName": user, "email": format!("{user}@acme.test"), "subject": format!("s-{user}") });
        assert_eq!(call(&app, Method::POST, "/api/v1/tenants", Some(body)).await.status, StatusCode::CREATED);
    }
    for i in 0..10 {
        let group = json!({ "name": format!("team-{i}"), "scope": "team", "members": ["ana", "bo"] });
        assert_eq!(call(&app, Method::POST, "/api/v1/groups", Some(group)).await.status, StatusCode::CREATED);
    }
    let filter = tracing_subscriber::filter::Targets::new().with_target("sqlx::query", tracing::Level::DEBUG);
    let (logs, guard) = support::Logs::capture(filter);
    let listed = call(&app, Method::GET, "/api/v1/groups", None).await;
    drop(guard);
    let groups = listed.json();
    assert_eq!(groups.as_array().map(Vec::len), Some(10), "{}", listed.text);
    assert!(groups.as_array().unwrap().iter().all(|g| g["members"] == json!(["ana", "bo"])), "{groups}");
    let log = logs.text();
    let statements = log.lines().filter(|l| l.contains("sqlx::query")).count();
    // The data generation, then the groups with their members (the next request: the generation).
    assert_eq!(statements, 2, "the groups with their members — not one more per group: {log}");
}

/// Issue 20: the users, groups and policies lists answer again from what they last sent — one
/// statement, the data generation — until something they read changes, whether through a route
/// or straight in the database on another connection; the answer kept keeps its headers; and a
/// caller who may not read the lists is refused while an answer is kept.
#[sqlx::test(migrations = false)]
async fn kept_list_answers_follow_every_write_and_only_admins_get_them(pool: PgPool) {
    use support::{browser, send_as, session_cookie};
    let (db, app, _owner) = support::silo_with_otto_and_mia(&pool).await;
    let ana = json!({ "name": "ana", "displayName": "Ana", "email": "ana@acme.test", "subject": "s-ana" });
    assert_eq!(call(&app, Method::POST, "/api/v1/tenants", Some(ana)).await.status, StatusCode::CREATED);
    let bo = json!({ "name": "bo", "displayName": "Bo", "email": "bo@acme.test", "subject": "s-bo" });
    assert_eq!(call(&app, Method::POST, "/api/v1/tenants", Some(bo)).await.status, StatusCode::CREATED);

    let paths =
        ["/api/v1/tenants", "/api/v1/tenants?limit=1", "/api/v1/tenants?page=1", "/api/v1/groups", "/api/v1/policies"];
    for path in paths {
        let first = call(&app, Method::GET, path, None).await;
        let (count, _) = statements(&app, path).await;
        assert_eq!(count, 1, "{path}: answered again with the data generation alone");
        let again = call(&app, Method::GET, path, None).await;
        assert_eq!((again.status, &again.text), (StatusCode::OK, &first.text), "{path}");
        for name in [header::CONTENT_TYPE.as_str(), "x-total-count", header::LINK.as_str()] {
            assert_eq!(again.headers.get(name), first.headers.get(name), "{path}: {name}");
        }
    }
    let kept = call(&app, Method::GET, "/api/v1/tenants?limit=1", None).await;
    assert_eq!(kept.headers[header::LINK], "</api/v1/tenants?limit=1&offset=1>; rel=\"next\"");

    let mia = browser(&session_cookie(&db, "mia", false, false).await);
    let refused = send_as(&app, Method::GET, "/api/v1/tenants", None, &mia).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "a member is refused while an answer is kept: {}", refused.text);

    // Writes on another connection than the manager's, each followed by the lists.
    let users = || async { call(&app, Method::GET, "/api/v1/tenants", None).await.json() };
    sqlx::query("UPDATE tenants SET display_name = 'Ana Direct' WHERE name = 'ana'").execute(&db).await.unwrap();
    assert_eq!(users().await[0]["displayName"], "Ana Direct");
    sqlx::query("INSERT INTO groups (name, scope) VALUES ('eng', 'team')").execute(&db).await.unwrap();
    let groups = call(&app, Method::GET, "/api/v1/groups", None).await.json();
    assert_eq!(groups[0]["name"], "eng", "{groups}");
    sqlx::query("INSERT INTO group_members (group_id, tenant) SELECT id, 'ana' FROM groups")
        .execute(&db)
        .await
        .unwrap();
    assert_eq!(users().await[0]["groups"], json!(["eng"]));
    assert_eq!(call(&app, Method::GET, "/api/v1/groups", None).await.json()[0]["members"], json!(["ana"]));
    sqlx::query(
        "INSERT INTO budgets (level, tenant, currency, amount, period) VALUES ('user', 'ana', 'USD', 5, 'month')",
    )
    .execute(&db)
    .await
    .unwrap();
    assert_eq!(users().await[0]["ownLimit"], "5.00 USD per month");
    sqlx::query(
        "INSERT INTO litellm_keys (tenant, key_alias, token_id, nonce, ciphertext, applied)
         VALUES ('bo', 'acme-bo', 'tok-1', '\\x00', '\\x00', '{\"blocked\": true}')",
    )
    .execute(&db)
    .await
    .unwrap();
    assert_eq!(users().await[1]["key"]["blocked"], true);
    sqlx::query("INSERT INTO access_policies (name) VALUES ('strict')").execute(&db).await.unwrap();
    sqlx::query("UPDATE tenants SET policy_ref = 'strict' WHERE name = 'bo'").execute(&db).await.unwrap();
    let policies = call(&app, Method::GET, "/api/v1/policies", None).await.json();
    assert_eq!(policies[0]["usedBy"], json!(["bo"]), "{policies}");
    sqlx::query("DELETE FROM tenants WHERE name = 'bo'").execute(&db).await.unwrap();
    let window = call(&app, Method::GET, "/api/v1/tenants?limit=1", None).await;
    assert_eq!((window.headers["x-total-count"].to_str().ok(), window.headers.get(header::LINK)), (Some("1"), None));
    // And through a route.
    let renamed = call(&app, Method::PUT, "/api/v1/tenants/ana", Some(json!({ "displayName": "Ana R" }))).await;
    assert_eq!(renamed.status, StatusCode::OK, "{}", renamed.text);
    assert_eq!(users().await[0]["displayName"], "Ana R");
}

/// `GET /api/v1/tenants` shows each user's groups, own limit and key as one user's route does,
/// a window of it (`limit`/`offset`) is counted whole, and a window past the end still counts
/// the list.
#[sqlx::test(migrations = false)]
async fn the_users_list_shows_groups_limits_and_keys_and_counts_its_windows(pool: PgPool) {
    let db = support::silo_db(&pool).await;
    let app = support::silo(db.clone(), false);
    for (user, budget) in [("ana", json!(25)), ("bo", Value::Null), ("cy", Value::Null)] {
        let body = json!({ "name": user, "displayName": user, "email": format!("{user}@acme.test"), "subject": format!("s-{user}"), "monthlyBudgetUsd": budget });
        let created = call(&app, Method::POST, "/api/v1/tenants", Some(body)).await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    }
    for group in ["ops", "eng"] {
        let body = json!({ "name": group, "scope": "team", "members": ["ana"] });
        assert_eq!(call(&app, Method::POST, "/api/v1/groups", Some(body)).await.status, StatusCode::CREATED);
    }
    sqlx::query(
        "INSERT INTO litellm_keys (tenant, key_alias, token_id, nonce, ciphertext, applied, drift)
         VALUES ('ana', 'acme-ana', 'tok-1', '\\x00', '\\x00', $1, 'blocked was false')",
    )
    .bind(json!({ "blocked": true, "models": ["fast", "smart"], "maxBudget": 20_000_000 }))
    .execute(&db)
    .await
    .unwrap();

    let listed = call(&app, Method::GET, "/api/v1/tenants", None).await;
    assert_eq!(listed.headers["x-total-count"], "3");
    let users = listed.json();
    let ana = &users[0];
    assert_eq!(
        (ana["name"].clone(), ana["groups"].clone(), ana["ownLimit"].clone()),
        (json!("ana"), json!(["eng", "ops"]), json!("25.00 USD per month")),
        "{users}"
    );
    assert_eq!(
        (ana["key"]["blocked"].clone(), ana["key"]["models"].clone(), ana["key"]["maxBudget"].clone()),
        (json!(true), json!(["fast", "smart"]), json!("20.00")),
        "{ana}"
    );
    assert_eq!(ana["key"]["drift"], "blocked was false", "{ana}");
    assert!(ana["key"]["issuedAt"].is_string() && ana["key"]["revokeRequestedAt"].is_null(), "{ana}");
    let bo = &users[1];
    assert_eq!(
        (bo["name"].clone(), bo["groups"].clone(), bo["ownLimit"].clone(), bo["key"].clone()),
        (json!("bo"), json!([]), Value::Null, Value::Null),
        "{users}"
    );
    let one = call(&app, Method::GET, "/api/v1/tenants/ana", None).await.json();
    assert_eq!(&one, ana, "one user reads as the list shows it");

    let second = call(&app, Method::GET, "/api/v1/tenants?limit=1&offset=1", None).await;
    assert_eq!(
        second.json().as_array().map(|a| a.iter().map(|u| u["name"].clone()).collect()),
        Some(vec![json!("bo")])
    );
    assert_eq!(second.headers["x-total-count"], "3");
    assert_eq!(second.headers[header::LINK], "</api/v1/tenants?limit=1&offset=2>; rel=\"next\"");
    let past = call(&app, Method::GET, "/api/v1/tenants?limit=2&offset=10", None).await;
    assert_eq!((past.json(), past.headers["x-total-count"].to_str().ok()), (json!([]), Some("3")), "{}", past.text);
    let paged = call(&app, Method::GET, "/api/v1/tenants?page=1&q=bo", None).await;
    assert_eq!(
        (paged.json()[0]["name"].clone(), paged.headers["x-total-count"].to_str().ok()),
        (json!("bo"), Some("1"))
    );
}

/// SQL statements one request of `path` issues (from sqlx's own statement log).
async fn statements(app: &axum::Router, path: &str) -> (usize, usize) {
    let filter = tracing_subscriber::filter::Targets::new().with_target("sqlx::query", tracing::Level::DEBUG);
    let (logs, guard) = support::Logs::capture(filter);
    let reply = call(app, Method::GET, path, None).await;
    drop(guard);
    assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.text);
    let rows = match reply.json() {
        serde_json::Value::Array(a) => a.len(),
        other => ["data", "items", "accounts"].iter().find_map(|k| other[*k].as_array()).map_or(0, Vec::len),
    };
    (logs.text().lines().filter(|l| l.contains("sqlx::query")).count(), rows)
}

/// Adds the `i`th row of each listed kind (a user in a group with a grant, a policy, a model, a
/// budget account).
async fn add_rows(app: &axum::Router, i: usize) {
    let user = format!("u{i:02}");
    let created = [
        (
            "/api/v1/tenants",
            json!({ "name": user, "displayName": user, "email": format!("{user}@acme.test"), "subject": format!("s-{user}") }),
        ),
        ("/api/v1/groups", json!({ "name": format!("team-{i:02}"), "scope": "team", "members": [user] })),
        ("/api/v1/policies", json!({ "name": format!("policy-{i:02}") })),
        (
            "/api/v1/grants",
            json!({ "payloadType": "model", "payloadId": "*", "subjectType": "user", "subjectId": format!("s-{user}"), "access": "deny", "priority": i }),
        ),
        ("/api/v1/models", json!({ "publicName": format!("model-{i:02}"), "upstreamModel": "openai/gpt-4o-mini" })),
    ];
    for (path, body) in created {
        let reply = call(app, Method::POST, path, Some(body)).await;
        assert!(reply.status.is_success(), "{path}: {}", reply.text);
    }
    let account =
        call(app, Method::PUT, &format!("/api/v1/ai-budget/accounts/{user}"), Some(json!({ "ceilingAmount": 10 })))
            .await;
    assert!(account.status.is_success(), "{}", account.text);
}

/// Issue 20: each silo list route costs the same number of statements for 1 row as for 50 (no
/// statement per row: users with their groups, groups with their members, policies, grants,
/// models, budget accounts, the audit log).
#[sqlx::test(migrations = false)]
async fn every_list_route_costs_a_constant_number_of_statements(pool: PgPool) {
    const ROUTES: &[&str] = &[
        "/api/v1/tenants",
        "/api/v1/groups",
        "/api/v1/policies",
        "/api/v1/grants",
        "/api/v1/models",
        "/api/v1/ai-budget/accounts",
        "/api/v1/audit?limit=100",
    ];
    let db = support::silo_db(&pool).await;
    let app = support::silo(db.clone(), false);
    add_rows(&app, 0).await;
    let mut one = Vec::new();
    for path in ROUTES {
        one.push(statements(&app, path).await);
    }
    for i in 1..50 {
        add_rows(&app, i).await;
    }
    for (path, (count, rows)) in ROUTES.iter().zip(one) {
        let (count_50, rows_50) = statements(&app, path).await;
        assert!(rows_50 > rows, "{path}: {rows} rows, then {rows_50}");
        assert_eq!(count_50, count, "{path}: {count} statements for {rows} rows, {count_50} for {rows_50}");
    }
}
