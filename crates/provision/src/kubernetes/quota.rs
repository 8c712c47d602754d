//! Step `quota`: the ResourceQuota and LimitRange from `spec.resources.quota`; none declared
//! removes an earlier one.

use super::KubernetesBackend;
use crate::{
    build,
    reconcile::{StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

impl KubernetesBackend {
    pub(super) async fn converge_quota(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        let objects = build::quota(desired);
        let ns = desired.namespace();
        if objects.is_empty() {
            let removed = self.prune("v1", "ResourceQuota", Some(&ns), "opencrane-quota").await?
                | self.prune("v1", "LimitRange", Some(&ns), "opencrane-limits").await?;
            let note = if removed { " The earlier quota was removed." } else { "" };
            return Ok(StepSuccess::skipped("NoQuota", format!("No quota declared.{note}")));
        }
        for object in &objects {
            self.apply(object).await?;
        }
        let hard = objects[0].pointer("/spec/hard").map(ToString::to_string).unwrap_or_default();
        Ok(StepSuccess::done("Applied", format!("ResourceQuota {hard} and LimitRange defaults in {ns}.")))
    }

    pub(super) async fn remove_quota(&self, name: &str) -> Result<Teardown, StepFailure> {
        let ns = crate::spec::namespace_of(name);
        self.delete("v1", "ResourceQuota", Some(&ns), "opencrane-quota").await?;
        self.delete("v1", "LimitRange", Some(&ns), "opencrane-limits").await?;
        Ok(Teardown::Removed("Quota and limit range deleted.".into()))
    }
}
