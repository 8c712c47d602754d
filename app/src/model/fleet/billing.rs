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
    /// The IANA time zone its customers are billed in (`Europe/Berlin`; kept when absent, UTC
    /// for a new account): their usage days and months are that zone's.
    #[serde(default)]
    pub time_zone: Option<String>,
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
    /// The IANA time zone its customers are billed in.
    pub time_zone: String,
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

/// A customer's statement for a calendar month (of its billing time zone).
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
    /// The month's usage as SVG charts (server-rendered): seats per day, then spend per day in
    /// each currency, each with its accessible name.
    pub charts: Vec<(String, String)>,
    /// Whether the caller may change the customer's billing (operators): the plan form and
    /// *Finalise* show.
    pub manage: bool,
    /// The plans a customer can be put on (operators).
    pub plans_available: Vec<String>,
    /// Whether the month has ended in the billing time zone (it can be finalised).
    pub closed: bool,
    /// The time zone the customer is billed in.
    pub time_zone: String,
}

/// `GET /api/v1/billing/customers`: the filters of the billing overview (all optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BillingQuery {
    /// `YYYY-MM` (this month when absent).
    #[serde(default)]
    pub month: Option<String>,
    /// Part of a customer's name or display name, or of its account's name or e-mail.
    #[serde(default)]
    pub q: Option<String>,
    /// A plan's name, or `none` for customers on no plan.
    #[serde(default)]
    pub plan: Option<String>,
    /// `billed` (on a plan), `unbilled` (no plan or no account), `draft` or `final`.
    #[serde(default)]
    pub status: Option<String>,
    /// 1-based page of [`BILLING_PAGE_SIZE`] rows.
    #[serde(default)]
    pub page: Option<u32>,
}

/// Rows per page of the billing overview.
pub const BILLING_PAGE_SIZE: usize = 50;

/// The account a customer is billed to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AccountRef {
    /// The billing account's id.
    pub id: String,
    /// Its display name, else its e-mail, else its id.
    pub name: String,
}

/// One customer in the billing overview.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BillingRow {
    /// The customer.
    pub cluster_tenant: String,
    /// Its display name (its name once it was deleted).
    pub display_name: String,
    /// Deleted: its billing history outlives it.
    pub deleted: bool,
    /// The account it is billed to (`null`: its owners have none).
    pub account: Option<AccountRef>,
    /// The plan in force at the month's end, or on its last day so far (`null`: unbilled).
    pub plan: Option<String>,
    /// The statement's currency.
    pub currency: Option<String>,
    /// The month's statement so far (the final total once final), decimal string.
    pub month_to_date: String,
    /// A linear forecast of the month's end (open months only), decimal string.
    pub forecast: Option<String>,
    /// `draft` or `final`.
    pub status: String,
    /// Active seats on the latest day reported in the month.
    pub seats: Option<i32>,
}

/// What one currency comes to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CurrencyTotal {
    /// ISO 4217 code.
    pub currency: String,
    /// Sum of the customers' amounts, decimal string.
    pub amount: String,
    /// Sum of the forecasts (open months), decimal string.
    pub forecast: Option<String>,
}

/// One month of the trend.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TrendMonth {
    /// `YYYY-MM`.
    pub month: String,
    /// Every currency billed that month (final statements and drafts).
    pub totals: Vec<CurrencyTotal>,
}

/// The billing overview: every customer in scope with its account, plan, month-to-date and
/// forecast, the month's totals, and the trend of the six months up to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BillingOverview {
    /// `YYYY-MM`.
    pub month: String,
    /// Whether the month is still running (forecasts apply).
    pub open: bool,
    /// Days of the month so far (all of them once it has ended).
    pub days_elapsed: u32,
    /// Days in the month.
    pub days_in_month: u32,
    /// Totals of the filtered customers, per currency.
    pub totals: Vec<CurrencyTotal>,
    /// Six months up to `month`, oldest first (all customers in scope, unfiltered).
    pub trend: Vec<TrendMonth>,
    /// This page of the filtered customers, by account then name.
    pub items: Vec<BillingRow>,
    /// How many match the filters.
    pub total: usize,
    /// This page (1-based).
    pub page: u32,
    /// Rows per page.
    pub page_size: usize,
    /// The plans (for the filter; every plan).
    pub plans: Vec<String>,
    /// The trend as an SVG chart per currency (server-rendered; not in the REST answer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ssr", schemars(skip))]
    pub charts: Vec<(String, String)>,
}
