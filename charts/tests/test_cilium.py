"""Identity truth table: the third isolation layer (Cilium), beside the NetworkPolicy one.

Two fleet-managed silos (acme and beta) and the fleet are rendered with `cilium.enabled`; their
CiliumNetworkPolicies are evaluated alone, with Cilium's semantics as its policy reference states
them: an endpoint's identity is its namespace and labels (`k8s:io.kubernetes.pod.namespace`,
namespace labels as `k8s:io.cilium.k8s.namespace.labels.<key>`, pod labels); a namespaced policy's
endpoint selectors without a namespace key select in the policy's namespace only; once a policy
with an ingress (egress) section selects an endpoint, that direction is deny-by-default and the
allow rules add up; entities (`cluster`, `world`, `kube-apiserver`), CIDR sets (never matching
pods) and FQDNs match what they name; `toPorts` limits a rule to its ports. Every pod pair and
port is compared with the same promise as the NetworkPolicy table, the two tables must agree on
every pair, and the paths marked for mutual authentication (manager → its database and planes,
silo manager → the fleet's internal API) must be allowed only by rules that require it.

Each silo's policies include the one its manager applies at run time for the MCP gateway's
egress (`opencrane access-egress-render`, the same code as the manager's pass), and since Cilium
adds up the allows of both layers, the promise is also checked with both layers together: a
narrower identity rule (provider FQDNs, the access policies' domains) must really narrow.
"""

import copy
import ipaddress
import itertools
import os
import subprocess
import unittest

import yaml

from test_charts import FLEET, FLEET_PROFILES, SILO, SILO_PROFILES, env_of, merge, render, validate_object
import test_networkpolicy as floor
from test_networkpolicy import API_SERVER, PORTS, allowed as np_allowed, allowed_direction as np_direction, expected, namespace_labels

NS_KEY = "k8s:io.kubernetes.pod.namespace"
NS_LABEL = "k8s:io.cilium.k8s.namespace.labels."
PRIVATE = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16")]


def identity(endpoint):
    """The endpoint's Cilium identity labels (None for endpoints outside the cluster)."""
    if endpoint.namespace is None:
        return None
    labels = dict(endpoint.labels)
    labels[NS_KEY] = endpoint.namespace
    for key, value in namespace_labels(endpoint.namespace).items():
        labels[NS_LABEL + key] = value
    return labels


def holds(expression, labels):
    key, op, values = expression["key"], expression["operator"], expression.get("values", [])
    return {"Exists": key in labels, "DoesNotExist": key not in labels,
            "In": labels.get(key) in values, "NotIn": labels.get(key) not in values}[op]


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items()) and all(
        holds(e, labels) for e in selector.get("matchExpressions", []))


def endpoint_selector_matches(selector, policy_ns, endpoint):
    labels = identity(endpoint)
    if labels is None:
        return False
    keys = set(selector.get("matchLabels", {})) | {e["key"] for e in selector.get("matchExpressions", [])}
    if not any(k == NS_KEY or k.startswith(NS_LABEL) for k in keys) and endpoint.namespace != policy_ns:
        return False  # a namespaced policy's selectors stay in its namespace
    return selects(selector, labels)


def entity_matches(entity, endpoint):
    if entity == "all":
        return True
    if entity == "cluster":
        return endpoint.namespace is not None or endpoint.role == "apiserver"
    if entity == "kube-apiserver":
        return endpoint.role == "apiserver"
    if entity == "world":
        return endpoint.namespace is None and endpoint.role != "apiserver"
    return False


def cidr_matches(block, endpoint):
    if endpoint.namespace is not None or endpoint.role == "apiserver":
        return False  # CIDR rules select addresses outside the cluster, never pods or the API server
    if endpoint.ip not in ipaddress.ip_network(block["cidr"]):
        return False
    return not any(endpoint.ip in ipaddress.ip_network(e) for e in block.get("except", []))


def fqdn_matches(rule, endpoint):
    host = getattr(endpoint, "host", None)
    if not host:
        return False
    if "matchName" in rule:
        return host == rule["matchName"]
    pattern = rule["matchPattern"]
    return pattern == "*" or (pattern.startswith("*.") and host.endswith(pattern[1:]))


def ports_match(rule, protocol, port):
    to_ports = rule.get("toPorts")
    if not to_ports:
        return True
    return any(p.get("protocol", "ANY") in (protocol, "ANY") and int(p["port"]) == port
               for entry in to_ports for p in entry.get("ports", []))


