//! Wire types shared by the server and the browser: request and response bodies, the signed-in
//! principal, and the validation rules (which must give the same answer on both sides). By role:
//! [`fleet`] and [`silo`]; both roles' areas (audit, principal, sessions, links) at the top.
//! Integers are `i32`/`i64`, never `usize`, so they mean the same on wasm32.

pub mod audit;
pub mod fleet;
pub mod href;
pub mod principal;
pub mod session;
pub mod silo;
pub mod time;

/// The field rules, defined once in the vocabulary crate.
pub use opencrane_types::rules;
