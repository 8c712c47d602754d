//! Billing-account wire types (`/api/v1/billing-accounts`).

use serde::{Deserialize, Serialize};

/// `POST /api/v1/billing-accounts` body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BillingAccountRequest {
    /// Optional display name.
    #[serde(default)]
    pub display_name: Option<String>,
}

/// A billing account.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BillingAccount {
    /// Account id.
    pub id: String,
    /// Owner's IdP subject.
    pub subject: String,
    /// Owner's email.
    pub email: Option<String>,
    /// Display name.
    pub display_name: Option<String>,
    /// Creation time.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Last change.
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

/// `POST /api/v1/billing/plans` body (amounts as decimal strings).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanRequest {
    /// Unique name.
    #[serde(default)]
    pub name: String,
    /// ISO 4217 code.
    #[serde(default)]
    pub currency: String,
    /// Price of one seat for a whole month, at most two places.
    #[serde(default)]
    pub seat_price: String,
    /// Seats the price does not apply to.
    #[serde(default)]
    pub included_seats: i64,
    /// LLM pass-through markup in percent, at most two places (`0` when absent).
    #[serde(default)]
    pub markup_percent: Option<String>,
    /// The least a month costs, if any.
    #[serde(default)]
    pub monthly_minimum: Option<String>,
}

/// A plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PlanView {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// ISO 4217 code.
    pub currency: String,
    /// Per seat per month.
    pub seat_price: String,
    /// Seats not charged.
    pub included_seats: i32,
    /// Percent.
    pub markup_percent: String,
    /// The least a month costs.
    pub monthly_minimum: Option<String>,
}

/// `PUT /api/v1/billing/{name}/plan` body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AssignPlanRequest {
    /// The plan's name or id.
    #[serde(default)]
    pub plan: String,
    /// From this day on (`YYYY-MM-DD`; today when absent).
    #[serde(default)]
    pub effective_from: Option<String>,
}

/// One entry of a customer's plan history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PlanAssignment {
    /// From this day on.
    pub effective_from: chrono::NaiveDate,
    /// Until this day (inclusive; `null`: still in force).
    pub effective_to: Option<chrono::NaiveDate>,
    /// The plan.
    pub plan: PlanView,
    /// Who assigned it.
    pub assigned_by: String,
    /// When.
    pub assigned_at: chrono::DateTime<chrono::Utc>,
}

/// One line of a statement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StatementLine {
    /// `seats`, `spend`, `unpriced`, `minimum` or `correction`.
    pub kind: String,
    /// For people.
    pub description: String,
    /// Decimal string, whole cents.
    pub amount: String,
    /// The usage days it came from (`GET /billing/{name}/usage?from=&to=` shows them).
    pub days: Vec<chrono::NaiveDate>,
}

/// A customer's statement for a calendar month (UTC).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StatementView {
    /// The customer.
    pub cluster_tenant: String,
    /// `YYYY-MM`.
    pub month: String,
    /// `draft` (computed from the usage held now) or `final` (frozen).
    pub status: String,
    /// When it was made final, and by whom.
    #[serde(default)]
    pub finalised_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Who made it final.
    #[serde(default)]
    pub finalised_by: Option<String>,
    /// The currency of the plan in force at the month's end (`null`: no plan, nothing billed).
    pub currency: Option<String>,
    /// The lines.
    pub lines: Vec<StatementLine>,
    /// Their sum.
    pub total: String,
}

/// The customer billing page's data: plan history, the month's statement, its usage days.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomerBilling {
    /// Plan history, oldest first.
    pub plans: Vec<PlanAssignment>,
    /// The month's statement.
    pub statement: StatementView,
    /// The month's usage days, oldest first.
    pub usage: Vec<crate::model::fleet::usage::UsageDay>,
}
