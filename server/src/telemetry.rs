//! Structured logging with `tracing`: human-readable by default, JSON with
//! `--log-format json`; the filter comes from `RUST_LOG` (default `info`).

use tracing_subscriber::{EnvFilter, fmt, prelude::*};

use crate::cli::{LogFormat, TelemetryArgs};

/// Installs the global subscriber.
pub fn init(args: &TelemetryArgs) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let registry = tracing_subscriber::registry().with(filter);
    match args.log_format {
        LogFormat::Human => registry.with(fmt::layer().with_target(false)).try_init()?,
        LogFormat::Json => registry.with(fmt::layer().json().flatten_event(true).with_current_span(true)).try_init()?,
    }
    Ok(())
}
