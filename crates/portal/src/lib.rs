//! The silo portal's back end beyond single queries.
//!
//! - [`seal`]: AES-256-GCM for provider keys and LiteLLM keys at rest.
//! - [`litellm`]: a thin client of LiteLLM's admin REST API (timeouts, retries of idempotent calls).
//! - [`snapshot`]: a silo's users, groups, grants, limits and models loaded from its database into
//!   the shapes [`opencrane_entitlements`] decides on — the one loader both the portal's views
//!   and enforcement use.
//! - [`reconcile`]: the loop that converges LiteLLM to the database (keys, models, credentials,
//!   fallbacks), ingests spend, blocks keys whose limits are reached and records threshold
//!   notices.
//! - [`secrets`]: provider keys referenced in Kubernetes Secrets, read at convergence.
//! - [`runtime`]: Kubernetes mode — each user's `Tenant` resource follows their row; drift and
//!   the runtime's phase come back.
//! - `fake` (feature): a LiteLLM built from its documented API shapes, for tests.

pub mod credentials_key;
pub mod egress;
pub mod litellm;
pub mod reconcile;
pub mod runtime;
pub mod seal;
pub mod secrets;
pub mod snapshot;

#[cfg(feature = "fake")]
pub mod fake;
