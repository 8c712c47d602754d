//! The access policies' share of the identity layer: on a cluster running Cilium, the MCP
//! gateway's HTTPS egress (the plane that reaches tools on users' behalf) follows the silo's
//! access policies as a CiliumNetworkPolicy with `toFQDNs`.
//!
//! Cilium adds up the allows of every policy that selects an endpoint, so a narrow rule narrows
//! only where nothing else allows more: with `cilium.enabled` the silo chart leaves the gateway
//! out of its HTTPS-to-the-internet rules, and this policy is the gateway's only way out. It is
//! narrowed to the union of the policies' allowed domains when every user is governed by a
//! policy (one selects everybody; a user naming a policy uses that one): every portal policy is
//! default-deny, so no user may reach a domain outside the union. Otherwise (no policy yet, or
//! some users governed by none) it is the NetworkPolicy floor's HTTPS allow-list, and domain
//! rules are enforced at the gateway only. Deny lists are always the gateway's: Cilium has no
//! FQDN deny.

use opencrane_silo_db::policies::PolicyRow;
use serde::Deserialize;
use serde_json::{Value, json};

/// The policy's name in the silo's namespace (the silo Role lets the manager write only this).
pub const ACCESS_EGRESS: &str = "opencrane-access-egress";

/// The component label of the pods it governs.
pub const GATEWAY_COMPONENT: &str = "mcp-gateway";

/// One entry of the NetworkPolicy floor's HTTPS allow-list (`networkPolicy.egressAllowCIDRs`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct CidrBlock {
    /// The network.
    pub cidr: String,
    /// Networks inside it left out.
    #[serde(default)]
    pub except: Vec<String>,
}

/// What one access policy says about domains, for this purpose.
#[derive(Clone, Debug)]
pub struct DomainRules {
    /// The policy has no selector: it governs every user who names no policy.
    pub everyone: bool,
    /// Allowed domain patterns (`*.example.com` covers subdomains).
    pub allow: Vec<String>,
}

impl DomainRules {
    /// A policy row's rules.
    pub fn of_row(row: &PolicyRow) -> Self {
        let everyone = row.tenant_selector.as_object().is_none_or(serde_json::Map::is_empty);
        Self { everyone, allow: row.allowed_domains.clone() }
    }

    /// An AccessPolicy resource's rules (a resource without default deny allows everything, so it
    /// never narrows: it counts as not governing anybody).
    pub fn of_spec(spec: &opencrane_crd::access_policy::AccessPolicySpec) -> Self {
        let default_deny = spec.domains.as_ref().is_none_or(|d| d.default_deny);
        let everyone = default_deny && spec.tenant_selector.as_ref().is_none_or(|s| s.match_labels.is_empty());
        let allow = spec.domains.as_ref().map(|d| d.allow.clone()).unwrap_or_default();
        if default_deny { Self { everyone, allow } } else { Self { everyone: false, allow: Vec::new() } }
    }
}

/// Whether the policies narrow the gateway's egress to their domains.
pub fn narrows(policies: &[DomainRules]) -> bool {
    policies.iter().any(|p| p.everyone)
}

/// The gateway's egress policy in `namespace`: `toFQDNs` of the policies' allowed domains when
/// they [`narrows`], else the floor's HTTPS allow-list.
pub fn gateway_egress(policies: &[DomainRules], floor: &[CidrBlock], namespace: &str) -> Value {
    let https = json!([{ "ports": [{ "port": "443", "protocol": "TCP" }] }]);
    let (description, egress) = if narrows(policies) {
        let mut domains: Vec<&str> = policies.iter().flat_map(|p| p.allow.iter().map(String::as_str)).collect();
        domains.sort_unstable();
        domains.dedup();
        let fqdns: Vec<Value> = domains
            .iter()
            .map(|d| if d.contains('*') { json!({ "matchPattern": d }) } else { json!({ "matchName": d }) })
            .collect();
        // Cilium's idiom for "nothing": one empty rule keeps the endpoint in default deny.
        let egress = if fqdns.is_empty() { json!([{}]) } else { json!([{ "toFQDNs": fqdns, "toPorts": https }]) };
        ("HTTPS out to the domains the silo's access policies allow; nothing else.", egress)
    } else {
        let set: Vec<Value> = floor
            .iter()
            .map(|b| {
                if b.except.is_empty() {
                    json!({ "cidr": b.cidr })
                } else {
                    json!({ "cidr": b.cidr, "except": b.except })
                }
            })
            .collect();
        let egress = if set.is_empty() { json!([{}]) } else { json!([{ "toCIDRSet": set, "toPorts": https }]) };
        ("HTTPS out as the NetworkPolicy floor allows: not every user is governed by an access policy.", egress)
    };
    json!({
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": {
            "name": ACCESS_EGRESS,
            "namespace": namespace,
            "labels": { crate::runtime::MANAGED_LABEL: "opencrane-portal" },
        },
        "spec": {
            "description": description,
            "endpointSelector": { "matchLabels": { "app.kubernetes.io/component": GATEWAY_COMPONENT } },
            "egress": egress,
        },
    })
}

