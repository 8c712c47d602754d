//! The service layer (compiled with `ssr` only): the one place where a request becomes queries.
//!
//! Server functions (behind the pages) and REST handlers both call these functions and nothing
//! else, so validation, authorisation and error mapping exist exactly once. Each function takes
//! the [`AppState`](crate::state::AppState) and the [`Caller`](crate::state::Caller), asks
//! [`authorize`](crate::authz::authorize) first, and returns wire types or an
//! [`AppError`](crate::error::AppError).

pub mod billing;
pub mod cluster_tenants;
pub mod silo;

use crate::{error::AppError, state::Caller};

/// Maps a database error that the caller cannot fix: "unavailable" for outages (503), otherwise
/// "internal" (500). The cause is logged here with the request id; only the id leaves.
pub(crate) fn db_failure(caller: &Caller, err: opencrane_db::Error) -> AppError {
    match err {
        opencrane_db::Error::Unavailable(source) => {
            tracing::warn!(request_id = %caller.request_id, error = %source, "database unavailable");
            AppError::Unavailable { request_id: caller.request_id.clone() }
        }
        other => internal(caller, &other),
    }
}

/// Logs `err` with its source chain and returns a bare internal error.
pub(crate) fn internal(caller: &Caller, err: &(dyn std::error::Error + 'static)) -> AppError {
    let mut chain = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    tracing::error!(request_id = %caller.request_id, error = %chain, "request failed");
    AppError::Internal { request_id: caller.request_id.clone() }
}
