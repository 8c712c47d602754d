//! What DNS really answers for a customer's host: the name is asked of the zone's
//! **authoritative** nameservers (configured, or found through the zone's NS records), never a
//! caching resolver, and the answer is compared with the ingress address the DNSEndpoint
//! publishes. The comparison is a pure function ([`classify`]); the query is a thin step on
//! `hickory-resolver` with its cache off, so a changed zone is seen at the next probe.

use std::{net::IpAddr, net::SocketAddr, time::Duration};

use hickory_resolver::{
    ResolveErrorKind, Resolver, TokioResolver,
    config::{NameServerConfigGroup, ResolverConfig, ResolverOpts},
    name_server::TokioConnectionProvider,
    proto::{ProtoErrorKind, rr::RecordType},
};
use serde::{Deserialize, Serialize};

/// What a name resolves to, compared with what it should.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum RecordState {
    /// Exactly the expected address (among the answers).
    Resolves,
    /// The zone has no such name, or no address for it.
    Missing,
    /// Addresses, but not the expected one.
    #[serde(rename_all = "camelCase")]
    WrongAddress {
        /// What the nameserver answered.
        got: Vec<IpAddr>,
    },
    /// The nameservers could not be asked (timeout, refused, unreachable).
    #[serde(rename_all = "camelCase")]
    Unreachable {
        /// Why, in words.
        error: String,
    },
}

impl RecordState {
    /// The stored spelling: `resolves`, `missing`, `wrongAddress`, `unreachable`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Resolves => "resolves",
            Self::Missing => "missing",
            Self::WrongAddress { .. } => "wrongAddress",
            Self::Unreachable { .. } => "unreachable",
        }
    }

    /// The wait is over: the name answers with the expected address.
    pub fn is_resolved(&self) -> bool {
        matches!(self, Self::Resolves)
    }

    /// The state in words (what a waiting step says it sees).
    pub fn describe(&self) -> String {
        match self {
            Self::Resolves => "resolves".to_owned(),
            Self::Missing => "no address yet".to_owned(),
            Self::WrongAddress { got } => {
                let got: Vec<String> = got.iter().map(ToString::to_string).collect();
                format!("answers {}", got.join(", "))
            }
            Self::Unreachable { error } => format!("nameservers unreachable: {error}"),
        }
    }
}

/// The answer to one address query, as the probe saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// These addresses.
    Addresses(Vec<IpAddr>),
    /// NXDOMAIN, or no records of the type.
    NoRecords,
    /// No answer at all.
    Failed(String),
}

/// Compares an answer with the address that should be there.
pub fn classify(expected: IpAddr, answer: Answer) -> RecordState {
    match answer {
        Answer::Addresses(got) if got.contains(&expected) => RecordState::Resolves,
        Answer::Addresses(got) if got.is_empty() => RecordState::Missing,
        Answer::Addresses(mut got) => {
            got.sort();
            got.dedup();
            RecordState::WrongAddress { got }
        }
        Answer::NoRecords => RecordState::Missing,
        Answer::Failed(error) => RecordState::Unreachable { error },
    }
}

/// One host's check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordCheck {
    /// The host asked for.
    pub host: String,
    /// The address it should have.
    pub expected: IpAddr,
    /// What was found.
    #[serde(flatten)]
    pub state: RecordState,
    /// external-dns's TXT ownership record for the host, if one was found
    /// (`heritage=external-dns,external-dns/owner=…`).
    pub ownership: Option<String>,
}

/// Asks the zone's authoritative nameservers.
#[derive(Clone)]
pub struct DnsProbe {
    resolver: TokioResolver,
}

impl std::fmt::Debug for DnsProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsProbe").finish_non_exhaustive()
    }
}

impl DnsProbe {
    /// A probe asking exactly `nameservers` (UDP, TCP for truncated answers), without a cache.
    pub fn new(nameservers: &[SocketAddr], timeout: Duration) -> Self {
        let mut group = NameServerConfigGroup::new();
        for server in nameservers {
            group.merge(NameServerConfigGroup::from_ips_clear(&[server.ip()], server.port(), true));
        }
        let config = ResolverConfig::from_parts(None, Vec::new(), group);
        let mut opts = ResolverOpts::default();
        opts.cache_size = 0;
        opts.timeout = timeout;
        opts.attempts = 1;
        opts.ndots = 0;
        opts.use_hosts_file = hickory_resolver::config::ResolveHosts::Never;
        let resolver =
            Resolver::builder_with_config(config, TokioConnectionProvider::default()).with_options(opts).build();
        Self { resolver }
    }

