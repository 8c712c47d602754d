//! Every query against a silo's own database, checked at compile time against
//! `migrations/silo` (offline metadata in `.sqlx/`).
//!
//! A silo database belongs to exactly one ClusterTenant; nothing here takes a tenant parameter to
//! filter by, because there is nobody else's data in it to filter out.

pub mod access_tokens;
pub mod budgets;
pub mod credentials_keys;
pub mod grants;
pub mod groups;
pub mod litellm;
pub mod memberships;
pub mod models;
pub mod own;
pub mod policies;
pub mod settings;
pub mod tenants;
pub mod usage;

#[cfg(test)]
mod tests;
