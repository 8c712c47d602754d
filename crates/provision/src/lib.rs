//! Silo provisioning. A ClusterTenant's silo is the result of one pipeline of steps (see
//! [`StepId`], the vocabulary crate's list), run by a reconciler ([`reconcile`]) over a [`Backend`]:
//!
//! - [`spec`] validates a ClusterTenant (from the fleet database or from its custom resource)
//!   into [`spec::Desired`] — pure;
//! - [`build`] turns it into the Kubernetes objects of each step — pure;
//! - [`reconcile`] runs the steps in order (or tears them down), writes one status row per step
//!   and the ClusterTenant's observed status, and makes no write when nothing changed;
//! - [`kubernetes`] is the backend for a cluster (server-side apply, the silo release through
//!   `opencrane deploy`'s code path);
//! - [`identity`] is the step that talks to Zitadel (the customer's organisation and login app),
//!   run by the reconciler itself when the fleet has Zitadel configured;
//! - [`resource`] maps a row and its steps onto the ClusterTenant custom resource — pure;
//! - [`platform_dns`] is the platform's DNS-01 issuer (cert-manager ClusterIssuer and solver
//!   Secret), configured by operators;
//! - [`lease`] elects the one fleet replica that provisions;
//! - [`local`] is the backend for `dev` (a database and role per silo on the local PostgreSQL and
//!   a clustertenant-manager served by the same process); [`worker`] drives the reconciler from
//!   the fleet database's notifications.

pub mod build;
pub mod credential;
pub mod dns_truth;
mod error;
pub mod identity;
pub mod kubernetes;
pub mod lease;
pub mod local;
pub mod platform_dns;
pub mod probe;
pub mod reconcile;
pub mod resource;
pub mod spec;
pub mod worker;

pub use error::Error;
pub use opencrane_types::{StepId, StepState};
pub use reconcile::{Backend, StepFailure, StepSuccess, Teardown};
