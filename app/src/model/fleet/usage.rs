//! Usage as silos report it to the fleet for billing, and as the fleet shows it: per customer and
//! day (in the billing time zone the fleet names), the active seats and the LLM spend per model
//! and currency. Amounts are decimal strings with up to six places (exact; never floats).

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

/// How many days before the latest one the fleet holds a silo sends again on every report, so a
/// late LiteLLM log (spend that arrives after midnight) revises the day it belongs to.
pub const RESEND_DAYS: u32 = 2;

/// The furthest back a silo's catch-up reaches (a silo that was never reported, or unreachable
/// for longer, starts here).
pub const CATCH_UP_DAYS: u32 = 400;

/// `GET /api/internal/cluster-tenants/{name}/usage`: where a silo's report starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageCursor {
    /// The IANA time zone whose calendar days usage is reported in.
    pub time_zone: String,
    /// The latest day the fleet holds (`null`: none yet).
    pub last_day: Option<NaiveDate>,
    /// Days before `lastDay` to send again.
    pub resend_days: u32,
}

/// One model's spend on a day.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageSpend {
    /// Public model name.
    pub model: String,
    /// ISO 4217 code (three capitals).
    pub currency: String,
    /// Decimal string, at most six places.
    pub amount: String,
}

/// `PUT /api/internal/cluster-tenants/{name}/usage/{day}` body: one day of a silo's usage.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UsageReport {
    /// Members holding a seat that day (the most measured).
    pub active_seats: i64,
    /// Spend per model and currency.
    #[serde(default)]
    pub spend: Vec<UsageSpend>,
}

/// What recording a report did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageRecorded {
    /// The day.
    pub day: NaiveDate,
    /// Its revision now (1, then +1 per change).
    pub revision: i32,
    /// Whether this report changed it (`false`: a retry or a duplicate).
    pub changed: bool,
}

/// One day as the fleet holds it (`GET /api/v1/billing/{name}/usage`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageDay {
    /// The day.
    pub day: NaiveDate,
    /// Active seats.
    pub active_seats: i32,
    /// Spend per model and currency.
    pub spend: Vec<UsageSpend>,
    /// 1, then +1 per correction.
    pub revision: i32,
    /// The last report that changed it.
    pub reported_at: DateTime<Utc>,
}
