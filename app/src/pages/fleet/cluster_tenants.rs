//! The customers (ClusterTenants) area: list, create, detail, edit.

mod detail;
mod edit;
mod list;
mod new;

pub use detail::ClusterTenantDetail;
pub use edit::EditClusterTenant;
pub use list::ClusterTenantList;
pub use new::NewClusterTenant;
