//! The cluster in a box: what a Kubernetes cluster does for the fleet, done for real where this
//! machine allows and played faithfully where it does not, so that the fleet-manager's
//! **Kubernetes provisioner** can be run end to end and the silo it renders is started.
//!
//! - **API server**: `opencrane-fake-kube` (no kube-apiserver can run here), reached through a
//!   kubeconfig file, as the fleet-manager reaches any cluster outside it.
//! - **Helm and kubectl**: `cluster/kube.py` behind two wrapper scripts on the fleet's `PATH`;
//!   `helm` renders the real `charts/opencrane-silo` with Helm's own library (helm-python-sdk, the
//!   chart tests' virtualenv), runs its hooks, server-side applies every object and keeps a
//!   release record, so every object in the fake cluster is the chart's real output.
//! - **A process kubelet** ([`Kubelet`]): every Deployment and hook Job whose image is
//!   `ghcr.io/opencrane/opencrane` runs as the real `opencrane` binary with the container's `args`
//!   and `env` as rendered — `secretKeyRef` and `fieldRef` resolved from the fake cluster, Secret
//!   and `emptyDir` volumes written to a directory the mount path maps to (a variable naming a
//!   path under a mount is given the mapped one), the image's own `ENV` (the Dockerfile's) below
//!   them. It adds exactly two variables: the Pod's address as `OPENCRANE_BIND_ADDRESS` (each Pod
//!   has its own loopback address, 127.0.10.x, so every manager listens on its rendered port) and
//!   `KUBECONFIG` in place of the in-cluster ServiceAccount (whose fixed paths a process here
//!   cannot be given). The rendered `readinessProbe` decides readiness; Pods and the Deployment's
//!   status are written as a kubelet and the Deployment controller write them, a container that
//!   exits is restarted with back-off (`CrashLoopBackOff`, its last log lines as the termination
//!   message, as `FallbackToLogsOnError` gives them); scaling to zero or deleting stops it.
//!   Third-party images (LiteLLM, the MCP gateway, …) are not run: their Deployments stay
//!   unready, and nothing of ours waits for them.
//! - **CloudNativePG**: a `Cluster` becomes a database and a role of its own on the test's
//!   PostgreSQL and the `<cluster>-app` Secret CloudNativePG writes (`uri`, `host`, `port`,
//!   `username`, `password`, `dbname`); deleting the Cluster drops them.
//!
//! Nothing in the product knows it runs here.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    io::Read as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, Ordering},
    },
    time::{Duration, Instant},
};

use k8s_openapi::{
    ByteString,
    api::{
        apps::v1::Deployment,
        batch::v1::Job,
        core::v1::{Container, EnvVar, Pod, PodSpec, Secret, Volume},
    },
};
use kube::{
    Api,
    api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
    discovery::ApiResource,
};
use opencrane_fake_kube::FakeApiServer;
use serde_json::{Value, json};

/// The image the kubelet runs as the `opencrane` binary.
pub const IMAGE: &str = "ghcr.io/opencrane/opencrane";
/// How often the kubelet and the CloudNativePG player look.
const TICK: Duration = Duration::from_millis(150);
/// The longest back-off before a crashed container is started again.
const MAX_BACKOFF: Duration = Duration::from_secs(4);

/// Pod addresses, unique in this process: 127.0.10.1, 127.0.10.2, …
static NEXT_POD: AtomicU32 = AtomicU32::new(0);

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The chart tests' Python (with helm-python-sdk), which `cargo xtask test` installs before the
/// Rust tests run.
fn python() -> PathBuf {
    let python = std::env::var_os("OPENCRANE_CHART_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/xtask/venv/bin/python"));
    assert!(
        python.exists(),
        "the cluster-in-a-box renders charts with the chart tests' Python ({}); run `cargo xtask test`, which installs it",
        python.display()
    );
    python
}

/// One running cluster in a box. Dropping it stops every process it started.
pub struct Cluster {
    pub fake: FakeApiServer,
    pub client: kube::Client,
    /// Holds `kubeconfig`, the `helm`/`kubectl` wrappers (`bin/`) and the Pods' volumes.
    pub dir: PathBuf,
    pub kubelet: Arc<Kubelet>,
    task: tokio::task::JoinHandle<()>,
}

