//! Silo provisioning. A ClusterTenant's silo is the result of one pipeline of steps (see
//! [`StepId`]), run by a reconciler ([`reconcile`]) over a [`Backend`]:
//!
//! - [`spec`] validates a ClusterTenant (from the fleet database or from its custom resource)
//!   into [`spec::Desired`] — pure;
//! - [`build`] turns it into the Kubernetes objects of each step — pure;
//! - [`reconcile`] runs the steps in order (or tears them down), writes one status row per step
//!   and the ClusterTenant's observed status, and makes no write when nothing changed;
//! - [`kubernetes`] is the backend for a cluster (server-side apply, the silo release through
//!   `opencrane deploy`'s code path);
//! - [`resource`] maps a row and its steps onto the ClusterTenant custom resource — pure;
//! - [`lease`] elects the one fleet replica that provisions;
//! - [`local`] is the backend for `dev` (a database and role per silo on the local PostgreSQL and
//!   a clustertenant-manager served by the same process); [`worker`] drives the reconciler from
//!   the fleet database's notifications.

pub mod build;
pub mod kubernetes;
pub mod lease;
pub mod local;
pub mod probe;
pub mod reconcile;
pub mod resource;
pub mod spec;
pub mod worker;

use serde::{Deserialize, Serialize};

pub use reconcile::{Backend, StepFailure, StepSuccess, Teardown};

/// One provisioning step. The order of [`StepId::ALL`] is the order they run in; the stored
/// spelling is [`StepId::as_str`] (also the condition type, capitalised, on the custom resource).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StepId {
    /// Namespace `opencrane-<name>` with ownership and Pod Security labels.
    Namespace,
    /// ResourceQuota and LimitRange from `spec.resources.quota`.
    Quota,
    /// The NetworkPolicy floor.
    NetworkPolicy,
    /// The silo's database and its app Secret.
    Database,
    /// The DNS record and the vanity certificate.
    Dns,
    /// The silo release (the clustertenant-manager and its planes).
    Release,
    /// The clustertenant-manager answers `/readyz`.
    Readiness,
}

impl StepId {
    /// Every step, in pipeline order.
    pub const ALL: [Self; 7] =
        [Self::Namespace, Self::Quota, Self::NetworkPolicy, Self::Database, Self::Dns, Self::Release, Self::Readiness];

    /// The order of the teardown: the release first (nothing may write to the database while it
    /// goes), the namespace last (it holds everything else).
    pub const TEARDOWN: [Self; 7] =
        [Self::Readiness, Self::Release, Self::Dns, Self::Database, Self::NetworkPolicy, Self::Quota, Self::Namespace];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Namespace => "namespace",
            Self::Quota => "quota",
            Self::NetworkPolicy => "networkPolicy",
            Self::Database => "database",
            Self::Dns => "dns",
            Self::Release => "release",
            Self::Readiness => "readiness",
        }
    }

    /// The condition type on the custom resource (`NamespaceReady`, …).
    pub fn condition_type(self) -> &'static str {
        match self {
            Self::Namespace => "NamespaceReady",
            Self::Quota => "QuotaReady",
            Self::NetworkPolicy => "NetworkPolicyReady",
            Self::Database => "DatabaseReady",
            Self::Dns => "DnsReady",
            Self::Release => "ReleaseReady",
            Self::Readiness => "SiloReady",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|step| step.as_str() == s)
    }
}

/// The state of one step, as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StepState {
    /// Not reached yet.
    Pending,
    /// Under way.
    Running,
    /// Converged.
    Done,
    /// Failed; see the message and action.
    Failed,
    /// Does not apply to this ClusterTenant or backend.
    Skipped,
    /// Being torn down.
    Removing,
    /// Torn down.
    Removed,
    /// Kept by the termination policy.
    Retained,
}

impl StepState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
            Self::Removing => "removing",
            Self::Removed => "removed",
            Self::Retained => "retained",
        }
    }
}
