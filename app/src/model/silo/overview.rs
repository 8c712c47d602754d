//! Wire types of the silo's overview and its members (the read-model of the fleet's memberships).

use serde::{Deserialize, Serialize};

/// The silo overview card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SiloSummary {
    /// The ClusterTenant this silo serves.
    pub cluster_tenant: String,
    /// Its namespace.
    pub namespace: String,
    /// Members in the read-model.
    pub members: i64,
    /// Active members.
    pub active_members: i64,
    /// Audit entries recorded.
    pub audit_entries: i64,
    /// What the silo learnt about its own ClusterTenant (none until the first sync).
    #[serde(default)]
    pub own: Option<OwnClusterTenant>,
}

/// The silo's own ClusterTenant, as its read-model holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OwnClusterTenant {
    /// Display name.
    pub display_name: String,
    /// Phase.
    pub phase: crate::model::fleet::cluster_tenant::Phase,
    /// Suspended.
    pub suspended: bool,
    /// Vanity host.
    pub vanity_domain: Option<String>,
    /// `resource` (its custom resource) or `fleet`.
    pub source: String,
    /// When it was learnt.
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

/// A member as projected from the fleet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// IdP subject.
    pub subject: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    /// `active` or `suspended`.
    pub status: String,
    /// Last projected change.
    pub updated_at: chrono::DateTime<chrono::Utc>,
}
