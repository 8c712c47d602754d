//! The fleet console's islands: the customer form, the delete dialog, the provisioning checklist
//! with its suspend button, a customer's members (form and row actions), and the billing form.

pub mod billing_account;
pub mod cluster_tenant_editor;
pub mod delete_cluster_tenant;
pub mod members;
pub mod provisioning;
