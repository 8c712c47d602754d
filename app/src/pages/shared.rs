//! Pages both roles have: not found, the audit log, sessions.

pub mod audit;
pub mod not_found;
pub mod sessions;

pub use not_found::NotFound;
