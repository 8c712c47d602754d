//! Wire types of the silo's users (a user is a `Tenant` in the database, REST and CRD): the
//! user, its runtime resources and LLM key state, the create/change body and the paged list.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::*;
use crate::model::href::Href;

/// The LiteLLM key of a user as the reconciler last saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct KeyStatus {
    /// Blocked in LiteLLM.
    pub blocked: bool,
    /// Models on the key.
    pub models: Vec<String>,
    /// The key's `max_budget`, formatted.
    pub max_budget: Option<String>,
    /// What differed from what the portal had applied, on the last pass.
    pub drift: Option<String>,
    /// Last pass.
    pub synced_at: Option<DateTime<Utc>>,
    /// When this key was issued (revoking issues a new one).
    pub issued_at: DateTime<Utc>,
    /// An admin revoked it and the reconciler has not yet deleted it in LiteLLM.
    pub revoke_requested_at: Option<DateTime<Utc>>,
}

/// A user (tenant).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    /// DNS-label name.
    pub name: String,
    /// Shown name.
    pub display_name: String,
    /// E-mail.
    pub email: String,
    /// Identity-provider subject.
    pub subject: String,
    /// Team label.
    pub team: Option<String>,
    /// Named AccessPolicy.
    pub policy_ref: Option<String>,
    /// Runtime resources.
    pub resources: Resources,
    /// Suspended.
    pub suspended: bool,
    /// The runtime's phase (Kubernetes), if reported.
    pub phase: Option<String>,
    /// How the user's Tenant resource differed from this record on the last pass (Kubernetes).
    pub resource_drift: Option<String>,
    /// `admin`, `sign-in`, `resource`.
    pub origin: String,
    /// Group names.
    pub groups: Vec<String>,
    /// The user's own monthly-or-other limit, formatted (`10.00 USD per month`).
    pub own_limit: Option<String>,
    /// LiteLLM key state.
    pub key: Option<KeyStatus>,
    /// Created.
    pub created_at: DateTime<Utc>,
}

/// CPU and memory of a user's runtime.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Resources {
    /// `500m`, `1`.
    #[serde(default)]
    pub cpu: Option<String>,
    /// `1Gi`.
    #[serde(default)]
    pub memory: Option<String>,
}

/// Create or change a user (the reference's `POST /tenants` body).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UserRequest {
    /// Name (create only).
    #[serde(default)]
    pub name: String,
    /// Shown name.
    #[serde(default)]
    pub display_name: String,
    /// E-mail.
    #[serde(default)]
    pub email: String,
    /// Identity-provider subject.
    #[serde(default)]
    pub subject: String,
    /// Team label.
    #[serde(default)]
    pub team: Option<String>,
    /// AccessPolicy name.
    #[serde(default)]
    pub policy_ref: Option<String>,
    /// Runtime resources.
    #[serde(default)]
    pub resources: Option<Resources>,
    /// A monthly limit in the silo's currency; empty removes the user's own limit.
    #[serde(default, alias = "monthlyBudget")]
    pub monthly_budget_usd: Option<Amount>,
}

/// List filters of `/users`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UserFilter {
    /// Substring of name, display name or e-mail.
    #[serde(default)]
    pub q: Option<String>,
    /// Team.
    #[serde(default)]
    pub team: Option<String>,
    /// Phase (`none` for users without one).
    #[serde(default)]
    pub phase: Option<String>,
    /// Suspended or not.
    #[serde(default)]
    pub suspended: Option<bool>,
    /// The 1-based page of [`USERS_PER_PAGE`] users; `None` lists all of them (the REST API and
    /// pickers).
    #[serde(default)]
    pub page: Option<i64>,
}

/// Users per page of `/users`.
pub const USERS_PER_PAGE: i64 = 50;

impl UserFilter {
    /// The `/users` link to page `page` with these filters.
    pub fn href(&self, page: i64) -> String {
        Href::new("/users")
            .param("q", self.q.as_deref())
            .param("team", self.team.as_deref())
            .param("phase", self.phase.as_deref())
            .param("suspended", self.suspended.map(|s| s.to_string()))
            .param("page", (page > 1).then(|| page.to_string()))
            .build()
    }
}

/// The users page: the filtered list plus what the filters offer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UserList {
    /// Matching users (one page of them when a page was asked for).
    pub users: Vec<UserView>,
    /// How many users match in all.
    pub total: i64,
    /// Teams in use.
    pub teams: Vec<String>,
    /// Policy names, for the form.
    pub policies: Vec<String>,
    /// Whether LiteLLM enforcement is configured.
    pub enforcement: SyncView,
}

#[cfg(test)]
mod tests {
    use super::UserFilter;

    #[test]
    fn user_page_links_keep_the_filters_and_encode_them() {
        let filter = UserFilter {
            q: Some("a&b c".into()),
            team: Some(String::new()),
            suspended: Some(false),
            ..UserFilter::default()
        };
        assert_eq!(filter.href(3), "/users?q=a%26b%20c&suspended=false&page=3");
        assert_eq!(filter.href(1), "/users?q=a%26b%20c&suspended=false", "page 1 is the plain list");
        assert_eq!(UserFilter::default().href(1), "/users");
    }
}
