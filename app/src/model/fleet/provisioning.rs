//! The provisioning checklist as the console shows it: one entry per step of the silo pipeline
//! (the vocabulary crate's [`StepId`], the list the provisioner runs), with state, timing,
//! message and, on failure, what to do.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::cluster_tenant::Phase;

pub use opencrane_types::{StepId, StepState};

/// One row of the checklist.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StepView {
    /// Which step.
    pub step: StepId,
    /// Its state.
    pub state: StepState,
    /// CamelCase reason.
    pub reason: String,
    /// A sentence for people.
    pub message: String,
    /// What to do about a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// When it last started.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(feature = "ssr"), serde(default, deserialize_with = "crate::model::time::rfc3339_opt"))]
    pub started_at: Option<DateTime<Utc>>,
    /// When it last finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(feature = "ssr"), serde(default, deserialize_with = "crate::model::time::rfc3339_opt"))]
    pub finished_at: Option<DateTime<Utc>>,
}

impl StepView {
    /// How long the step took (or has been running, as of `now`), in milliseconds.
    pub fn duration_ms(&self, now: DateTime<Utc>) -> Option<i64> {
        let start = self.started_at?;
        Some((self.finished_at.unwrap_or(now) - start).num_milliseconds().max(0))
    }
}

/// The whole checklist of one ClusterTenant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningView {
    /// The ClusterTenant.
    pub name: String,
    /// Its phase.
    pub phase: Phase,
    /// The status message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Where the silo answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silo_url: Option<String>,
    /// Which backend provisions it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioner: Option<String>,
    /// Whether the provisioner has converged on the current desired state.
    pub converged: bool,
    /// Every step, in pipeline order (steps never reached are `pending`).
    pub steps: Vec<StepView>,
    /// What the teardown kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained: Vec<String>,
    /// When the server answered (durations of running steps are measured to it).
    #[cfg_attr(not(feature = "ssr"), serde(deserialize_with = "crate::model::time::rfc3339"))]
    pub as_of: DateTime<Utc>,
    /// The namespace the silo is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_namespace: Option<String>,
    /// The desired state's generation.
    #[serde(default)]
    pub generation: i64,
    /// The generation the provisioner last finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl ProvisioningView {
    /// Whether the console should keep polling: anything but a converged resting state.
    pub fn is_settling(&self) -> bool {
        !(self.converged && matches!(self.phase, Phase::Ready | Phase::Suspended))
    }
}

/// A Retry: one step, or every failed one (and a re-check of the rest).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryRequest {
    /// The step to retry; absent = all.
    #[serde(default)]
    pub step: Option<StepId>,
}
