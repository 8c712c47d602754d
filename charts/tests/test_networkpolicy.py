"""NetworkPolicy truth table (reliability goal I4).

Two fleet-managed silos (acme and beta) and the fleet are rendered; their NetworkPolicies are
evaluated with Kubernetes' semantics (a pod is isolated in a direction once any policy selecting
it names that direction; a flow needs the destination's ingress and the source's egress to allow
it; peers match by pod selector within the policy's namespace, by namespace selector, both, or by
IP block, applied to pod IPs too as the conservative reading) over every pair of endpoints and
ports, and compared with what the product promises: a silo talks to itself; the ingress
controller and the fleet-manager reach only the silo's manager; the manager reaches the fleet
and the API server; every silo pod reaches DNS and HTTPS on the public internet; nothing else —
in particular nothing between two silos; Prometheus (namespace monitoring) reaches only the
managers' metrics port. Pod labels come from the rendered pod templates; the
database pods carry CloudNativePG's `cnpg.io/cluster` label.
"""

import ipaddress
import itertools
import unittest

from test_charts import FLEET, FLEET_PROFILES, SILO, SILO_PROFILES, merge, render

API_SERVER = "10.96.0.1"
PORTS = [("TCP", 8080), ("TCP", 8081), ("TCP", 9090), ("TCP", 5432), ("TCP", 4000), ("TCP", 8000), ("UDP", 53), ("TCP", 443), ("TCP", 6443), ("TCP", 80)]


class Endpoint:
    def __init__(self, name, ip, namespace=None, labels=None, role=None):
        self.name, self.ip, self.namespace, self.labels, self.role = name, ipaddress.ip_address(ip), namespace, labels or {}, role

    def __repr__(self):
        return self.name


def expression_holds(expression, labels):
    key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    raise AssertionError(f"unknown operator {operator}")


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items()) and all(
        expression_holds(e, labels) for e in selector.get("matchExpressions", []))


def namespace_labels(namespace):
    labels = {"kubernetes.io/metadata.name": namespace}
    if namespace.startswith("opencrane-") and namespace != "opencrane-system":
        labels["opencrane.io/cluster-tenant"] = namespace.removeprefix("opencrane-")
    return labels


def peer_matches(peer, policy_ns, endpoint):
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        if endpoint.ip not in ipaddress.ip_network(block["cidr"]):
            return False
        return not any(endpoint.ip in ipaddress.ip_network(e) for e in block.get("except", []))
    if endpoint.namespace is None:
        return False  # host-network / external endpoints only match IP blocks
    ns_labels = namespace_labels(endpoint.namespace)
    if "namespaceSelector" in peer and not selects(peer["namespaceSelector"], ns_labels):
        return False
    if "namespaceSelector" not in peer and endpoint.namespace != policy_ns:
        return False
    return selects(peer.get("podSelector", {}), endpoint.labels)


def port_matches(rule, protocol, port):
    ports = rule.get("ports")
    if not ports:
        return True
    return any(p.get("protocol", "TCP") == protocol and p.get("port") in (None, port) for p in ports)


def allowed_direction(policies, subject, other, protocol, port, direction):
    """Whether `subject`'s policies of one direction let traffic with `other` through."""
    types = "Ingress" if direction == "ingress" else "Egress"
    key = "from" if direction == "ingress" else "to"
    relevant = [p for p in policies if subject.namespace is not None and p["metadata"]["namespace"] == subject.namespace
                and types in p["spec"].get("policyTypes", ["Ingress"]) and selects(p["spec"]["podSelector"], subject.labels)]
    if not relevant:
        return True  # not isolated
    for policy in relevant:
        for rule in policy["spec"].get(direction, []):
            peers = rule.get(key)
            if (not peers or any(peer_matches(peer, policy["metadata"]["namespace"], other) for peer in peers)) and port_matches(rule, protocol, port):
                return True
    return False


def allowed(policies, src, dst, protocol, port):
    return allowed_direction(policies, dst, src, protocol, port, "ingress") and allowed_direction(policies, src, dst, protocol, port, "egress")


def expected(src, dst, protocol, port):
    """The promise, written independently of the policies."""
    silo_of = lambda e: e.namespace if e.namespace and e.namespace.startswith("opencrane-") and e.namespace != "opencrane-system" else None
    s, d = silo_of(src), silo_of(dst)
    if dst.role == "fleet" and (protocol, port) == ("TCP", 8081):
        return src.role == "manager"  # the internal API: silo managers only, from anywhere else nobody
    if src.role == "monitoring":
        # Prometheus scrapes the managers' metrics port, and nothing else of a silo or the fleet.
        if (protocol, port) == ("TCP", 9090) and dst.role in ("manager", "fleet"):
            return True
        if dst.role == "fleet":
            return None  # the fleet's console port is open to the cluster by design
        return False if silo_of(dst) else None
    if s and s == d:
        return True
    if d:
        return dst.role == "manager" and port == 8080 and protocol == "TCP" and src.role in ("ingress", "fleet")
    if s:
        if dst.role == "fleet":
            return False  # the internal port is handled above; the console port is not for silos
        if dst.role == "dns":
            return port == 53
        if dst.role == "apiserver":
            return src.role == "manager" and protocol == "TCP" and port in (443, 6443)
        if dst.role == "internet":
            return (protocol, port) == ("TCP", 443)
        return False
    return None  # neither side in a silo: not this product's policy