def peer_matches(rule, direction, policy_ns, other):
    prefix = "from" if direction == "ingress" else "to"
    if any(endpoint_selector_matches(s, policy_ns, other) for s in rule.get(f"{prefix}Endpoints", [])):
        return True
    if any(entity_matches(e, other) for e in rule.get(f"{prefix}Entities", [])):
        return True
    if any(cidr_matches(b, other) for b in rule.get(f"{prefix}CIDRSet", [])):
        return True
    return any(fqdn_matches(f, other) for f in rule.get("toFQDNs", [])) if direction == "egress" else False


def verdict(policies, subject, other, protocol, port, direction):
    """(allowed, rules that allow) for `subject`'s side of a flow; None rules: not isolated."""
    if subject.namespace is None:
        return True, None
    relevant = [p for p in policies if p["metadata"]["namespace"] == subject.namespace and direction in p["spec"]
                and endpoint_selector_matches(p["spec"]["endpointSelector"], subject.namespace, subject)]
    if not relevant:
        return True, None
    rules = [r for p in relevant for r in p["spec"][direction]
             if peer_matches(r, direction, p["metadata"]["namespace"], other) and ports_match(r, protocol, port)]
    return bool(rules), rules


def allowed(policies, src, dst, protocol, port):
    ingress, _ = verdict(policies, dst, src, protocol, port, "ingress")
    egress, _ = verdict(policies, src, dst, protocol, port, "egress")
    return ingress and egress


def np_isolates(network_policies, subject, direction):
    types = "Ingress" if direction == "ingress" else "Egress"
    return any(p["metadata"]["namespace"] == subject.namespace and types in p["spec"].get("policyTypes", ["Ingress"])
               and floor.selects(p["spec"]["podSelector"], subject.labels) for p in network_policies)


def combined_direction(policies, network_policies, subject, other, protocol, port, direction):
    """One direction under Cilium with both layers: isolated once either selects the endpoint,
    then allowed by any rule of either."""
    if subject.namespace is None:
        return True
    _, rules = verdict(policies, subject, other, protocol, port, direction)
    np_iso = np_isolates(network_policies, subject, direction)
    if rules is None and not np_iso:
        return True
    return bool(rules) or (np_iso and np_direction(network_policies, subject, other, protocol, port, direction))


def combined(policies, network_policies, src, dst, protocol, port):
    return (combined_direction(policies, network_policies, dst, src, protocol, port, "ingress")
            and combined_direction(policies, network_policies, src, dst, protocol, port, "egress"))


def access_egress(namespace, floor_json, policies_yaml=""):
    """The manager's run-time policy for the MCP gateway, from the binary."""
    binary = os.environ.get("OPENCRANE_BIN")
    if not binary:
        raise unittest.SkipTest("OPENCRANE_BIN is not set (cargo xtask test sets it)")
    result = subprocess.run([binary, "access-egress-render", "-f", "-", "--namespace", namespace, "--egress-floor", floor_json],
                            input=policies_yaml, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"access-egress-render failed: {result.stderr}")
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def egress_floor_of(objects):
    manager = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-manager"))
    return env_of(manager["spec"]["template"]["spec"]["containers"][0])["OPENCRANE_CILIUM_EGRESS_FLOOR"]["value"]


def authenticated(policies, src, dst, protocol, port):
    """Whether every rule admitting the flow at its destination requires mutual authentication."""
    _, rules = verdict(policies, dst, src, protocol, port, "ingress")
    return bool(rules) and all(r.get("authentication", {}).get("mode") == "required" for r in rules)


def needs_mutual_auth(src, dst):
    if src.role != "manager":
        return False
    if dst.role == "fleet":
        return True
    return dst.namespace == src.namespace and dst.role in ("database", "litellm", "cognee", "mcp-gateway", "skill-registry")


