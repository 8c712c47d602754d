//! Wire types of the fleet's DNS truth: for each customer's hosts, what the zone's
//! authoritative nameservers answer and which certificate the ingress serves, as the probes last
//! saw it, with the sentence people read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One host of a customer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
