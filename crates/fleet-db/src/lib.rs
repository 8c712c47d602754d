//! Every query against the fleet registry database, checked at compile time against
//! `migrations/fleet` (offline metadata in `.sqlx/`).
//!
//! Functions take `impl PgExecutor` (a pool or a transaction, the caller decides) or
//! `&mut PgConnection` when they must run several statements in one transaction. This crate knows
//! rows, not wire types: the service layer in `app` maps between the two.

pub mod billing_accounts;
pub mod cluster_tenants;
pub mod dns_checks;
pub mod invitations;
pub mod memberships;
pub mod month_totals;
pub mod plans;
pub mod provisioning;
pub mod shared_migrations;
pub mod silo_credentials;
pub mod statements;
pub mod tombstones;
pub mod usage;
pub mod zitadel_rotations;

#[cfg(test)]
mod tests;
