//! The silo's REST lists of users, groups and policies as kept answers ([`crate::service::kept`]):
//! each list request's JSON, as sent, given again while the silo's data generation is the same
//! (no statement but the generation's, no JSON written). The data generation follows `tenants`,
//! `groups`, `group_members`, `access_policies`, `budgets` and `litellm_keys`
//! (`migrations/silo/…_data_generation.sql`): a list that reads anything else must not be kept.

use std::{future::Future, sync::Arc};

use axum::body::Bytes;
use serde::Serialize;

use super::admin_read;
use crate::{
    error::AppError,
    service::{internal, kept},
    state::{AppState, Caller},
};

/// One list answer: the JSON body of this window, how many it holds and how many the whole list
/// has.
#[derive(Debug)]
pub struct KeptList {
    /// The window's items as JSON.
    pub body: Bytes,
    /// How many items the window holds.
    pub shown: i64,
    /// How many the whole list holds (`X-Total-Count`).
    pub total: i64,
}

impl KeptList {
    /// `items` (a window of a list of `total`) written as JSON.
    pub fn of<T: Serialize>(caller: &Caller, items: &[T], total: i64) -> Result<Self, AppError> {
        let body = serde_json::to_vec(items).map_err(|e| internal(caller, &e))?;
        Ok(Self { body: body.into(), shown: i64::try_from(items.len()).unwrap_or(i64::MAX), total })
    }
}

/// The answer to the list request `key` (its path and query, canonical) for a caller who may
/// administer the silo: the kept one while the data generation is the one it was kept under,
/// else `read`'s. `read` runs only when nothing current is kept.
pub async fn list(
    state: &AppState,
    caller: &Caller,
    key: &str,
    read: impl Future<Output = Result<KeptList, AppError>>,
) -> Result<Arc<KeptList>, AppError> {
    let silo = admin_read(state, caller)?;
    kept::answer(&state.pool, caller, &silo.kept_lists, key, |list| list.body.len(), read).await
}