    /// A probe asking the system's resolver (for a vanity host in a zone the platform does not
    /// serve), without a cache.
    pub fn system(timeout: Duration) -> Result<Self, String> {
        let mut builder = Resolver::builder_tokio().map_err(|e| format!("reading the system resolver: {e}"))?;
        let opts = builder.options_mut();
        opts.cache_size = 0;
        opts.timeout = timeout;
        opts.attempts = 1;
        Ok(Self { resolver: builder.build() })
    }

    /// The authoritative nameservers of `zone`, found through the system's resolver (its NS
    /// records, each name resolved to its addresses, port 53).
    pub async fn authoritative_for(zone: &str, timeout: Duration) -> Result<Self, String> {
        let system = Resolver::builder_tokio().map_err(|e| format!("reading the system resolver: {e}"))?.build();
        let names = system.ns_lookup(fqdn(zone)).await.map_err(|e| format!("NS records of {zone}: {e}"))?;
        let mut servers = Vec::new();
        for ns in names.iter() {
            if let Ok(ips) = system.lookup_ip(ns.0.to_ascii()).await {
                servers.extend(ips.iter().map(|ip| SocketAddr::new(ip, 53)));
            }
        }
        if servers.is_empty() {
            return Err(format!("no address found for the nameservers of {zone}"));
        }
        Ok(Self::new(&servers, timeout))
    }

    /// Asks for `host`'s addresses (A or AAAA, as `expected` is) and its ownership TXT record.
    pub async fn check(&self, host: &str, expected: IpAddr) -> RecordCheck {
        let record_type = if expected.is_ipv4() { RecordType::A } else { RecordType::AAAA };
        let answer = match self.resolver.lookup(fqdn(host), record_type).await {
            Ok(lookup) => Answer::Addresses(lookup.iter().filter_map(|r| r.ip_addr()).collect()),
            Err(e) if is_no_records(&e) => Answer::NoRecords,
            Err(e) => Answer::Failed(e.to_string()),
        };
        let state = classify(expected, answer);
        let ownership = match state {
            RecordState::Unreachable { .. } => None,
            _ => self.ownership(host, record_type).await,
        };
        RecordCheck { host: host.to_owned(), expected, state, ownership }
    }

    /// external-dns's TXT registry record: at the host itself (old format) or at
    /// `a-<host>`/`aaaa-<host>` (the format since external-dns 0.12).
    async fn ownership(&self, host: &str, record_type: RecordType) -> Option<String> {
        let prefixed = format!("{}-{host}", record_type.to_string().to_ascii_lowercase());
        for name in [prefixed.as_str(), host] {
            if let Ok(txt) = self.resolver.txt_lookup(fqdn(name)).await {
                let found = txt.iter().map(ToString::to_string).find(|t| t.contains("heritage=external-dns"));
                if found.is_some() {
                    return found;
                }
            }
        }
        None
    }
}

fn fqdn(name: &str) -> String {
    if name.ends_with('.') { name.to_owned() } else { format!("{name}.") }
}

fn is_no_records(err: &hickory_resolver::ResolveError) -> bool {
    match err.kind() {
        ResolveErrorKind::Proto(proto) => matches!(proto.kind(), ProtoErrorKind::NoRecordsFound { .. }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn answers_are_classified() {
        let want = ip("203.0.113.7");
        assert_eq!(classify(want, Answer::Addresses(vec![want])), RecordState::Resolves);
        assert_eq!(classify(want, Answer::Addresses(vec![ip("198.51.100.1"), want])), RecordState::Resolves);
        assert_eq!(classify(want, Answer::NoRecords), RecordState::Missing);
        assert_eq!(classify(want, Answer::Addresses(Vec::new())), RecordState::Missing);
        assert_eq!(
            classify(want, Answer::Addresses(vec![ip("198.51.100.2"), ip("198.51.100.1"), ip("198.51.100.2")])),
            RecordState::WrongAddress { got: vec![ip("198.51.100.1"), ip("198.51.100.2")] }
        );
        assert_eq!(
            classify(want, Answer::Failed("timed out".into())),
            RecordState::Unreachable { error: "timed out".into() }
        );
        assert_eq!(RecordState::WrongAddress { got: Vec::new() }.as_str(), "wrongAddress");
    }
}
