//! Queries on the tables that the fleet and silo schemas define identically: the audit log and
//! the index of signed-in sessions. Checked at compile time against the fleet schema; the tests
//! run every query against both schemas, so a divergence between the two definitions fails them.

pub mod audit;
pub mod sessions;

#[cfg(test)]
mod tests;
