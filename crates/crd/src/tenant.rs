//! `Tenant`: one user's agent workspace inside a silo (namespaced).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A user's workspace.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    category = "opencrane",
    group = "opencrane.io",
    version = "v1alpha1",
    kind = "Tenant",
    plural = "tenants",
    shortname = "tn",
    namespaced,
    status = "TenantStatus",
    printcolumn = r#"{"name":"Display Name","type":"string","jsonPath":".spec.displayName"}"#,
    printcolumn = r#"{"name":"Team","type":"string","jsonPath":".spec.team"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Host","type":"string","jsonPath":".status.ingressHost"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TenantSpec {
    /// The user's name.
    #[schemars(length(min = 1))]
    pub display_name: String,
    /// The user's email.
    #[schemars(regex(pattern = r"^[^ @]+@[^ @]+$"))]
    pub email: String,
    /// The user's IdP subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The user's team.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// Workspace image (default: the silo's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openclaw_image: Option<String>,
    /// Workspace image version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openclaw_version: Option<String>,
    /// The AccessPolicy applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_ref: Option<String>,
    /// The ClusterTenant the user belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_tenant_ref: Option<String>,
    /// Monthly model budget in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0))]
    pub monthly_budget_usd: Option<f64>,
    /// Workspace resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<TenantResources>,
    /// MCP servers allowed and denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_policy: Option<AllowDeny>,
    /// Chat channels connected to the workspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<Channel>,
    /// Free-form overrides of the workspace configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::free_form")]
    pub config_overrides: Option<serde_json::Value>,
    /// Scale the workspace to zero.
    #[serde(default)]
    pub suspended: bool,
}

/// Workspace resources.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct TenantResources {
    /// CPU (Kubernetes quantity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Memory (Kubernetes quantity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

/// Allowed and denied names.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AllowDeny {
    /// Allowed.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Denied.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// A chat channel.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Channel {
    /// The channel adapter (e.g. `slack`).
    pub adapter: String,
    /// Adapter settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::free_form")]
    pub config: Option<serde_json::Value>,
    /// Secret holding the adapter's credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret_name: Option<String>,
}

/// A user's workspace phase (the vocabulary's `TenantPhase`).
pub use opencrane_types::TenantPhase;

/// Observed state of a workspace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantStatus {
    /// Phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<TenantPhase>,
    /// Why it is degraded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_reason: Option<String>,
    /// The workspace pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// Where it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_host: Option<String>,
    /// A sentence for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The AccessPolicy in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_policy_ref: Option<String>,
    /// How the policy was found (explicit, selector, default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_resolution_source: Option<String>,
    /// Whether the policy resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_resolution_state: Option<String>,
    /// Last reconcile time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconciled: Option<String>,
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Checksum of the configuration the pod runs with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_config_checksum: Option<String>,
}
