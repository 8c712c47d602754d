//! The fleet-manager's use cases: customers (ClusterTenants) with their provisioning and their
//! members, and billing. Platform operators only, except where a customer's own Owner may act on it.

pub mod billing;
pub mod billing_overview;
pub mod book;
pub mod cluster_tenants;
pub mod dns;
pub mod identity;
pub mod members;
pub mod migrations;
pub mod plans;
pub mod usage;
