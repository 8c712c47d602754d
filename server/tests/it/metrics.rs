//! The Prometheus `/metrics` listener of both roles: the series the README documents exist and
//! move when what they count happens, labelled by route template (never by a path with a
//! customer's name in it). The LiteLLM side is the faithful fake (no LiteLLM runs here).

use app::Role;
use axum::{
    Router,
    http::{Method, StatusCode},
};
use opencrane_portal::{fake::FakeLiteLlm, litellm::LiteLlm};
use sqlx::PgPool;

use crate::support::{self, Features, create_body, send};

/// The value of the series written exactly as `series` (name and labels in the exporter's order),
/// or 0 when it is absent.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

/// The sum of every series of `name` whose labels contain all of `labels`.
fn total(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|line| line.starts_with(&format!("{name}{{")) && labels.iter().all(|l| line.contains(l)))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn scrape(metrics: &Router) -> String {
    let reply = send(metrics, Method::GET, "/metrics", None, false).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.headers["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    reply.text
}

#[sqlx::test(migrations = false)]
async fn metrics_series_exist_and_move(pool: PgPool) {
    let fleet_db = support::fleet_db(&pool).await;
    let silo_db = support::silo_db(&pool).await;
    opencrane::metrics::register(Role::Fleet, &fleet_db);
    opencrane::metrics::register(Role::Silo, &silo_db);
    let fleet = support::fleet(fleet_db.clone(), Features::default(), false);
    let silo = support::silo(silo_db.clone(), true);
    let metrics = opencrane::metrics::router();
    let groups = r#"opencrane_http_requests_total{role="silo",method="GET",route="/api/v1/groups",status="200"}"#;
    let reconciles = r#"opencrane_reconcile_runs_total{result="failed"}"#;

    let before = scrape(&metrics).await;
    for _ in 0..3 {
        assert_eq!(send(&silo, Method::GET, "/api/v1/groups", None, true).await.status, StatusCode::OK);
    }
    let created =
        send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("metrics-probe")), true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    assert_eq!(send(&fleet, Method::GET, "/api/v1/cluster-tenants/metrics-probe", None, true).await.status, 200);
    assert_eq!(send(&fleet, Method::GET, "/nowhere-metrics-probe", None, false).await.status, 404);

    let after = scrape(&metrics).await;
    // Requests by route template and status, with a latency histogram.
    assert!(sample(&after, groups) >= sample(&before, groups) + 3.0, "{after}");
    assert!(after.contains(r#"opencrane_http_request_duration_seconds_bucket{role="silo",method="GET",route="/api/v1/groups",le="0.005"}"#), "{after}");
    assert!(after.contains(r#"route="/api/v1/cluster-tenants/{name}",status="200"}"#), "{after}");
    assert!(after.contains(r#"route="(unmatched)",status="404"}"#), "{after}");
    assert!(!after.contains("metrics-probe"), "no path (with a customer's name) is a label: {after}");
    // Gauges read at the scrape: the pools, sessions, the provisioning queue.
    for series in [
        r#"opencrane_db_pool_connections{role="fleet",state="idle"}"#,
        r#"opencrane_db_pool_connections{role="silo",state="active"}"#,
        r#"opencrane_sessions_active{role="silo"}"#,
    ] {
        assert!(after.lines().any(|l| l.starts_with(series)), "{series} in {after}");
    }
    assert!(sample(&after, r#"opencrane_db_pool_max_connections{role="silo"}"#) >= 1.0, "{after}");
    assert_eq!(sample(&after, "opencrane_provisioning_queue_depth"), 1.0, "the new customer waits: {after}");

    // A reconcile (here one without a cluster: its first step fails) is counted and timed by step.
    let unavailable =
        opencrane::fleet::provisioner::ProvisioningUnavailable { reason: "no cluster".into(), action: "-".into() };
    let outcome = opencrane_provision::reconcile::reconcile(&fleet_db, &unavailable, "metrics-probe").await.unwrap();
    assert!(matches!(outcome, opencrane_provision::reconcile::Outcome::Failed(_)), "{outcome:?}");
    // Outbound calls by result: one LiteLLM call that works, one refused.
    let fake = FakeLiteLlm::start("sk-master").await.unwrap();
    LiteLlm::new(&fake.url, "sk-master").unwrap().models().await.unwrap();
    LiteLlm::new(&fake.url, "sk-wrong").unwrap().models().await.unwrap_err();

    let last = scrape(&metrics).await;
    assert!(sample(&last, reconciles) >= sample(&after, reconciles) + 1.0, "{last}");
    assert!(total(&last, "opencrane_reconcile_step_duration_seconds_count", &[r#"result="failed""#]) >= 1.0, "{last}");
    assert!(total(&last, "opencrane_outbound_requests_total", &[r#"service="litellm""#, r#"result="ok""#]) >= 1.0);
    assert!(
        total(&last, "opencrane_outbound_requests_total", &[r#"service="litellm""#, r#"result="http_4xx""#]) >= 1.0
    );
    assert!(!last.contains("sk-master") && !last.contains("sk-wrong"), "no secret in the metrics");

    // Only /metrics is on the listener.
    assert_eq!(send(&metrics, Method::GET, "/api/v1/groups", None, true).await.status, StatusCode::NOT_FOUND);
    opencrane::metrics::unregister(&fleet_db);
    opencrane::metrics::unregister(&silo_db);
}

/// The real `opencrane fleet-manager` process with `OTEL_EXPORTER_OTLP_ENDPOINT` pointing at a
/// collector in this test (the OTLP/HTTP protobuf request decoded with the protocol's own
/// types): a request carrying a W3C `traceparent` is exported as a span of that trace, named by
/// its route template; and the process's own `/metrics` listener answers and counts it.
#[sqlx::test(migrations = false)]
async fn a_running_fleet_exports_traces_and_serves_metrics(pool: PgPool) {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message as _;

    let db = support::fleet_db(&pool).await;
    let received: std::sync::Arc<std::sync::Mutex<Vec<ExportTraceServiceRequest>>> = Default::default();
    let collector = {
        let received = received.clone();
        axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let received = received.clone();
                async move {
                    received.lock().unwrap().push(ExportTraceServiceRequest::decode(body).unwrap());
                    StatusCode::OK
                }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let collector_url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, collector).await.unwrap() });

    let database: String = sqlx::query_scalar("SELECT current_database()").fetch_one(&db).await.unwrap();
    let base = std::env::var("DATABASE_URL").unwrap();
    let url = format!("{}/{database}", base.rsplit_once('/').unwrap().0);
    let (port, internal, metrics_port) = (support::free_port(), support::free_port(), support::free_port());
    let _fleet = tokio::process::Command::new(env!("CARGO_BIN_EXE_opencrane"))
        .arg("fleet-manager")
        .env("DATABASE_URL", &url)
        .env("PORT", port.to_string())
        .env("OPENCRANE_INTERNAL_PORT", internal.to_string())
        .env("OPENCRANE_METRICS_PORT", metrics_port.to_string())
        .env("OPENCRANE_BIND_ADDRESS", "127.0.0.1")
        .env("OPENCRANE_API_TOKEN", "trace-test-token-0123456789")
        .env("OPENCRANE_INSECURE_HTTP", "true")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector_url)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let http = openidconnect::reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let mut up = false;
    for _ in 0..200 {
        if http.get(format!("{base}/healthz")).send().await.is_ok_and(|r| r.status().is_success()) {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(up, "the fleet-manager answers");

    let (trace_id, parent) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let listed = http
        .get(format!("{base}/api/v1/cluster-tenants"))
        .bearer_auth("trace-test-token-0123456789")
        .header("traceparent", format!("00-{trace_id}-{parent}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);

    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let mut found = None;
    for _ in 0..100 {
        found = received.lock().unwrap().iter().find_map(|request| {
            request.resource_spans.iter().find_map(|rs| {
                let service = rs.resource.as_ref()?.attributes.iter().find(|a| a.key == "service.name")?;
                rs.scope_spans
                    .iter()
                    .flat_map(|ss| &ss.spans)
                    .find(|s| hex(&s.trace_id) == trace_id && hex(&s.parent_span_id) == parent)
                    .map(|s| (format!("{:?}", service.value), s.name.clone(), hex(&s.parent_span_id)))
            })
        });
        if found.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (service, name, parent_span) = found.expect("the request's span reached the collector");
    assert!(service.contains("opencrane-fleet-manager"), "{service}");
    assert_eq!(name, "GET /api/v1/cluster-tenants", "named by the route template");
    assert_eq!(parent_span, parent, "the caller's span is its parent");

    // The same process's /metrics (its own listener) counted the request.
    let scraped =
        http.get(format!("http://127.0.0.1:{metrics_port}/metrics")).send().await.unwrap().text().await.unwrap();
    let series =
        r#"opencrane_http_requests_total{role="fleet",method="GET",route="/api/v1/cluster-tenants",status="200"}"#;
    assert_eq!(sample(&scraped, series), 1.0, "{scraped}");
    assert!(
        sample(&scraped, "opencrane_provisioning_queue_depth") >= 0.0 && scraped.contains("opencrane_sessions_active")
    );
}
