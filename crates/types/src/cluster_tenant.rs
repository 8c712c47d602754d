//! How a customer (ClusterTenant) is isolated and placed, what its deletion keeps, and where it
//! is in its lifecycle. The wire, database and CRD spelling of each value is its `as_str`.

use serde::{Deserialize, Serialize};

use crate::spelled;

/// How strongly a customer is separated from others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum IsolationTier {
    /// Shared nodes; own namespace and database.
    #[default]
    Shared,
    /// A node pool of its own in the shared cluster.
    DedicatedNodes,
    /// A cluster of its own (needs an external provisioner).
    DedicatedCluster,
}

spelled!(IsolationTier { Shared => "shared", DedicatedNodes => "dedicatedNodes", DedicatedCluster => "dedicatedCluster" });

impl IsolationTier {
    /// The label people see.
    pub fn label(self) -> &'static str {
        match self {
            Self::Shared => "Shared",
            Self::DedicatedNodes => "Dedicated nodes",
            Self::DedicatedCluster => "Dedicated cluster",
        }
    }

    /// Whether an installation can provision the tier. The built-in provisioner serves `shared`
    /// and `dedicatedNodes`; `dedicatedCluster` needs an external one, so it is refused up front
    /// (a 422) instead of failing later when none is configured.
    pub fn is_available(self, dedicated_cluster_available: bool) -> bool {
        match self {
            Self::Shared | Self::DedicatedNodes => true,
            Self::DedicatedCluster => dedicated_cluster_available,
        }
    }
}

/// Where a customer's workloads run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum ComputeMode {
    /// The shared node pool.
    #[default]
    Shared,
    /// A node pool of its own.
    Dedicated,
}

spelled!(ComputeMode { Shared => "shared", Dedicated => "dedicated" });

/// What happens to a silo's database when its ClusterTenant is deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub enum TerminationPolicy {
    /// Keep the silo's database and its volumes (they can be re-attached).
    #[default]
    Retain,
    /// Delete the database and its volumes with the silo.
    Delete,
}

spelled!(TerminationPolicy { Retain => "Retain", Delete => "Delete" });

impl TerminationPolicy {
    /// What the form offers.
    pub fn label(self) -> &'static str {
        match self {
            Self::Retain => "Keep the database (Retain)",
            Self::Delete => "Delete the database (Delete)",
        }
    }
}

/// The silo namespace's ResourceQuota, as the API, the resource and the provisioner read it; every
/// field optional. Quantities follow [`crate::rules::quantity`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Quota {
    /// CPU requests (Kubernetes quantity, e.g. `8` or `500m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Memory requests (e.g. `32Gi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// Maximum number of pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(range(min = 0)))]
    pub pods: Option<i64>,
    /// Storage requests (e.g. `100Gi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
    /// Number of GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(range(min = 0)))]
    pub gpu: Option<i64>,
}

impl Quota {
    /// Whether nothing is declared (no ResourceQuota then).
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// Lifecycle phase of a ClusterTenant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    /// Recorded; provisioning has not started.
    Pending,
    /// Provisioning is under way.
    Provisioning,
    /// The silo is up.
    Ready,
    /// A provisioning step failed (see the conditions).
    Failed,
    /// Workloads scaled to zero, sign-ins blocked.
    Suspended,
    /// Being torn down.
    Deleting,
}

spelled!(Phase {
    Pending => "pending",
    Provisioning => "provisioning",
    Ready => "ready",
    Failed => "failed",
    Suspended => "suspended",
    Deleting => "deleting",
});

impl Phase {
    /// The label people see.
    pub fn label(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Provisioning => "Provisioning",
            Self::Ready => "Ready",
            Self::Failed => "Failed",
            Self::Suspended => "Suspended",
            Self::Deleting => "Deleting",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serde spelling (wire, CRD) and `as_str` (database, query strings) are one spelling.
    #[test]
    fn serde_and_stored_spellings_agree() {
        fn check<T: Serialize + Copy + std::fmt::Debug>(all: &[T], as_str: fn(T) -> &'static str) {
            for value in all {
                assert_eq!(serde_json::to_value(value).unwrap(), as_str(*value), "{value:?}");
            }
        }
        check(&IsolationTier::ALL, IsolationTier::as_str);
        check(&ComputeMode::ALL, ComputeMode::as_str);
        check(&TerminationPolicy::ALL, TerminationPolicy::as_str);
        check(&Phase::ALL, Phase::as_str);
        check(&TenantPhase::ALL, TenantPhase::as_str);
        for phase in Phase::ALL {
            assert_eq!(Phase::parse(phase.as_str()), Some(phase));
        }
        assert_eq!(Phase::parse("Ready"), None);
    }
}

/// The phase of a silo user's workspace (a `Tenant` resource), as its runtime reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub enum TenantPhase {
    /// Not yet running.
    Pending,
    /// Running.
    Running,
    /// Scaled to zero.
    Suspended,
    /// Running with a problem (see `degradedReason`).
    Degraded,
    /// Failed.
    Error,
}

spelled!(TenantPhase {
    Pending => "Pending",
    Running => "Running",
    Suspended => "Suspended",
    Degraded => "Degraded",
    Error => "Error",
});
