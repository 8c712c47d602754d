//! A customer as the API and the pages return it (the reference's response contract, plus
//! timestamps and seats in use), with its observed status and Zitadel ids.

use serde::{Deserialize, Serialize};

use super::*;

/// The Zitadel identifiers of a customer's organisation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ZitadelIds {
    /// OIDC client id of the org's login app.
    pub client_id: Option<String>,
    /// Organisation id.
    pub org_id: Option<String>,
    /// Registered redirect URI.
    pub redirect_uri: Option<String>,
    /// The organisation in Zitadel's console (when the fleet knows its Zitadel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub console_url: Option<String>,
}

/// Observed status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterTenantStatus {
    /// Lifecycle phase.
    pub phase: Phase,
    /// Human-readable message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Namespace the silo is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_namespace: Option<String>,
    /// Provisioner serving the tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioner: Option<String>,
    /// Where the silo's console answers, once it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silo_url: Option<String>,
    /// The desired-state generation (bumped by every change).
    #[serde(default)]
    pub generation: i64,
    /// The generation the provisioner last converged to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// What the teardown kept (set while deleting).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained: Vec<String>,
}

/// `compute` in responses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Compute {
    /// Mode.
    pub mode: ComputeMode,
    /// Node pool (dedicated only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_pool: Option<String>,
}

/// `resources` in responses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ResourcesView {
    /// The quota.
    pub quota: Quota,
}

/// A ClusterTenant as the API returns it (the reference's response contract, plus timestamps
/// and seats in use).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterTenant {
    /// Name.
    pub name: String,
    /// Display name.
    pub display_name: String,
    /// Vanity domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vanity_domain: Option<String>,
    /// Tier.
    pub isolation_tier: IsolationTier,
    /// Compute.
    pub compute: Compute,
    /// Resources.
    pub resources: ResourcesView,
    /// Seat cap; absent = uncapped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seat_cap: Option<i32>,
    /// Active members (seats in use), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seats_used: Option<i64>,
    /// Zitadel ids, when any is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zitadel: Option<ZitadelIds>,
    /// Scaled to zero, sign-ins blocked.
    pub suspended: bool,
    /// What deletion does with the database.
    pub termination_policy: TerminationPolicy,
    /// Silo version pin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub silo_version: Option<String>,
    /// Observed status.
    pub status: ClusterTenantStatus,
    /// Creation time (RFC 3339).
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Last change (RFC 3339).
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

impl ClusterTenant {
    /// The desired-state part, e.g. to prefill the edit form.
    pub fn spec(&self) -> ClusterTenantSpec {
        ClusterTenantSpec {
            name: self.name.clone(),
            display_name: self.display_name.clone(),
            vanity_domain: self.vanity_domain.clone(),
            isolation_tier: self.isolation_tier,
            compute_mode: self.compute.mode,
            node_pool: self.compute.node_pool.clone(),
            quota: self.resources.quota.clone(),
            seat_cap: self.seat_cap,
            suspended: self.suspended,
            termination_policy: self.termination_policy,
            silo_version: self.silo_version.clone(),
        }
    }

    /// The namespace the silo gets.
    pub fn namespace(&self) -> String {
        format!("opencrane-{}", self.name)
    }
}
