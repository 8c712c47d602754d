//! Silo pages.

pub mod audit;
pub mod members;
pub mod overview;