/// What the /policies page says about where domain rules are enforced.
pub fn enforcement_note(cilium: bool) -> &'static str {
    if cilium {
        "Cilium enforces these domains for the MCP gateway too (toFQDNs) once a policy without a selector \
         governs every user; denied domains and each user's own rules are enforced at the gateway."
    } else {
        "Domain rules are enforced at the gateway only: this cluster has no Cilium identity layer, so the \
         network allows HTTPS to the internet."
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(everyone: bool, allow: &[&str]) -> DomainRules {
        DomainRules { everyone, allow: allow.iter().map(|s| (*s).to_owned()).collect() }
    }

    fn floor() -> Vec<CidrBlock> {
        vec![CidrBlock { cidr: "0.0.0.0/0".into(), except: vec!["10.0.0.0/8".into()] }]
    }

    #[test]
    fn a_policy_for_everyone_narrows_to_the_union_of_allowed_domains() {
        let policies = [rules(true, &["github.com", "*.atlassian.net"]), rules(false, &["github.com", "pypi.org"])];
        let policy = gateway_egress(&policies, &floor(), "opencrane-acme");
        assert_eq!(policy["metadata"]["namespace"], "opencrane-acme");
        assert_eq!(policy["spec"]["endpointSelector"]["matchLabels"]["app.kubernetes.io/component"], "mcp-gateway");
        assert_eq!(
            policy["spec"]["egress"][0]["toFQDNs"],
            json!([{"matchPattern": "*.atlassian.net"}, {"matchName": "github.com"}, {"matchName": "pypi.org"}])
        );
        assert_eq!(policy["spec"]["egress"][0]["toPorts"][0]["ports"][0]["port"], "443");
    }

    #[test]
    fn without_a_policy_for_everyone_the_floor_applies() {
        for policies in [vec![], vec![rules(false, &["github.com"])]] {
            let policy = gateway_egress(&policies, &floor(), "ns");
            assert_eq!(
                policy["spec"]["egress"][0]["toCIDRSet"],
                json!([{"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}])
            );
            assert!(policy["spec"]["egress"][0].get("toFQDNs").is_none());
        }
    }

    #[test]
    fn nothing_allowed_means_nothing_out() {
        let policy = gateway_egress(&[rules(true, &[])], &floor(), "ns");
        assert_eq!(policy["spec"]["egress"], json!([{}]));
        assert_eq!(gateway_egress(&[], &[], "ns")["spec"]["egress"], json!([{}]));
    }

    #[test]
    fn a_resource_without_default_deny_never_narrows() {
        use opencrane_crd::access_policy::{AccessPolicySpec, Domains};
        let open = AccessPolicySpec {
            description: None,
            tenant_selector: None,
            domains: Some(Domains { allow: vec!["a.com".into()], deny: vec![], default_deny: false }),
            egress_rules: vec![],
        };
        assert!(!DomainRules::of_spec(&open).everyone);
        let closed =
            AccessPolicySpec { domains: Some(Domains { default_deny: true, ..open.domains.clone().unwrap() }), ..open };
        assert!(DomainRules::of_spec(&closed).everyone);
    }
}
