//! Wire types of the fleet's identity plane (`/identity`, `/api/v1/admin/zitadel/*`): the
//! service-account key in use and its health, a rotation's validation and outcome (the
//! original's `sa-key:rotate` contract), the two-phase rotation, and the reconcile pass's report.
//! No type here carries key material: only key ids, user ids and dates.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Days before expiry at which the page warns.
pub const WARN_DAYS: [i64; 3] = [30, 7, 1];

/// How loud a banner is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Act soon.
    Warning,
    /// Act now: sign-in provisioning fails.
    Danger,
}

/// A banner above the key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Banner {
    /// How loud.
    pub severity: Severity,
    /// What is wrong and what to do.
    pub message: String,
}

/// The banners for a key expiring at `expires` (as of `now`) whose last exchange is `last`.
pub fn banners(expires: Option<DateTime<Utc>>, last: Option<&ExchangeView>, now: DateTime<Utc>) -> Vec<Banner> {
    let mut out = Vec::new();
    if let Some(expires) = expires {
        let days = (expires - now).num_days();
        if expires <= now {
            out.push(Banner {
                severity: Severity::Danger,
                message: "The service-account key has expired: Zitadel refuses it, so no customer's sign-in organisation can be made or changed. Rotate it now.".into(),
            });
        } else if let Some(threshold) = WARN_DAYS.iter().rev().find(|d| days < **d) {
            let severity = if *threshold <= 7 { Severity::Danger } else { Severity::Warning };
            let when = if days == 0 {
                "today".to_owned()
            } else if days == 1 {
                "in 1 day".to_owned()
            } else {
                format!("in {days} days")
            };
            out.push(Banner {
                severity,
                message: format!("The service-account key expires {when}. Rotate it before then."),
            });
        }
    }
    if let Some(last) = last.filter(|l| !l.ok) {
        out.push(Banner {
            severity: Severity::Danger,
            message: format!(
                "The last token exchange failed: {}",
                last.detail.as_deref().unwrap_or("Zitadel did not say why.")
            ),
        });
    }
    out
}

/// One token exchange.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeView {
    /// When.
    pub at: DateTime<Utc>,
    /// Whether Zitadel issued a token.
    pub ok: bool,
    /// Why not.
    pub detail: Option<String>,
}

/// The identity page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdentityOverview {
    /// Zitadel is configured on this fleet.
    pub configured: bool,
    /// The instance URL.
    pub api_url: Option<String>,
    /// The key in use.
    pub key_id: Option<String>,
    /// The service-account user.
    pub user_id: Option<String>,
    /// When the key expires.
    pub expires_at: Option<DateTime<Utc>>,
    /// Whole days left (negative: expired).
    pub days_left: Option<i64>,
    /// The last token exchange (since this process started).
    pub last_exchange: Option<ExchangeView>,
    /// The last successful one.
    pub last_success: Option<DateTime<Utc>>,
    /// Where a rotated key is persisted (`namespace/name` key `k`), if anywhere.
    pub persisted_in: Option<String>,
    /// What needs attention.
    pub banners: Vec<Banner>,
    /// The rotation under way, if any.
    pub rotation: Option<RotationView>,
    /// Recent rotations, newest first.
    pub history: Vec<RotationView>,
    /// The last reconcile pass, if one ran since this process started.
    pub last_reconcile: Option<ReconcileReport>,
}

/// `POST /api/v1/admin/zitadel/sa-key:rotate` body: the key JSON, as an object or a string.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RotateRequest {
    /// The new key (Zitadel's JSON key file).
    #[serde(default)]
    pub service_account_key: Option<serde_json::Value>,
}

/// What the candidate key proved.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyValidation {
    /// Zitadel issued a token for it.
    pub token_exchange_ok: bool,
    /// The token may call the Admin API (IAM_OWNER).
    pub instance_scope_ok: bool,
    /// The candidate's key id, when it could be read.
    pub key_id: Option<String>,
    /// What went wrong (never key material).
    pub detail: Option<String>,
}

/// The rotation's answer: 200 when rotated, 422 when the candidate failed validation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RotationOutcome {
    /// The key in use is now the candidate.
    pub rotated: bool,
    /// The key in use now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// The key that was in use before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_key_id: Option<String>,
    /// What the candidate proved.
    pub validation: KeyValidation,
}

