"""Offline tests of the opencrane-fleet and opencrane-silo charts.

Every documented profile is linted strictly and rendered with the Helm v4 library
(helm-python-sdk); every rendered object is validated: built-in kinds with kubernetes-validate
(--strict, Kubernetes 1.32), custom resources against their CRD schemas (ours, generated from the
Rust types, and the minimal third-party ones in schemas/). Then the promises the charts make are
checked statically: recommended labels, restricted Pod Security, the silo's isolation (namespace,
RBAC, NetworkPolicy floor), values that reach the binary only as variables it reads, and
values.schema.json rejecting bad input with a message that names the field.

Run by `cargo xtask test` (which sets OPENCRANE_BIN to the freshly built binary); alone:
`OPENCRANE_BIN=target/debug/opencrane python -m unittest discover -s charts/tests -v`.
"""

import copy
import ipaddress
import json
import os
import re
import subprocess
import unittest
from pathlib import Path

import helm_python as helm
import jsonschema
import kubernetes_validate
import yaml

CHARTS = Path(__file__).resolve().parent.parent
ROOT = CHARTS.parent
FLEET = CHARTS / "opencrane-fleet"
SILO = CHARTS / "opencrane-silo"
KUBE = "1.32.0"
FLEET_NS = "opencrane-system"
SILO_NS = "opencrane-acme"

# Kinds that live outside namespaces.
CLUSTER_SCOPED = {
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "ClusterIssuer",
    "ClusterTenant",
}
# The one exception to "everything in the release namespace": reading the API server's
# EndpointSlices (for the silos' NetworkPolicy) needs a Role where they live.
OUTSIDE_THE_RELEASE_NAMESPACE = {
    ("Role", "opencrane-fleet-api-server-endpoints"),
    ("RoleBinding", "opencrane-fleet-api-server-endpoints"),
}
RECOMMENDED_LABELS = [
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/part-of",
    "app.kubernetes.io/managed-by",
]
PRIVATE = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")]


