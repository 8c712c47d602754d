//! Access policies: which policy governs a user, and what it lets their assistant reach.
//!
//! A user's policy is the one named on their record (`policyRef`); failing that, the policy
//! whose tenant selector matches the user's labels with the most labels (ties by name); failing
//! that, none. Domains are default-deny: a domain is reachable only when an allowed pattern
//! matches it and no denied pattern does (a deny always beats an allow). A pattern is an exact
//! host (`api.example.com`) or a wildcard of its subdomains (`*.example.com`, not the apex).

use std::{collections::BTreeMap, net::Ipv4Addr};

use serde::{Deserialize, Serialize};

/// One egress rule: a CIDR block and its ports (443 when none is given).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressRule {
    /// `10.0.0.0/8`, `2001:db8::/32`.
    pub cidr: String,
    /// TCP ports.
    pub ports: Vec<u16>,
}

/// An AccessPolicy, as the evaluator needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Policy name.
    pub name: String,
    /// Labels a user must carry for the policy to select them (empty: selects nobody by label).
    pub tenant_selector: BTreeMap<String, String>,
    /// Domain patterns that may be reached.
    pub allowed_domains: Vec<String>,
    /// Domain patterns that may never be reached.
    pub denied_domains: Vec<String>,
    /// Network egress beyond DNS.
    pub egress: Vec<EgressRule>,
}

/// How a policy came to govern a user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Selection {
    /// Named on the user's record.
    Named,
    /// Its tenant selector matches the user's labels.
    Selector {
        /// The labels that matched.
        labels: BTreeMap<String, String>,
    },
}

/// The labels a user carries, for selectors: their tenant name and team.
pub fn labels(tenant: &str, team: Option<&str>) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([("opencrane.io/tenant".to_owned(), tenant.to_owned())]);
    if let Some(team) = team.filter(|t| !t.is_empty()) {
        labels.insert("team".into(), team.to_owned());
    }
    labels
}

/// The policy governing a user with `labels` and optional `policy_ref`.
pub fn select<'p>(
    policies: &'p [Policy],
    policy_ref: Option<&str>,
    labels: &BTreeMap<String, String>,
) -> Option<(&'p Policy, Selection)> {
    if let Some(name) = policy_ref {
        return policies.iter().find(|p| p.name == name).map(|p| (p, Selection::Named));
    }
    policies
        .iter()
        .filter(|p| !p.tenant_selector.is_empty() && p.tenant_selector.iter().all(|(k, v)| labels.get(k) == Some(v)))
        .max_by(|a, b| a.tenant_selector.len().cmp(&b.tenant_selector.len()).then(b.name.cmp(&a.name)))
        .map(|p| (p, Selection::Selector { labels: p.tenant_selector.clone() }))
}

/// Whether a domain pattern matches `host` (both lower-cased by the caller's validation).
pub fn pattern_matches(pattern: &str, host: &str) -> bool {
    match pattern.strip_prefix("*.") {
        Some(parent) => {
            host.len() > parent.len() + 1 && host.ends_with(parent) && host[..host.len() - parent.len()].ends_with('.')
        }
        None => pattern == host,
    }
}

/// A domain decision and the rule behind it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainDecision {
    /// Reachable or not.
    pub allowed: bool,
    /// The pattern that decided, or `None` for the default deny.
    pub rule: Option<String>,
}

/// Whether `policy` lets its users reach `host`.
pub fn check_domain(policy: &Policy, host: &str) -> DomainDecision {
    let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
    if let Some(rule) = policy.denied_domains.iter().find(|p| pattern_matches(p, &host)) {
        return DomainDecision { allowed: false, rule: Some(rule.clone()) };
    }
    match policy.allowed_domains.iter().find(|p| pattern_matches(p, &host)) {
        Some(rule) => DomainDecision { allowed: true, rule: Some(rule.clone()) },
        None => DomainDecision { allowed: false, rule: None },
    }
}

/// Checks one domain pattern (a host name, or `*.` and a host name) with the vocabulary's domain
/// rule; the message is for the field it came from.
pub fn validate_pattern(pattern: &str) -> Result<(), String> {
    let host = pattern.strip_prefix("*.").unwrap_or(pattern);
    opencrane_types::rules::domain_name(host).map_err(|why| format!("“{pattern}” is not a domain pattern: {why}"))
}

