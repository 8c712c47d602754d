//! Usage metering for billing between a real silo database and the fleet's internal API over a
//! socket, each customer with its own credential: the silo reports its days (seats measured at
//! its pulls, spend from its ledger); a repeated report changes nothing; a late spend revises its
//! day (the replaced one kept); a fleet that missed days gets them at the next report; another
//! customer's credential is refused like a missing customer; bad reports are refused with the
//! field named and store nothing; operators and the customer's admins read the days over REST.

use axum::http::{Method, StatusCode};
use chrono::{Datelike, Duration, Utc};
use opencrane::silo::{
    sync::{FleetLink, FleetToken},
    usage::report_once,
};
use opencrane_silo_db::budgets::{self, SpendEvent};
use serde_json::json;
use sqlx::PgPool;

use crate::support::{self, Features, send, send_as, send_with};

async fn sql(db: &PgPool, query: &str) {
    sqlx::query(query).execute(db).await.unwrap();
}

async fn days_held(db: &PgPool, name: &str) -> Vec<(chrono::NaiveDate, i32, i32)> {
    sqlx::query_as("SELECT day, active_seats, revision FROM usage_days WHERE cluster_tenant = $1 ORDER BY day")
        .bind(name)
        .fetch_all(db)
        .await
        .unwrap()
}

