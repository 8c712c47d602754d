//! The customers (ClusterTenants) area: list, create, detail, edit, members.

mod detail;
mod edit;
mod list;
mod members;
mod new;

pub use detail::ClusterTenantDetail;
pub use edit::EditClusterTenant;
pub use list::{ClusterTenantList, RowsShown};
pub use members::ClusterTenantMembers;
pub use new::NewClusterTenant;
