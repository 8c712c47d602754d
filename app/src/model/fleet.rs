//! Wire types of the fleet-manager: customers (ClusterTenants) with their validation, form and
//! list; their members; their provisioning checklist; billing accounts.

pub mod billing;
pub mod cluster_tenant;
pub mod members;
pub mod provisioning;
