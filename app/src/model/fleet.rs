//! Wire types of the fleet-manager: customers (ClusterTenants) with their validation, form and
//! list; their members; their provisioning checklist; billing accounts; the fleet's Zitadel
//! identity plane (service-account key and rotation); what DNS and TLS serve for each customer;
//! the migration from the original's shared database.

pub mod billing;
pub mod cluster_tenant;
pub mod dns;
pub mod identity;
pub mod members;
pub mod migrations;
pub mod provisioning;
pub mod usage;