/// A rotation's phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RotationState {
    /// A new key was minted, validated and persisted; the old one is still in use.
    Prepared,
    /// The new key is in use; the old one is revoked when the grace period ends.
    Active,
    /// Finished (the old key revoked, or an upload that leaves the old key to the console).
    Done,
    /// Abandoned before activation (the minted key was deleted).
    Cancelled,
}

impl RotationState {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prepared => "prepared",
            Self::Active => "active",
            Self::Done => "done",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Prepared, Self::Active, Self::Done, Self::Cancelled].into_iter().find(|v| v.as_str() == s)
    }
}

/// A step of a two-phase rotation, as the page's buttons ask for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RotationAction {
    /// Mint, validate and keep a new key.
    Prepare,
    /// Put the prepared key into use.
    Activate,
    /// Revoke the old key now.
    Revoke,
    /// Abandon the prepared key.
    Cancel,
}

/// One rotation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RotationView {
    /// Its id.
    pub id: String,
    /// `upload` (the key was posted) or `minted` (the fleet asked Zitadel for it).
    pub method: String,
    /// The phase.
    pub state: RotationState,
    /// The new key.
    pub key_id: String,
    /// The key it replaces.
    pub previous_key_id: Option<String>,
    /// When the new key expires.
    pub key_expires_at: Option<DateTime<Utc>>,
    /// When it was prepared (or uploaded).
    pub prepared_at: DateTime<Utc>,
    /// When the new key went into use.
    pub activated_at: Option<DateTime<Utc>>,
    /// When the old key is revoked (the grace period's end).
    pub revoke_after: Option<DateTime<Utc>>,
    /// When the old key was revoked.
    pub revoked_at: Option<DateTime<Utc>>,
    /// Who started it.
    pub actor: String,
}

/// `POST /api/v1/admin/zitadel/reconcile {name?}` body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReconcileRequest {
    /// One customer; all when absent.
    #[serde(default)]
    pub name: Option<String>,
}

/// A customer the pass left alone, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    /// The customer.
    pub name: String,
    /// `already-provisioned`, `deleting`, …
    pub reason: String,
}

/// A customer the pass could not heal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failed {
    /// The customer.
    pub name: String,
    /// What went wrong (never a secret).
    pub error: String,
}

/// Members adopted from one organisation's users.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Adoption {
    /// The customer.
    pub name: String,
    /// New memberships.
    pub adopted: i64,
    /// Users that already were members, or found no free seat.
    pub skipped: i64,
}

/// The reconcile pass's report (the original's shape).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReconcileReport {
    /// Customers whose organisation was made or healed.
    pub reconciled: Vec<String>,
    /// Customers left alone.
    pub skipped: Vec<Skipped>,
    /// Customers that could not be healed.
    pub failed: Vec<Failed>,
    /// Members adopted per customer.
    pub member_adoption: Vec<Adoption>,
    /// Customers whose users could not be listed.
    pub member_adoption_failed: Vec<Failed>,
    /// When the pass ran.
    #[serde(default)]
    pub finished_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;

    #[test]
    fn banners_warn_at_30_7_and_1_days_and_on_a_failed_exchange() {
        let now = Utc::now();
        let at = |days: i64| banners(Some(now + TimeDelta::days(days) + TimeDelta::hours(1)), None, now);
        assert!(at(40).is_empty());
        assert_eq!(at(20)[0].severity, Severity::Warning);
        assert!(at(20)[0].message.contains("in 20 days"));
        assert_eq!(at(5)[0].severity, Severity::Danger);
        assert!(at(0)[0].message.contains("today"));
        let expired = banners(Some(now - TimeDelta::hours(1)), None, now);
        assert!(expired[0].message.contains("has expired"));
        let failed = ExchangeView { at: now, ok: false, detail: Some("invalid_grant".into()) };
        let both = banners(None, Some(&failed), now);
        assert_eq!(both.len(), 1);
        assert!(both[0].message.ends_with("invalid_grant"));
        assert!(banners(None, Some(&ExchangeView { ok: true, ..failed }), now).is_empty());
    }
}
