//! The platform's certificate issuer as `GET /api/v1/platform/dns` answers it: filled by the
//! provisioner from the cluster (`opencrane_provision::platform_dns::summarise`), shown by the
//! `/dns` page. No secret is in it: the solver's token only as whether it is set and when it last
//! changed.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The issuer as `GET /api/v1/platform/dns` answers it (no secret in it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct IssuerSummary {
    /// Whether the issuer exists.
    pub configured: bool,
    /// Its name.
    pub issuer_name: String,
    /// `ClusterIssuer`.
    pub issuer_kind: String,
    /// Where its secrets live (cert-manager's namespace).
    pub issuer_namespace: String,
    /// The DNS-01 provider (wire spelling); `None` for a self-signed or HTTP-01-only issuer.
    pub provider: Option<String>,
    /// The DNS-01 solver's zone.
    pub zone: Option<String>,
    /// The ACME account's e-mail.
    pub email: Option<String>,
    /// The ACME directory.
    pub server: Option<String>,
    /// The issuer's Ready condition (`None`: cert-manager has not reported yet).
    pub ready: Option<bool>,
    /// Its reason and message.
    pub message: Option<String>,
    /// The solver Secret, when the issuer refers to one.
    pub secret_name: Option<String>,
    /// Whether that Secret holds a token.
    pub token_set: bool,
    /// When the token was last written here.
    pub token_changed_at: Option<DateTime<Utc>>,
    /// Who manages the issuer (its `app.kubernetes.io/managed-by` label).
    pub managed_by: Option<String>,
    /// Whether `PUT` may change it.
    pub editable: bool,
    /// Whether it is self-signed (no ACME).
    pub self_signed: bool,
    /// The provider's solver block without the reference to the solver Secret (names only, no
    /// secret in it), for the form.
    pub solver_config: Option<Value>,
}
