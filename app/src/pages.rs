//! Routed pages, one file per view, grouped by role and area. Pages render on the server only;
//! anything interactive is an island from [`crate::islands`].

pub mod fleet;
pub mod shared;
pub mod silo;
