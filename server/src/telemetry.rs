//! Structured logging with `tracing` (human-readable by default, JSON with `--log-format json`;
//! the filter comes from `RUST_LOG`, default `info`) and, when `OTEL_EXPORTER_OTLP_ENDPOINT` is
//! set, OpenTelemetry traces exported over OTLP/HTTP (protobuf) from the same spans: one per
//! request (named by method and route template), per reconcile and per outbound call. Without the
//! variable no exporter, no propagator and no OpenTelemetry layer exist (nothing is paid).
//!
//! W3C trace context: an incoming `traceparent` becomes the request span's parent
//! ([`set_remote_parent`]), and the calls to LiteLLM, Zitadel and the fleet carry the current
//! span's ([`trace_headers`]).

use std::sync::{
    OnceLock,
    atomic::{AtomicBool, Ordering},
};

use opentelemetry::{
    propagation::{Extractor, Injector, TextMapPropagator as _},
    trace::TracerProvider as _,
};
use opentelemetry_sdk::{Resource, propagation::TraceContextPropagator, trace::SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::{EnvFilter, fmt, prelude::*};

use crate::cli::{LogFormat, TelemetryArgs};

/// Whether traces are exported (the propagation helpers do nothing otherwise).
static TRACING: AtomicBool = AtomicBool::new(false);
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Installs the global subscriber; `service` names the process in traces (`OTEL_SERVICE_NAME`
/// wins when set).
pub fn init(args: &TelemetryArgs, service: &str) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let otel = match std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok().filter(|e| !e.trim().is_empty()) {
        Some(_) => {
            let provider = provider(service)?;
            let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("opencrane"));
            let _ = PROVIDER.set(provider);
            TRACING.store(true, Ordering::Relaxed);
            Some(layer)
        }
        None => None,
    };
    let registry = tracing_subscriber::registry().with(filter).with(otel);
    match args.log_format {
        LogFormat::Human => registry.with(fmt::layer().with_target(false)).try_init()?,
        LogFormat::Json => registry.with(fmt::layer().json().flatten_event(true).with_current_span(true)).try_init()?,
    }
    Ok(())
}

/// The tracer provider: OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` appended, as the
/// specification says), batched on the SDK's own thread (`OTEL_BSP_*` tune it).
fn provider(service: &str) -> anyhow::Result<SdkTracerProvider> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| anyhow::anyhow!("OTEL_EXPORTER_OTLP_ENDPOINT: {e}"))?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(service.to_owned());
    }
    Ok(SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.build()).build())
}

/// Sends the spans still buffered (at shutdown).
pub fn flush() {
    if let Some(provider) = PROVIDER.get()
        && let Err(err) = provider.shutdown()
    {
        eprintln!("warning: exporting the last traces failed: {err}");
    }
}

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct Collect(Vec<(String, String)>);

impl Injector for Collect {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}

/// Makes an incoming request's `traceparent` (and `tracestate`) the parent of `span`.
pub fn set_remote_parent(span: &tracing::Span, headers: &http::HeaderMap) {
    if !TRACING.load(Ordering::Relaxed) || !headers.contains_key("traceparent") {
        return;
    }
    let parent = TraceContextPropagator::new().extract(&Headers(headers));
    let _ = span.set_parent(parent);
}

/// Names `span`'s trace span by its route template (e.g. `GET /api/v1/groups`), once the router
/// has matched; recording `otel.name` is not enough, the span has started by then.
pub fn name_span(span: &tracing::Span, name: String) {
    if TRACING.load(Ordering::Relaxed) {
        opentelemetry::trace::TraceContextExt::span(&span.context()).update_name(name);
    }
}

/// The W3C trace-context headers of the current span, for an outbound call (none when traces
/// are off).
pub fn trace_headers() -> Vec<(String, String)> {
    if !TRACING.load(Ordering::Relaxed) {
        return Vec::new();
    }
    current_headers()
}

fn current_headers() -> Vec<(String, String)> {
    let mut headers = Collect(Vec::new());
    TraceContextPropagator::new().inject_context(&tracing::Span::current().context(), &mut headers);
    headers.0
}

/// [`trace_headers`] as a shareable hook, for the LiteLLM and Zitadel clients.
pub fn header_hook() -> std::sync::Arc<dyn Fn() -> Vec<(String, String)> + Send + Sync> {
    std::sync::Arc::new(trace_headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_parent_becomes_the_outbound_calls_trace() {
        let provider = SdkTracerProvider::builder().build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        TRACING.store(true, Ordering::Relaxed);

        let mut incoming = http::HeaderMap::new();
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        incoming.insert("traceparent", parent.parse().unwrap());
        let span = tracing::info_span!("request");
        set_remote_parent(&span, &incoming);
        let outbound = span.in_scope(|| tracing::info_span!("litellm").in_scope(trace_headers));
        let traceparent = &outbound.iter().find(|(k, _)| k == "traceparent").unwrap().1;
        assert!(traceparent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"), "same trace: {traceparent}");
        assert!(!traceparent.contains("00f067aa0ba902b7"), "a new span of it: {traceparent}");
        assert!(traceparent.ends_with("-01"), "sampled, as the caller asked");
    }
}
