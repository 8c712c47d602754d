//! The steps of the silo pipeline and their states: the provisioner runs them, the fleet database
//! stores them, the console's checklist and the CRD's conditions show them. One list, so the
//! order people see is the order that runs.

use serde::{Deserialize, Serialize};

use crate::spelled;

/// One provisioning step. The order of [`StepId::ALL`] is the order they run in; the stored
/// spelling is [`StepId::as_str`]; the condition on the custom resource is
/// [`StepId::condition_type`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
    /// The customer's Zitadel organisation, project, roles, login app and Owner grant.
    Identity,
    /// The silo release (the clustertenant-manager and its planes).
    Release,
    /// The clustertenant-manager answers `/readyz`.
    Readiness,
}

spelled!(StepId {
    Namespace => "namespace",
    Quota => "quota",
    NetworkPolicy => "networkPolicy",
    Database => "database",
    Dns => "dns",
    Identity => "identity",
    Release => "release",
    Readiness => "readiness",
});

impl StepId {
    /// The order of the teardown: the release first (nothing may write to the database while it
    /// goes), the namespace last (it holds everything else).
    pub const TEARDOWN: [Self; 8] = [
        Self::Readiness,
        Self::Release,
        Self::Identity,
        Self::Dns,
        Self::Database,
        Self::NetworkPolicy,
        Self::Quota,
        Self::Namespace,
    ];

    /// The condition type on the custom resource (`NamespaceReady`, …).
    pub fn condition_type(self) -> &'static str {
        match self {
            Self::Namespace => "NamespaceReady",
            Self::Quota => "QuotaReady",
            Self::NetworkPolicy => "NetworkPolicyReady",
            Self::Database => "DatabaseReady",
            Self::Dns => "DnsReady",
            Self::Identity => "IdentityReady",
            Self::Release => "ReleaseReady",
            Self::Readiness => "SiloReady",
        }
    }

    /// What people read.
    pub fn label(self) -> &'static str {
        match self {
            Self::Namespace => "Namespace",
            Self::Quota => "Quota and limits",
            Self::NetworkPolicy => "Network policies",
            Self::Database => "Database",
            Self::Dns => "DNS and certificate",
            Self::Identity => "Sign-in organisation",
            Self::Release => "Silo release",
            Self::Readiness => "Silo answers",
        }
    }
}

/// The state of one step, as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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

spelled!(StepState {
    Pending => "pending",
    Running => "running",
    Done => "done",
    Failed => "failed",
    Skipped => "skipped",
    Removing => "removing",
    Removed => "removed",
    Retained => "retained",
});

impl StepState {
    /// What people read.
    pub fn label(self) -> &'static str {
        match self {
            Self::Pending => "Waiting",
            Self::Running => "In progress",
            Self::Done => "Done",
            Self::Failed => "Failed",
            Self::Skipped => "Not needed",
            Self::Removing => "Removing",
            Self::Removed => "Removed",
            Self::Retained => "Kept",
        }
    }

    /// Whether the step holds what it should (converged, or rightly not needed): what the
    /// aggregate `Ready` condition asks of every step.
    pub fn is_satisfied(self) -> bool {
        matches!(self, Self::Done | Self::Skipped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teardown_is_the_pipeline_backwards() {
        let mut reversed = StepId::ALL;
        reversed.reverse();
        assert_eq!(StepId::TEARDOWN, reversed);
        for step in StepId::ALL {
            assert_eq!(StepId::parse(step.as_str()), Some(step));
            assert_eq!(serde_json::to_value(step).unwrap(), step.as_str());
        }
        for state in StepState::ALL {
            assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
        }
    }
}
