"""The cluster-in-a-box's `helm` and `kubectl`: thin shims that do what the fleet asks of them
against the fake API server named by KUBECONFIG, so that every object in the fake cluster is
the real chart's output.

- `helm upgrade --install REL CHART --namespace NS [--values F]… [--set/--set-string/--set-json
  K=V]…` renders CHART with Helm's own library (helm-python-sdk, the chart tests' renderer) over
  the merged values, runs its pre-install/pre-upgrade hooks in weight order (a hook Job is
  created and waited for until the harness's kubelet reports it succeeded or failed, honouring
  `before-hook-creation` and `hook-succeeded`), applies every other object with server-side
  apply (field manager `helm`), deletes what the previous revision had and this one does not
  (unless `helm.sh/resource-policy: keep`), and records the revision as Helm does, in a Secret
  `sh.helm.release.v1.REL.vN` of type `helm.sh/release.v1`. `--wait` is not played: the harness
  runs no third-party image, so the fleet's own readiness step is the wait.
- `helm uninstall REL --namespace NS` deletes what the last revision recorded (but kept objects)
  and the records; "not found" when there is none, as Helm says it.
- `kubectl get crd NAME -o name`, `kubectl get endpointslices -n NS -l SEL -o json`, `kubectl
  get --raw /readyz`, and `kubectl apply --server-side --field-manager=M -f -`.

Run as `python kube.py helm …` or `python kube.py kubectl …` (the harness writes the two
wrapper scripts). Anything else fails loudly: a shim that accepted what it does not play would
hide the defects the harness is for.
"""

import base64
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import helm_python as helm
import yaml

CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "ClusterIssuer",
    "ClusterTenant",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
}
HOOK_WAIT_SECONDS = 120


def fail(message, code=1):
    sys.stderr.write(message.rstrip() + "\n")
    sys.exit(code)


def server():
    """The API server's URL from KUBECONFIG (its current context's cluster)."""
    import os

    path = os.environ.get("KUBECONFIG")
    if not path:
        fail("error: KUBECONFIG is not set (the cluster-in-a-box sets it)")
    with open(path, encoding="utf-8") as f:
        config = yaml.safe_load(f)
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])["context"]
    cluster = next(c for c in config["clusters"] if c["name"] == context["cluster"])["cluster"]
    return cluster["server"].rstrip("/")


def plural(kind):
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    if lower.endswith("s"):
        return lower + "es"
    return lower + "s"


def path_of(obj, namespace=None):
    api_version = obj["apiVersion"]
    prefix = "api/v1" if api_version == "v1" else f"apis/{api_version}"
    kind = obj["kind"]
    where = ""
    if kind not in CLUSTER_SCOPED:
        ns = obj.get("metadata", {}).get("namespace") or namespace
        where = f"/namespaces/{ns}"
    return f"/{prefix}{where}/{plural(kind)}/{obj['metadata']['name']}"


def request(method, path, body=None, content_type="application/json"):
    """(status, parsed body) of one API request; never raises for an HTTP error."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server() + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=30) as answer:
            text = answer.read()
            return answer.status, (json.loads(text) if text else {})
    except urllib.error.HTTPError as err:
        text = err.read()
        try:
            return err.code, json.loads(text)
        except ValueError:
            return err.code, {"message": text.decode(errors="replace")}


def apply(obj, manager, namespace=None):
    obj = dict(obj)
    obj.pop("__source", None)
    if obj["kind"] not in CLUSTER_SCOPED and namespace:
        obj.setdefault("metadata", {}).setdefault("namespace", namespace)
    query = urllib.parse.urlencode({"fieldManager": manager, "force": "true"})
    code, answer = request("PATCH", f"{path_of(obj, namespace)}?{query}", obj, "application/apply-patch+yaml")
    if code >= 300:
        fail(f"Error: {obj['kind']} {obj['metadata']['name']}: {answer.get('message', answer)}")
    return answer


def delete(obj, namespace=None):
    code, answer = request("DELETE", path_of(obj, namespace))
    if code >= 300 and code != 404:
        fail(f"Error: deleting {obj['kind']} {obj['metadata']['name']}: {answer.get('message', answer)}")


def set_path(values, dotted, value):
    keys = dotted.split(".")
    for key in keys[:-1]:
        values = values.setdefault(key, {})
    values[keys[-1]] = value


def merge(base, override):
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def typed(text):
    """`--set`'s value typing: booleans, null and integers become themselves."""
    if text in ("true", "false"):
        return text == "true"
    if text == "null":
        return None
    try:
        return int(text)
    except ValueError:
        return text


