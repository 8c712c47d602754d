//! Silo pages.

pub mod members;
pub mod overview;
pub mod tokens;
