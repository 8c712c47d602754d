//! `ClusterTenant`: one customer organisation. Cluster-scoped; its silo lives in the namespace
//! `opencrane-<name>`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A customer organisation and the desired state of its silo.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "opencrane.io",
    version = "v1alpha1",
    kind = "ClusterTenant",
    plural = "clustertenants",
    shortname = "ct",
    status = "ClusterTenantStatus",
    printcolumn = r#"{"name":"Display Name","type":"string","jsonPath":".spec.displayName"}"#,
    printcolumn = r#"{"name":"Tier","type":"string","jsonPath":".spec.isolationTier"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Namespace","type":"string","jsonPath":".status.boundNamespace"}"#,
    printcolumn = r#"{"name":"Retention","type":"string","jsonPath":".spec.terminationPolicy","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTenantSpec {
    /// Human-readable name of the organisation.
    #[schemars(length(min = 1))]
    pub display_name: String,
    /// A host name the customer owns and points at the platform (e.g. portal.acme.com); the silo
    /// answers on it besides `<name>.<base domain>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), regex(pattern = r"^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,}$"))]
    pub vanity_domain: Option<String>,
    /// How strongly the customer is separated from others.
    #[serde(default)]
    pub isolation_tier: IsolationTier,
    /// Where the customer's workloads run.
    #[serde(default)]
    pub compute: Compute,
    /// Limits for the silo's namespace.
    #[serde(default)]
    pub resources: Resources,
    /// The organisation's identifiers in Zitadel (public ids the silo's sign-in uses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zitadel: Option<Zitadel>,
    /// The person who owns the organisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// Scale the silo's workloads to zero and block its sign-ins; clearing it restores them.
    #[serde(default)]
    pub suspended: bool,
    /// What happens to the silo's database when the ClusterTenant is deleted.
    #[serde(default)]
    pub termination_policy: TerminationPolicy,
    /// Pin of the silo chart/application version; unset follows the fleet's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silo_version: Option<String>,
}

/// Isolation tier.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
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

/// Compute placement.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Compute {
    /// `shared` or `dedicated`.
    #[serde(default)]
    pub mode: ComputeMode,
    /// The node pool (value of the `opencrane.io/node-pool` node label) for dedicated compute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_pool: Option<String>,
}

/// Compute mode.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ComputeMode {
    /// The shared node pool.
    #[default]
    Shared,
    /// A node pool of its own.
    Dedicated,
}

/// Namespace limits.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Resources {
    /// A ResourceQuota for the silo namespace; none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<Quota>,
}

/// ResourceQuota values.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Quota {
    /// CPU requests (Kubernetes quantity, e.g. `8` or `500m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Memory requests (e.g. `32Gi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// Maximum number of pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub pods: Option<i64>,
    /// Storage requests (e.g. `100Gi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
    /// Number of GPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub gpu: Option<i64>,
}

/// Zitadel identifiers of the organisation.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Zitadel {
    /// Client id of the organisation's login app (public PKCE client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Organisation id (used in the org-restricting sign-in scope).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org_id: Option<String>,
    /// Redirect URI registered for the login app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

/// The owner.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Owner {
    /// The owner's IdP subject.
    #[schemars(length(min = 1))]
    pub subject: String,
    /// The owner's email (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// Retention on deletion.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum TerminationPolicy {
    /// Keep the silo's database and its volumes (they can be re-attached).
    #[default]
    Retain,
    /// Delete the database and its volumes with the silo.
    Delete,
}

/// Lifecycle phase.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ClusterTenantPhase {
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

/// Observed state, written by the fleet-manager's controller only.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTenantStatus {
    /// Lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ClusterTenantPhase>,
    /// One condition per provisioning step (type, status, reason, message, lastTransitionTime,
    /// observedGeneration).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The namespace the silo is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_namespace: Option<String>,
    /// Where the silo's console answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silo_url: Option<String>,
    /// Which provisioner serves the tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioner: Option<String>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// A sentence about the current state, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What `Retain` kept after deletion began (e.g. the database cluster and its volumes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained: Vec<String>,
}
