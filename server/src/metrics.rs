//! Prometheus metrics of both roles: the process's recorder (the `metrics` facade the libraries
//! record through, rendered by `metrics-exporter-prometheus`), the `/metrics` listener
//! (`--metrics-port`, never the public port), the HTTP middleware that counts requests by their
//! route template, and the gauges read from the database at each scrape (pool, sessions, the
//! provisioning queue).
//!
//! Series (names and units per Prometheus conventions; every HTTP and role series has `role`):
//! - `opencrane_http_requests_total{role,method,route,status}`,
//!   `opencrane_http_request_duration_seconds{role,method,route}` (histogram);
//! - `opencrane_db_pool_connections{role,state="idle"|"active"}`, `opencrane_db_pool_max_connections{role}`;
//! - `opencrane_sessions_active{role}`;
//! - fleet: `opencrane_provisioning_queue_depth`, `opencrane_provisioning_oldest_due_seconds`,
//!   `opencrane_reconcile_runs_total{result}`, `opencrane_reconcile_duration_seconds{result}`,
//!   `opencrane_reconcile_step_duration_seconds{step,result}`, `opencrane_leader{lease}`;
//! - outbound calls: `opencrane_outbound_requests_total{service,result}`,
//!   `opencrane_outbound_request_duration_seconds{service}` (`service` = `zitadel`, `litellm`,
//!   `fleet`).

use std::{
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};

use app::Role;
use axum::{
    Router,
    extract::{MatchedPath, Request},
    http::{StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::get,
};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use opencrane_db::PgPool;

/// Histogram buckets for every `_seconds` series: 1 ms to 30 s.
const BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// How long a scrape waits for its database gauges before rendering without them.
const SCRAPE_QUERY_TIMEOUT: Duration = Duration::from_secs(2);

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The roles served by this process whose database gauges a scrape reads (one in production;
/// `opencrane dev` serves the fleet and its silos in one process).
static SOURCES: Mutex<Vec<(Role, PgPool)>> = Mutex::new(Vec::new());

/// How often the recorder folds the durations recorded since into its histograms' buckets.
const UPKEEP_PERIOD: Duration = Duration::from_secs(5);

/// The process's recorder, installed on first use. If another recorder was installed first
/// (nothing in this binary does), the series render empty rather than failing the process.
///
/// Installed inside the runtime, it keeps itself: the recorder holds every duration recorded
/// until its upkeep folds them into the buckets, and `install_recorder` leaves running that
/// upkeep to the caller. Run only at each scrape, a process nobody scraped kept 8 bytes per
/// request for good (about 1 MB after the bench's load of a silo).
pub fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async {
                let mut tick = tokio::time::interval(UPKEEP_PERIOD);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    if let Some(handle) = HANDLE.get() {
                        handle.run_upkeep();
                    }
                }
            });
        }
        let builder = PrometheusBuilder::new();
        let builder = match builder.set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS) {
            Ok(b) => b,
            Err(err) => {
                tracing::warn!(error = %err, "metrics buckets refused; summaries are exported instead");
                PrometheusBuilder::new()
            }
        };
        match builder.install_recorder() {
            Ok(handle) => handle,
            Err(err) => {
                tracing::warn!(error = %err, "a metrics recorder was already installed; /metrics is empty");
                PrometheusBuilder::new().build_recorder().handle()
            }
        }
    })
}

/// Registers a served role whose pool and sessions the scrape reports.
pub fn register(role: Role, pool: &PgPool) {
    handle();
    if let Ok(mut sources) = SOURCES.lock() {
        sources.push((role, pool.clone()));
    }
}

/// Forgets a role's pool when it stops serving.
pub fn unregister(pool: &PgPool) {
    if let Ok(mut sources) = SOURCES.lock() {
        sources.retain(|(_, p)| !p.ptr_eq_pool(pool));
    }
}

/// `ptr_eq` for pools (a pool is an `Arc` inside).
trait PoolIdentity {
    fn ptr_eq_pool(&self, other: &Self) -> bool;
}

impl PoolIdentity for PgPool {
    fn ptr_eq_pool(&self, other: &Self) -> bool {
        // Two handles of one pool share its options and statistics; the connect options'
        // address identifies it.
        std::ptr::eq(self.connect_options().as_ref(), other.connect_options().as_ref())
    }
}

/// The metrics listener's router: `GET /metrics` only.
pub fn router() -> Router {
    Router::new().route("/metrics", get(scrape)).fallback(|| async { StatusCode::NOT_FOUND })
}

/// Serves [`router`] on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    handle();
    axum::serve(listener, router()).with_graceful_shutdown(shutdown).await
}

