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
