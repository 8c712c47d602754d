"""The fleet provisioner's objects, offline: what `opencrane provision-render` prints for a
ClusterTenant (the pure build steps the Kubernetes backend applies) validates against Kubernetes
1.32 (kubernetes-validate, strict) and the CRD schemas of CloudNativePG, cert-manager and
external-dns; and the silo release, rendered with the provisioner's values on top of the
fleet-managed profile, leaves to the pipeline exactly what the pipeline owns (no second database,
DNS record or vanity certificate) and uses the pipeline's database Secret.
"""

import os
import subprocess
import unittest

import yaml

from test_charts import ROOT, SILO, SILO_NS, SILO_PROFILES, env_of, merge, render, validate_object

EXAMPLE = ROOT / "docs" / "examples" / "clustertenant.yaml"
ISSUER = "https://login.example.com"
MINIMAL = """apiVersion: opencrane.io/v1alpha1
kind: ClusterTenant
metadata: {name: acme}
spec: {displayName: Acme}
"""


def provision_render(resource_text, *args):
    binary = os.environ.get("OPENCRANE_BIN")
    if not binary:
        raise unittest.SkipTest("OPENCRANE_BIN is not set (cargo xtask test sets it)")
    result = subprocess.run(
        [binary, "provision-render", "-f", "-", "--base-domain", "example.com", *args],
        input=resource_text,
        capture_output=True,
        text=True,
    )
    return result