async fn scrape() -> Response {
    let sources: Vec<(Role, PgPool)> = SOURCES.lock().map(|s| s.clone()).unwrap_or_default();
    for (role, pool) in sources {
        let role_label = role.as_str();
        let idle = pool.num_idle();
        let size = pool.size() as usize;
        metrics::gauge!("opencrane_db_pool_connections", "role" => role_label, "state" => "idle").set(idle as f64);
        metrics::gauge!("opencrane_db_pool_connections", "role" => role_label, "state" => "active")
            .set(size.saturating_sub(idle) as f64);
        metrics::gauge!("opencrane_db_pool_max_connections", "role" => role_label)
            .set(f64::from(pool.options().get_max_connections()));
        let gauges = async {
            let sessions = opencrane_common_db::sessions::count_active(&pool).await?;
            metrics::gauge!("opencrane_sessions_active", "role" => role_label).set(sessions as f64);
            if role == Role::Fleet {
                let queue = opencrane_fleet_db::provisioning::queue(&pool).await?;
                metrics::gauge!("opencrane_provisioning_queue_depth").set(queue.depth as f64);
                metrics::gauge!("opencrane_provisioning_oldest_due_seconds").set(queue.oldest_due_seconds);
            }
            Ok::<_, opencrane_db::Error>(())
        };
        match tokio::time::timeout(SCRAPE_QUERY_TIMEOUT, gauges).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::debug!(role = role_label, error = %err, "metrics: database gauges not read"),
            Err(_) => tracing::debug!(role = role_label, "metrics: database gauges timed out"),
        }
    }
    let handle = handle();
    handle.run_upkeep();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], handle.render()).into_response()
}

/// The route template a request matched, carried from inside the router (where axum knows it)
/// to [`track`] outside it.
#[derive(Clone, Debug)]
pub struct RouteLabel(pub Arc<str>);

/// Inner middleware (on the routed app): records the matched route template on the response.
pub async fn label_route(req: Request, next: Next) -> Response {
    let matched = req.extensions().get::<MatchedPath>().map(|m| Arc::<str>::from(m.as_str()));
    let method = req.method().clone();
    let mut response = next.run(req).await;
    response.extensions_mut().insert(RequestMethod(method));
    if let Some(route) = matched
        && response.extensions().get::<RouteLabel>().is_none()
    {
        response.extensions_mut().insert(RouteLabel(route));
    }
    response
}

/// Names a request's span by the route template its response carries (`route` field, and the
/// trace span `METHOD /template`), never by the path.
pub fn name_request_span<B>(span: &tracing::Span, response: &axum::http::Response<B>) {
    if let Some(RouteLabel(route)) = response.extensions().get::<RouteLabel>() {
        span.record("route", route.as_ref());
        if let Some(method) = response.extensions().get::<RequestMethod>() {
            crate::telemetry::name_span(span, format!("{} {route}", method.0));
        }
    }
}

/// The request's method, carried to the response for [`name_request_span`].
#[derive(Clone, Debug)]
pub struct RequestMethod(pub axum::http::Method);

/// Outer middleware: counts and times every request by role, method, route template and
/// status. Paths are never labels (a customer's name is in many), only templates: unmatched
/// requests are `(static)` under `/pkg/` and `(unmatched)` otherwise.
pub async fn track(role: Role, req: Request, next: Next) -> Response {
    let method = req.method().as_str().to_owned();
    let fallback = if req.uri().path().starts_with("/pkg/") { "(static)" } else { "(unmatched)" };
    let started = Instant::now();
    let response = next.run(req).await;
    let route = response.extensions().get::<RouteLabel>().map_or_else(|| Arc::from(fallback), |r| r.0.clone());
    let status = response.status().as_u16().to_string();
    let labels = [("role", role.as_str().to_owned()), ("method", method), ("route", route.to_string())];
    metrics::histogram!("opencrane_http_request_duration_seconds", &labels).record(started.elapsed().as_secs_f64());
    let mut with_status = labels.to_vec();
    with_status.push(("status", status));
    metrics::counter!("opencrane_http_requests_total", &with_status).increment(1);
    response
}

/// Sends one call of the silo to its fleet, recording it by its result (`ok`, `http_4xx`,
/// `http_5xx`, `unreachable`, as the Zitadel and LiteLLM clients record theirs).
pub async fn fleet_call(
    request: openidconnect::reqwest::RequestBuilder,
) -> openidconnect::reqwest::Result<openidconnect::reqwest::Response> {
    let span = tracing::info_span!("fleet", otel.kind = "client");
    let request =
        span.in_scope(|| crate::telemetry::trace_headers().into_iter().fold(request, |r, (k, v)| r.header(k, v)));
    let started = Instant::now();
    let result = tracing::Instrument::instrument(request.send(), span).await;
    let label = match &result {
        Ok(r) if r.status().is_success() => "ok",
        Ok(r) if r.status().is_server_error() => "http_5xx",
        Ok(_) => "http_4xx",
        Err(_) => "unreachable",
    };
    metrics::counter!("opencrane_outbound_requests_total", "service" => "fleet", "result" => label).increment(1);
    metrics::histogram!("opencrane_outbound_request_duration_seconds", "service" => "fleet")
        .record(started.elapsed().as_secs_f64());
    result
}
