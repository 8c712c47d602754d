//! `AccessPolicy`: which domains and networks a silo's workspaces may reach (namespaced).

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Egress rules for the workspaces it selects.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    category = "opencrane",
    group = "opencrane.io",
    version = "v1alpha1",
    kind = "AccessPolicy",
    plural = "accesspolicies",
    shortname = "ap",
    namespaced,
    status = "AccessPolicyStatus",
    printcolumn = r#"{"name":"Description","type":"string","jsonPath":".spec.description"}"#,
    printcolumn = r#"{"name":"Default Deny","type":"boolean","jsonPath":".spec.domains.defaultDeny"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AccessPolicySpec {
    /// What the policy is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Which workspaces it applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_selector: Option<TenantSelector>,
    /// Domain rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domains: Option<Domains>,
    /// Network (CIDR) rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress_rules: Vec<EgressRule>,
}

/// Workspace selector.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantSelector {
    /// Labels the workspace must carry.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// The team the workspace belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_team: Option<String>,
}

/// Domain rules.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Domains {
    /// Allowed domains (`*.example.com` wildcards allowed).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Denied domains.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Deny everything not allowed.
    #[serde(default = "yes")]
    pub default_deny: bool,
}

fn yes() -> bool {
    true
}

/// One egress rule.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct EgressRule {
    /// IPv4 network, e.g. `10.0.0.0/8`.
    #[schemars(regex(pattern = r"^([0-9]{1,3}\.){3}[0-9]{1,3}/[0-9]{1,2}$"))]
    pub cidr: String,
    /// Ports (default 443).
    #[serde(default)]
    pub ports: Vec<i32>,
    /// `TCP` or `UDP`.
    #[serde(default)]
    pub protocol: Protocol,
}

/// Transport protocol.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Protocol {
    /// TCP.
    #[default]
    #[serde(rename = "TCP")]
    Tcp,
    /// UDP.
    #[serde(rename = "UDP")]
    Udp,
}

/// Observed state.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessPolicyStatus {
    /// Last reconcile time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reconciled: Option<String>,
}
