//! Wire types of the fleet's DNS truth: for each customer's hosts, what the zone's
//! authoritative nameservers answer and which certificate the ingress serves, as the probes last
//! saw it, with the sentence people read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One host of a customer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DnsHostView {
    /// The host.
    pub host: String,
    /// `canonical` (`<name>.<base>`, the DNSEndpoint's) or `vanity`.
    pub kind: String,
    /// `resolves`, `missing`, `wrongAddress` or `unreachable`.
    pub record_state: String,
    /// What the record should point at.
    pub expected: Option<String>,
    /// What the nameservers answered (for a wrong address).
    pub got: Vec<String>,
    /// external-dns's TXT ownership record, when found.
    pub ownership: Option<String>,
    /// `valid`, `expiring`, `expired`, `wrongName` or `unreachable`.
    pub cert_health: Option<String>,
    /// The served certificate's issuer.
    pub cert_issuer: Option<String>,
    /// Its names.
    pub cert_names: Vec<String>,
    /// Its notAfter.
    pub cert_not_after: Option<DateTime<Utc>>,
    /// Whole days left.
    pub cert_days_left: Option<i64>,
    /// cert-manager's Ready condition of the vanity Certificate (`None`: not a vanity host, or
    /// the fleet does not read the cluster).
    pub issuance_ready: Option<bool>,
    /// That condition in words ("not ready (Issuing: …)", "no Certificate …").
    pub issuance: Option<String>,
    /// Why the check could not be made (nameservers or handshake), in words.
    pub problem: Option<String>,
    /// When it was checked.
    pub checked_at: DateTime<Utc>,
}

impl DnsHostView {
    /// The record's state for people, and its tone (`ok`, `warn`, `bad`).
    pub fn record_text(&self) -> (String, &'static str) {
        match self.record_state.as_str() {
            "resolves" => (format!("Resolves to {}", self.expected.clone().unwrap_or_default()), "ok"),
            "missing" => ("Missing: the nameservers have no address for it".to_owned(), "warn"),
            "wrongAddress" => (
                format!(
                    "Wrong address: {} (expected {})",
                    self.got.join(", "),
                    self.expected.clone().unwrap_or_default()
                ),
                "bad",
            ),
            _ => ("Nameservers unreachable".to_owned(), "bad"),
        }
    }

    /// cert-manager's word on the vanity certificate, and its tone (`None`: nothing to say).
    pub fn issuance_text(&self) -> Option<(String, &'static str)> {
        let text = self.issuance.clone()?;
        let tone = match self.issuance_ready {
            Some(true) => "ok",
            Some(false) => "bad",
            None => "warn",
        };
        Some((format!("cert-manager: {text}"), tone))
    }

    /// The served certificate's state for people, and its tone.
    pub fn certificate_text(&self) -> (String, &'static str) {
        let days = self.cert_days_left.unwrap_or_default();
        match self.cert_health.as_deref() {
            Some("valid") => (format!("Valid, {days} days left"), "ok"),
            Some("expiring") => (format!("Expires in {days} days"), "warn"),
            Some("expired") => ("Expired".to_owned(), "bad"),
            Some("wrongName") => (format!("Not valid for this host (names: {})", self.cert_names.join(", ")), "bad"),
            Some(_) => ("No certificate served (handshake failed)".to_owned(), "warn"),
            None => ("Not checked yet".to_owned(), "idle"),
        }
    }
}

/// One customer's hosts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DnsCustomerView {
    /// The customer.
    pub name: String,
    /// Its display name.
    pub display_name: String,
    /// Its hosts, canonical first; empty: not checked yet.
    pub hosts: Vec<DnsHostView>,
}

/// The DNS page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DnsOverview {
    /// Whether the probes run (a base domain and an ingress address are configured).
    pub probing: bool,
    /// The ingress address records should point at.
    pub ingress_ip: Option<String>,
    /// The nameservers asked (empty: the base domain's NS records).
    pub nameservers: Vec<String>,
    /// Every customer.
    pub customers: Vec<DnsCustomerView>,
}

/// One customer's DNS card.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerDns {
    /// Whether the probes run on this fleet.
    pub probing: bool,
    /// Its hosts as last checked.
    pub hosts: Vec<DnsHostView>,
}

/// The platform's certificate issuer (`GET /api/v1/platform/dns`): the cert-manager ACME
/// ClusterIssuer customers' certificates come from, as the cluster has it. The solver's token is
/// never in it: only whether one is set and when it last changed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PlatformDnsView {
    /// Whether this fleet reaches a Kubernetes API server (else nothing below is known).
    pub available: bool,
    /// The issuer.
    #[serde(flatten)]
    pub issuer: opencrane_types::platform_dns::IssuerSummary,
    /// Why nothing could be read, when the cluster refused or was unreachable.
    pub problem: Option<String>,
}

impl PlatformDnsView {
    /// The issuer's state for people, and its tone.
    pub fn ready_text(&self) -> (String, &'static str) {
        let detail = self.issuer.message.clone().map(|m| format!(": {m}")).unwrap_or_default();
        match (self.issuer.configured, self.issuer.ready) {
            (false, _) => ("Not configured".to_owned(), "idle"),
            (true, Some(true)) => (format!("Ready{detail}"), "ok"),
            (true, Some(false)) => (format!("Not ready{detail}"), "bad"),
            (true, None) => ("Waiting for cert-manager to report".to_owned(), "warn"),
        }
    }
}

/// The DNS-01 providers the issuer form offers (wire spelling, label); the server's list is
/// `opencrane_provision::platform_dns::provider_names`, which a test keeps equal to this one.
pub const PLATFORM_DNS_PROVIDERS: &[(&str, &str)] = &[
    ("cloudflare", "Cloudflare (API token)"),
    ("digitalocean", "DigitalOcean (API token)"),
    ("route53", "Amazon Route 53 (region; IAM role or access key)"),
    ("clouddns", "Google Cloud DNS (project; Workload Identity or key)"),
    ("rfc2136", "RFC 2136 (nameserver and TSIG key)"),
    ("acmedns", "acme-dns (solverConfig)"),
    ("azuredns", "Azure DNS (solverConfig)"),
    ("akamai", "Akamai (solverConfig)"),
    ("webhook", "A webhook solver (solverConfig)"),
];

/// The issuer form (the page's fields; `apiToken` empty keeps the token on file). `Debug` leaves
/// the token out.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlatformDnsForm {
    /// The DNS-01 provider.
    pub provider: String,
    /// The platform's zone.
    pub zone: String,
    /// The ACME account's e-mail.
    pub email: String,
    /// The ACME directory (empty: Let's Encrypt production).
    pub server: String,
    /// The provider's token (never shown again).
    pub api_token: String,
    /// The provider's solver block, as JSON (empty: none).
    pub solver_config: String,
}

impl std::fmt::Debug for PlatformDnsForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlatformDnsForm")
            .field("provider", &self.provider)
            .field("zone", &self.zone)
            .field("email", &self.email)
            .field("server", &self.server)
            .field("api_token", &if self.api_token.is_empty() { "" } else { "<set>" })
            .field("solver_config", &self.solver_config)
            .finish()
    }
}
