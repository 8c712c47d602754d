//! Wire types of the silo pages: overview and members (the read-model).

use serde::{Deserialize, Serialize};

/// The silo overview card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// A member as projected from the fleet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
