//! Wire types of budgets and spend: amounts, limits in their current period, notices, the silo's
//! settings, spend per period and the state of LiteLLM enforcement.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};

/// A money amount as typed (`12.50`), also accepted as a JSON number by the REST API.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
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

/// A limit in its current period.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
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

/// The state of LiteLLM enforcement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
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

/// One user's tokens and cost in a period (`GET /token-usage`, the original's
/// `token_usage_snapshots` row, filled here from LiteLLM's spend logs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// The user (`null`: users since deleted, whose usage stays counted).
    pub user_id: Option<String>,
    /// Prompt tokens.
    pub input_tokens: i64,
    /// Completion tokens.
    pub output_tokens: i64,
    /// Both.
    pub total_tokens: i64,
    /// Requests counted.
    pub requests: i64,
    /// The silo's currency.
    pub currency: String,
    /// Cost, a decimal string.
    pub total_cost: String,
    /// The period (`day`, `week`, `month`) and its bounds.
    pub period: String,
    /// Start of the period.
    pub period_start: DateTime<Utc>,
    /// End of the period.
    pub period_end: DateTime<Utc>,
    /// When the spend logs were last read from LiteLLM (`null`: never yet).
    pub sampled_at: Option<DateTime<Utc>>,
}

/// Spend in a period.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
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
