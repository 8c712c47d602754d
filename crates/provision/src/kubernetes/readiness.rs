//! Step `readiness`: the silo's clustertenant-manager answers `/readyz` (not checked while
//! suspended: no replicas).

use super::KubernetesBackend;
use crate::{
    probe,
    reconcile::{StepFailure, StepSuccess},
    spec::Desired,
};

impl KubernetesBackend {
    pub(super) async fn converge_readiness(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        if desired.suspended {
            return Ok(StepSuccess::skipped("Suspended", "Not checked while suspended (no replicas)."));
        }
        let base = self.settings.readiness_url.replace("{namespace}", &desired.namespace());
        match probe::readyz(&base).await {
            Ok(200) => Ok(StepSuccess::done(
                "Ready",
                format!(
                    "The clustertenant-manager answers; the silo is at https://{}.",
                    self.settings.cluster.host(desired)
                ),
            )),
            Ok(code) => Ok(StepSuccess::waiting("Starting", format!("{base}/readyz answers {code}; waiting."))),
            Err(err) => Ok(StepSuccess::waiting("Starting", format!("{base}/readyz: {err}; waiting."))),
        }
    }
}