class NetworkPolicyTruthTable(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.policies, self.endpoints = [], []
        octet = itertools.count(10)

        def pods_of(objects, namespace, silo):
            for obj in objects:
                if obj["kind"] == "Deployment":
                    labels = obj["spec"]["template"]["metadata"]["labels"]
                    component = labels["app.kubernetes.io/component"]
                    role = {"clustertenant-manager": "manager", "fleet-manager": "fleet"}.get(component, component)
                    self.endpoints.append(Endpoint(f"{silo or 'fleet'}/{component}", f"10.244.{next(octet)}.5", namespace, labels, role))
                elif obj["kind"] == "Cluster":
                    labels = {"cnpg.io/cluster": obj["metadata"]["name"], "cnpg.io/podRole": "instance"}
                    self.endpoints.append(Endpoint(f"{silo or 'fleet'}/database", f"10.244.{next(octet)}.5", namespace, labels, "database"))
                elif obj["kind"] == "NetworkPolicy":
                    self.policies.append(obj)

        for silo in ("acme", "beta"):
            values = merge(SILO_PROFILES["fleet-managed"], {"clusterTenant": {"name": silo},
                                                            "networkPolicy": {"kubeApiServer": {"cidrs": [f"{API_SERVER}/32"], "ports": [443, 6443]}}})
            objects, _ = render(SILO, values, f"opencrane-{silo}")
            pods_of(objects, f"opencrane-{silo}", silo)
        fleet, _ = render(FLEET, FLEET_PROFILES["default"], "opencrane-system")
        pods_of(fleet, "opencrane-system", None)
        self.endpoints += [
            Endpoint("ingress-nginx/controller", "10.244.200.5", "ingress-nginx", {"app.kubernetes.io/name": "ingress-nginx"}, "ingress"),
            Endpoint("monitoring/prometheus", "10.244.202.5", "monitoring", {"app.kubernetes.io/name": "prometheus"}, "monitoring"),
            Endpoint("kube-system/coredns", "10.244.201.5", "kube-system", {"k8s-app": "kube-dns"}, "dns"),
            Endpoint("apiserver", API_SERVER, None, None, "apiserver"),
            Endpoint("internet", "93.184.216.34", None, None, "internet"),
            Endpoint("metadata-server", "169.254.169.254", None, None, "metadata"),
        ]

    def test_every_flow_matches_the_promise(self):
        roles = {e.role for e in self.endpoints}
        self.assertTrue({"manager", "database", "litellm", "cognee", "fleet"} <= roles, roles)
        self.assertEqual(sum(e.role == "manager" for e in self.endpoints), 2)
        unexpected, missing, checked = [], [], 0
        for src, dst in itertools.permutations(self.endpoints, 2):
            for protocol, port in PORTS:
                want = expected(src, dst, protocol, port)
                if want is None:
                    continue
                got = allowed(self.policies, src, dst, protocol, port)
                checked += 1
                if got and not want:
                    unexpected.append(f"{src} → {dst} {protocol}/{port}")
                if want and not got:
                    missing.append(f"{src} → {dst} {protocol}/{port}")
        self.assertGreater(checked, 1000)
        self.assertEqual(unexpected, [], "flows the policies allow but the product forbids")
        self.assertEqual(missing, [], "flows the product needs but the policies block")

    def test_the_evaluator_sees_a_leak(self):
        """Opening one silo's ingress to every namespace shows up as cross-silo flows."""
        intra = next(p for p in self.policies if p["metadata"]["namespace"] == "opencrane-acme" and p["metadata"]["name"].endswith("-intra-silo"))
        intra["spec"]["ingress"][0]["from"].append({"namespaceSelector": {}})
        beta_manager = next(e for e in self.endpoints if e.name == "beta/clustertenant-manager")
        acme_db = next(e for e in self.endpoints if e.name == "acme/database")
        # Beta's egress is still closed, so the leak needs both sides opened to show:
        self.assertFalse(allowed(self.policies, beta_manager, acme_db, "TCP", 5432))
        beta_intra = next(p for p in self.policies if p["metadata"]["namespace"] == "opencrane-beta" and p["metadata"]["name"].endswith("-intra-silo"))
        beta_intra["spec"]["egress"][0]["to"].append({"namespaceSelector": {}})
        self.assertTrue(allowed(self.policies, beta_manager, acme_db, "TCP", 5432))
        self.assertFalse(expected(beta_manager, acme_db, "TCP", 5432))


if __name__ == "__main__":
    unittest.main()