class CiliumTruthTable(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        table = floor.NetworkPolicyTruthTable()
        table.setUp()
        self.endpoints = table.endpoints
        self.network_policies = table.policies
        internet = next(e for e in self.endpoints if e.role == "internet")
        internet.host = "api.openai.com"
        self.policies, self.both_network_policies, self.floors = [], [], {}
        for silo in ("acme", "beta"):
            values = merge(SILO_PROFILES["fleet-managed"], {
                "clusterTenant": {"name": silo}, "cilium": {"enabled": True},
                "networkPolicy": {"kubeApiServer": {"cidrs": [f"{API_SERVER}/32"], "ports": [443, 6443]}},
            })
            objects, _ = render(SILO, values, f"opencrane-{silo}")
            self.policies += [o for o in objects if o["kind"] == "CiliumNetworkPolicy"]
            self.both_network_policies += [o for o in objects if o["kind"] == "NetworkPolicy"]
            # No access policy yet: the gateway's run-time egress is the floor's allow-list.
            self.floors[silo] = egress_floor_of(objects)
            self.policies += access_egress(f"opencrane-{silo}", self.floors[silo])
        fleet, _ = render(FLEET, merge(FLEET_PROFILES["default"], {"cilium": {"enabled": True}}), "opencrane-system")
        self.policies += [o for o in fleet if o["kind"] == "CiliumNetworkPolicy"]
        self.both_network_policies += [o for o in fleet if o["kind"] == "NetworkPolicy"]

    def flows(self):
        for src, dst in itertools.permutations(self.endpoints, 2):
            for protocol, port in PORTS:
                want = expected(src, dst, protocol, port)
                if want is not None:
                    yield src, dst, protocol, port, want

    def check(self, policies):
        unexpected, missing, unauthenticated, checked = [], [], [], 0
        for src, dst, protocol, port, want in self.flows():
            got = allowed(policies, src, dst, protocol, port)
            checked += 1
            if got and not want:
                unexpected.append(f"{src} → {dst} {protocol}/{port}")
            if want and not got:
                missing.append(f"{src} → {dst} {protocol}/{port}")
            if got and needs_mutual_auth(src, dst) and not authenticated(policies, src, dst, protocol, port):
                unauthenticated.append(f"{src} → {dst} {protocol}/{port}")
        self.assertGreater(checked, 1000)
        self.assertEqual(unexpected, [], "flows the identity policies allow but the product forbids")
        self.assertEqual(missing, [], "flows the product needs but the identity policies block")
        self.assertEqual(unauthenticated, [], "marked paths allowed without mutual authentication")

    def test_every_flow_matches_the_promise_with_mutual_auth_on_the_marked_paths(self):
        self.assertTrue(self.policies)
        self.check(self.policies)
        marked = [(s, d) for s, d, _, _, want in self.flows() if want and needs_mutual_auth(s, d)]
        self.assertGreater(len(marked), 10, "the manager's database and planes, and the fleet's internal API")

    def test_the_two_layers_agree_on_every_pair(self):
        disagree = [f"{s} → {d} {p}/{n}: NetworkPolicy {np_allowed(self.network_policies, s, d, p, n)}"
                    for s, d, p, n, _ in self.flows()
                    if np_allowed(self.network_policies, s, d, p, n) != allowed(self.policies, s, d, p, n)]
        self.assertEqual(disagree, [])

    def test_a_too_broad_selector_fails_the_table(self):
        broad = copy.deepcopy(self.policies)
        intra = next(p for p in broad if p["metadata"]["namespace"] == "opencrane-acme" and p["metadata"]["name"].endswith("-identity-intra-silo"))
        intra["spec"]["ingress"][0]["fromEndpoints"] = [{"matchExpressions": [{"key": NS_KEY, "operator": "Exists"}]}]
        beta = next(p for p in broad if p["metadata"]["namespace"] == "opencrane-beta" and p["metadata"]["name"].endswith("-identity-intra-silo"))
        beta["spec"]["egress"][0]["toEndpoints"] = [{}, {"matchLabels": {NS_KEY: "opencrane-acme"}}]
        with self.assertRaises(AssertionError):
            self.check(broad)
        unauthenticated = copy.deepcopy(self.policies)
        for policy in unauthenticated:
            for rule in policy["spec"].get("ingress", []):
                rule.pop("authentication", None)
        with self.assertRaises(AssertionError):
            self.check(unauthenticated)

    def test_fqdn_egress_replaces_the_cidr_allow_list(self):
        values = merge(SILO_PROFILES["fleet-managed"], {"cilium": {"enabled": True, "egressFQDNs": ["api.openai.com", "*.anthropic.com"]}})
        objects, _ = render(SILO, values, "opencrane-acme")
        https = next(o for o in objects if o["kind"] == "CiliumNetworkPolicy" and o["metadata"]["name"].endswith("-identity-egress-https"))
        self.assertEqual(https["spec"]["egress"][0]["toFQDNs"], [{"matchName": "api.openai.com"}, {"matchPattern": "*.anthropic.com"}])
        internet = next(e for e in self.endpoints if e.role == "internet")
        manager = next(e for e in self.endpoints if e.name == "acme/clustertenant-manager")
        policies = [o for o in objects if o["kind"] == "CiliumNetworkPolicy"]
        self.assertTrue(allowed(policies, manager, internet, "TCP", 443))
        internet.host = "evil.example.com"
        self.assertFalse(allowed(policies, manager, internet, "TCP", 443))

    def test_both_layers_together_keep_the_promise(self):
        """Cilium enforces the NetworkPolicies too and adds up the allows of both layers."""
        wrong = [f"{s} → {d} {p}/{n}" for s, d, p, n, want in self.flows()
                 if combined(self.policies, self.both_network_policies, s, d, p, n) != want]
        self.assertEqual(wrong, [])

    def test_the_access_policies_narrow_the_gateway_under_both_layers(self):
        everyone = """apiVersion: opencrane.io/v1alpha1
kind: AccessPolicy
metadata: {name: everyone, namespace: opencrane-acme}
spec: {domains: {allow: ["github.com", "*.atlassian.net"], deny: [], defaultDeny: true}}
"""
        narrowed = access_egress("opencrane-acme", self.floors["acme"], everyone)
        self.assertEqual(narrowed[0]["metadata"]["name"], "opencrane-access-egress")
        validate_object(self, narrowed[0])
        policies = [p for p in self.policies if p["metadata"]["name"] != "opencrane-access-egress" or p["metadata"]["namespace"] != "opencrane-acme"]
        policies += narrowed
        gateway = next(e for e in self.endpoints if e.name == "acme/mcp-gateway")
        internet = next(e for e in self.endpoints if e.role == "internet")
        reach = lambda host, nps=self.both_network_policies: (setattr(internet, "host", host), combined(policies, nps, gateway, internet, "TCP", 443))[1]
        self.assertTrue(reach("github.com"))
        self.assertTrue(reach("jira.atlassian.net"))
        self.assertFalse(reach("api.openai.com"), "a domain no policy allows")
        # A floor that still covered the gateway would widen it again: the evaluator sees that.
        widened = copy.deepcopy(self.both_network_policies)
        for p in widened:
            if p["metadata"]["name"].endswith("-egress-https"):
                p["spec"]["podSelector"] = {}
        self.assertTrue(reach("api.openai.com", widened))
        # A policy with a selector governs only some users: no narrowing, the floor applies.
        some = everyone.replace("spec: {", "spec: {tenantSelector: {matchLabels: {team: eng}}, ")
        self.assertIn("toCIDRSet", access_egress("opencrane-acme", self.floors["acme"], some)[0]["spec"]["egress"][0])

    def test_provider_fqdns_narrow_under_both_layers(self):
        values = merge(SILO_PROFILES["fleet-managed"], {"cilium": {"enabled": True, "egressFQDNs": ["api.openai.com"]}})
        objects, _ = render(SILO, values, "opencrane-acme")
        policies = [o for o in objects if o["kind"] == "CiliumNetworkPolicy"]
        nps = [o for o in objects if o["kind"] == "NetworkPolicy"]
        self.assertFalse([p for p in nps if p["metadata"]["name"].endswith("-egress-https")], "the floor would widen it")
        manager = next(e for e in self.endpoints if e.name == "acme/clustertenant-manager")
        internet = next(e for e in self.endpoints if e.role == "internet")
        internet.host = "api.openai.com"
        self.assertTrue(combined(policies, nps, manager, internet, "TCP", 443))
        internet.host = "evil.example.com"
        self.assertFalse(combined(policies, nps, manager, internet, "TCP", 443))

    def test_off_by_default(self):
        for chart, values, ns in ((SILO, SILO_PROFILES["fleet-managed"], "opencrane-acme"), (FLEET, FLEET_PROFILES["default"], "opencrane-system")):
            objects, _ = render(chart, values, ns)
            self.assertFalse([o for o in objects if o["apiVersion"].startswith("cilium.io/")])


if __name__ == "__main__":
    unittest.main()