#[sqlx::test(migrations = false)]
async fn a_silo_reports_its_days_once_each_and_revises_late_spend(pool: PgPool) {
    let fleet_db = support::fleet_db(&pool).await;
    sql(&fleet_db, "INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme'), ('globex', 'Globex')")
        .await;
    sql(&fleet_db, "INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'otto', 'owner'), ('acme', 'mia', 'member')").await;
    let (acme, globex) = (crate::trust::issue(&fleet_db, "acme").await, crate::trust::issue(&fleet_db, "globex").await);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(opencrane::http::serve(listener, support::fleet_internal(fleet_db.clone()), std::future::pending()));
    let link = FleetLink { url: url.clone(), token: FleetToken::Value(acme.clone()) };
    let client = openidconnect::reqwest::Client::new();

    // The silo: two seats measured three days ago and today (none between: the silo was down),
    // spend on two models three days ago and today.
    let silo_db = support::silo_db(&pool).await;
    sql(&silo_db, "UPDATE silo_settings SET currency = 'EUR'").await;
    let today = Utc::now().date_naive();
    let three_ago = today - Duration::days(3);
    opencrane_silo_db::usage::measure_seats(&silo_db, three_ago, 2).await.unwrap();
    opencrane_silo_db::usage::measure_seats(&silo_db, three_ago, 1).await.unwrap();
    let at = |day: chrono::NaiveDate| day.and_hms_opt(12, 0, 0).unwrap().and_utc();
    let event = |id: &str, model: &str, micros: i64, day| SpendEvent {
        request_id: id.into(),
        tenant: None,
        model: model.into(),
        amount: micros,
        occurred_at: at(day),
        ..Default::default()
    };
    budgets::record_spend(
        &silo_db,
        &[
            event("r1", "fast", 1_250_000, three_ago),
            event("r2", "smart", 125, three_ago),
            event("r3", "fast", 500_000, today),
        ],
    )
    .await
    .unwrap();

    let (first, zone) = report_once(&client, &link, "acme", &silo_db).await.unwrap();
    assert_eq!((first.days, first.changed, zone.as_str()), (4, 4, "UTC"), "from its first day through today");
    let held = days_held(&fleet_db, "acme").await;
    assert_eq!(
        held.iter().map(|(_, seats, _)| *seats).collect::<Vec<_>>(),
        [2, 2, 2, 2],
        "the highest measured, carried over the gap"
    );
    let spend: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT model, currency, amount::text FROM usage_spend WHERE cluster_tenant = 'acme' AND day = $1 ORDER BY model",
    )
    .bind(three_ago)
    .fetch_all(&fleet_db)
    .await
    .unwrap();
    assert_eq!(
        spend,
        [("fast".into(), "EUR".into(), "1.250000".into()), ("smart".into(), "EUR".into(), "0.000125".into())],
        "exact"
    );

    // Again: the days re-sent (the latest and the two before it) change nothing.
    let (again, _) = report_once(&client, &link, "acme", &silo_db).await.unwrap();
    assert_eq!((again.days, again.changed), (3, 0));
    assert!(days_held(&fleet_db, "acme").await.iter().all(|(_, _, revision)| *revision == 1));

    // A silo that could not report for days (the fleet holds nothing after three days ago): the
    // next report sends every day since, not only the last few.
    sqlx::query("DELETE FROM usage_days WHERE cluster_tenant = 'acme' AND day > $1")
        .bind(three_ago)
        .execute(&fleet_db)
        .await
        .unwrap();
    let unreachable = FleetLink { url: "http://127.0.0.1:9".into(), token: FleetToken::Value(acme.clone()) };
    assert!(
        report_once(&client, &unreachable, "acme", &silo_db).await.is_err(),
        "an unreachable fleet is an error, retried later"
    );
    let (caught_up, _) = report_once(&client, &link, "acme", &silo_db).await.unwrap();
    assert_eq!(caught_up.changed, 3, "{caught_up:?}");
    assert_eq!(days_held(&fleet_db, "acme").await.len(), 4);

    // A late LiteLLM log for yesterday revises yesterday, and keeps what it replaced.
    let yesterday = today - Duration::days(1);
    budgets::record_spend(&silo_db, &[event("r4", "fast", 2_000_000, yesterday)]).await.unwrap();
    let (late, _) = report_once(&client, &link, "acme", &silo_db).await.unwrap();
    assert_eq!(late.changed, 1);
    let revised = days_held(&fleet_db, "acme").await.into_iter().find(|(d, _, _)| *d == yesterday).unwrap();
    assert_eq!(revised.2, 2);
    let replaced: serde_json::Value = sqlx::query_scalar(
        "SELECT replaced FROM usage_revisions WHERE cluster_tenant = 'acme' AND day = $1 AND revision = 1",
    )
    .bind(yesterday)
    .fetch_one(&fleet_db)
    .await
    .unwrap();
    assert_eq!(replaced["spend"], json!([]), "{replaced}");

    // A ledger row with no model name (LiteLLM logged none) is reported under one the fleet takes,
    // instead of holding every later day back.
    budgets::record_spend(&silo_db, &[event("r5", "", 10, today)]).await.unwrap();
    let (unnamed, _) = report_once(&client, &link, "acme", &silo_db).await.unwrap();
    assert_eq!(unnamed.changed, 1, "{unnamed:?}");
    let models: Vec<String> =
        sqlx::query_scalar("SELECT model FROM usage_spend WHERE cluster_tenant = 'acme' AND day = $1 ORDER BY model")
            .bind(today)
            .fetch_all(&fleet_db)
            .await
            .unwrap();
    assert_eq!(models, ["(unknown model)", "fast"]);

    // Globex's credential cannot report for acme (answered like a missing customer), nor read it.
    let internal = support::fleet_internal(fleet_db.clone());
    let bearer = format!("Bearer {globex}");
    let body = json!({ "activeSeats": 9, "spend": [] }).to_string();
    let put = |path: String, body: String, bearer: String| {
        let internal = internal.clone();
        async move {
            send_with(
                &internal,
                Method::PUT,
                &path,
                Some(&body),
                &[("authorization", bearer.as_str()), ("content-type", "application/json")],
            )
            .await
        }
    };
    let foreign = put(format!("/api/internal/cluster-tenants/acme/usage/{today}"), body.clone(), bearer.clone()).await;
    let missing = put(format!("/api/internal/cluster-tenants/nobody/usage/{today}"), body.clone(), bearer).await;
    assert_eq!((foreign.status, foreign.json()["code"].clone()), (missing.status, missing.json()["code"].clone()));
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);

    // Bad reports name their field and store nothing.
    let own = format!("Bearer {acme}");
    let before = days_held(&fleet_db, "acme").await;
    let tomorrow = today + Duration::days(1);
    for (day, body, field) in [
        (tomorrow.to_string(), json!({ "activeSeats": 1 }), "day"),
        ("yesterday".to_owned(), json!({ "activeSeats": 1 }), "day"),
        (today.to_string(), json!({ "activeSeats": -2 }), "activeSeats"),
        (
            today.to_string(),
            json!({ "activeSeats": 1, "spend": [{ "model": "fast", "currency": "euro", "amount": "1" }] }),
            "spend[0].currency",
        ),
        (
            today.to_string(),
            json!({ "activeSeats": 1, "spend": [{ "model": "fast", "currency": "EUR", "amount": "-1" }] }),
            "spend[0].amount",
        ),
    ] {
        let refused =
            put(format!("/api/internal/cluster-tenants/acme/usage/{day}"), body.to_string(), own.clone()).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{field}: {}", refused.text);
        assert!(refused.json()["fields"][field].is_string(), "{field}: {}", refused.text);
    }
    assert_eq!(days_held(&fleet_db, "acme").await, before, "nothing stored changed");

    // Read over REST: operators and the customer's owner; a member is refused.
    let public = support::fleet(fleet_db.clone(), Features::default(), false);
    let read = send(&public, Method::GET, &format!("/api/v1/billing/acme/usage?from={three_ago}"), None, true).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.text);
    let days = read.json();
    assert_eq!(days.as_array().unwrap().len(), 4);
    assert_eq!(days[0]["spend"][0], json!({ "model": "fast", "currency": "EUR", "amount": "1.250000" }));
    assert_eq!(days[2]["revision"], 2);
    let people = support::fleet_signed_in(fleet_db.clone());
    let owner = support::browser(&support::session_cookie(&fleet_db, "otto", false, false).await);
    let by_owner = send_as(&people, Method::GET, "/api/v1/billing/acme/usage", None, &owner).await;
    assert_eq!(by_owner.status, StatusCode::OK, "{}", by_owner.text);
    let member = support::browser(&support::session_cookie(&fleet_db, "mia", false, false).await);
    let by_member = send_as(&people, Method::GET, "/api/v1/billing/acme/usage", None, &member).await;
    assert_eq!(by_member.status, StatusCode::FORBIDDEN, "{}", by_member.text);
    let bad = send(&public, Method::GET, "/api/v1/billing/acme/usage?from=soon", None, true).await;
    assert!(bad.json()["fields"]["from"].is_string(), "{}", bad.text);

    // Once acme's deletion is requested its silo has no voice on the internal API — except to
    // report its last days for billing.
    sql(&fleet_db, "UPDATE cluster_tenants SET deletion_requested_at = now() WHERE name = 'acme'").await;
    budgets::record_spend(&silo_db, &[event("r6", "fast", 700_000, today)]).await.unwrap();
    let (last, _) = report_once(&client, &link, "acme", &silo_db).await.unwrap();
    assert_eq!(last.changed, 1, "the last spend reaches the fleet: {last:?}");
    let facts = send_with(
        &internal,
        Method::GET,
        "/api/internal/cluster-tenants/acme",
        None,
        &[("authorization", own.as_str())],
    )
    .await;
    assert_eq!(facts.status, StatusCode::UNAUTHORIZED, "{}", facts.text);
}