def records(release, namespace):
    selector = urllib.parse.urlencode({"labelSelector": f"owner=helm,name={release}"})
    code, answer = request("GET", f"/api/v1/namespaces/{namespace}/secrets?{selector}")
    if code >= 300:
        fail(f"Error: listing the release records: {answer.get('message', answer)}")
    found = [(int(s["metadata"]["labels"]["version"]), s) for s in answer.get("items", [])]
    return sorted(found, key=lambda pair: pair[0])


def manifest_of(record):
    return json.loads(base64.b64decode(record["data"]["release"]))["manifest"]


def ref(obj, namespace):
    meta = obj["metadata"]
    ns = None if obj["kind"] in CLUSTER_SCOPED else meta.get("namespace") or namespace
    keep = meta.get("annotations", {}).get("helm.sh/resource-policy") == "keep"
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"], "namespace": ns, "keep": keep}


def as_object(r):
    meta = {"name": r["name"]}
    if r["namespace"]:
        meta["namespace"] = r["namespace"]
    return {"apiVersion": r["apiVersion"], "kind": r["kind"], "metadata": meta}


def run_hook_job(job, namespace):
    path = path_of(job, namespace)
    deadline = time.time() + HOOK_WAIT_SECONDS
    while time.time() < deadline:
        code, live = request("GET", path)
        if code == 200:
            status = live.get("status", {})
            if status.get("succeeded", 0) >= 1:
                return
            if status.get("failed", 0) > job.get("spec", {}).get("backoffLimit", 6):
                fail(f"Error: UPGRADE FAILED: pre-upgrade hooks failed: job {job['metadata']['name']} failed: BackoffLimitExceeded")
        time.sleep(0.1)
    fail(f"Error: UPGRADE FAILED: hook job {job['metadata']['name']} did not finish in {HOOK_WAIT_SECONDS} s")


def helm_upgrade(args):
    args = [a for a in args if a != "--install"]
    release, chart = args[0], args[1]
    namespace = "default"
    values = {}
    rest = args[2:]
    i = 0
    while i < len(rest):
        flag = rest[i]
        if flag in ("--namespace", "-n"):
            namespace = rest[i + 1]
        elif flag in ("--values", "-f"):
            with open(rest[i + 1], encoding="utf-8") as f:
                values = merge(values, yaml.safe_load(f) or {})
        elif flag == "--set-string":
            key, _, value = rest[i + 1].partition("=")
            set_path(values, key, value)
        elif flag == "--set":
            key, _, value = rest[i + 1].partition("=")
            set_path(values, key, typed(value))
        elif flag == "--set-json":
            key, _, value = rest[i + 1].partition("=")
            set_path(values, key, json.loads(value))
        elif flag == "--timeout":
            pass
        elif flag in ("--install", "--wait", "--atomic"):
            i += 1
            continue
        else:
            fail(f"Error: unknown flag {flag} (the cluster-in-a-box's helm plays only what the fleet uses)")
        i += 2
    history = records(release, namespace)
    deployed = [r for v, r in history if r["metadata"]["labels"].get("status") == "deployed"]
    installing = not deployed
    try:
        out = helm.Chart.load(chart).render(
            values, name=release, namespace=namespace, is_install=installing, is_upgrade=not installing
        )
    except helm.HelmError as err:
        fail(f"Error: {'INSTALLATION' if installing else 'UPGRADE'} FAILED: {err}")
    objects, hooks = [], []
    for path, text in sorted(out.items()):
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if not doc:
                continue
            annotations = doc.get("metadata", {}).get("annotations", {}) or {}
            phases = [p.strip() for p in annotations.get("helm.sh/hook", "").split(",") if p.strip()]
            if phases:
                hooks.append((phases, int(annotations.get("helm.sh/hook-weight", "0")), doc))
            else:
                objects.append(doc)
    phase = "pre-install" if installing else "pre-upgrade"
    for _, _, hook in sorted((h for h in hooks if phase in h[0]), key=lambda h: h[1]):
        policies = hook["metadata"].get("annotations", {}).get("helm.sh/hook-delete-policy", "before-hook-creation")
        if "before-hook-creation" in policies:
            delete(hook, namespace)
        apply(hook, "helm", namespace)
        if hook["kind"] == "Job":
            run_hook_job(hook, namespace)
    for _, _, hook in (h for h in hooks if phase in h[0]):
        if "hook-succeeded" in hook["metadata"].get("annotations", {}).get("helm.sh/hook-delete-policy", ""):
            delete(hook, namespace)
    order = {"Namespace": 0, "Secret": 1, "ConfigMap": 1, "ServiceAccount": 2, "Role": 3, "RoleBinding": 4}
    for obj in sorted(objects, key=lambda o: order.get(o["kind"], 5)):
        apply(obj, "helm", namespace)
    now = [ref(o, namespace) for o in objects]
    if deployed:
        keys = {(r["kind"], r["namespace"], r["name"]) for r in now}
        for old in manifest_of(deployed[-1]):
            if (old["kind"], old["namespace"], old["name"]) not in keys and not old["keep"]:
                delete(as_object(old), namespace)
    version = (history[-1][0] if history else 0) + 1
    for _, record in history:
        if record["metadata"]["labels"].get("status") == "deployed":
            record["metadata"]["labels"]["status"] = "superseded"
            apply({"apiVersion": "v1", "kind": "Secret", "metadata": {
                "name": record["metadata"]["name"], "namespace": namespace, "labels": record["metadata"]["labels"]}},
                "helm", namespace)
    chart_meta = yaml.safe_load(open(f"{chart}/Chart.yaml", encoding="utf-8"))
    body = {"name": release, "namespace": namespace, "version": version,
            "chart": {"name": chart_meta["name"], "version": chart_meta["version"]},
            "config": values, "manifest": now}
    apply({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
           "metadata": {"name": f"sh.helm.release.v1.{release}.v{version}", "namespace": namespace,
                        "labels": {"owner": "helm", "name": release, "version": str(version), "status": "deployed"}},
           "data": {"release": base64.b64encode(json.dumps(body).encode()).decode()}}, "helm", namespace)
    print(f'Release "{release}" has been {"installed" if installing else "upgraded"}. Happy Helming!')
    print(f"NAME: {release}\nNAMESPACE: {namespace}\nSTATUS: deployed\nREVISION: {version}")


