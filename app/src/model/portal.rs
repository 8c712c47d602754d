//! Wire types of the silo portal: users, groups, access policies and grants, effective access,
//! budgets and spend, model routing. Shared by pages, islands, server functions and the REST API.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};

use super::cluster_tenant::url_encode;

/// A money amount as typed (`12.50`), also accepted as a JSON number by the REST API.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Amount(pub String);

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => Ok(Self(s)),
            serde_json::Value::Number(n) => Ok(Self(n.to_string())),
            other => Err(serde::de::Error::custom(format!("expected an amount, got {other}"))),
        }
    }
}

/// The LiteLLM key of a user as the reconciler last saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
}

/// A user (tenant).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
        let text = [("q", &self.q), ("team", &self.team), ("phase", &self.phase)];
        let mut query: Vec<String> = text
            .into_iter()
            .filter_map(|(k, v)| v.as_deref().filter(|v| !v.is_empty()).map(|v| format!("{k}={}", url_encode(v))))
            .collect();
        if let Some(s) = self.suspended {
            query.push(format!("suspended={s}"));
        }
        if page > 1 {
            query.push(format!("page={page}"));
        }
        if query.is_empty() { "/users".into() } else { format!("/users?{}", query.join("&")) }
    }
}

/// The users page: the filtered list plus what the filters offer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

/// A group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupView {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// `org`, `department`, `team`, `project`, `personal`.
    pub scope: String,
    /// What it is for.
    pub description: String,
    /// `local` or `idp`.
    pub source: String,
    /// Member user names.
    pub members: Vec<String>,
}

/// Create or change a group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupRequest {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Scope.
    #[serde(default)]
    pub scope: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Member user names.
    #[serde(default)]
    pub members: Vec<String>,
}

/// The group scopes.
pub const GROUP_SCOPES: [&str; 5] = ["org", "department", "team", "project", "personal"];

/// One egress rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// Create or change a policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
#[serde(rename_all = "camelCase")]
pub struct WhatIf {
    /// Flipped decisions.
    pub changes: Vec<AccessChange>,
    /// Users × models evaluated.
    pub evaluated: i64,
}

/// The policies page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
}

/// One model on the effective-access view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelAccess {
    /// Public name.
    pub model: String,
    /// Allowed.
    pub allowed: bool,
    /// Why.
    pub why: String,
    /// Grants that applied but lost.
    pub overridden: Vec<String>,
}

/// A limit in its current period.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitView {
    /// Id.
    pub id: String,
    /// `silo`, `group`, `user`.
    pub level: String,
    /// "the whole silo", "group “eng”", "user ana".
    pub target: String,
    /// ISO 4217.
    pub currency: String,
    /// Amount per period.
    pub amount: String,
    /// `day`, `week`, `month`.
    pub period: String,
    /// Alert thresholds.
    pub thresholds: Vec<u8>,
    /// Spent this period.
    pub spent: String,
    /// Left this period.
    pub remaining: String,
    /// Percent used.
    pub used_percent: u32,
    /// Reached: keys it covers are blocked until the reset.
    pub reached: bool,
    /// Start of the period.
    pub period_start: DateTime<Utc>,
    /// The reset.
    pub resets_at: DateTime<Utc>,
    /// The reset in the silo's time zone, for people (`2026-12-01 00:00 Europe/Berlin`).
    pub resets_local: String,
}

/// The policy that governs a user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyAccess {
    /// Policy.
    pub policy: PolicyView,
    /// "named on the user", "selected by team=eng".
    pub how: String,
}

/// The answer of the test-route tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteTest {
    /// Whether a route exists.
    pub ok: bool,
    /// The public model that would serve.
    pub model: Option<String>,
    /// What picked it.
    pub chosen_by: Option<String>,
    /// Why the user may use it.
    pub access: Option<String>,
    /// (upstream model, percent of traffic).
    pub deployments: Vec<(String, u32)>,
    /// Fallback chain.
    pub fallbacks: Vec<String>,
    /// Candidates passed over.
    pub skipped: Vec<String>,
    /// Why there is no route.
    pub error: Option<String>,
}

/// Everything that applies to one user, with reasons.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectiveAccess {
    /// The user.
    pub user: UserView,
    /// Every model and why.
    pub models: Vec<ModelAccess>,
    /// The governing policy.
    pub policy: Option<PolicyAccess>,
    /// Every limit, the one that binds first first.
    pub limits: Vec<LimitView>,
    /// The route of a request naming no model.
    pub default_route: RouteTest,
    /// Why the key is blocked, if it is (as the enforcement computes it).
    pub block_reasons: Vec<String>,
    /// Access when no grant applies.
    pub default_model_access: String,
    /// The user's live sign-in sessions in this silo.
    pub active_sessions: usize,
}

/// Checking a domain against a user's policy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainCheck {
    /// Reachable.
    pub allowed: bool,
    /// For people.
    pub explanation: String,
}

/// The state of LiteLLM enforcement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncView {
    /// Whether a LiteLLM endpoint is configured.
    pub configured: bool,
    /// Whether the last pass succeeded.
    pub ok: bool,
    /// What the last pass said.
    pub message: String,
    /// When it finished.
    pub finished_at: Option<DateTime<Utc>>,
}

/// A threshold notice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NoticeView {
    /// Id.
    pub id: i64,
    /// Message.
    pub message: String,
    /// Percent.
    pub threshold: i16,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// Silo settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SiloSettingsView {
    /// IANA time zone.
    #[serde(default)]
    pub time_zone: String,
    /// ISO 4217.
    #[serde(default)]
    pub currency: String,
    /// `allow` or `deny`.
    #[serde(default)]
    pub default_model_access: String,
}