/// Plans and statements over REST: an operator defines a plan (bad input named, a taken name
/// 409), puts a customer on it (closed months and a mid-month currency change refused), and the
/// month's statement prices the reported usage — seats above the included ones prorated by
/// seat-days, spend with markup — with each line naming its usage days; the customer's owner reads
/// it, a member cannot, and only operators define or assign plans.
#[sqlx::test(migrations = false)]
async fn a_plan_prices_the_reported_usage_in_the_months_statement(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    sql(&db, "INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme')").await;
    sql(&db, "INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'otto', 'owner'), ('acme', 'mia', 'member')").await;
    let fleet = support::fleet(db.clone(), Features::default(), false);
    let call = |method: Method, path: &str, body: Option<serde_json::Value>| {
        let (fleet, path) = (fleet.clone(), path.to_owned());
        async move { send(&fleet, method, &path, body.map(|b| b.to_string()).as_deref(), true).await }
    };
    for (body, field) in [
        (json!({ "name": "Team", "currency": "EURO", "seatPrice": "10" }), "currency"),
        (json!({ "name": "Team", "currency": "XYZ", "seatPrice": "10" }), "currency"),
        (json!({ "name": "Team", "currency": "EUR", "seatPrice": "-10" }), "seatPrice"),
        (json!({ "name": "Team", "currency": "EUR", "seatPrice": "10", "includedSeats": -1 }), "includedSeats"),
        (json!({ "name": "", "currency": "EUR", "seatPrice": "10" }), "name"),
    ] {
        let refused = call(Method::POST, "/api/v1/billing/plans", Some(body.clone())).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{body}: {}", refused.text);
        assert!(refused.json()["fields"][field].is_string(), "{body}: {}", refused.text);
    }
    let team =
        json!({ "name": "Team", "currency": "EUR", "seatPrice": "30", "includedSeats": 1, "markupPercent": "20" });
    let made = call(Method::POST, "/api/v1/billing/plans", Some(team.clone())).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    assert_eq!(
        (made.json()["seatPrice"].clone(), made.json()["markupPercent"].clone()),
        (json!("30.00"), json!("20.00"))
    );
    assert_eq!(call(Method::POST, "/api/v1/billing/plans", Some(team)).await.json()["code"], "PLAN_EXISTS");
    let dollars = json!({ "name": "US", "currency": "USD", "seatPrice": "10" });
    assert_eq!(call(Method::POST, "/api/v1/billing/plans", Some(dollars)).await.status, StatusCode::CREATED);

    let today = Utc::now().date_naive();
    let first = today.with_day(1).unwrap();
    let last_month = first - Duration::days(1);
    let closed = call(
        Method::PUT,
        "/api/v1/billing/acme/plan",
        Some(json!({ "plan": "Team", "effectiveFrom": last_month.to_string() })),
    )
    .await;
    assert!(
        closed.json()["fields"]["effectiveFrom"].as_str().unwrap_or_default().contains("closed"),
        "{}",
        closed.text
    );
    let assigned = call(
        Method::PUT,
        "/api/v1/billing/acme/plan",
        Some(json!({ "plan": "Team", "effectiveFrom": first.to_string() })),
    )
    .await;
    assert_eq!(assigned.status, StatusCode::OK, "{}", assigned.text);
    assert_eq!(assigned.json()[0]["plan"]["name"], "Team");
    if today.day() > 1 {
        let switch = call(
            Method::PUT,
            "/api/v1/billing/acme/plan",
            Some(json!({ "plan": "US", "effectiveFrom": today.to_string() })),
        )
        .await;
        assert_eq!(
            (switch.status, switch.json()["code"].clone()),
            (StatusCode::UNPROCESSABLE_ENTITY, json!("CURRENCY_CHANGE_MID_MONTH"))
        );
    }
    let unknown = call(Method::PUT, "/api/v1/billing/acme/plan", Some(json!({ "plan": "Gold" }))).await;
    assert!(unknown.json()["fields"]["plan"].is_string(), "{}", unknown.text);

    // Usage on the month's first day: 3 seats (1 included), 1.00 EUR on fast.
    let mut conn = db.acquire().await.unwrap();
    let line = opencrane_fleet_db::usage::SpendLine { model: "fast".into(), currency: "EUR".into(), amount: 1_000_000 };
    opencrane_fleet_db::usage::record(
        &mut conn,
        "acme",
        first,
        opencrane_fleet_db::usage::DayUsage { active_seats: 3, spend: vec![line] },
    )
    .await
    .unwrap();
    drop(conn);
    let month = first.format("%Y-%m").to_string();
    let statement = call(Method::GET, &format!("/api/v1/billing/acme/statements/{month}"), None).await;
    assert_eq!(statement.status, StatusCode::OK, "{}", statement.text);
    let s = statement.json();
    let days_in_month = i64::from(opencrane_entitlements::statement::month_bounds(first).1.day());
    // 2 seat-days above the included one × 30.00 ÷ days in month; 1.00 + 20 %.
    let seats =
        opencrane_entitlements::format_amount((60_000_000 + days_in_month * 5_000) / days_in_month / 10_000 * 10_000);
    assert_eq!(s["lines"][0]["kind"], "seats");
    assert_eq!(s["lines"][0]["amount"], json!(seats), "{s}");
    assert_eq!(s["lines"][0]["days"], json!([first.to_string()]), "linked to its usage day");
    assert_eq!((s["lines"][1]["kind"].clone(), s["lines"][1]["amount"].clone()), (json!("spend"), json!("1.20")));
    assert_eq!((s["currency"].clone(), s["status"].clone()), (json!("EUR"), json!("draft")));
    assert!(
        call(Method::GET, "/api/v1/billing/acme/statements/2026-13", None).await.json()["fields"]["month"].is_string()
    );

    // Exports: CSV for spreadsheets (a model named like a formula is neutralised) and JSON.
    let mut conn = db.acquire().await.unwrap();
    let formula =
        opencrane_fleet_db::usage::SpendLine { model: "=cmd|' /C calc'!A0".into(), currency: "EUR".into(), amount: 1 };
    let day = opencrane_fleet_db::usage::DayUsage { active_seats: 3, spend: vec![formula] };
    opencrane_fleet_db::usage::record(&mut conn, "acme", today, day).await.unwrap();
    drop(conn);
    let csv = call(Method::GET, &format!("/api/v1/billing/acme/usage/export?format=csv&from={first}"), None).await;
    assert_eq!(csv.status, StatusCode::OK, "{}", csv.text);
    assert!(csv.headers["content-type"].to_str().unwrap().starts_with("text/csv"));
    assert!(csv.headers["content-disposition"].to_str().unwrap().contains("usage-acme.csv"));
    assert!(csv.text.starts_with("customer,day,active_seats,model,currency,amount,revision\n"), "{}", csv.text);
    assert!(csv.text.contains(",'=cmd|' /C calc'!A0,"), "neutralised: {}", csv.text);
    assert!(!csv.text.contains(",=cmd"), "never a bare formula: {}", csv.text);
    let statement_csv =
        call(Method::GET, &format!("/api/v1/billing/acme/statements/{month}/export?format=csv"), None).await;
    assert!(statement_csv.text.lines().last().unwrap_or_default().contains(",total,"), "{}", statement_csv.text);
    let json_export = call(Method::GET, &format!("/api/v1/billing/acme/statements/{month}/export"), None).await;
    assert!(json_export.headers["content-disposition"].to_str().unwrap().ends_with(".json\""));
    assert_eq!(json_export.json()["month"], json!(month));
    let bad = call(Method::GET, &format!("/api/v1/billing/acme/statements/{month}/export?format=xls"), None).await;
    assert!(bad.json()["fields"]["format"].is_string(), "{}", bad.text);

    // Last month, on the plan then (assigned at the time): finalising freezes it once; the open
    // month cannot be finalised; a correction after the freeze lands on this month's statement.
    let plan_id: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM billing_plans WHERE name = 'Team'").fetch_one(&db).await.unwrap();
    let last_first = last_month.with_day(1).unwrap();
    opencrane_fleet_db::plans::assign(&db, "acme", last_first, plan_id, "ana").await.unwrap();
    let mut conn = db.acquire().await.unwrap();
    let seats = |n| opencrane_fleet_db::usage::DayUsage { active_seats: n, spend: vec![] };
    opencrane_fleet_db::usage::record(&mut conn, "acme", last_first, seats(2)).await.unwrap();
    drop(conn);
    let previous = last_first.format("%Y-%m").to_string();
    let open = call(Method::POST, &format!("/api/v1/billing/acme/statements/{month}/finalise"), None).await;
    assert_eq!((open.status, open.json()["code"].clone()), (StatusCode::CONFLICT, json!("MONTH_OPEN")));
    let finalised = call(Method::POST, &format!("/api/v1/billing/acme/statements/{previous}/finalise"), None).await;
    assert_eq!(finalised.status, StatusCode::OK, "{}", finalised.text);
    let frozen = finalised.json();
    assert_eq!((frozen["status"].clone(), frozen["finalisedBy"].is_string()), (json!("final"), true), "{frozen}");
    let again = call(Method::POST, &format!("/api/v1/billing/acme/statements/{previous}/finalise"), None).await;
    assert_eq!(again.json()["code"], "STATEMENT_FINAL");
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE action = 'billing.statement.finalise' AND outcome = 'success'",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(audited, 1);
    // A late report raises last month's seats: the final statement stays; this month carries it.
    let mut conn = db.acquire().await.unwrap();
    opencrane_fleet_db::usage::record(&mut conn, "acme", last_first, seats(4)).await.unwrap();
    drop(conn);
    let still = call(Method::GET, &format!("/api/v1/billing/acme/statements/{previous}"), None).await.json();
    assert_eq!((still["total"].clone(), still["status"].clone()), (frozen["total"].clone(), json!("final")));
    let now = call(Method::GET, &format!("/api/v1/billing/acme/statements/{month}"), None).await.json();
    let correction = now["lines"].as_array().unwrap().iter().find(|l| l["kind"] == "correction").cloned();
    let prior_days = i64::from(last_month.day());
    // What the month comes to now (3 seat-days) minus what was frozen (1), each rounded to cents.
    let cents = |micros: i64| (micros + prior_days * 5_000) / prior_days / 10_000 * 10_000;
    let expected = opencrane_entitlements::format_amount(cents(90_000_000) - cents(30_000_000));
    assert_eq!(correction.map(|l| l["amount"].clone()), Some(json!(expected)), "{now}");

    // The customer's billing page, server-rendered for its owner (no wasm needed): plan, the
    // statement with its lines and downloads, the usage days.
    let people = support::fleet_signed_in(db.clone());
    let owner = support::browser(&support::session_cookie(&db, "otto", false, false).await);
    let page = send_as(&people, Method::GET, &format!("/billing/acme?month={month}"), None, &owner).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    for expected in [r#"id="plan-history""#, "Team", r#"id="statement""#, "correction", "Download CSV", r#"id="usage""#]
    {
        assert!(page.text.contains(expected), "{expected} missing from the page");
    }
    let member = support::browser(&support::session_cookie(&db, "mia", false, false).await);
    let refused = send_as(&people, Method::GET, "/billing/acme", None, &member).await;
    assert!(!refused.text.contains(r#"id="statement""#), "a member sees no statement");

    // The owner reads; a member does not; only operators define and assign.
    let path = format!("/api/v1/billing/acme/statements/{month}");
    assert_eq!(send_as(&people, Method::GET, &path, None, &owner).await.status, StatusCode::OK);
    assert_eq!(send_as(&people, Method::GET, "/api/v1/billing/acme/plan", None, &owner).await.status, StatusCode::OK);
    assert_eq!(send_as(&people, Method::GET, &path, None, &member).await.status, StatusCode::FORBIDDEN);
    let body = json!({ "plan": "Team" }).to_string();
    let mut headers = owner.clone();
    headers.push(("content-type", "application/json".to_owned()));
    let by_owner = send_as(&people, Method::PUT, "/api/v1/billing/acme/plan", Some(&body), &headers).await;
    assert_eq!(
        (by_owner.status, by_owner.json()["code"].clone()),
        (StatusCode::FORBIDDEN, json!("FORBIDDEN_NOT_PLATFORM_OPERATOR")),
        "{}",
        by_owner.text
    );
}

/// One HTTP/1.1 request on loopback; the answer's status line, or `None` when the connection
/// ended without one (the server was killed).
async fn raw_request(port: u16, request: String) -> Option<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.ok()?;
    String::from_utf8_lossy(&answer).lines().next().map(str::to_owned)
}

/// The `opencrane fleet-manager` binary killed (SIGKILL) in the middle of closing a month —
/// its statement row written, its audit entry waiting on a lock the test holds — leaves the
/// draft: no final statement and no audit entry, because both are one transaction. The month
/// is then finalised once, normally.
#[sqlx::test(migrations = false)]
async fn a_fleet_killed_while_closing_a_month_leaves_the_draft(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    sql(&db, "INSERT INTO cluster_tenants (name, display_name, phase) VALUES ('acme', 'Acme', 'ready')").await;
    sql(&db, "INSERT INTO billing_plans (name, currency, seat_price) VALUES ('Team', 'EUR', 30)").await;
    let last_month = Utc::now().date_naive().with_day(1).unwrap() - Duration::days(1);
    let first = last_month.with_day(1).unwrap();
    let plan: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM billing_plans WHERE name = 'Team'").fetch_one(&db).await.unwrap();
    opencrane_fleet_db::plans::assign(&db, "acme", first, plan, "ana").await.unwrap();
    let mut conn = db.acquire().await.unwrap();
    let day = opencrane_fleet_db::usage::DayUsage { active_seats: 3, spend: vec![] };
    opencrane_fleet_db::usage::record(&mut conn, "acme", first, day).await.unwrap();
    drop(conn);
    let month = first.format("%Y-%m").to_string();

    // The fleet-manager as a process of its own, on the test's database.
    let database: String = sqlx::query_scalar("SELECT current_database()").fetch_one(&db).await.unwrap();
    let base = std::env::var("DATABASE_URL").unwrap();
    let url = format!("{}/{database}", base.rsplit_once('/').unwrap().0);
    let (port, internal) = (support::free_port(), support::free_port());
    let mut fleet = tokio::process::Command::new(env!("CARGO_BIN_EXE_opencrane"))
        .arg("fleet-manager")
        .env("DATABASE_URL", &url)
        .env("PORT", port.to_string())
        .env("OPENCRANE_INTERNAL_PORT", internal.to_string())
        .env("OPENCRANE_METRICS_PORT", "0")
        .env("OPENCRANE_BIND_ADDRESS", "127.0.0.1")
        .env("OPENCRANE_API_TOKEN", "kill-test-token-0123456789")
        .env("OPENCRANE_INSECURE_HTTP", "true")
        .env("RUST_LOG", "error")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let health = "GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n".to_owned();
    let mut up = false;
    for _ in 0..200 {
        if raw_request(port, health.clone()).await.is_some_and(|s| s.contains(" 200 ")) {
            up = true;
            break;
        }
        if let Some(exit) = fleet.try_wait().unwrap() {
            panic!("the fleet-manager exited: {exit}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(up, "the fleet-manager answers");

    // Hold the audit log: the close writes its statement, then waits on its audit entry.
    let mut holder = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE audit_log IN EXCLUSIVE MODE").execute(&mut *holder).await.unwrap();
    let close = format!(
        "POST /api/v1/billing/acme/statements/{month}/finalise HTTP/1.1\r\nhost: 127.0.0.1\r\n\
         authorization: Bearer kill-test-token-0123456789\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
    let answer = tokio::spawn(raw_request(port, close));
    let mut closing = None;
    for _ in 0..200 {
        closing = sqlx::query_scalar::<_, i32>(
            "SELECT a.pid FROM pg_stat_activity a
             WHERE a.datname = current_database() AND a.wait_event_type = 'Lock' AND a.query ILIKE '%audit_log%'
               AND EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                           WHERE l.pid = a.pid AND c.relname = 'statements' AND l.mode = 'RowExclusiveLock')",
        )
        .fetch_optional(&db)
        .await
        .unwrap();
        if closing.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let closing = closing.expect("the close is between its statement and its audit entry");
    fleet.kill().await.unwrap();
    assert_eq!(answer.await.unwrap(), None, "the killed process never answered");
    holder.commit().await.unwrap();
    for _ in 0..200 {
        let alive: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)")
            .bind(closing)
            .fetch_one(&db)
            .await
            .unwrap();
        if !alive {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let count = |query: &'static str| {
        let db = db.clone();
        async move { sqlx::query_scalar::<_, i64>(query).fetch_one(&db).await.unwrap() }
    };
    assert_eq!(count("SELECT count(*) FROM statements").await, 0, "no half-closed month");
    assert_eq!(count("SELECT count(*) FROM audit_log WHERE action = 'billing.statement.finalise'").await, 0);

    // After the restart the month is still a draft, and closes once.
    let restarted = support::fleet(db.clone(), Features::default(), false);
    let path = format!("/api/v1/billing/acme/statements/{month}");
    assert_eq!(send(&restarted, Method::GET, &path, None, true).await.json()["status"], "draft");
    let done = send(&restarted, Method::POST, &format!("{path}/finalise"), None, true).await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.text);
    assert_eq!(count("SELECT count(*) FROM statements").await, 1);
    assert_eq!(count("SELECT count(*) FROM audit_log WHERE action = 'billing.statement.finalise'").await, 1);
}

/// A customer is billed in its billing account's time zone: the fleet tells its silo that zone,
/// the silo reports that zone's days (today there is taken, tomorrow there is refused naming the
/// zone), and its month opens and closes there.
#[sqlx::test(migrations = false)]
async fn a_customer_is_billed_in_its_accounts_time_zone(pool: PgPool) {
    const ZONE: &str = "Pacific/Kiritimati";
    let fleet_db = support::fleet_db(&pool).await;
    sql(&fleet_db, "INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme')").await;
    sql(&fleet_db, "INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'otto', 'owner')")
        .await;
    let people = support::fleet_signed_in(fleet_db.clone());
    let mut otto = support::browser(&support::session_cookie(&fleet_db, "otto", false, false).await);
    otto.push(("content-type", "application/json".to_owned()));
    let bad = json!({ "timeZone": "Mars/Olympus" }).to_string();
    let refused = send_as(&people, Method::POST, "/api/v1/billing-accounts", Some(&bad), &otto).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(refused.json()["fields"]["timeZone"].is_string(), "{}", refused.text);
    let body = json!({ "displayName": "Otto Ltd", "timeZone": ZONE }).to_string();
    let saved = send_as(&people, Method::POST, "/api/v1/billing-accounts", Some(&body), &otto).await;
    assert_eq!(saved.status, StatusCode::CREATED, "{}", saved.text);
    assert_eq!(saved.json()["timeZone"], ZONE);

    let acme = crate::trust::issue(&fleet_db, "acme").await;
    let internal = support::fleet_internal(fleet_db.clone());
    let silo = |method: Method, path: &str, body: Option<String>| {
        let (internal, path, token) = (internal.clone(), path.to_owned(), acme.clone());
        async move {
            let auth = format!("Bearer {token}");
            let mut headers = vec![("authorization", auth)];
            if body.is_some() {
                headers.push(("content-type", "application/json".to_owned()));
            }
            send_as(&internal, method, &path, body.as_deref(), &headers).await
        }
    };
    let cursor = silo(Method::GET, "/api/internal/cluster-tenants/acme/usage", None).await;
    assert_eq!(cursor.json()["timeZone"], ZONE, "{}", cursor.text);
    let tz = opencrane_entitlements::period::time_zone(ZONE).unwrap();
    let local_today = opencrane_entitlements::period::local_date(Utc::now(), &tz).unwrap();
    let report = json!({ "activeSeats": 2, "spend": [] }).to_string();
    let taken =
        silo(Method::PUT, &format!("/api/internal/cluster-tenants/acme/usage/{local_today}"), Some(report.clone()))
            .await;
    assert_eq!(taken.status, StatusCode::OK, "today in {ZONE} is taken: {}", taken.text);
    let tomorrow = local_today + Duration::days(1);
    let early = silo(Method::PUT, &format!("/api/internal/cluster-tenants/acme/usage/{tomorrow}"), Some(report)).await;
    let message = early.json()["fields"]["day"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains(ZONE), "{}", early.text);

    // The month of the zone: last month there can be finalised, this one cannot (in its words).
    let fleet = support::fleet(fleet_db.clone(), Features::default(), false);
    let this_month = local_today.format("%Y-%m").to_string();
    let open =
        send(&fleet, Method::POST, &format!("/api/v1/billing/acme/statements/{this_month}/finalise"), None, true).await;
    assert_eq!(open.json()["code"], "MONTH_OPEN", "{}", open.text);
    assert!(open.text.contains(ZONE), "{}", open.text);
    let page = send_as(
        &people,
        Method::GET,
        "/billing/acme",
        None,
        &support::browser(&support::session_cookie(&fleet_db, "otto", false, false).await),
    )
    .await;
    assert!(page.text.contains(&format!("days in {ZONE}")), "the page says which days");
}