def helm_uninstall(args):
    release = args[0]
    namespace = "default"
    if "--namespace" in args:
        namespace = args[args.index("--namespace") + 1]
    history = records(release, namespace)
    if not history:
        fail(f"Error: uninstall: Release not loaded: {release}: release: not found")
    for old in manifest_of(history[-1][1]):
        if not old["keep"]:
            delete(as_object(old), namespace)
    for _, record in history:
        delete(record, namespace)
    print(f'release "{release}" uninstalled')


def kubectl(args):
    if args[:2] == ["get", "--raw"]:
        code, answer = request("GET", args[2])
        print(json.dumps(answer) if code < 300 else fail(f"Error from server: {answer}"))
        return
    if args[:2] == ["get", "crd"]:
        name = args[2]
        code, _ = request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        if code == 404:
            fail(f'Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "{name}" not found')
        print(f"customresourcedefinition.apiextensions.k8s.io/{name}")
        return
    if args[:2] == ["get", "endpointslices"]:
        namespace = args[args.index("-n") + 1]
        selector = urllib.parse.urlencode({"labelSelector": args[args.index("-l") + 1]})
        code, answer = request("GET", f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices?{selector}")
        if code >= 300:
            fail(f"Error from server: {answer.get('message', answer)}")
        print(json.dumps(answer))
        return
    if args[:1] == ["apply"] and "--server-side" in args and args[-2:] == ["-f", "-"]:
        manager = next((a.split("=", 1)[1] for a in args if a.startswith("--field-manager=")), "kubectl")
        for doc in yaml.safe_load_all(sys.stdin.read()):
            if doc:
                apply(doc, manager)
                print(f"{doc['kind'].lower()}/{doc['metadata']['name']} serverside-applied")
        return
    fail(f"error: the cluster-in-a-box's kubectl does not play: kubectl {' '.join(args)}")


def main():
    tool, args = sys.argv[1], sys.argv[2:]
    if tool == "helm" and args[:1] == ["upgrade"]:
        helm_upgrade(args[1:])
    elif tool == "helm" and args[:1] == ["uninstall"]:
        helm_uninstall(args[1:])
    elif tool == "kubectl":
        kubectl(args)
    else:
        fail(f"Error: the cluster-in-a-box's helm does not play: helm {' '.join(args)}")


if __name__ == "__main__":
    main()