impl Cluster {
    /// A cluster with the CRDs the fleet's release installs (CloudNativePG's, so the silo
    /// installer's preflight passes), the `default` namespace and the API server's EndpointSlice.
    /// `postgres` is the server the CloudNativePG player makes databases on (a URL ending in a
    /// database name it may connect to).
    pub async fn start(name: &str, postgres: &str, binary: &Path) -> Self {
        let fake = FakeApiServer::start().await.unwrap();
        let dir = std::env::temp_dir().join(format!("opencrane-cluster-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: box\nclusters:\n- name: box\n  cluster:\n    server: {}\n\
                 contexts:\n- name: box\n  context:\n    cluster: box\n    user: box\nusers:\n- name: box\n  user: {{}}\n",
                fake.url()
            ),
        )
        .unwrap();
        let script = root().join("server/tests/it/cluster/kube.py");
        for tool in ["helm", "kubectl"] {
            let path = dir.join("bin").join(tool);
            std::fs::write(
                &path,
                format!("#!/bin/sh\nexec '{}' '{}' {tool} \"$@\"\n", python().display(), script.display()),
            )
            .unwrap();
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let client = opencrane_provision::kubernetes::client_for(&fake.url(), Duration::from_secs(10)).unwrap();
        for object in [
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "opencrane-system"}}),
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "clusters.postgresql.cnpg.io"}, "spec": {"group": "postgresql.cnpg.io"}}),
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"kubernetes.io/service-name": "kubernetes"}},
                   "addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.1"]}],
                   "ports": [{"name": "https", "port": fake.url().rsplit(':').next().unwrap().parse::<u16>().unwrap()}]}),
        ] {
            apply(&client, &object).await;
        }
        let kubelet = Arc::new(Kubelet {
            client: client.clone(),
            binary: binary.to_owned(),
            site: std::env::var_os("LEPTOS_SITE_ROOT").map_or_else(|| root().join("target/site"), PathBuf::from),
            kubeconfig,
            volumes: dir.join("pods"),
            postgres: postgres.to_owned(),
            pods: Mutex::default(),
            jobs_run: Mutex::default(),
            databases: Mutex::default(),
        });
        let task = tokio::spawn(kubelet.clone().run());
        Self { fake, client, dir, kubelet, task }
    }

    /// The directory to put first on the fleet-manager's `PATH` (its `helm` and `kubectl`).
    pub fn bin(&self) -> PathBuf {
        self.dir.join("bin")
    }

    /// The kubeconfig the fleet-manager is given.
    pub fn kubeconfig(&self) -> PathBuf {
        self.kubelet.kubeconfig.clone()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.task.abort();
        if let Ok(mut pods) = self.kubelet.pods.lock() {
            for pod in pods.values_mut() {
                pod.stop();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Server-side applies `object` as the harness (field manager `cluster-in-a-box`).
pub async fn apply(client: &kube::Client, object: &Value) {
    let api = dynamic(client, object);
    let name = object["metadata"]["name"].as_str().unwrap();
    api.patch(name, &PatchParams::apply("cluster-in-a-box").force(), &Patch::Apply(object)).await.unwrap();
}

fn dynamic(client: &kube::Client, object: &Value) -> Api<DynamicObject> {
    let api_version = object["apiVersion"].as_str().unwrap();
    let kind = object["kind"].as_str().unwrap();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let lower = kind.to_ascii_lowercase();
    let plural = if lower.ends_with('y') { format!("{}ies", &lower[..lower.len() - 1]) } else { format!("{lower}s") };
    let resource = ApiResource::from_gvk_with_plural(&kube::api::GroupVersionKind::gvk(group, version, kind), &plural);
    match object.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// A running (or backing-off) Pod of one Deployment.
struct RunningPod {
    name: String,
    namespace: String,
    generation: i64,
    ip: String,
    labels: BTreeMap<String, String>,
    container: Container,
    spec: PodSpec,
    child: Option<Child>,
    log: Arc<Mutex<Vec<u8>>>,
    restarts: i32,
    /// The last exit: code and the log's last lines.
    last_exit: Option<(i32, String)>,
    /// While backing off: when to start again.
    restart_at: Option<Instant>,
    ready: bool,
}

impl RunningPod {
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-s", "TERM"]).arg(child.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if child.try_wait().ok().flatten().is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn running(&self) -> bool {
        self.child.is_some()
    }
}

/// The process kubelet and the CloudNativePG player (see the module's documentation).
pub struct Kubelet {
    client: kube::Client,
    binary: PathBuf,
    site: PathBuf,
    kubeconfig: PathBuf,
    volumes: PathBuf,
    postgres: String,
    /// By (namespace, Deployment).
    pods: Mutex<HashMap<(String, String), RunningPod>>,
    /// Hook Jobs already run, by uid.
    jobs_run: Mutex<HashSet<String>>,
    /// Databases made for Clusters, by (namespace, cluster): the database's (and role's) name.
    databases: Mutex<HashMap<(String, String), String>>,
}

fn ours(container: &Container) -> bool {
    container.image.as_deref().is_some_and(|i| i.starts_with(IMAGE))
}

impl Kubelet {
    async fn run(self: Arc<Self>) {
        loop {
            self.databases_follow_clusters().await;
            self.run_jobs().await;
            self.pods_follow_deployments().await;
            tokio::time::sleep(TICK).await;
        }
    }

    /// The (namespace, Deployment) pairs with a manager process running now.
    pub fn running(&self) -> Vec<(String, String)> {
        let pods = self.pods.lock().unwrap();
        let mut running: Vec<_> = pods.iter().filter(|(_, p)| p.running()).map(|(k, _)| k.clone()).collect();
        running.sort();
        running
    }

    /// The base URL of the Pod of `deployment` in `namespace` (its address and rendered port).
    pub fn pod_url(&self, namespace: &str, deployment: &str) -> Option<String> {
        let pods = self.pods.lock().unwrap();
        let pod = pods.get(&(namespace.to_owned(), deployment.to_owned()))?;
        Some(format!("http://{}:{}", pod.ip, http_port(&pod.container)))
    }

    /// The log of the Pod of `deployment` so far.
    pub fn log(&self, namespace: &str, deployment: &str) -> String {
        let pods = self.pods.lock().unwrap();
        pods.get(&(namespace.to_owned(), deployment.to_owned()))
            .map(|p| String::from_utf8_lossy(&p.log.lock().unwrap()).into_owned())
            .unwrap_or_default()
    }

    /// The databases the CloudNativePG player holds, by (namespace, cluster).
    pub fn databases(&self) -> Vec<String> {
        let mut names: Vec<String> = self.databases.lock().unwrap().values().cloned().collect();
        names.sort();
        names
    }

    async fn admin(&self) -> sqlx::PgPool {
        sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(&self.postgres).await.unwrap()
    }

    async fn databases_follow_clusters(&self) {
        let resource = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("postgresql.cnpg.io", "v1", "Cluster"),
            "clusters",
        );
        let clusters: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let Ok(list) = clusters.list(&ListParams::default()).await else { return };
        let live: HashSet<(String, String)> = list
            .items
            .iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .map(|c| (c.metadata.namespace.clone().unwrap_or_default(), c.metadata.name.clone().unwrap_or_default()))
            .collect();
        let known: HashSet<(String, String)> = self.databases.lock().unwrap().keys().cloned().collect();
        for (ns, name) in live.difference(&known) {
            let database = format!("cnpg_{}_{}", ns, name).replace('-', "_");
            let password = format!("pw{}", uuid::Uuid::new_v4().simple());
            let admin = self.admin().await;
            sqlx::query(&format!("CREATE ROLE {database} LOGIN PASSWORD '{password}'")).execute(&admin).await.unwrap();
            sqlx::query(&format!("CREATE DATABASE {database} OWNER {database}")).execute(&admin).await.unwrap();
            admin.close().await;
            let server: url::Url = self.postgres.parse().unwrap();
            let (host, port) = (server.host_str().unwrap().to_owned(), server.port().unwrap_or(5432));
            let uri = format!("postgresql://{database}:{password}@{host}:{port}/{database}");
            let data: BTreeMap<&str, String> = BTreeMap::from([
                ("uri", uri),
                ("host", host),
                ("port", port.to_string()),
                ("username", database.clone()),
                ("password", password),
                ("dbname", database.clone()),
            ]);
            let data: serde_json::Map<String, Value> = data
                .into_iter()
                .map(|(k, v)| (k.to_owned(), serde_json::to_value(ByteString(v.into_bytes())).unwrap()))
                .collect();
            apply(
                &self.client,
                &json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/basic-auth",
                        "metadata": {"name": format!("{name}-app"), "namespace": ns,
                                     "labels": {"cnpg.io/cluster": name, "cnpg.io/reload": "true"}},
                        "data": data}),
            )
            .await;
            self.databases.lock().unwrap().insert((ns.clone(), name.clone()), database);
        }
        for gone in known.difference(&live) {
            let Some(database) = self.databases.lock().unwrap().remove(gone) else { continue };
            let admin = self.admin().await;
            sqlx::query(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)")).execute(&admin).await.unwrap();
            sqlx::query(&format!("DROP ROLE IF EXISTS {database}")).execute(&admin).await.unwrap();
            admin.close().await;
        }
    }

    async fn run_jobs(self: &Arc<Self>) {
        let jobs: Api<Job> = Api::all(self.client.clone());
        let Ok(list) = jobs.list(&ListParams::default()).await else { return };
        for job in list.items {
            let uid = job.metadata.uid.clone().unwrap_or_default();
            let spec = job.spec.as_ref().and_then(|s| s.template.spec.clone()).unwrap_or_default();
            if !spec.containers.iter().all(ours) || !self.jobs_run.lock().unwrap().insert(uid) {
                continue;
            }
            let ns = job.metadata.namespace.clone().unwrap_or_default();
            let name = job.metadata.name.clone().unwrap_or_default();
            let this = self.clone();
            tokio::spawn(async move {
                let ip = next_ip();
                let mut ok = true;
                for container in &spec.containers {
                    let Ok(mut child) = this.spawn(&ns, &name, &ip, container, &spec, &Arc::default()).await else {
                        ok = false;
                        break;
                    };
                    let status = tokio::task::spawn_blocking(move || child.wait()).await.unwrap();
                    ok &= status.is_ok_and(|s| s.success());
                }
                let status = if ok { json!({"succeeded": 1}) } else { json!({"failed": 99}) };
                let jobs: Api<Job> = Api::namespaced(this.client.clone(), &ns);
                let _ = jobs.patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": status}))).await;
            });
        }
    }

    async fn pods_follow_deployments(&self) {
        let deployments: Api<Deployment> = Api::all(self.client.clone());
        let Ok(list) = deployments.list(&ListParams::default()).await else { return };
        let mut wanted = HashSet::new();
        for deployment in &list.items {
            let ns = deployment.metadata.namespace.clone().unwrap_or_default();
            let name = deployment.metadata.name.clone().unwrap_or_default();
            let Some(spec) = deployment.spec.as_ref() else { continue };
            let Some(pod_spec) = spec.template.spec.clone() else { continue };
            let Some(container) = pod_spec.containers.first().cloned() else { continue };
            if !ours(&container) {
                continue;
            }
            let replicas = spec.replicas.unwrap_or(1);
            let generation = deployment.metadata.generation.unwrap_or(1);
            let key = (ns.clone(), name.clone());
            if replicas > 0 {
                wanted.insert(key.clone());
                let stale = self.pods.lock().unwrap().get(&key).is_some_and(|p| p.generation != generation);
                if stale {
                    self.remove_pod(&key).await;
                }
                let exists = self.pods.lock().unwrap().contains_key(&key);
                if !exists {
                    let labels = spec.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
                    let pod = RunningPod {
                        name: format!("{name}-{generation}"),
                        namespace: ns.clone(),
                        generation,
                        ip: next_ip(),
                        labels,
                        container,
                        spec: pod_spec,
                        child: None,
                        log: Arc::default(),
                        restarts: 0,
                        last_exit: None,
                        restart_at: Some(Instant::now()),
                        ready: false,
                    };
                    self.pods.lock().unwrap().insert(key.clone(), pod);
                }
                self.tend(&key).await;
            }
            let ready = self.pods.lock().unwrap().get(&key).is_some_and(|p| p.ready);
            let replicas_now = i32::from(self.pods.lock().unwrap().contains_key(&key));
            let status = json!({"status": {
                "observedGeneration": generation,
                "replicas": replicas_now,
                "updatedReplicas": replicas_now,
                "readyReplicas": i32::from(ready),
                "availableReplicas": i32::from(ready),
            }});
            let api: Api<Deployment> = Api::namespaced(self.client.clone(), &ns);
            let _ = api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status)).await;
        }
        let gone: Vec<_> = self.pods.lock().unwrap().keys().filter(|k| !wanted.contains(*k)).cloned().collect();
        for key in gone {
            self.remove_pod(&key).await;
        }
    }

    async fn remove_pod(&self, key: &(String, String)) {
        let Some(mut pod) = self.pods.lock().unwrap().remove(key) else { return };
        let name = pod.name.clone();
        tokio::task::spawn_blocking(move || pod.stop()).await.unwrap();
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &key.0);
        let _ = pods.delete(&name, &DeleteParams::default()).await;
    }

    /// Starts, restarts and probes one Pod, and writes its status.
    async fn tend(&self, key: &(String, String)) {
        // Exited?
        let start_now = {
            let mut pods = self.pods.lock().unwrap();
            let pod = pods.get_mut(key).unwrap();
            if let Some(child) = pod.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                pod.child = None;
                pod.ready = false;
                pod.restarts += 1;
                let log = String::from_utf8_lossy(&pod.log.lock().unwrap()).into_owned();
                let tail: Vec<&str> = log.lines().rev().take(80).collect();
                let message = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
                pod.last_exit = Some((status.code().unwrap_or(137), message));
                let backoff = Duration::from_millis(500 * 2u64.pow(pod.restarts.clamp(0, 4) as u32)).min(MAX_BACKOFF);
                pod.restart_at = Some(Instant::now() + backoff);
            }
            let start_now = pod.child.is_none() && pod.restart_at.is_some_and(|at| Instant::now() >= at);
            start_now
        };
        if start_now {
            let (ns, name, ip, container, spec, log) = {
                let pods = self.pods.lock().unwrap();
                let pod = &pods[key];
                (pod.namespace.clone(), pod.name.clone(), pod.ip.clone(), pod.container.clone(), pod.spec.clone(), pod.log.clone())
            };
            log.lock().unwrap().clear();
            let child = self.spawn(&ns, &name, &ip, &container, &spec, &log).await;
            let mut pods = self.pods.lock().unwrap();
            let pod = pods.get_mut(key).unwrap();
            pod.restart_at = None;
            match child {
                Ok(child) => pod.child = Some(child),
                Err(reason) => {
                    pod.last_exit = Some((128, reason));
                    pod.restarts += 1;
                    pod.restart_at = Some(Instant::now() + MAX_BACKOFF);
                }
            }
        }
        // The readiness probe.
        let probe = {
            let pods = self.pods.lock().unwrap();
            let pod = &pods[key];
            pod.running().then(|| {
                let path = pod
                    .container
                    .readiness_probe
                    .as_ref()
                    .and_then(|p| p.http_get.as_ref())
                    .map_or("/".to_owned(), |g| g.path.clone().unwrap_or_default());
                format!("http://{}:{}{path}", pod.ip, http_port(&pod.container))
            })
        };
        let ready = match probe {
            Some(url) => http_get_status(&url).await == Some(200),
            None => false,
        };
        let status = {
            let mut pods = self.pods.lock().unwrap();
            let pod = pods.get_mut(key).unwrap();
            pod.ready = ready;
            let state = if pod.running() {
                json!({"running": {"startedAt": chrono::Utc::now().to_rfc3339()}})
            } else {
                json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting failed container"}})
            };
            let last_state = match &pod.last_exit {
                Some((code, message)) => json!({"terminated": {"exitCode": code, "reason": "Error", "message": message}}),
                None => json!({}),
            };
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod.name, "namespace": pod.namespace, "labels": pod.labels},
                "spec": {"containers": [{"name": pod.container.name, "image": pod.container.image}]},
                "status": {
                    "phase": "Running",
                    "podIP": pod.ip,
                    "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
                    "containerStatuses": [{
                        "name": pod.container.name, "image": pod.container.image, "imageID": "",
                        "ready": ready, "restartCount": pod.restarts, "state": state, "lastState": last_state,
                    }],
                },
            })
        };
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &key.0);
        let name = status["metadata"]["name"].as_str().unwrap().to_owned();
        let _ = pods.patch(&name, &PatchParams::apply("kubelet").force(), &Patch::Apply(&status)).await;
        let _ = pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": status["status"]}))).await;
    }

    /// Starts `container` of a Pod named `pod` as the `opencrane` binary.
    async fn spawn(
        &self,
        namespace: &str,
        pod: &str,
        ip: &str,
        container: &Container,
        spec: &PodSpec,
        log: &Arc<Mutex<Vec<u8>>>,
    ) -> Result<Child, String> {
        let root = self.volumes.join(namespace).join(pod).join(&container.name);
        let _ = std::fs::remove_dir_all(&root);
        // Volumes: each mount path maps to a directory of the Pod's.
        let mut mounts: Vec<(String, PathBuf)> = Vec::new();
        for mount in container.volume_mounts.iter().flatten() {
            let dir = root.join("volumes").join(&mount.name);
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let volume = spec.volumes.iter().flatten().find(|v| v.name == mount.name);
            if let Some(volume) = volume {
                self.fill_volume(namespace, volume, &dir).await?;
            }
            mounts.push((mount.mount_path.clone(), dir));
        }
        mounts.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        let mapped = |value: &str| -> String {
            for (path, dir) in &mounts {
                if value == path || value.starts_with(&format!("{}/", path.trim_end_matches('/'))) {
                    return format!("{}{}", dir.display(), &value[path.trim_end_matches('/').len()..]);
                }
            }
            value.to_owned()
        };
        let mut env: Vec<(String, String)> = vec![
            // The image's ENV (Dockerfile), under what the container sets.
            ("LEPTOS_SITE_ROOT".into(), self.site.display().to_string()),
            ("OPENCRANE_CHARTS_DIR".into(), root_charts()),
            ("OPENCRANE_LOG_FORMAT".into(), "json".into()),
            ("HOME".into(), mapped("/tmp")),
        ];
        for var in container.env.iter().flatten() {
            let value = self.resolve(namespace, pod, ip, spec, var).await?;
            if let Some(value) = value {
                env.retain(|(k, _)| *k != var.name);
                env.push((var.name.clone(), mapped(&value)));
            }
        }
        // The two the kubelet adds (see the module's documentation).
        env.push(("OPENCRANE_BIND_ADDRESS".into(), ip.to_owned()));
        env.push(("KUBECONFIG".into(), self.kubeconfig.display().to_string()));
        let mut command = Command::new(&self.binary);
        command
            .args(container.args.iter().flatten())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env)
            .current_dir(&root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
        let mut child = command.spawn().map_err(|e| format!("starting {}: {e}", self.binary.display()))?;
        for stream in [child.stdout.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
                       child.stderr.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>)]
            .into_iter()
            .flatten()
        {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut log = log.lock().unwrap();
                    log.extend_from_slice(&buf[..n]);
                    let excess = log.len().saturating_sub(1 << 20);
                    log.drain(..excess);
                }
            });
        }
        Ok(child)
    }

    async fn fill_volume(&self, namespace: &str, volume: &Volume, dir: &Path) -> Result<(), String> {
        let Some(source) = &volume.secret else { return Ok(()) };
        let name = source.secret_name.clone().unwrap_or_default();
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        let secret = secrets.get_opt(&name).await.map_err(|e| e.to_string())?;
        let Some(data) = secret.and_then(|s| s.data) else {
            return Err(format!("MountVolume.SetUp failed for volume \"{}\": secret \"{name}\" not found", volume.name));
        };
        let items: Vec<(String, String)> = match &source.items {
            Some(items) => items.iter().map(|i| (i.key.clone(), i.path.clone())).collect(),
            None => data.keys().map(|k| (k.clone(), k.clone())).collect(),
        };
        for (key, path) in items {
            let value = data.get(&key).ok_or_else(|| format!("secret \"{name}\" has no key {key}"))?;
            std::fs::write(dir.join(path), &value.0).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// One variable's value as the kubelet gives it (`None`: an optional reference that is absent).
    async fn resolve(
        &self,
        namespace: &str,
        pod: &str,
        ip: &str,
        spec: &PodSpec,
        var: &EnvVar,
    ) -> Result<Option<String>, String> {
        let Some(from) = &var.value_from else { return Ok(Some(var.value.clone().unwrap_or_default())) };
        if let Some(field) = &from.field_ref {
            return Ok(Some(match field.field_path.as_str() {
                "metadata.namespace" => namespace.to_owned(),
                "metadata.name" => pod.to_owned(),
                "spec.serviceAccountName" => spec.service_account_name.clone().unwrap_or_default(),
                "status.podIP" => ip.to_owned(),
                other => return Err(format!("the harness's kubelet does not play fieldRef {other}")),
            }));
        }
        if let Some(key_ref) = &from.secret_key_ref {
            let secrets: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
            let secret = secrets.get_opt(&key_ref.name).await.map_err(|e| e.to_string())?;
            let value = secret.and_then(|s| s.data).and_then(|d| d.get(&key_ref.key).cloned());
            return match value {
                Some(value) => Ok(Some(String::from_utf8_lossy(&value.0).into_owned())),
                None if key_ref.optional == Some(true) => Ok(None),
                None => Err(format!(
                    "CreateContainerConfigError: secret \"{}\" (key {}) not found for {}",
                    key_ref.name, key_ref.key, var.name
                )),
            };
        }
        Err(format!("the harness's kubelet does not play the valueFrom of {}", var.name))
    }
}

fn root_charts() -> String {
    root().join("charts").display().to_string()
}

fn next_ip() -> String {
    let n = NEXT_POD.fetch_add(1, Ordering::SeqCst);
    format!("127.0.{}.{}", 10 + n / 250, 1 + n % 250)
}

/// The container's HTTP port (the one named `http`, else the first).
fn http_port(container: &Container) -> i32 {
    let ports = container.ports.iter().flatten();
    ports.clone().find(|p| p.name.as_deref() == Some("http")).or_else(|| ports.clone().next()).map_or(8080, |p| p.container_port)
}

/// The status code of a plain `GET url` (an `http://ip:port/path` URL), or `None`.
pub async fn http_get_status(url: &str) -> Option<u16> {
    let (status, _) = http_get(url).await?;
    Some(status)
}

/// Status and body of a plain `GET url`.
pub async fn http_get(url: &str) -> Option<(u16, String)> {
    http(url, "GET", &[], None).await
}

/// One HTTP/1.1 request on a fresh connection: status and body.
pub async fn http(url: &str, method: &str, headers: &[(&str, &str)], body: Option<&str>) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
    let connect = tokio::net::TcpStream::connect(authority);
    let mut stream = tokio::time::timeout(Duration::from_secs(2), connect).await.ok()?.ok()?;
    let mut request = format!("{method} {path} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = body.unwrap_or_default();
    request.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await.ok()?.ok()?;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.get(9..12)?.parse().ok()?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { unchunk(body) } else { body.to_owned() };
    Some((status, body))
}

fn unchunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || tail.len() < size {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].trim_start_matches("\r\n");
    }
    out
}