/// Checks one egress rule.
pub fn validate_egress(rule: &EgressRule) -> Result<(), String> {
    let (addr, prefix) =
        rule.cidr.split_once('/').ok_or_else(|| format!("“{}” is not a CIDR block like 10.0.0.0/8.", rule.cidr))?;
    // IPv4 only: the AccessPolicy resource (and the NetworkPolicies rendered from it) carry IPv4.
    addr.parse::<Ipv4Addr>().map_err(|_| format!("“{}” is not an IPv4 CIDR block like 10.0.0.0/8.", rule.cidr))?;
    let max = 32;
    match prefix.parse::<u8>() {
        Ok(p) if p <= max => {}
        _ => return Err(format!("“{}”: the prefix length must be 0 to {max}.", rule.cidr)),
    }
    if rule.ports.contains(&0) {
        return Err("Ports are 1 to 65535.".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(name: &str, selector: &[(&str, &str)], allow: &[&str], deny: &[&str]) -> Policy {
        Policy {
            name: name.into(),
            tenant_selector: selector.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            allowed_domains: allow.iter().map(|s| (*s).to_owned()).collect(),
            denied_domains: deny.iter().map(|s| (*s).to_owned()).collect(),
            egress: vec![],
        }
    }

    #[test]
    fn a_named_policy_wins_then_the_most_specific_selector() {
        let policies = [
            policy("team-eng", &[("team", "eng")], &[], &[]),
            policy("ana-only", &[("team", "eng"), ("opencrane.io/tenant", "ana")], &[], &[]),
            policy("named", &[], &[], &[]),
        ];
        let ana = labels("ana", Some("eng"));
        assert_eq!(select(&policies, Some("named"), &ana).map(|(p, _)| p.name.as_str()), Some("named"));
        assert_eq!(select(&policies, None, &ana).map(|(p, _)| p.name.as_str()), Some("ana-only"));
        let bob = labels("bob", Some("eng"));
        assert_eq!(select(&policies, None, &bob).map(|(p, _)| p.name.as_str()), Some("team-eng"));
        assert!(select(&policies, None, &labels("cy", None)).is_none());
        assert!(select(&policies, Some("gone"), &ana).is_none(), "a dangling reference selects nothing");
    }

    #[test]
    fn domains_are_default_deny_and_a_deny_beats_an_allow() {
        let p = policy("p", &[], &["*.example.com", "api.openai.com"], &["secret.example.com"]);
        let check = |h: &str| check_domain(&p, h);
        assert_eq!(check("docs.example.com"), DomainDecision { allowed: true, rule: Some("*.example.com".into()) });
        assert!(!check("example.com").allowed, "a wildcard does not cover the apex");
        assert!(!check("badexample.com").allowed);
        assert_eq!(
            check("SECRET.example.com."),
            DomainDecision { allowed: false, rule: Some("secret.example.com".into()) }
        );
        assert!(check("api.openai.com").allowed);
        assert_eq!(check("evil.test"), DomainDecision { allowed: false, rule: None });
    }

    #[test]
    fn bad_patterns_and_rules_are_named() {
        assert!(validate_pattern("*.example.com").is_ok());
        for bad in ["example", "Exa mple.com", "*.*.com", "-a.com", "http://x.com"] {
            assert!(validate_pattern(bad).is_err(), "{bad}");
        }
        let rule = |cidr: &str, ports: &[u16]| EgressRule { cidr: cidr.into(), ports: ports.to_vec() };
        assert!(validate_egress(&rule("10.0.0.0/8", &[443])).is_ok());
        assert!(
            validate_egress(&rule("2001:db8::/32", &[])).unwrap_err().contains("IPv4"),
            "the resource carries IPv4 only"
        );
        assert!(validate_egress(&rule("10.0.0.0/33", &[])).unwrap_err().contains("0 to 32"));
        assert!(validate_egress(&rule("10.0.0.0", &[])).is_err());
        assert!(validate_egress(&rule("10.0.0.0/8", &[0])).is_err());
    }
}
