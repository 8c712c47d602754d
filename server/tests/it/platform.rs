//! Health, feature switches, the OpenAPI document, and migrations under concurrency.

use axum::http::{Method, StatusCode};
use sqlx::PgPool;

use crate::support::{self, Features, send};

#[sqlx::test(migrations = false)]
async fn health_and_readiness(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet(db.clone(), Features::default(), false);
    let health = send(&fleet, Method::GET, "/healthz", None, false).await;
    assert_eq!((health.status, health.json()["status"].clone()), (StatusCode::OK, "ok".into()));
    let ready = send(&fleet, Method::GET, "/readyz", None, false).await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.json()["db"], true);
    db.close().await;
    let unready = send(&fleet, Method::GET, "/readyz", None, false).await;
    assert_eq!(unready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(unready.json()["db"], false);
    assert_eq!(
        send(&fleet, Method::GET, "/healthz", None, false).await.status,
        StatusCode::OK,
        "liveness does not depend on the database"
    );
}

#[sqlx::test(migrations = false)]
async fn switched_off_areas_are_not_mounted(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let off = support::fleet(db, Features { cluster_tenants: false, billing: false }, true);
    assert_eq!(send(&off, Method::GET, "/api/v1/cluster-tenants", None, true).await.status, StatusCode::NOT_FOUND);
    assert_eq!(send(&off, Method::GET, "/api/v1/billing-accounts/me", None, false).await.status, StatusCode::NOT_FOUND);
    assert_eq!(send(&off, Method::GET, "/cluster-tenants", None, false).await.status, StatusCode::NOT_FOUND);
    assert_eq!(send(&off, Method::GET, "/billing", None, false).await.status, StatusCode::NOT_FOUND);
    let home = send(&off, Method::GET, "/", None, false).await;
    assert_eq!(home.status, StatusCode::OK);
    assert!(!home.text.contains(r#"href="/cluster-tenants""#), "the sidebar hides the area");
    let doc = send(&off, Method::GET, "/api/v1/openapi.json", None, false).await.json();
    assert!(doc["paths"].get("/api/v1/cluster-tenants").is_none());
    let listed = send(&off, Method::POST, "/api/fleet/cluster-tenants/list", Some(r#"{"query":{"search":null,"phase":null,"tier":null,"sort":"name","descending":false,"limit":10,"offset":0}}"#), true).await;
    assert_eq!(listed.status, StatusCode::NOT_FOUND, "the server function refuses too");
}

/// Every documented operation exists (neither 404 nor 405), and the document is public.
#[sqlx::test(migrations = false)]
async fn the_openapi_document_matches_the_mounted_routes(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet(db.clone(), Features::default(), false);
    let doc = send(&fleet, Method::GET, "/api/v1/openapi.json", None, false).await;
    assert_eq!(doc.status, StatusCode::OK);
    let doc = doc.json();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 5);
    for (path, ops) in paths {
        for method in ops.as_object().unwrap().keys() {
            let concrete = path.replace("{name}", "probe");
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let body = matches!(method, Method::POST | Method::PUT).then_some("{}");
            let reply = send(&fleet, method.clone(), &concrete, body, true).await;
            assert_ne!(reply.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
            if reply.status == StatusCode::NOT_FOUND {
                let code = reply.json()["code"].clone();
                assert_ne!(code, "NOT_FOUND", "{method} {path} is documented but not mounted");
            }
        }
    }
}

/// Replicas starting together: both apply migrations under the advisory lock, one wins, both
/// succeed, and re-running does nothing.
#[sqlx::test(migrations = false)]
async fn concurrent_migrations_are_safe_and_idempotent(pool: PgPool) {
    let a = pool.clone();
    let b = pool.clone();
    let (ra, rb) = tokio::join!(
        opencrane_db::migrate(&a, opencrane_db::Schema::Fleet),
        opencrane_db::migrate(&b, opencrane_db::Schema::Fleet)
    );
    ra.unwrap();
    rb.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations").fetch_one(&pool).await.unwrap();
    assert_eq!(applied, opencrane_db::FLEET_MIGRATOR.migrations.len() as i64);
    opencrane_db::migrate(&pool, opencrane_db::Schema::Fleet).await.unwrap();
    // An applied migration edited afterwards stops start-up with a clear error.
    sqlx::query("UPDATE _sqlx_migrations SET checksum = '\\x00'::bytea").execute(&pool).await.unwrap();
    let drift = opencrane_db::migrate(&pool, opencrane_db::Schema::Fleet).await.unwrap_err();
    assert!(drift.to_string().contains("modified"), "{drift}");
}

/// Issue 20 and reliability goal D4: the server's pool hands out a connection used within the last
/// few seconds without pinging it first (a round trip less per query). A connection the database
/// dropped inside that window costs one request — a 503 with only the request id, never a hang
/// or a 500 — and is replaced: the next request is served.
#[sqlx::test(migrations = false)]
async fn a_connection_the_database_dropped_costs_one_request_at_most(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let served = support::server_pool(&pool);
    let fleet = support::fleet(served.clone(), Features::default(), false);
    let first = send(&fleet, Method::GET, "/api/v1/cluster-tenants", None, true).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(&served).await.unwrap();
    // sqlx checks a connection as it comes back (one round trip); drop it only once it is idle.
    while served.num_idle() == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let dropped: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)").bind(pid).fetch_one(&db).await.unwrap();
    assert!(dropped);
    // The signal is asynchronous: wait until the backend has gone.
    for _ in 0..100 {
        let alive: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)")
            .bind(pid)
            .fetch_one(&db)
            .await
            .unwrap();
        if !alive {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let failed = send(&fleet, Method::GET, "/api/v1/cluster-tenants", None, true).await;
    assert_eq!(failed.status, StatusCode::SERVICE_UNAVAILABLE, "{}", failed.text);
    assert!(!failed.text.contains("terminat"), "no database detail leaves: {}", failed.text);
    let next = send(&fleet, Method::GET, "/api/v1/cluster-tenants", None, true).await;
    assert_eq!(next.status, StatusCode::OK, "the pool opened a new connection: {}", next.text);
}

/// Issue 20: the server's sessions plan each run of a list query for its own parameters. Postgres
/// otherwise may move a prepared statement to one generic plan after five runs — when jumps deep
/// into the list shared the keyset pages' statement, their expensive custom plans made the
/// generic one look cheap — and for the list's keyset cursor and optional filters
/// (`NOT $9 OR (…) > (…)`, `$1 IS NULL OR …`) that plan uses no index: every later page reached by
/// Next on that connection walked the list from the top. Jumps now have a statement of their own,
/// and these runs no longer move either statement to a generic plan by themselves; the sessions'
/// `plan_cache_mode` is checked so that no mix of runs can.
#[sqlx::test(migrations = false)]
async fn list_queries_are_planned_for_their_parameters_on_every_run(pool: PgPool) {
    use opencrane_fleet_db::cluster_tenants::{self, Cursor, ListFilter, SortKey, Start};
    let db = support::fleet_db(&pool).await;
    sqlx::raw_sql(
        "INSERT INTO cluster_tenants (name, display_name) SELECT 'c-' || i, 'Customer ' || md5(i::text)
         FROM generate_series(1, 10000) i; ANALYZE cluster_tenants",
    )
    .execute(&db)
    .await
    .unwrap();
    let served = support::server_pool(&pool);
    let mut conn = served.acquire().await.unwrap();
    let all = ListFilter::default();
    let mut cursor = None;
    for _ in 0..10 {
        let page = cluster_tenants::list(&mut conn, &all, SortKey::DisplayName, true, 51, Start::Offset(7449)).await;
        cursor = page.unwrap().last().map(|r| Cursor::of(r, SortKey::DisplayName));
    }
    let cursor = cursor.unwrap();
    for _ in 0..5 {
        cluster_tenants::list(&mut conn, &all, SortKey::DisplayName, true, 51, Start::After(&cursor)).await.unwrap();
    }
    // The jump and the keyset page are two statements (a jump reads its names first).
    let plans: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements
         WHERE statement LIKE '%FROM cluster_tenants ct%' AND statement NOT LIKE '%pg_prepared_statements%'
         ORDER BY custom_plans",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    assert_eq!(plans, vec![(0, 5), (0, 10)], "(generic, custom) plans of the keyset and the jump statements");
    let mode: String = sqlx::query_scalar("SHOW plan_cache_mode").fetch_one(&mut *conn).await.unwrap();
    assert_eq!(mode, "force_custom_plan", "the server's sessions plan every run for its parameters");
}

/// A burst's connections are closed once requests stop, one kept, and the kept answers forgotten;
/// while requests keep coming neither happens. (`give_back_when_quiet` with a short period; the
/// server runs it every two seconds.)
#[sqlx::test(migrations = false)]
async fn a_quiet_server_closes_the_connections_a_burst_opened(pool: PgPool) {
    let base = std::env::var("DATABASE_URL").unwrap();
    let database = pool.connect_options().get_database().unwrap().to_owned();
    let url = format!("{}/{database}", base.rsplit_once('/').unwrap().0);
    let server = opencrane_db::connect_lazy(&url, &opencrane_db::PoolSettings::default()).unwrap();
    let mut burst = Vec::new();
    for _ in 0..5 {
        burst.push(server.acquire().await.unwrap());
    }
    drop(burst);
    // A dropped connection goes back to the pool from a task of its own.
    for _ in 0..100 {
        if server.num_idle() == 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!((server.size(), server.num_idle()), (5, 5));

    let activity = opencrane::idle::Activity::default();
    let period = std::time::Duration::from_millis(200);
    let forgotten = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let forget = {
        let forgotten = forgotten.clone();
        move || _ = forgotten.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    };
    let task = tokio::spawn(opencrane::idle::give_back_when_quiet(server.clone(), activity.clone(), period, forget));
    for _ in 0..30 {
        activity.record();
        tokio::time::sleep(period / 10).await;
    }
    assert_eq!(server.size(), 5, "nothing is closed while requests keep coming");
    assert_eq!(forgotten.load(std::sync::atomic::Ordering::SeqCst), 0, "nor are kept answers forgotten");

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while server.size() > 1 || forgotten.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(std::time::Instant::now() < deadline, "the pool still holds {} connections", server.size());
        tokio::time::sleep(period).await;
    }
    assert_eq!(server.num_idle(), 1, "one connection is kept for the next request");
    assert_eq!(forgotten.load(std::sync::atomic::Ordering::SeqCst), 1, "kept answers are forgotten once, once quiet");
    sqlx::query("SELECT 1").execute(&server).await.unwrap();
    server.close().await;
    tokio::time::timeout(std::time::Duration::from_secs(5), task).await.unwrap().unwrap();
}
