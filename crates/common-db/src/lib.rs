//! Queries on the tables that the fleet and silo schemas define identically: the audit log, the
//! index of signed-in sessions and the data generation. Checked at compile time against the fleet
//! schema; the tests run every query against both schemas, so a divergence between the two
//! definitions fails them.

pub mod audit;
pub mod generation;
pub mod sessions;

#[cfg(test)]
mod tests;
