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
        values_text = provision_render(resource_text, "--release-values").stdout
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
