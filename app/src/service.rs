//! The service layer (compiled with `ssr` only): the one place where a request becomes queries.
//!
//! Server functions (behind the pages) and REST handlers both call these functions and nothing
//! else, so validation, authorisation, auditing and error mapping exist exactly once. Each
//! function takes the [`AppState`](crate::state::AppState) and the
//! [`Caller`](crate::state::Caller), asks [`authorize`](crate::authz::authorize) first, and
//! returns wire types or an [`AppError`](crate::error::AppError).
//!
//! Rooms by role: [`fleet`] (customers, billing; platform operators), [`silo`] (one silo's
//! overview, members, users, groups, policies, access, budgets, models and access tokens; its
//! admins), and the areas both roles have at the top ([`audit`], [`sessions`]).
//!
//! Every mutation writes its audit entry in the same transaction: if the entry cannot be written,
//! the mutation does not happen (fail closed). Refusals are recorded too, on a best-effort basis.

pub mod audit;
pub mod chart;
pub mod csv;
pub mod fleet;
pub mod kept;
pub mod sessions;
pub mod silo;

use opencrane_common_db::audit::{self as audit_log, NewAuditEntry};
use sqlx::PgExecutor;

use crate::{
    authz::{Action, authorize},
    error::AppError,
    model::principal::Principal,
    state::{AppState, Caller},
};

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

/// Maps a query's or transaction's error to the wire error, so each call site says
/// `.or_fail(caller)` instead of spelling out the mapping.
pub(crate) trait OrFail<T> {
    /// A failure the caller cannot fix: 503 for an outage, otherwise 500; the cause is logged
    /// with the request id and only the id leaves (see [`db_failure`]).
    fn or_fail(self, caller: &Caller) -> Result<T, AppError>;
}

impl<T> OrFail<T> for Result<T, opencrane_db::Error> {
    fn or_fail(self, caller: &Caller) -> Result<T, AppError> {
        self.map_err(|e| db_failure(caller, e))
    }
}

impl<T> OrFail<T> for Result<T, sqlx::Error> {
    fn or_fail(self, caller: &Caller) -> Result<T, AppError> {
        self.map_err(|e| db_failure(caller, e.into()))
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

/// Writes one audit entry with `db` (a transaction, for mutations).
pub(crate) async fn record(
    db: impl PgExecutor<'_>,
    caller: &Caller,
    action: &str,
    target: &str,
    outcome: &str,
    metadata: serde_json::Value,
) -> Result<(), AppError> {
    let entry = NewAuditEntry {
        actor: caller.actor(),
        actor_role: caller.actor_role(),
        action,
        target,
        outcome,
        request_id: Some(&caller.request_id),
        metadata: &metadata,
    };
    audit_log::append(db, &entry).await.map(|_| ()).or_fail(caller)
}

/// Records a sign-in or sign-out (used by the server's auth routes, outside any mutation).
pub async fn record_sign_in(
    state: &AppState,
    caller: &Caller,
    action: &str,
    outcome: &str,
    metadata: serde_json::Value,
) -> Result<(), AppError> {
    let target = caller.actor().to_owned();
    record(&state.pool, caller, action, &target, outcome, metadata).await
}

/// [`authorize`] for a mutation: a refusal is recorded in the audit log (best effort: a refusal
/// stays a refusal even if it cannot be recorded).
pub(crate) async fn authorize_mutation<'c>(
    state: &AppState,
    caller: &'c Caller,
    action: Action<'_>,
    audit_action: &str,
    target: &str,
) -> Result<&'c Principal, AppError> {
    match authorize(caller.principal.as_ref(), action) {
        Ok(principal) => Ok(principal),
        Err(err) => {
            let outcome = if matches!(err, AppError::Unauthorized) { "failure" } else { "denied" };
            let meta = serde_json::json!({ "code": err.code() });
            if let Err(audit_err) = record(&state.pool, caller, audit_action, target, outcome, meta).await {
                tracing::warn!(request_id = %caller.request_id, error = %audit_err, "could not record a refusal");
            }
            Err(err)
        }
    }
}
