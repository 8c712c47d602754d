//! Wire types of the silo pages that exist so far: overview, members (the read-model) and audit.

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

/// An audit entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// Entry id (paging cursor).
    pub id: i64,
    /// When (UTC).
    pub occurred_at: chrono::DateTime<chrono::Utc>,
    /// Who.
    pub actor: String,
    /// What.
    pub action: String,
    /// To what.
    pub target: String,
    /// `success`, `failure` or `denied`.
    pub outcome: String,
    /// Request id.
    pub request_id: Option<String>,
}

/// One page of the audit log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditPage {
    /// Entries, newest first.
    pub entries: Vec<AuditEntry>,
    /// Cursor for the next (older) page.
    pub next_before: Option<i64>,
}
