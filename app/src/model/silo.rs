//! Wire types of the clustertenant-manager (the silo), by area: overview and members, users,
//! groups, policies and grants, effective access, budgets and spend, model routing. Shared by
//! the pages, islands, server functions and the REST API; re-exported here, so a type's path is
//! `model::silo::X` whatever its area.

pub mod access;
pub mod budgets;
pub mod byok;
pub mod groups;
pub mod models;
pub mod overview;
pub mod policies;
pub mod users;

pub use access::*;
pub use budgets::*;
pub use byok::{ByokOutcome, ByokRequest, ByokStatus};
pub use groups::*;
pub use models::*;
pub use overview::*;
pub use policies::*;
pub use users::*;
