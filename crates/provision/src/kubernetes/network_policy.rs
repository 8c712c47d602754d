//! Step `networkPolicy`: the default-deny NetworkPolicy floor of the silo's namespace (the
//! release adds its own allows).

use super::KubernetesBackend;
use crate::{
    build,
    reconcile::{StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

impl KubernetesBackend {
    pub(super) async fn converge_network_policy(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        self.apply(&build::network_policy(desired)).await?;
        Ok(StepSuccess::done(
            "Applied",
            format!("{}: no traffic in or out until the release adds its allows.", build::DEFAULT_DENY),
        ))
    }

    pub(super) async fn remove_network_policy(&self, name: &str) -> Result<Teardown, StepFailure> {
        let ns = crate::spec::namespace_of(name);
        self.delete("networking.k8s.io/v1", "NetworkPolicy", Some(&ns), build::DEFAULT_DENY).await?;
        Ok(Teardown::Removed(format!("{} deleted.", build::DEFAULT_DENY)))
    }
}
