//! Wire types of access policies and grants, with the what-if preview of a change.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One egress rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct EgressRuleView {
    /// CIDR.
    pub cidr: String,
    /// Ports (443 when empty).
    #[serde(default)]
    pub ports: Vec<u16>,
}

/// An access policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PolicyView {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// matchLabels.
    pub tenant_selector: BTreeMap<String, String>,
    /// Allowed domain patterns.
    pub allowed_domains: Vec<String>,
    /// Denied domain patterns.
    pub denied_domains: Vec<String>,
    /// Egress rules.
    pub egress_rules: Vec<EgressRuleView>,
    /// Users naming it.
    pub used_by: Vec<String>,
    /// Kubernetes mode: how its AccessPolicy resource differed from this record on the last
    /// pass (repaired by that pass), if it did.
    #[serde(default)]
    pub resource_drift: Option<String>,
}

/// Create or change a policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PolicyRequest {
    /// Name (create only).
    #[serde(default)]
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// matchLabels.
    #[serde(default)]
    pub tenant_selector: BTreeMap<String, String>,
    /// Allowed domain patterns.
    #[serde(default, alias = "domains")]
    pub allowed_domains: Vec<String>,
    /// Denied domain patterns.
    #[serde(default)]
    pub denied_domains: Vec<String>,
    /// Egress rules.
    #[serde(default)]
    pub egress_rules: Vec<EgressRuleView>,
}

/// A grant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GrantView {
    /// Id.
    pub id: String,
    /// `model`, `mcp-server`, `skill-bundle`.
    pub payload_type: String,
    /// Payload name or `*`.
    pub payload_id: String,
    /// `tenant`, `user`, `group`.
    pub subject_type: String,
    /// Tenant name, subject, or group id.
    pub subject_id: String,
    /// For people: the group's name, or the id.
    pub subject_label: String,
    /// `allow` or `deny`.
    pub access: String,
    /// Priority.
    pub priority: i32,
    /// Note.
    pub note: String,
    /// Who made it.
    pub created_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// Create a grant (or preview one).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GrantRequest {
    /// Payload type.
    #[serde(default)]
    pub payload_type: String,
    /// Payload name or `*`.
    #[serde(default)]
    pub payload_id: String,
    /// `tenant`, `user`, `group`.
    #[serde(default)]
    pub subject_type: String,
    /// Tenant name, subject, or group name or id.
    #[serde(default)]
    pub subject_id: String,
    /// `allow` or `deny`.
    #[serde(default)]
    pub access: String,
    /// Priority (−1000…1000).
    #[serde(default)]
    pub priority: i32,
    /// Note.
    #[serde(default)]
    pub note: String,
}

/// One user × model whose access a change would flip.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AccessChange {
    /// User.
    pub tenant: String,
    /// Model.
    pub model: String,
    /// Allowed before.
    pub before: bool,
    /// Allowed after.
    pub after: bool,
    /// Why, after.
    pub why: String,
}

/// A what-if preview.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct WhatIf {
    /// Flipped decisions.
    pub changes: Vec<AccessChange>,
    /// Users × models evaluated.
    pub evaluated: i64,
}

/// The policies page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PoliciesOverview {
    /// Policies.
    pub policies: Vec<PolicyView>,
    /// Grants, newest first.
    pub grants: Vec<GrantView>,
    /// Public model names (grant payloads).
    pub models: Vec<String>,
    /// Users (grant recipients).
    pub users: Vec<String>,
    /// Groups (grant recipients): (id, name).
    pub groups: Vec<(String, String)>,
    /// Access to a model when no grant applies.
    pub default_model_access: String,
    /// Where domain rules are enforced (the gateway only, or Cilium too).
    pub domain_enforcement: String,
}
