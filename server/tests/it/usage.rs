//! Usage metering for billing between a real silo database and the fleet's internal API over a
//! socket, each customer with its own credential: the silo reports its days (seats measured at
//! its pulls, spend from its ledger); a repeated report changes nothing; a late spend revises its
//! day (the replaced one kept); a fleet that missed days gets them at the next report; another
//! customer's credential is refused like a missing customer; bad reports are refused with the
//! field named and store nothing; operators and the customer's admins read the days over REST.

use axum::http::{Method, StatusCode};
use chrono::{Duration, Utc};
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
}
