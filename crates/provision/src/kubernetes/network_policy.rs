//! Step `networkPolicy`: the default-deny NetworkPolicy floor of the silo's namespace and, on a
//! cluster running Cilium (discovered by its CRD, never configured), the identity layer's
//! default-deny CiliumNetworkPolicy (the release adds the allows of both). The step's message
//! says which layers are active.

use super::KubernetesBackend;
use crate::{
    build,
    reconcile::{StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

impl KubernetesBackend {
    pub(super) async fn converge_network_policy(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        self.apply(&build::network_policy(desired)).await?;
        let layers = if self.has_cilium().await? {
            self.apply(&build::cilium_default_deny(desired)).await?;
            "NetworkPolicy floor ✓, Cilium identity ✓, mutual auth required (manager → database and planes)"
        } else {
            "NetworkPolicy floor ✓; Cilium identity: not on this cluster (no CiliumNetworkPolicy CRD)"
        };
        Ok(StepSuccess::done("Applied", format!("{layers}. No traffic in or out until the release adds its allows.")))
    }

    pub(super) async fn remove_network_policy(&self, name: &str) -> Result<Teardown, StepFailure> {
        let ns = crate::spec::namespace_of(name);
        self.delete("networking.k8s.io/v1", "NetworkPolicy", Some(&ns), build::DEFAULT_DENY).await?;
        if self.has_cilium().await? {
            self.delete("cilium.io/v2", "CiliumNetworkPolicy", Some(&ns), build::CILIUM_DEFAULT_DENY).await?;
        }
        Ok(Teardown::Removed(format!("{} deleted.", build::DEFAULT_DENY)))
    }
}
