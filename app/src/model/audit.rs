//! Audit-log wire types, the same for both roles.

use serde::{Deserialize, Serialize};

use super::href::Href;

/// An audit entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// Entry id (paging cursor).
    pub id: i64,
    /// When (UTC).
    pub occurred_at: chrono::DateTime<chrono::Utc>,
    /// Who (subject; control characters escaped).
    pub actor: String,
    /// Their role at the time.
    pub actor_role: String,
    /// What, e.g. `cluster_tenant.update`.
    pub action: String,
    /// To what.
    pub target: String,
    /// `success`, `failure` or `denied`.
    pub outcome: String,
    /// Request id.
    pub request_id: Option<String>,
    /// Before/after values and other detail (never secrets).
    pub metadata: serde_json::Value,
}

/// Which entries to show (the audit page's URL).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuditQuery {
    /// Exact actor.
    pub actor: Option<String>,
    /// Action prefix, e.g. `auth.`.
    pub action: Option<String>,
    /// Exact outcome.
    pub outcome: Option<String>,
    /// Entries older than this id.
    pub before: Option<i64>,
    /// Entries per page (50 when absent; at most [`MAX_AUDIT_LIMIT`]).
    #[serde(default)]
    pub limit: Option<i64>,
}

/// The largest page of the audit log (the original's maximum).
pub const MAX_AUDIT_LIMIT: i64 = 1000;

impl AuditQuery {
    /// Reads the audit page's query parameters; blanks mean "any".
    pub fn from_params(get: impl Fn(&str) -> Option<String>) -> Self {
        let text = |k: &str| get(k).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        Self {
            actor: text("actor"),
            action: text("action"),
            outcome: text("outcome").filter(|o| ["success", "failure", "denied"].contains(&o.as_str())),
            before: text("before").and_then(|b| b.parse().ok()),
            limit: None,
        }
    }

    /// The audit page URL for the next (older) page.
    pub fn next_href(&self, before: i64) -> String {
        Href::new("/audit")
            .param("before", Some(before.to_string()))
            .param("actor", self.actor.as_deref())
            .param("action", self.action.as_deref())
            .param("outcome", self.outcome.as_deref())
            .build()
    }
}

/// One page of the audit log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuditPage {
    /// Entries, newest first.
    pub entries: Vec<AuditEntry>,
    /// Cursor for the next (older) page.
    pub next_before: Option<i64>,
}