def objects_for(resource_text, *args):
    result = provision_render(resource_text, *args)
    if result.returncode != 0:
        raise AssertionError(f"provision-render failed: {result.stderr}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


class Provisioning(unittest.TestCase):
    def test_every_object_of_every_step_validates(self):
        full = objects_for(EXAMPLE.read_text(), "--ingress-ip", "203.0.113.7")
        kinds = [o["kind"] for o in full]
        self.assertEqual(
            kinds,
            ["Namespace", "RoleBinding", "ResourceQuota", "LimitRange", "NetworkPolicy", "Cluster", "DNSEndpoint", "Certificate"],
        )
        minimal = objects_for(MINIMAL)
        self.assertEqual([o["kind"] for o in minimal], ["Namespace", "RoleBinding", "NetworkPolicy", "Cluster"])
        for obj in full + minimal:
            with self.subTest(kind=obj["kind"], name=obj["metadata"]["name"]):
                validate_object(self, obj)
                if obj["kind"] != "Namespace":
                    self.assertEqual(obj["metadata"]["namespace"], SILO_NS)
                self.assertEqual(obj["metadata"]["labels"]["opencrane.io/cluster-tenant"], "acme")
        namespace = full[0]
        self.assertEqual(namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "restricted")

    def test_the_installer_binding_names_the_fleet_charts_role_and_account(self):
        from test_charts import FLEET, FLEET_NS, FLEET_PROFILES

        binding = next(o for o in objects_for(MINIMAL) if o["kind"] == "RoleBinding")
        fleet, _ = render(FLEET, FLEET_PROFILES[next(iter(FLEET_PROFILES))], FLEET_NS)
        roles = {o["metadata"]["name"] for o in fleet if o["kind"] == "ClusterRole"}
        accounts = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in fleet if o["kind"] == "ServiceAccount"}
        self.assertIn(binding["roleRef"]["name"], roles)
        manager = next(o for o in fleet if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-manager"))
        env = env_of(manager["spec"]["template"]["spec"]["containers"][0])
        self.assertIn(env["OPENCRANE_SILO_INSTALLER_ROLE"]["value"], roles, "the binary is told the chart's role")
        self.assertEqual(env["OPENCRANE_SERVICE_ACCOUNT"]["valueFrom"]["fieldRef"]["fieldPath"], "spec.serviceAccountName")
        subject = binding["subjects"][0]
        self.assertIn((subject["namespace"], subject["name"]), accounts)
        self.assertFalse(
            [o for o in fleet if o["kind"] == "ClusterRoleBinding" and o["roleRef"]["name"] == binding["roleRef"]["name"]],
            "the installer role is never bound cluster-wide",
        )

    def test_a_bad_resource_is_refused_with_the_field_named(self):
        bad = MINIMAL.replace("spec: {displayName: Acme}", "spec: {displayName: Acme, resources: {quota: {cpu: lots}}}")
        result = provision_render(bad)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("spec.resources.quota.cpu", result.stderr)
        self.assertNotIn("panicked", result.stderr)

    def release(self, resource_text):
        # The fleet's issuer, which a silo with an organisation's login app signs in at.
        values_text = provision_render(resource_text, "--release-values", "--oidc-issuer-url", ISSUER).stdout
        overlay = yaml.safe_load(values_text)
        values = merge(SILO_PROFILES["fleet-managed"], overlay)
        objects, _ = render(SILO, values, SILO_NS)
        return objects

    def test_the_release_leaves_the_pipelines_objects_to_the_pipeline(self):
        pipeline = objects_for(EXAMPLE.read_text(), "--ingress-ip", "203.0.113.7")
        release = self.release(EXAMPLE.read_text())
        for obj in release:
            validate_object(self, obj)
        owned = {(o["kind"], o["metadata"]["name"]) for o in pipeline}
        rendered = {(o["kind"], o["metadata"]["name"]) for o in release}
        self.assertFalse(owned & rendered, "objects both the pipeline and the release would own")
        # The silo's database and DNS are the pipeline's; the release brings only LiteLLM's own
        # database (its keys and spend), which the pipeline never creates.
        self.assertFalse([o for o in release if o["kind"] == "DNSEndpoint"])
        clusters = [o["metadata"]["name"] for o in release if o["kind"] == "Cluster"]
        self.assertEqual(clusters, ["opencrane-silo-litellm-db"])
        litellm = next(o for o in release if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-litellm"))
        litellm_env = env_of(litellm["spec"]["template"]["spec"]["containers"][0])
        self.assertEqual(litellm_env["STORE_MODEL_IN_DB"]["value"], "True")
        self.assertIn("DATABASE_URL", litellm_env)
        certificates = [o for o in release if o["kind"] == "Certificate"]
        self.assertEqual([c["spec"]["dnsNames"] for c in certificates], [["acme.example.com"]], "only the platform host")
        manager = next(o for o in release if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-manager"))
        env = env_of(manager["spec"]["template"]["spec"]["containers"][0])
        self.assertEqual(
            env["DATABASE_URL"]["valueFrom"]["secretKeyRef"], {"name": "opencrane-silo-db-app", "key": "uri"}
        )
        # The vanity host is still served by the release's Ingress.
        ingress = next(o for o in release if o["kind"] == "Ingress")
        self.assertIn("portal.acme.com", [r["host"] for r in ingress["spec"]["rules"]])
        # Both sides agree on the vanity certificate's Secret, which the Ingress serves.
        vanity = next(o for o in pipeline if o["kind"] == "Certificate")
        tls_secrets = [t["secretName"] for t in ingress["spec"]["tls"]]
        self.assertIn(vanity["spec"]["secretName"], tls_secrets)

    def test_the_release_signs_in_with_the_organisations_own_login_app(self):
        # What the identity step stores (and the fleet mirrors onto the resource).
        with_org = MINIMAL.replace(
            "spec: {displayName: Acme}",
            'spec: {displayName: Acme, zitadel: {clientId: "312345678901234567@opencrane", orgId: "312345678901234560"}}',
        )
        release = self.release(with_org)
        manager = next(o for o in release if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-manager"))
        env = env_of(manager["spec"]["template"]["spec"]["containers"][0])
        self.assertEqual(env["OPENCRANE_CLUSTER_TENANT_CLIENT_ID"]["value"], "312345678901234567@opencrane")
        self.assertEqual(env["OPENCRANE_CLUSTER_TENANT_ORG_ID"]["value"], "312345678901234560", "a string, never a float")
        # The manager refuses to start with an organisation's client and no issuer: it gets one.
        self.assertEqual(env["OIDC_ISSUER_URL"]["value"], ISSUER)
        refused = provision_render(with_org, "--release-values")
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("OIDC_ISSUER_URL is not set on the fleet-manager", refused.stderr)
        without = self.release(MINIMAL)
        manager = next(o for o in without if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-manager"))
        env = env_of(manager["spec"]["template"]["spec"]["containers"][0])
        self.assertNotIn("OPENCRANE_CLUSTER_TENANT_CLIENT_ID", env, "no organisation yet: the fallback client")

    def test_a_suspended_silo_has_no_manager_replicas(self):
        suspended = MINIMAL.replace("spec: {displayName: Acme}", "spec: {displayName: Acme, suspended: true}")
        release = self.release(suspended)
        manager = next(o for o in release if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-manager"))
        self.assertEqual(manager["spec"]["replicas"], 0)
        running = self.release(MINIMAL)
        manager = next(o for o in running if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-manager"))
        self.assertGreaterEqual(manager["spec"]["replicas"], 1)


if __name__ == "__main__":
    unittest.main()


def platform_dns_objects(body, *args):
    binary = os.environ.get("OPENCRANE_BIN")
    if not binary:
        raise unittest.SkipTest("OPENCRANE_BIN is not set (cargo xtask test sets it)")
    return subprocess.run(
        [binary, "provision-render", "--platform-dns", "-f", "-", "--base-domain", "example.com", *args],
        input=yaml.safe_dump(body),
        capture_output=True,
        text=True,
    )


class PlatformDns(unittest.TestCase):
    """The platform issuer the fleet writes (`PUT /api/v1/platform/dns`): every provider's objects
    validate, and the fleet chart grants exactly what writing them needs."""

    BODIES = {
        "cloudflare": {"apiToken": "t"},
        "digitalocean": {"apiToken": "t"},
        "route53": {"apiToken": "t", "solverConfig": {"region": "eu-west-1", "accessKeyID": "AKIA"}},
        "clouddns": {"apiToken": "{}", "solverConfig": {"project": "dns-project"}},
        "rfc2136": {"apiToken": "t", "solverConfig": {"nameserver": "10.0.0.53:53", "tsigKeyName": "opencrane"}},
        "acmedns": {"solverConfig": {"host": "https://acme-dns.example.com", "accountSecretRef": {"name": "acme-dns", "key": "acmedns.json"}}},
        "webhook": {"solverConfig": {"groupName": "acme.example.com", "solverName": "hetzner"}},
    }

    def test_every_provider_renders_a_valid_issuer_and_secret(self):
        for provider, extra in self.BODIES.items():
            with self.subTest(provider=provider):
                body = {"provider": provider, "zone": "example.com", "email": "ops@example.com", **extra}
                result = platform_dns_objects(body, "--ingress-class", "nginx")
                self.assertEqual(result.returncode, 0, result.stderr)
                objects = [d for d in yaml.safe_load_all(result.stdout) if d]
                for obj in objects:
                    validate_object(self, obj)
                issuer = objects[-1]
                self.assertEqual(issuer["kind"], "ClusterIssuer")
                self.assertEqual(issuer["spec"]["acme"]["solvers"][0]["selector"]["dnsZones"], ["example.com"])
                for secret in (o for o in objects if o["kind"] == "Secret"):
                    self.assertEqual(secret["metadata"]["namespace"], "cert-manager")
        # Bad input names its field; a provider without its token is refused.
        result = platform_dns_objects({"provider": "cloudflare", "email": "ops@example.com"})
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("zone", result.stderr)
        result = platform_dns_objects({"provider": "cloudflare", "zone": "example.com", "email": "ops@example.com"})
        self.assertIn("apiToken", result.stderr)

    def test_the_fleet_chart_grants_exactly_the_issuer_and_its_secrets(self):
        from test_charts import FLEET, FLEET_NS, FLEET_PROFILES

        values = merge(FLEET_PROFILES["everything-enabled"], {"certManager": {"createIssuer": "fleet", "namespace": "cert-manager"}})
        objects, _ = render(FLEET, values, FLEET_NS)
        self.assertFalse([o for o in objects if o["kind"] == "ClusterIssuer"], "the fleet writes the issuer, not Helm")
        for obj in objects:
            validate_object(self, obj)
        deployment = next(o for o in objects if o["kind"] == "Deployment")
        env = env_of(deployment["spec"]["template"]["spec"]["containers"][0])
        self.assertEqual(env["OPENCRANE_MANAGE_ISSUER"]["value"], "true")
        self.assertEqual(env["OPENCRANE_CERT_ISSUER_NAME"]["value"], "opencrane-issuer")
        self.assertEqual(env["CERT_MANAGER_NAMESPACE"]["value"], "cert-manager")
        manager = next(o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "opencrane-fleet-manager")
        issuer_rules = [r for r in manager["rules"] if "clusterissuers" in r["resources"]]
        self.assertEqual(
            issuer_rules,
            [
                {"apiGroups": ["cert-manager.io"], "resources": ["clusterissuers"], "resourceNames": ["opencrane-issuer"], "verbs": ["get", "patch"]},
                {"apiGroups": ["cert-manager.io"], "resources": ["clusterissuers"], "verbs": ["create"]},
            ],
        )
        role = next(o for o in objects if o["kind"] == "Role" and o["metadata"]["name"].endswith("-dns01-solver"))
        self.assertEqual(role["metadata"]["namespace"], "cert-manager")
        named = next(r for r in role["rules"] if "resourceNames" in r)
        self.assertEqual(named["verbs"], ["get", "patch"])
        self.assertEqual(role["rules"][1], {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]})
        # Every Secret a provider writes is one the Role names (and no other).
        written = set()
        for provider, extra in self.BODIES.items():
            body = {"provider": provider, "zone": "example.com", "email": "ops@example.com", **extra}
            rendered = yaml.safe_load_all(platform_dns_objects(body).stdout)
            written |= {o["metadata"]["name"] for o in rendered if o and o["kind"] == "Secret"}
        self.assertEqual(set(named["resourceNames"]), written)
        binding = next(o for o in objects if o["kind"] == "RoleBinding" and o["metadata"]["name"].endswith("-dns01-solver"))
        self.assertEqual(binding["roleRef"]["name"], role["metadata"]["name"])
        # Otherwise the issuer is the chart's: the fleet may only read it, and writes no Secret.
        objects, _ = render(FLEET, FLEET_PROFILES["everything-enabled"], FLEET_NS)
        manager = next(o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "opencrane-fleet-manager")
        self.assertEqual([r["verbs"] for r in manager["rules"] if "clusterissuers" in r["resources"]], [["get"]])
        self.assertFalse([o for o in objects if o["metadata"]["name"].endswith("-dns01-solver")])
        env = env_of(next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0])
        self.assertEqual(env["OPENCRANE_MANAGE_ISSUER"]["value"], "false")


def plural(kind):
    """The resource name of a kind, as the API server spells it (enough for the kinds here)."""
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    if lower.endswith("s"):
        return lower + "es"
    return lower + "s"


def grants(role, obj, verbs=("get", "create", "patch", "delete")):
    group = obj["apiVersion"].rpartition("/")[0]
    resource = plural(obj["kind"])
    for verb in verbs:
        if not any(
            group in rule.get("apiGroups", [])
            and resource in rule.get("resources", [])
            and verb in rule.get("verbs", [])
            and "resourceNames" not in rule
            for rule in role["rules"]
        ):
            return f"{verb} {resource}.{group or 'core'}"
    return None


class Permissions(unittest.TestCase):
    def test_the_fleet_may_write_what_the_pipeline_and_the_release_write_on_a_cilium_cluster(self):
        """Every object the pipeline applies (with Cilium discovered) is within the fleet manager's
        ClusterRole, and every namespaced object of the release (identity policies included)
        within the silo-installer role the pipeline binds in the silo's namespace."""
        from test_charts import FLEET, FLEET_NS, FLEET_PROFILES

        fleet, _ = render(FLEET, FLEET_PROFILES["everything-enabled"], FLEET_NS)
        roles = {o["metadata"]["name"]: o for o in fleet if o["kind"] == "ClusterRole"}
        manager, installer = roles["opencrane-fleet-manager"], roles["opencrane-fleet-silo-installer"]
        crd_rule = next(r for r in manager["rules"] if "customresourcedefinitions" in r["resources"])
        self.assertIn("ciliumnetworkpolicies.cilium.io", crd_rule["resourceNames"], "the provisioner looks for Cilium")
        pipeline = objects_for(EXAMPLE.read_text(), "--ingress-ip", "203.0.113.7", "--cilium")
        self.assertIn("CiliumNetworkPolicy", [o["kind"] for o in pipeline])
        for obj in pipeline:
            validate_object(self, obj)
            if obj["kind"] in ("Namespace", "RoleBinding"):
                continue  # the namespace and the installer binding have rules of their own
            self.assertIsNone(grants(manager, obj), describe_obj(obj))
        values_text = provision_render(EXAMPLE.read_text(), "--release-values", "--oidc-issuer-url", ISSUER).stdout
        values = merge(merge(SILO_PROFILES["fleet-managed"], yaml.safe_load(values_text)), {"cilium": {"enabled": True}})
        release, _ = render(SILO, values, SILO_NS)
        self.assertIn("CiliumNetworkPolicy", [o["kind"] for o in release])
        for obj in release:
            # Cluster-scoped objects (the read-only role on its own ClusterTenant) are the
            # manager's to write; the namespace's objects the installer role's.
            scoped = manager if obj["kind"] in ("ClusterRole", "ClusterRoleBinding") else installer
            self.assertIsNone(grants(scoped, obj), describe_obj(obj))
        # Without the rule the test fails.
        trimmed = {**installer, "rules": [r for r in installer["rules"] if "cilium.io" not in r["apiGroups"]]}
        cilium = next(o for o in release if o["kind"] == "CiliumNetworkPolicy")
        self.assertEqual(grants(trimmed, cilium), "get ciliumnetworkpolicies.cilium.io")


def describe_obj(obj):
    return f"{obj['kind']} {obj['metadata']['name']}"
