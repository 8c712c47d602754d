//! Fleet pages.

pub mod billing;
pub mod cluster_tenants;
pub mod customer_billing;
pub mod dns;
pub mod home;
pub mod identity;
pub mod migrations;