def load_yaml_file(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def merge(base, override):
    """Deep merge of Helm values (override wins), like `-f a.yaml -f b.yaml`."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def crd_schemas():
    """(group, version, kind) -> openAPIV3Schema, from our CRDs and the third-party minimal ones."""
    files = [FLEET / "crds" / "opencrane.io.yaml", *sorted((CHARTS / "tests" / "schemas").glob("*.yaml"))]
    schemas = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            for doc in yaml.safe_load_all(f):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                spec = doc["spec"]
                for version in spec["versions"]:
                    key = (spec["group"], version["name"], spec["names"]["kind"])
                    schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


SCHEMAS = crd_schemas()

FLEET_PROFILES = {
    # What `opencrane deploy fleet --base-domain example.com --platform-operator-seed-email …` sets.
    "default": {
        "ingress": {"domain": "example.com"},
        "fleetManager": {"oidc": {"platformOperatorSeedEmail": "ops@example.com"}},
    },
    "everything-disabled": {
        "ingress": {"domain": "example.com", "enabled": False},
        "certManager": {"enabled": False},
        "externalDns": {"enabled": False},
        "billing": {"enabled": False},
        "fleetManager": {
            "clusterTenantApi": {"enabled": False},
            "migrationJob": {"enabled": False},
            "database": {"cnpg": {"enabled": False}, "existingSecret": "fleet-db"},
            "apiTokenExistingSecret": "fleet-token",
        },
    },
    "everything-enabled": {
        "ingress": {
            "domain": "example.com",
            "externalIp": "203.0.113.10",
            "annotations": {"nginx.ingress.kubernetes.io/proxy-body-size": "8m"},
        },
        "certManager": {
            "createIssuer": "acme",
            "acme": {
                "email": "ops@example.com",
                "dns01": {"project": "dns-project", "serviceAccountSecretName": "clouddns-key"},
            },
        },
        "global": {"imageRegistry": "registry.example.com"},
        "cilium": {"enabled": True},
        "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus"}}},
        "fleetManager": {
            "replicas": 2,
            "image": {"digest": "sha256:" + "ab" * 32},
            "podLabels": {"team": "platform"},
            "serviceAccount": {"annotations": {"iam.gke.io/gcp-service-account": "fleet@proj.iam.gserviceaccount.com"}},
            "podSecurityContext": {"fsGroupChangePolicy": "OnRootMismatch"},
            "securityContext": {"runAsUser": 65532},
            "imagePullSecrets": [{"name": "ghcr"}],
            "trustedProxies": ["10.0.0.0/8"],
            "nodeSelector": {"pool": "system"},
            "tolerations": [{"key": "system", "operator": "Exists", "effect": "NoSchedule"}],
            "database": {"cnpg": {"instances": 3, "storageClass": "fast", "imageName": "ghcr.io/cloudnative-pg/postgresql:16.4"}},
            "oidc": {
                "issuerUrl": "https://id.example.com",
                "clientId": "312345678901234567",
                "existingSecret": "fleet-oidc",
                "platformOperatorGroups": ["platform-ops"],
                "platformOperatorSeedEmail": "ops@example.com",
                "allowedEmailDomains": ["example.com"],
            },
            "zitadel": {"mgmtApiUrl": "https://id.example.com", "existingSecret": "zitadel-sa", "reconcileIntervalMs": 600000},
            "migration": {"sourceSecret": "shared-source"},
        },
    },
    "external-database": {
        "ingress": {"domain": "example.com"},
        "fleetManager": {"database": {"cnpg": {"enabled": False}, "url": "postgres://fleet:pw@db.example.com:5432/fleet"}},
    },
}

SILO_INSTANCE = {"clusterTenant": {"name": "acme"}, "ingress": {"domain": "example.com"}}
SILO_PROFILES = {
    "fleet-managed": merge(load_yaml_file(SILO / "profiles" / "fleet-managed.yaml"), SILO_INSTANCE),
    "standalone": merge(load_yaml_file(SILO / "profiles" / "standalone.yaml"), SILO_INSTANCE),
    "everything-disabled": merge(
        SILO_INSTANCE,
        {
            "crds": {"install": False},
            "ingress": {"enabled": False},
            "certManager": {"enabled": False},
            "clustertenantManager": {
                "migrationJob": {"enabled": False},
                "database": {"cnpg": {"enabled": False}, "existingSecret": "silo-db"},
                "fleetApiTokenExistingSecret": "silo-token",
            },
            "networkPolicy": {"allowDNS": False, "egressAllowCIDRs": []},
            "mcpGateway": {"enabled": False},
            "skillRegistry": {"enabled": False},
            "litellm": {"enabled": False},
            "cognee": {"enabled": False},
        },
    ),
    "everything-enabled": merge(
        merge(load_yaml_file(SILO / "profiles" / "fleet-managed.yaml"), SILO_INSTANCE),
        {
            "clusterTenant": {"vanityDomain": "portal.acme.com", "zitadel": {"clientId": "312345678901234567", "orgId": "298765432109876543"}},
            "ingress": {"externalIp": "203.0.113.10"},
            "global": {"imageRegistry": "registry.example.com"},
            "cilium": {"enabled": True, "egressFQDNs": ["api.openai.com", "*.anthropic.com"]},
            "metrics": {"serviceMonitor": {"enabled": True}},
            "clustertenantManager": {
                "replicas": 2,
                "image": {"digest": "sha256:" + "cd" * 32},
                "podLabels": {"team": "acme"},
                "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/acme"}},
                "trustedProxies": ["10.0.0.0/8"],
                "oidc": {"issuerUrl": "https://id.example.com", "clientId": "fallback-client", "existingSecret": "silo-oidc", "orgAdminGroups": ["acme-admins"]},
            },
            "networkPolicy": {"kubeApiServer": {"cidrs": ["10.96.0.1/32"], "ports": [443]}},
            "skillRegistry": {"persistence": {"enabled": True}},
            "litellm": {"persistence": {"enabled": True}, "env": {"LITELLM_LOG": "INFO"}},
        },
    ),
}


def render(chart, values, namespace, name="opencrane"):
    """Renders a chart; returns (objects, notes)."""
    out = helm.Chart.load(str(chart)).render(values, name=name, namespace=namespace, is_install=True)
    objects, notes = [], ""
    for path, text in out.items():
        if path.endswith("NOTES.txt"):
            notes = text
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                doc["__source"] = path
                objects.append(doc)
    return objects, notes


def strip(obj):
    return {k: v for k, v in obj.items() if k != "__source"}


def describe(obj):
    return f"{obj['kind']}/{obj['metadata']['name']} ({obj.get('__source')})"


def validate_object(test, obj):
    """Built-ins with kubernetes-validate --strict; custom resources against their CRD schema."""
    api = obj["apiVersion"]
    group, _, version = api.rpartition("/")
    key = (group, version, obj["kind"])
    if key in SCHEMAS:
        try:
            jsonschema.validate(strip(obj), SCHEMAS[key])
        except jsonschema.ValidationError as e:
            test.fail(f"{describe(obj)} does not match its CRD schema: {e.message} at {list(e.absolute_path)}")
        return
    try:
        kubernetes_validate.validate(strip(obj), KUBE, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        test.fail(f"{describe(obj)}: no schema for {api} {obj['kind']} (add a minimal CRD under charts/tests/schemas)")
    except kubernetes_validate.ValidationError as e:
        test.fail(f"{describe(obj)} is invalid: {e.message}")


def pod_specs(objects):
    for obj in objects:
        if obj["kind"] in ("Deployment", "StatefulSet", "Job"):
            yield obj, obj["spec"]["template"]["spec"]


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def binary_env_vars(role):
    """The environment variables the opencrane binary reads for a subcommand (from its --help)."""
    binary = os.environ.get("OPENCRANE_BIN")
    if not binary:
        raise unittest.SkipTest("OPENCRANE_BIN is not set (cargo xtask test sets it)")
    text = subprocess.run([binary, role, "--help"], check=True, capture_output=True, text=True).stdout
    return set(re.findall(r"\[env: ([A-Z0-9_]+)[=\]]", text))


class Charts(unittest.TestCase):
    maxDiff = None

    def check_common(self, objects, namespace):
        """Validity, labels, namespaces and restricted Pod Security for one rendered profile."""
        self.assertTrue(objects, "nothing rendered")
        for obj in objects:
            validate_object(self, obj)
            meta = obj["metadata"]
            if obj["kind"] != "CustomResourceDefinition":
                labels = meta.get("labels", {})
                for label in RECOMMENDED_LABELS:
                    self.assertIn(label, labels, f"{describe(obj)} lacks {label}")
            if obj["kind"] in CLUSTER_SCOPED:
                self.assertNotIn("namespace", meta, f"{describe(obj)} is cluster-scoped")
            elif (obj["kind"], meta["name"]) in OUTSIDE_THE_RELEASE_NAMESPACE:
                self.assertEqual(meta.get("namespace"), "default", describe(obj))
            else:
                self.assertEqual(meta.get("namespace"), namespace, f"{describe(obj)} is outside {namespace}")
        for obj, spec in pod_specs(objects):
            ctx = spec.get("securityContext", {})
            self.assertTrue(ctx.get("runAsNonRoot"), f"{describe(obj)}: runAsNonRoot")
            self.assertEqual(ctx.get("seccompProfile", {}).get("type"), "RuntimeDefault", f"{describe(obj)}: seccomp")
            for key in ("hostNetwork", "hostPID", "hostIPC"):
                self.assertFalse(spec.get(key), f"{describe(obj)}: {key}")
            for volume in spec.get("volumes", []):
                self.assertNotIn("hostPath", volume, f"{describe(obj)}: hostPath volume")
            for container in spec.get("containers", []) + spec.get("initContainers", []):
                sc = container.get("securityContext", {})
                where = f"{describe(obj)} container {container['name']}"
                self.assertIs(sc.get("allowPrivilegeEscalation"), False, f"{where}: allowPrivilegeEscalation")
                self.assertIs(sc.get("readOnlyRootFilesystem"), True, f"{where}: readOnlyRootFilesystem")
                self.assertIn("ALL", sc.get("capabilities", {}).get("drop", []), f"{where}: drop ALL")
                self.assertNotIn("privileged", sc, f"{where}: privileged")
                self.assertIn("limits", container.get("resources", {}), f"{where}: resource limits")
                for var in container.get("env", []):
                    self.assertTrue("value" not in var or isinstance(var["value"], str), f"{where}: {var['name']} is not a string")

    def check_lint(self, chart, values, namespace):
        report = helm.lint(str(chart), values, strict=True, kube_version="v" + KUBE, namespace=namespace)
        problems = [m for m in report["messages"] if m["severity"] >= 2]
        self.assertEqual(report["errors"], [], report)
        self.assertEqual(problems, [], report)

    # ---- fleet ----

    def test_fleet_profiles_lint_render_and_validate(self):
        for name, values in FLEET_PROFILES.items():
            with self.subTest(profile=name):
                self.check_lint(FLEET, values, FLEET_NS)
                objects, notes = render(FLEET, values, FLEET_NS)
                self.check_common(objects, FLEET_NS)
                self.assertIn("OpenCrane fleet release", notes)

    def test_fleet_crds_validate_and_are_kept(self):
        with open(FLEET / "crds" / "opencrane.io.yaml", encoding="utf-8") as f:
            crds = [d for d in yaml.safe_load_all(f) if d]
        self.assertEqual({c["spec"]["names"]["kind"] for c in crds}, {"ClusterTenant", "Tenant", "AccessPolicy"})
        for crd in crds:
            kubernetes_validate.validate(crd, KUBE, strict=True)
        # crds/ is installed by Helm once and never deleted, and never templated.
        objects, _ = render(FLEET, FLEET_PROFILES["default"], FLEET_NS)
        self.assertFalse([o for o in objects if o["kind"] == "CustomResourceDefinition"])

    def test_fleet_environment_follows_the_values(self):
        objects, _ = render(FLEET, FLEET_PROFILES["everything-enabled"], FLEET_NS)
        deployment = next(o for o in objects if o["kind"] == "Deployment")
        env = env_of(deployment["spec"]["template"]["spec"]["containers"][0])
        self.assertEqual(env["PLATFORM_BASE_DOMAIN"]["value"], "example.com")
        self.assertEqual(env["OPENCRANE_CLUSTER_TENANT_MANAGER_ENABLED"]["value"], "true")
        self.assertEqual(env["OPENCRANE_BILLING_ENABLED"]["value"], "true")
        self.assertEqual(env["OIDC_CLIENT_ID"]["value"], "312345678901234567", "a numeric client id stays a string")
        self.assertEqual(env["OIDC_REDIRECT_URI"]["value"], "https://platform.example.com/api/v1/auth/callback")
        self.assertEqual(env["OIDC_CLIENT_SECRET"]["valueFrom"]["secretKeyRef"], {"name": "fleet-oidc", "key": "client-secret"})
        self.assertEqual(env["ZITADEL_MGMT_API_URL"]["value"], "https://id.example.com")
        self.assertEqual(env["ZITADEL_MGMT_SECRET_NAME"]["value"], "zitadel-sa")
        self.assertEqual(env["ZITADEL_RECONCILE_INTERVAL_MS"]["value"], "600000")
        self.assertEqual(env["DATABASE_URL"]["valueFrom"]["secretKeyRef"], {"name": "opencrane-fleet-db-app", "key": "uri"})
        self.assertEqual(env["OPENCRANE_DNS_PROBE_INTERVAL_SECONDS"]["value"], "300")
        self.assertEqual(env["OPENCRANE_DNS_PROBE_CONCURRENCY"]["value"], "8")
        self.assertNotIn("OPENCRANE_DNS_PROBE_NAMESERVERS", env, "default: the base domain's NS records")
        # The shared database's URL carries a password: only ever from a Secret.
        self.assertEqual(env["OPENCRANE_SHARED_SOURCE_URL"]["valueFrom"]["secretKeyRef"], {"name": "shared-source", "key": "url"})
        probed = dict(FLEET_PROFILES["everything-enabled"])
        probed["fleetManager"] = {**probed.get("fleetManager", {}), "dnsProbe": {"nameservers": ["10.0.0.53", "10.0.0.54:5353"]}}
        objects, _ = render(FLEET, probed, FLEET_NS)
        deployment = next(o for o in objects if o["kind"] == "Deployment")
        env = env_of(deployment["spec"]["template"]["spec"]["containers"][0])
        self.assertEqual(env["OPENCRANE_DNS_PROBE_NAMESERVERS"]["value"], "10.0.0.53,10.0.0.54:5353")
        # Off by default: billing and the CT API follow their flags.
        objects, _ = render(FLEET, FLEET_PROFILES["everything-disabled"], FLEET_NS)
        deployment = next(o for o in objects if o["kind"] == "Deployment")
        env = env_of(deployment["spec"]["template"]["spec"]["containers"][0])
        self.assertEqual(env["OPENCRANE_BILLING_ENABLED"]["value"], "false")
        self.assertEqual(env["OPENCRANE_CLUSTER_TENANT_MANAGER_ENABLED"]["value"], "false")
        self.assertNotIn("OIDC_ISSUER_URL", env)
        self.assertNotIn("OPENCRANE_SHARED_SOURCE_URL", env, "no migration source unless one is named")
        self.assertEqual(env["DATABASE_URL"]["valueFrom"]["secretKeyRef"], {"name": "fleet-db", "key": "DATABASE_URL"})

    def test_fleet_renders_only_variables_the_binary_reads(self):
        known = binary_env_vars("fleet-manager")
        for name, values in FLEET_PROFILES.items():
            objects, _ = render(FLEET, values, FLEET_NS)
            for obj, spec in pod_specs(objects):
                for container in spec["containers"]:
                    role = container["args"][0]
                    readable = known if role == "fleet-manager" else binary_env_vars(role)
                    dead = set(env_of(container)) - readable - {"RUST_LOG"}
                    self.assertEqual(dead, set(), f"{name}: {describe(obj)} sets variables {role} never reads")

    def test_fleet_rbac_is_limited(self):
        objects, _ = render(FLEET, FLEET_PROFILES["everything-enabled"], FLEET_NS)
        manager = next(o for o in objects if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "opencrane-fleet-manager")
        for rule in manager["rules"]:
            for resource in rule["resources"]:
                self.assertNotIn(resource, {"secrets", "pods", "deployments", "*"}, f"cluster-wide {resource}")
            self.assertNotIn("*", rule["verbs"])
            if "bind" in rule["verbs"]:
                self.assertEqual(rule["resourceNames"], ["opencrane-fleet-silo-installer"])
        # The installer role is never bound cluster-wide.
        for binding in (o for o in objects if o["kind"] == "ClusterRoleBinding"):
            self.assertNotEqual(binding["roleRef"]["name"], "opencrane-fleet-silo-installer")
        # The Zitadel key: one Secret, by name.
        zitadel = next(o for o in objects if o["kind"] == "Role" and o["metadata"]["name"].endswith("-zitadel-key"))
        # The fleet never reads its own API token back to hand it to silos (each silo has its own
        # credential); installing silos reads only the API server's endpoints.
        self.assertFalse([o for o in objects if o["kind"] == "Role" and o["metadata"]["name"].endswith("-api-token-reader")])
        endpoints = next(o for o in objects if o["kind"] == "Role" and o["metadata"]["name"].endswith("-api-server-endpoints"))
        self.assertEqual(endpoints["metadata"]["namespace"], "default")
        self.assertEqual(endpoints["rules"], [{"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list"]}])
        self.assertEqual(zitadel["rules"], [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["zitadel-sa"], "verbs": ["get", "update", "patch"]}])

    def test_the_internal_api_has_its_own_port_and_service_and_no_ingress_routes_it(self):
        for profile, values in FLEET_PROFILES.items():
            with self.subTest(profile=profile):
                objects, _ = render(FLEET, values, FLEET_NS)
                deployment = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == "opencrane-fleet-manager")
                container = deployment["spec"]["template"]["spec"]["containers"][0]
                self.assertEqual({p["name"]: p["containerPort"] for p in container["ports"]}, {"http": 8080, "internal": 8081, "metrics": 9090})
                self.assertEqual(env_of(container)["OPENCRANE_METRICS_PORT"]["value"], "9090")
                self.assertEqual(env_of(container)["OPENCRANE_INTERNAL_PORT"]["value"], "8081")
                services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
                internal = services["opencrane-fleet-manager-internal"]
                self.assertEqual(internal["spec"]["ports"], [{"name": "internal", "port": 8081, "targetPort": "internal", "protocol": "TCP"}])
                self.assertNotIn("internal", [p["name"] for p in services["opencrane-fleet-manager"]["spec"]["ports"]])
                for ingress in (o for o in objects if o["kind"] == "Ingress"):
                    for rule in ingress["spec"].get("rules", []):
                        for path in rule["http"]["paths"]:
                            backend = path["backend"]["service"]
                            self.assertNotEqual(backend["name"], "opencrane-fleet-manager-internal")
                            self.assertNotEqual(backend["port"].get("name"), "internal")
                            self.assertNotEqual(backend["port"].get("number"), 8081)

    def test_fleet_migration_hook_runs_before_upgrades(self):
        objects, _ = render(FLEET, FLEET_PROFILES["default"], FLEET_NS)
        job = next(o for o in objects if o["kind"] == "Job")
        self.assertEqual(job["metadata"]["annotations"]["helm.sh/hook"], "pre-upgrade")
        self.assertEqual(job["spec"]["template"]["spec"]["containers"][0]["args"], ["migrate", "--schema", "fleet"])
        objects, _ = render(FLEET, FLEET_PROFILES["external-database"], FLEET_NS)
        job = next(o for o in objects if o["kind"] == "Job")
        self.assertEqual(job["metadata"]["annotations"]["helm.sh/hook"], "pre-install,pre-upgrade")

    # ---- silo ----

    def test_silo_profiles_lint_render_and_validate(self):
        for name, values in SILO_PROFILES.items():
            with self.subTest(profile=name):
                self.check_lint(SILO, values, SILO_NS)
                objects, notes = render(SILO, values, SILO_NS)
                self.check_common(objects, SILO_NS)
                self.assertIn("ClusterTenant acme", notes)

    def test_fleet_managed_profile_wires_the_fleet(self):
        objects, _ = render(SILO, SILO_PROFILES["fleet-managed"], SILO_NS)
        self.assertFalse([o for o in objects if o["kind"] == "CustomResourceDefinition"], "the fleet release owns the CRDs")
        manager = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-manager"))
        env = env_of(manager["spec"]["template"]["spec"]["containers"][0])
        self.assertEqual(env["DEPLOYMENT_MODE"]["value"], "fleet-managed")
        self.assertEqual(env["FLEET_INTERNAL_URL"]["value"], "http://opencrane-fleet-manager-internal.opencrane-system.svc.cluster.local:8081")
        # Its own fleet credential, as a read-only file; no inbound operator token at all.
        self.assertEqual(env["OPENCRANE_FLEET_TOKEN_FILE"]["value"], "/var/run/opencrane/fleet/token")
        self.assertNotIn("OPENCRANE_API_TOKEN", env, "a fleet-managed silo accepts no token the fleet holds")
        pod = manager["spec"]["template"]["spec"]
        volume = next(v for v in pod["volumes"] if v["name"] == "fleet-credential")
        self.assertEqual(volume["secret"]["secretName"], "opencrane-fleet-token")
        self.assertEqual(volume["secret"]["items"], [{"key": "token", "path": "token"}])
        mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "fleet-credential")
        self.assertEqual((mount["mountPath"], mount["readOnly"]), ("/var/run/opencrane/fleet", True))
        self.assertEqual(env["OPENCRANE_CLUSTER_TENANT"]["value"], "acme")
        self.assertEqual(env["WATCH_NAMESPACE"]["value"], SILO_NS)
        self.assertEqual(env["REQUIRE_WATCH_NAMESPACE"]["value"], "true")
        self.assertFalse([o for o in objects if o["kind"] == "Secret" and "fleet-token" in o["metadata"]["name"]], "the deploy supplies the token")

        objects, _ = render(SILO, SILO_PROFILES["standalone"], SILO_NS)
        kinds = {o["spec"]["names"]["kind"] for o in objects if o["kind"] == "CustomResourceDefinition"}
        self.assertEqual(kinds, {"ClusterTenant", "Tenant", "AccessPolicy"})
        for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
            self.assertEqual(crd["metadata"]["annotations"]["helm.sh/resource-policy"], "keep")
        manager = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("-manager"))
        env = env_of(manager["spec"]["template"]["spec"]["containers"][0])
        self.assertEqual(env["DEPLOYMENT_MODE"]["value"], "standalone")
        self.assertNotIn("FLEET_INTERNAL_URL", env)

    def test_silo_renders_only_variables_the_binary_reads(self):
        known = binary_env_vars("clustertenant-manager")
        migrate = binary_env_vars("migrate")
        for name, values in SILO_PROFILES.items():
            objects, _ = render(SILO, values, SILO_NS)
            for obj, spec in pod_specs(objects):
                container = spec["containers"][0]
                component = obj["metadata"]["labels"]["app.kubernetes.io/component"]
                if component == "clustertenant-manager":
                    readable = known
                elif component == "migration":
                    readable = migrate
                elif component == "secrets-hook":
                    readable = binary_env_vars("ensure-secret")
                else:
                    continue  # third-party planes read their own variables
                dead = set(env_of(container)) - readable - {"RUST_LOG"}
                self.assertEqual(dead, set(), f"{name}: {describe(obj)} sets variables the binary never reads")

    def test_silo_isolation(self):
        for name, values in SILO_PROFILES.items():
            with self.subTest(profile=name):
                objects, _ = render(SILO, values, SILO_NS)
                self.check_isolation(objects, values)

    def check_isolation(self, objects, values):
        ct = values["clusterTenant"]["name"]
        np = merge(load_yaml_file(SILO / "values.yaml")["networkPolicy"], values.get("networkPolicy", {}))
        allowed_namespaces = {np["ingressNamespace"], np["fleetNamespace"], np["dnsNamespace"]}
        # Prometheus, on the metrics port only, from the namespaces metrics.allowFrom names.
        metrics = merge(load_yaml_file(SILO / "values.yaml")["metrics"], values.get("metrics", {}))
        if metrics["enabled"]:
            for peer in metrics["allowFrom"]:
                allowed_namespaces |= set(peer.get("namespaceSelector", {}).get("matchLabels", {}).values())
        # RBAC: nothing cluster-scoped but reading this silo's own ClusterTenant.
        for role in (o for o in objects if o["kind"] == "ClusterRole"):
            for rule in role["rules"]:
                self.assertEqual(rule["apiGroups"], ["opencrane.io"], describe(role))
                self.assertEqual(rule["resources"], ["clustertenants"], describe(role))
                self.assertTrue(set(rule["verbs"]) <= {"get", "list", "watch"}, describe(role))
                self.assertEqual(rule.get("resourceNames"), [ct], f"{describe(role)} must name only its own ClusterTenant")
        cluster_roles = {o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRole"}
        for binding in (o for o in objects if o["kind"] in ("ClusterRoleBinding", "RoleBinding")):
            ref = binding["roleRef"]
            if binding["kind"] == "ClusterRoleBinding":
                self.assertIn(ref["name"], cluster_roles, f"{describe(binding)} binds a role this chart does not define")
            else:
                self.assertEqual(ref["kind"], "Role", f"{describe(binding)} binds a ClusterRole into the namespace")
            for subject in binding["subjects"]:
                self.assertEqual(subject.get("namespace"), SILO_NS, describe(binding))
        for role in (o for o in objects if o["kind"] == "Role"):
            for rule in role["rules"]:
                self.assertNotIn("*", rule["verbs"] + rule["resources"], describe(role))
        # NetworkPolicy floor: a default deny for both directions …
        policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
        deny = [p for p in policies if p["spec"]["podSelector"] == {} and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}
                and not p["spec"].get("ingress") and not p["spec"].get("egress")]
        self.assertEqual(len(deny), 1, "exactly one default-deny policy")
        # … and no peer that admits another silo's namespace or its pods.
        api_cidrs = set(np.get("kubeApiServer", {}).get("cidrs", []))
        for policy in policies:
            for direction, key in (("ingress", "from"), ("egress", "to")):
                for rule in policy["spec"].get(direction, []):
                    self.assertIn(key, rule, f"{describe(policy)}: a {direction} rule without peers admits everything")
                    for peer in rule[key]:
                        self.check_peer(policy, peer, allowed_namespaces, api_cidrs)

    def check_peer(self, policy, peer, allowed_namespaces, api_cidrs):
        where = describe(policy)
        if "namespaceSelector" in peer:
            selector = peer["namespaceSelector"]
            self.assertNotIn("matchExpressions", selector, where)
            labels = selector.get("matchLabels", {})
            self.assertEqual(list(labels), ["kubernetes.io/metadata.name"], f"{where}: namespaces must be named")
            self.assertIn(labels["kubernetes.io/metadata.name"], allowed_namespaces, where)
            self.assertFalse(re.match(r"^opencrane-(?!system$)", labels["kubernetes.io/metadata.name"]), f"{where}: admits a silo namespace")
        if "ipBlock" in peer:
            block = peer["ipBlock"]
            if block["cidr"] in api_cidrs:
                return
            network = ipaddress.ip_network(block["cidr"])
            excepted = [ipaddress.ip_network(e) for e in block.get("except", [])]
            for private in PRIVATE:
                if network.version == private.version and network.overlaps(private):
                    self.assertTrue(any(e.version == private.version and private.subnet_of(e) for e in excepted),
                                    f"{where}: {block['cidr']} reaches the private range {private} (pod networks)")

    def test_isolation_checks_catch_a_leak(self):
        """The checks above are not vacuous: a policy admitting every namespace fails them."""
        objects, _ = render(SILO, SILO_PROFILES["fleet-managed"], SILO_NS)
        leaky = copy.deepcopy(objects)
        intra = next(o for o in leaky if o["kind"] == "NetworkPolicy" and o["metadata"]["name"].endswith("-intra-silo"))
        intra["spec"]["ingress"][0]["from"].append({"namespaceSelector": {}})
        with self.assertRaises(AssertionError):
            self.check_isolation(leaky, SILO_PROFILES["fleet-managed"])
        open_egress = copy.deepcopy(objects)
        https = next(o for o in open_egress if o["kind"] == "NetworkPolicy" and o["metadata"]["name"].endswith("-egress-https"))
        https["spec"]["egress"][0]["to"][0]["ipBlock"].pop("except")
        with self.assertRaises(AssertionError):
            self.check_isolation(open_egress, SILO_PROFILES["fleet-managed"])
        wide_role = copy.deepcopy(objects)
        role = next(o for o in wide_role if o["kind"] == "ClusterRole")
        role["rules"][0].pop("resourceNames")
        with self.assertRaises(AssertionError):
            self.check_isolation(wide_role, SILO_PROFILES["fleet-managed"])

    def test_two_silos_do_not_collide(self):
        """Cluster-scoped names carry the ClusterTenant, so two silos install side by side."""
        first, _ = render(SILO, SILO_PROFILES["fleet-managed"], SILO_NS)
        second, _ = render(SILO, merge(SILO_PROFILES["fleet-managed"], {"clusterTenant": {"name": "beta"}}), "opencrane-beta")
        names = lambda objs: {(o["kind"], o["metadata"]["name"]) for o in objs if o["kind"] in CLUSTER_SCOPED}
        self.assertTrue(names(first))
        self.assertEqual(names(first) & names(second), set())

    def test_generated_secrets_are_made_once_in_the_cluster_never_at_render_time(self):
        """No template generates a secret with `lookup`/`rand*` (a new value on every GitOps sync);
        the hook Job makes each one with `opencrane ensure-secret`, and the workloads read them."""
        for chart in (FLEET, SILO):
            for template in (chart / "templates").glob("*.yaml"):
                text = template.read_text(encoding="utf-8")
                self.assertNotRegex(text, r"\blookup\s+\"", template)
                self.assertNotRegex(text, r"rand(AlphaNum|Alpha|Numeric|Bytes|Ascii)", template)
        for chart, values, ns, expected in (
            (FLEET, FLEET_PROFILES["default"], FLEET_NS, {"opencrane-fleet-api-token": ["token=alnum:48"]}),
            (SILO, SILO_PROFILES["standalone"], SILO_NS, {
                "opencrane-silo-fleet-token": ["token=alnum:48"],
                "opencrane-silo-credentials": ["OPENCRANE_CREDENTIALS_KEY=base64:32"],
                "opencrane-silo-litellm": ["LITELLM_MASTER_KEY=sk:48", "LITELLM_SALT_KEY=sk:48"],
            }),
        ):
            with self.subTest(chart=chart.name):
                objects, _ = render(chart, values, ns)
                self.assertFalse([o for o in objects if o["kind"] == "Secret" and "-db" not in o["metadata"]["name"]])
                job = next(o for o in objects if o["kind"] == "Job" and o["metadata"]["name"].endswith("-secrets-hook"))
                self.assertEqual(job["metadata"]["annotations"]["helm.sh/hook"], "pre-install,pre-upgrade")
                made = {}
                for container in job["spec"]["template"]["spec"]["containers"]:
                    args = container["args"]
                    self.assertEqual(args[0], "ensure-secret")
                    name = next(a.split("=", 1)[1] for a in args if a.startswith("--name="))
                    made[name] = [a.split("=", 1)[1] for a in args if a.startswith("--key=")]
                self.assertEqual(made, expected)
                role = next(o for o in objects if o["kind"] == "Role" and o["metadata"]["name"].endswith("-secrets-hook"))
                named = next(r for r in role["rules"] if "resourceNames" in r)
                self.assertEqual(sorted(named["resourceNames"]), sorted(expected))
                self.assertNotIn("delete", [v for r in role["rules"] for v in r["verbs"]])
                # Every workload reads a Secret that is either made by the hook or named by the operator.
                for obj, spec in pod_specs(objects):
                    for container in spec["containers"]:
                        for var in container.get("env", []):
                            ref = var.get("valueFrom", {}).get("secretKeyRef")
                            if ref and ref["name"] in expected:
                                self.assertIn(f"{ref['key']}=", " ".join(made[ref["name"]]), describe(obj))
        # An operator's own Secrets: no hook at all.
        objects, _ = render(FLEET, FLEET_PROFILES["everything-disabled"], FLEET_NS)
        self.assertFalse([o for o in objects if o["metadata"]["name"].endswith("-secrets-hook")])

    def test_documented_custom_resources_match_the_crds(self):
        """docs/examples validate against the generated schemas; a wrong value does not."""
        examples = sorted((ROOT / "docs" / "examples").glob("*.yaml"))
        self.assertEqual(len(examples), 3)
        for path in examples:
            obj = load_yaml_file(path)
            obj["__source"] = path.name
            validate_object(self, obj)
        ct = load_yaml_file(ROOT / "docs" / "examples" / "clustertenant.yaml")
        schema = SCHEMAS[("opencrane.io", "v1alpha1", "ClusterTenant")]
        for mutate in (
            lambda s: s.update(terminationPolicy="Destroy"),
            lambda s: s.update(isolationTier="gold"),
            lambda s: s.pop("displayName"),
            lambda s: s.update(vanityDomain="Not A Host"),
            lambda s: s["resources"]["quota"].update(pods=-1),
        ):
            bad = copy.deepcopy(ct)
            mutate(bad["spec"])
            with self.assertRaises(jsonschema.ValidationError):
                jsonschema.validate(bad, schema)

    # ---- values.schema.json ----

    def assert_rejected(self, chart, values, namespace, *fragments):
        with self.assertRaises(helm.HelmError) as caught:
            helm.Chart.load(str(chart)).render(values, name="opencrane", namespace=namespace, is_install=True)
        message = str(caught.exception)
        for fragment in fragments:
            self.assertIn(fragment, message)
        return message

    def test_schema_rejects_bad_values_with_the_field_named(self):
        self.assert_rejected(FLEET, {}, FLEET_NS, "/ingress", "missing property 'domain'")
        self.assert_rejected(SILO, {"ingress": {"domain": "example.com"}}, SILO_NS, "/clusterTenant", "missing property 'name'")
        self.assert_rejected(FLEET, merge(FLEET_PROFILES["default"], {"fleetManager": {"replicas": "two"}}), FLEET_NS,
                             "/fleetManager/replicas", "want integer")
        self.assert_rejected(FLEET, merge(FLEET_PROFILES["default"], {"ingress": {"domain": "Not A Domain"}}), FLEET_NS, "/ingress/domain")
        self.assert_rejected(FLEET, merge(FLEET_PROFILES["default"], {"fleetManager": {"oidc": {"clientId": 312345678901234567}}}), FLEET_NS,
                             "/fleetManager/oidc/clientId", "want string")
        self.assert_rejected(FLEET, merge(FLEET_PROFILES["default"], {"fleetManager": {"imagee": {}}}), FLEET_NS, "imagee")
        self.assert_rejected(SILO, merge(SILO_INSTANCE, {"clusterTenant": {"name": "Acme_Corp"}}), SILO_NS, "/clusterTenant/name")
        self.assert_rejected(SILO, merge(SILO_INSTANCE, {"litellm": {"port": "4000"}}), SILO_NS, "/litellm/port")
        self.assert_rejected(SILO, merge(SILO_INSTANCE, {"networkPolicy": {"enabled": False}}), SILO_NS, "enabled")

    def test_impossible_combinations_fail_the_render_with_a_reason(self):
        self.assert_rejected(SILO, merge(SILO_INSTANCE, {"deploymentMode": "fleet-managed"}), SILO_NS,
                             "clustertenantManager.fleetInternalUrl is required")
        self.assert_rejected(FLEET, merge(FLEET_PROFILES["default"], {"fleetManager": {"oidc": {"issuerUrl": "https://id.example.com", "clientId": "x", "platformOperatorSeedEmail": ""}}}),
                             FLEET_NS, "nobody can administer the platform")
        self.assert_rejected(FLEET, merge(FLEET_PROFILES["default"], {"fleetManager": {"zitadel": {"mgmtApiUrl": "https://id.example.com"}}}),
                             FLEET_NS, "fleetManager.zitadel.existingSecret")
        self.assert_rejected(FLEET, merge(FLEET_PROFILES["default"], {"fleetManager": {"database": {"cnpg": {"enabled": False}}}}),
                             FLEET_NS, "fleetManager.database")
        self.assert_rejected(SILO, merge(SILO_INSTANCE, {"litellm": {"database": {"cnpg": {"enabled": False}}}}), SILO_NS,
                             "litellm.database")

    # ---- operability and least privilege ----

    def manager_of(self, objects, component):
        return next(o for o in objects if o["kind"] == "Deployment" and o["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component") == component)

    def test_operability_values_reach_the_manager_pods(self):
        for chart, values, ns, component, key in (
            (FLEET, FLEET_PROFILES["everything-enabled"], FLEET_NS, "fleet-manager", "fleetManager"),
            (SILO, SILO_PROFILES["everything-enabled"], SILO_NS, "clustertenant-manager", "clustertenantManager"),
        ):
            with self.subTest(chart=chart.name):
                objects, _ = render(chart, values, ns)
                deployment = self.manager_of(objects, component)
                pod = deployment["spec"]["template"]
                container = pod["spec"]["containers"][0]
                mine = values[key]
                self.assertEqual(container["image"], "ghcr.io/opencrane/opencrane@" + mine["image"]["digest"])
                for label, value in mine["podLabels"].items():
                    self.assertEqual(pod["metadata"]["labels"][label], value)
                account = next(o for o in objects if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == pod["spec"]["serviceAccountName"])
                self.assertEqual(account["metadata"]["annotations"], mine["serviceAccount"]["annotations"])
                for field, value in mine.get("podSecurityContext", {}).items():
                    self.assertEqual(pod["spec"]["securityContext"][field], value)
                self.assertTrue(pod["spec"]["securityContext"]["runAsNonRoot"], "the restricted defaults stay")
                # Several replicas: a PodDisruptionBudget and a spread, both selecting these pods.
                selector = deployment["spec"]["selector"]["matchLabels"]
                pdb = next(o for o in objects if o["kind"] == "PodDisruptionBudget")
                self.assertEqual(pdb["spec"]["selector"]["matchLabels"], selector)
                self.assertEqual(pdb["spec"]["minAvailable"], 1)
                spread = pod["spec"]["topologySpreadConstraints"]
                self.assertEqual({c["topologyKey"] for c in spread}, {"topology.kubernetes.io/zone", "kubernetes.io/hostname"})
                self.assertTrue(all(c["labelSelector"]["matchLabels"] == selector for c in spread))
                # Metrics: a port of its own, on the Service, scraped by the ServiceMonitor.
                self.assertIn({"name": "metrics", "containerPort": 9090, "protocol": "TCP"}, container["ports"])
                service = next(o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == deployment["metadata"]["name"])
                self.assertIn("metrics", [p["name"] for p in service["spec"]["ports"]])
                monitor = next(o for o in objects if o["kind"] == "ServiceMonitor")
                self.assertEqual(monitor["spec"]["endpoints"][0]["port"], "metrics")
                self.assertEqual(monitor["spec"]["selector"]["matchLabels"], selector)
                # A changed value rolls the pods; the same values do not.
                changed, _ = render(chart, merge(values, {key: {"logLevel": "debug"}}), ns)
                same, _ = render(chart, values, ns)
                checksum = lambda objs: self.manager_of(objs, component)["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
                self.assertEqual(checksum(same), checksum(objects))
                self.assertNotEqual(checksum(changed), checksum(objects))
        # One replica: no PodDisruptionBudget (it would block every drain), no spread.
        objects, _ = render(FLEET, FLEET_PROFILES["default"], FLEET_NS)
        self.assertFalse([o for o in objects if o["kind"] in ("PodDisruptionBudget", "ServiceMonitor")])
        self.assertNotIn("topologySpreadConstraints", self.manager_of(objects, "fleet-manager")["spec"]["template"]["spec"])

    def test_no_image_is_latest_by_default(self):
        for chart in (FLEET, SILO):
            defaults = load_yaml_file(chart / "values.yaml")
            for path, image in self.images(defaults):
                self.assertNotEqual(image.get("tag"), "latest", f"{chart.name}: {path}.image.tag")

    def images(self, values, path=""):
        for key, value in values.items():
            if isinstance(value, dict):
                if key == "image":
                    yield path, value
                else:
                    yield from self.images(value, f"{path}.{key}" if path else key)

    def test_silo_role_is_what_the_manager_does(self):
        objects, _ = render(SILO, merge(SILO_PROFILES["everything-enabled"], {"cilium": {"enabled": False}}), SILO_NS)
        role = next(o for o in objects if o["kind"] == "Role" and o["metadata"]["name"].endswith("-operator"))
        self.assertEqual(role["rules"], [
            {"apiGroups": ["opencrane.io"], "resources": ["tenants", "accesspolicies"], "verbs": ["get", "list", "watch", "create", "patch", "delete"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        ])
        # With Cilium, also the one policy it keeps for the MCP gateway's egress.
        objects, _ = render(SILO, merge(SILO_PROFILES["everything-enabled"], {"cilium": {"enabled": True}}), SILO_NS)
        role = next(o for o in objects if o["kind"] == "Role" and o["metadata"]["name"].endswith("-operator"))
        self.assertEqual(role["rules"][2:], [
            {"apiGroups": ["cilium.io"], "resources": ["ciliumnetworkpolicies"], "resourceNames": ["opencrane-access-egress"], "verbs": ["get", "patch"]},
            {"apiGroups": ["cilium.io"], "resources": ["ciliumnetworkpolicies"], "verbs": ["create"]},
        ])

    def test_gitops_mode_takes_every_secret_from_an_existing_one(self):
        self.assert_rejected(FLEET, merge(FLEET_PROFILES["default"], {"gitops": True}), FLEET_NS, "fleetManager.apiTokenExistingSecret")
        objects, _ = render(FLEET, merge(FLEET_PROFILES["default"], {"gitops": True, "fleetManager": {"apiTokenExistingSecret": "fleet-token"}}), FLEET_NS)
        self.assertFalse([o for o in objects if o["kind"] == "Secret"], "nothing generated in GitOps mode")
        self.assert_rejected(SILO, merge(SILO_PROFILES["standalone"], {"gitops": True}), SILO_NS, "credentialsKeyExistingSecret")
        with_key = merge(SILO_PROFILES["standalone"], {"gitops": True, "clustertenantManager": {"credentialsKeyExistingSecret": "acme-key"}})
        self.assert_rejected(SILO, with_key, SILO_NS, "fleetApiTokenExistingSecret")
        with_token = merge(with_key, {"clustertenantManager": {"fleetApiTokenExistingSecret": "acme-token"}})
        self.assert_rejected(SILO, with_token, SILO_NS, "litellm.existingSecret")
        objects, _ = render(SILO, merge(with_token, {"litellm": {"existingSecret": "acme-litellm"}}), SILO_NS)
        self.assertFalse([o for o in objects if o["kind"] == "Secret" or o["kind"] == "Job" and "ensure-secrets" in o["metadata"]["name"]],
                         "nothing generated in GitOps mode")

    def binding_power(self, objects):
        """ClusterRoles that can both create RoleBindings and bind a role: together, a way to grant anything."""
        risky = []
        for role in (o for o in objects if o["kind"] == "ClusterRole"):
            creates = any("rolebindings" in r["resources"] and {"create", "*"} & set(r["verbs"]) for r in role.get("rules", []))
            binds = any("bind" in r["verbs"] or "escalate" in r["verbs"] for r in role.get("rules", []))
            if creates and binds:
                risky.append(role)
        return risky

    def check_confined(self, objects):
        account = next(o for o in objects if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == "opencrane-fleet-manager")
        user = f"system:serviceaccount:{account['metadata']['namespace']}:{account['metadata']['name']}"
        if not self.binding_power(objects):
            return
        policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
        bindings = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"]
        confining = [p for p in policies.values()
                     if any(user in c["expression"] for c in p["spec"].get("matchConditions", []))
                     and any("rolebindings" in r["resources"] for r in p["spec"]["matchConstraints"]["resourceRules"])
                     and any("namespaces" in r["resources"] for r in p["spec"]["matchConstraints"]["resourceRules"])]
        self.assertTrue(confining, "a cluster-wide role can create RoleBindings and bind, with no policy confining the fleet")
        self.assertTrue(any(b["spec"]["policyName"] == confining[0]["metadata"]["name"] and b["spec"]["validationActions"] == ["Deny"]
                            for b in bindings), "the confining policy is not bound with Deny")

    def test_cluster_wide_binding_power_comes_with_the_admission_policy(self):
        for name, values in FLEET_PROFILES.items():
            with self.subTest(profile=name):
                objects, _ = render(FLEET, values, FLEET_NS)
                self.check_confined(objects)
        objects, _ = render(FLEET, FLEET_PROFILES["default"], FLEET_NS)
        self.assertTrue(self.binding_power(objects), "the check looks at the real role")
        without = [o for o in objects if not o["kind"].startswith("ValidatingAdmissionPolicy")]
        with self.assertRaises(AssertionError):
            self.check_confined(without)
        self.assert_rejected(FLEET, merge(FLEET_PROFILES["default"], {"admissionPolicy": {"enabled": False}}), FLEET_NS, "admissionPolicy.enabled")

    def test_admission_policy_truth_table(self):
        """The policy's CEL, evaluated (cel-python) on the requests that matter: the fleet may write
        RoleBindings and namespaces of silos only; never kube-system, its own namespace, or a
        namespace it relabels into a silo."""
        import celpy

        objects, _ = render(FLEET, FLEET_PROFILES["default"], FLEET_NS)
        policy = next(o for o in objects if o["kind"] == "ValidatingAdmissionPolicy")
        env = celpy.Environment()
        compiled = lambda e: env.program(env.compile(e))
        matches = [compiled(c["expression"]) for c in policy["spec"]["matchConditions"]]
        variables = {v["name"]: compiled(v["expression"]) for v in policy["spec"]["variables"]}
        validations = [compiled(v["expression"]) for v in policy["spec"]["validations"]]

        def ns(name, silo):
            return {"metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name, **({"opencrane.io/cluster-tenant": name} if silo else {})}}}

        def admitted(user, resource, operation, namespace=None, obj=None, old=None):
            activation = {
                "request": {"userInfo": {"username": user}, "resource": {"resource": resource}, "operation": operation},
                "object": obj, "oldObject": old, "namespaceObject": namespace,
            }
            act = {k: celpy.json_to_cel(v) for k, v in activation.items()}
            if not all(m.evaluate(act) for m in matches):
                return True  # not the fleet: the policy does not apply
            act["variables"] = celpy.json_to_cel({k: v.evaluate(act) for k, v in variables.items()})
            return all(bool(v.evaluate(act)) for v in validations)

        fleet = "system:serviceaccount:opencrane-system:opencrane-fleet-manager"
        silo, system, own, plain = ns("opencrane-acme", True), ns("kube-system", False), ns("opencrane-system", False), ns("team-a", False)
        table = [
            (fleet, "rolebindings", "CREATE", silo, None, None, True),
            (fleet, "rolebindings", "UPDATE", silo, None, None, True),
            (fleet, "roles", "CREATE", silo, None, None, True),
            (fleet, "rolebindings", "CREATE", system, None, None, False),
            (fleet, "rolebindings", "CREATE", own, None, None, False),
            (fleet, "rolebindings", "CREATE", plain, None, None, False),
            (fleet, "rolebindings", "CREATE", ns("kube-system", True), None, None, False),
            (fleet, "namespaces", "CREATE", None, silo, None, True),
            (fleet, "namespaces", "CREATE", None, plain, None, False),
            (fleet, "namespaces", "CREATE", None, ns("kube-system", True), None, False),
            (fleet, "namespaces", "UPDATE", None, silo, silo, True),
            (fleet, "namespaces", "UPDATE", None, ns("kube-system", True), system, False),
            (fleet, "namespaces", "UPDATE", None, ns("team-a", True), plain, False),
            (fleet, "namespaces", "UPDATE", None, plain, silo, False),
            (fleet, "namespaces", "DELETE", None, None, silo, True),
            (fleet, "namespaces", "DELETE", None, None, system, False),
            (fleet, "namespaces", "DELETE", None, None, own, False),
            ("system:serviceaccount:kube-system:admin", "rolebindings", "CREATE", system, None, None, True),
            ("alice@example.com", "namespaces", "DELETE", None, None, plain, True),
        ]
        for user, resource, operation, namespace, obj, old, expected in table:
            with self.subTest(user=user, resource=resource, operation=operation, namespace=(namespace or obj or old)["metadata"]["name"]):
                self.assertEqual(admitted(user, resource, operation, namespace, obj, old), expected)

    # ---- the deploy command's plans ----

    def deploy_plan(self, *args):
        binary = os.environ.get("OPENCRANE_BIN")
        if not binary:
            raise unittest.SkipTest("OPENCRANE_BIN is not set (cargo xtask test sets it)")
        out = subprocess.run([binary, "deploy", *args, "--charts", str(CHARTS), "--dry-run", "--skip-preflight", "--plan-format", "json"],
                             check=True, capture_output=True, text=True, cwd=ROOT).stdout
        return json.loads(out)

    def test_deploy_manifests_are_valid_and_its_values_render(self):
        """The objects `opencrane deploy` applies itself validate, and the values it passes render."""
        silo = self.deploy_plan("silo", "--base-domain", "example.com", "--cluster-tenant", "acme", "--kube-api-cidr", "10.96.0.1/32")
        fleet = self.deploy_plan("fleet", "--base-domain", "example.com", "--platform-operator-seed-email", "ops@example.com")
        for plan in (silo, fleet):
            for step in plan["steps"]:
                for doc in yaml.safe_load_all(step["stdin"] or ""):
                    if doc:
                        kubernetes_validate.validate(doc, KUBE, strict=True)
        # Replay the silo release's values through Helm: what the deploy installs is valid.
        args = silo["steps"][-1]["args"]
        values = {}
        for flag, value in zip(args, args[1:]):
            if flag == "--values":
                values = merge(values, load_yaml_file(value))
            elif flag in ("--set-string", "--set-json"):
                key, _, raw = value.partition("=")
                parsed = json.loads(raw) if flag == "--set-json" else raw
                node = values
                *parents, leaf = key.split(".")
                for part in parents:
                    node = node.setdefault(part, {})
                node[leaf] = parsed
        objects, _ = render(SILO, values, SILO_NS)
        self.check_common(objects, SILO_NS)
        self.check_isolation(objects, values)


if __name__ == "__main__":
    unittest.main()