/// Spend in a period.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpendView {
    /// `day`, `week`, `month`.
    pub period: String,
    /// Start.
    pub start: DateTime<Utc>,
    /// End.
    pub end: DateTime<Utc>,
    /// Total.
    pub total: String,
    /// (user, amount), largest first.
    pub by_user: Vec<(String, String)>,
    /// (group, amount), largest first.
    pub by_group: Vec<(String, String)>,
    /// (model, amount), largest first.
    pub by_model: Vec<(String, String)>,
    /// Daily spend as an SVG bar chart, rendered on the server.
    pub chart_svg: String,
}

/// The budgets page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetOverview {
    /// Settings.
    pub settings: SiloSettingsView,
    /// Every limit in its current period.
    pub limits: Vec<LimitView>,
    /// Open notices.
    pub notices: Vec<NoticeView>,
    /// Spend this period.
    pub spend: SpendView,
    /// Enforcement.
    pub enforcement: SyncView,
    /// Users, for the limit form.
    pub users: Vec<String>,
    /// Groups (id, name), for the limit form.
    pub groups: Vec<(String, String)>,
}

/// Set the limit of a target (the reference's `PUT /ai-budget/global` and `…/accounts/:id`
/// generalised to three levels).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitRequest {
    /// `silo`, `group`, `user`.
    #[serde(default)]
    pub level: String,
    /// Group name or id, or user name.
    #[serde(default)]
    pub target: Option<String>,
    /// ISO 4217 (the silo's currency when empty).
    #[serde(default)]
    pub currency: String,
    /// Amount per period.
    #[serde(default, alias = "ceilingAmount")]
    pub amount: Amount,
    /// `day`, `week`, `month` (month when empty).
    #[serde(default)]
    pub period: String,
    /// Alert thresholds in percent, 1–100 (50, 80, 100 when empty).
    #[serde(default)]
    pub thresholds: Vec<i64>,
}

/// A provider credential (never its secret).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CredentialView {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Provider.
    pub provider: String,
    /// API base.
    pub api_base: Option<String>,
    /// Last four characters.
    pub hint: String,
    /// Deployments using it.
    pub used_by: i64,
    /// Last change (rotation).
    pub updated_at: DateTime<Utc>,
}

/// Add a credential, or rotate one (`name` and `provider` are then ignored).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CredentialRequest {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Provider.
    #[serde(default)]
    pub provider: String,
    /// The provider API key (write-only).
    #[serde(default)]
    pub api_key: String,
    /// API base.
    #[serde(default)]
    pub api_base: Option<String>,
}

/// The providers credentials may be for.
pub const PROVIDERS: [&str; 6] = ["openai", "anthropic", "azure", "gemini", "mistral", "openai-compatible"];

/// A deployment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentView {
    /// Id.
    pub id: String,
    /// Public name.
    pub public_name: String,
    /// Upstream model.
    pub upstream_model: String,
    /// API base.
    pub api_base: Option<String>,
    /// Credential name.
    pub credential: Option<String>,
    /// Weight.
    pub weight: i32,
    /// Share of its public name's traffic.
    pub share_percent: u32,
}

/// Add a deployment (the reference's `POST /models`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRequest {
    /// Public name.
    #[serde(default, alias = "publicModelName")]
    pub public_name: String,
    /// Upstream model.
    #[serde(default)]
    pub upstream_model: String,
    /// API base.
    #[serde(default)]
    pub api_base: Option<String>,
    /// Credential name or id.
    #[serde(default)]
    pub credential: Option<String>,
    /// Weight (1 when absent).
    #[serde(default)]
    pub weight: Option<i32>,
}

/// Set a fallback chain.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FallbackRequest {
    /// Public name.
    #[serde(default)]
    pub public_name: String,
    /// Fallbacks, in order (empty removes the chain).
    #[serde(default)]
    pub chain: Vec<String>,
}

/// A default model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DefaultView {
    /// Id.
    pub id: String,
    /// `silo`, `group`, `user`.
    pub scope: String,
    /// For people.
    pub target: String,
    /// Public name.
    pub model: String,
}

/// Set a default model (the reference's `PUT /model-routing/defaults`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DefaultRequest {
    /// `silo`, `group`, `user`.
    #[serde(default)]
    pub scope: String,
    /// Group name or id, or user name.
    #[serde(default)]
    pub target: Option<String>,
    /// Public name.
    #[serde(default, alias = "defaultModel")]
    pub model: String,
}

/// The models page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelsOverview {
    /// Credentials.
    pub credentials: Vec<CredentialView>,
    /// Deployments.
    pub deployments: Vec<DeploymentView>,
    /// (public name, chain).
    pub fallbacks: Vec<(String, Vec<String>)>,
    /// Defaults.
    pub defaults: Vec<DefaultView>,
    /// Public names.
    pub public_names: Vec<String>,
    /// Users, for the test-route tool and defaults.
    pub users: Vec<String>,
    /// Groups (id, name), for defaults.
    pub groups: Vec<(String, String)>,
    /// Whether credentials can be stored (a credentials key is configured).
    pub credentials_enabled: bool,
    /// Enforcement.
    pub enforcement: SyncView,
}

/// Ask the test-route tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteTestRequest {
    /// User.
    #[serde(default)]
    pub user: String,
    /// Requested public name (none: the defaults decide).
    #[serde(default)]
    pub model: Option<String>,
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
