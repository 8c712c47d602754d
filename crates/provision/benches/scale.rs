//! `cargo bench -p opencrane-provision --bench scale` (run by `cargo xtask bench`, which passes
//! its PostgreSQL as `DATABASE_URL`): the fleet at scale, figures only. The reconcile worker and
//! the Kubernetes backend run against the fake API server (`opencrane-fake-kube`: no
//! kube-apiserver can run here) and the fake `helm`/`kubectl` executables, on a real fleet
//! database; the bench plays CloudNativePG and the silos (each namespace gets its database's app
//! Secret and its manager's Deployment up front, rolled out and ready; each fake `helm upgrade`
//! stamps its release fingerprint on that Deployment, as the real chart would).
//!
//! Prints: the time for a fleet to provision [`CUSTOMERS`] customers; the time for a restarted
//! fleet to re-converge all of them and the writes it sent the API server meanwhile (the target is
//! none); the time for [`BURST`] customers created in one transaction to become ready while the
//! fleet runs; and the resident memory of this process — the reconciler's: the fake API server,
//! which keeps every object and request it ever saw, runs in a process of its own
//! ([`FakeProcess`]) and its memory is printed apart.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    clippy::cast_possible_wrap,
    reason = "a benchmark binary: it prints figures, and a failure is the answer"
)]

use std::{
    io::{BufRead as _, BufReader, Write as _},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use kube::{Api, api::PostParams};
use opencrane_deploy::fake::Fakes;
use opencrane_fake_kube::FakeApiServer;
use opencrane_fleet_db::cluster_tenants::{self, DesiredState};
use opencrane_provision::{
    Backend,
    build::ClusterSettings,
    kubernetes::{KubernetesBackend, KubernetesSettings, client_for},
    worker,
};
use serde_json::json;
use sqlx::{PgPool, postgres::PgPoolOptions};

/// Customers of the restart figure (`SCALE_CUSTOMERS` overrides it for a quick look).
const CUSTOMERS: usize = 1_000;
/// Customers created at once while the fleet runs.
const BURST: usize = 100;

/// Plays Helm's effect on the manager Deployment: every fake `helm upgrade` since the last look
/// stamps the fingerprint it was given on its namespace's Deployment (metadata only, so the
/// rolled-out status stays true). Runs until the bench ends.
fn stamp_fingerprints(client: kube::Client, fakes: Arc<Fakes>) {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{Patch, PatchParams};
    tokio::spawn(async move {
        let mut seen = 0;
        loop {
            let calls = fakes.calls();
            for (_, args, _) in
                calls.iter().skip(seen).filter(|(tool, args, _)| tool == "helm" && args.iter().any(|a| a == "upgrade"))
            {
                let ns = args.iter().skip_while(|a| *a != "--namespace").nth(1).cloned().unwrap_or_default();
                let fingerprint = args
                    .iter()
                    .find_map(|a| a.strip_prefix("clustertenantManager.releaseFingerprint="))
                    .unwrap_or_default();
                let patch = json!({"metadata": {"annotations": {"opencrane.io/release-fingerprint": fingerprint}}});
                let _ = Api::<Deployment>::namespaced(client.clone(), &ns)
                    .patch("opencrane-silo-manager", &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
            }
            seen = calls.len();
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });
}

/// Plays CloudNativePG and Helm's effect for `name`: its namespace with the database's app
/// Secret and the manager's Deployment.
async fn silo_objects(client: &kube::Client, name: &str) {
    use k8s_openapi::api::{
        apps::v1::Deployment,
        core::v1::{Namespace, Secret},
    };
    let ns = format!("opencrane-{name}");
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns, "labels": {"opencrane.io/cluster-tenant": name}}}))
            .unwrap();
    let _ = Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await;
    let secret: Secret = serde_json::from_value(
        json!({"metadata": {"name": "opencrane-silo-db-app"}, "stringData": {"uri": "postgres://x"}}),
    )
    .unwrap();
    let _ = Api::<Secret>::namespaced(client.clone(), &ns).create(&PostParams::default(), &secret).await;
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "opencrane-silo-manager"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}}},
    }))
    .unwrap();
    let _ = Api::<Deployment>::namespaced(client.clone(), &ns).create(&PostParams::default(), &deployment).await;
}

async fn seed(pool: &PgPool, client: &kube::Client, names: impl Iterator<Item = String>) {
    let quota = json!({"cpu": "2"});
    let mut tx = pool.begin().await.unwrap();
    let mut all = Vec::new();
    for name in names {
        cluster_tenants::insert(&mut *tx, &name, &DesiredState::shared("Bench", &quota, "Retain")).await.unwrap();
        all.push(name);
    }
    for name in &all {
        silo_objects(client, name).await;
    }
    tx.commit().await.unwrap();
}

async fn ready(pool: &PgPool) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM cluster_tenants WHERE phase = 'ready' AND observed_generation = generation",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Waits until `done` holds (checked every 100 ms), at most ten minutes.
async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done().await {
        assert!(started.elapsed() < Duration::from_secs(600), "{what} took more than ten minutes");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    started.elapsed()
}

/// The resident memory of process `pid` (`self` for this one).
fn rss_mib(pid: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(f64::NAN);
    kib / 1024.0
}

/// Set in the environment of this binary run again as [`FakeProcess`].
const FAKE_API_ENV: &str = "OPENCRANE_SCALE_FAKE_API";

/// The fake API server in a process of its own: this binary run again with [`FAKE_API_ENV`]
/// ([`serve_fake`]). It prints its URL, then answers each line on its standard input with the
/// writes (every request but a GET) it has had so far, as one JSON line (or, for the line
/// `pod-lists`, how many times the manager's Pods were listed: once per readiness check); it ends
/// with its input.
struct FakeProcess {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    url: String,
}

impl FakeProcess {
    fn start() -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(FAKE_API_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("running the fake API server's process");
        let input = child.stdin.take().unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap());
        let mut url = String::new();
        output.read_line(&mut url).unwrap();
        Self { child, input, output, url: url.trim().to_owned() }
    }

    /// Every write so far as (method, path with query), in order.
    fn writes(&mut self) -> Vec<(String, String)> {
        writeln!(self.input, "writes").unwrap();
        self.input.flush().unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        serde_json::from_str(&line).expect("the fake API server's writes")
    }

    /// How many readiness checks listed a manager's Pods so far.
    fn pod_lists(&mut self) -> usize {
        writeln!(self.input, "pod-lists").unwrap();
        self.input.flush().unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        line.trim().parse().expect("the fake API server's count")
    }

    fn rss_mib(&self) -> f64 {
        rss_mib(&self.child.id().to_string())
    }
}

impl Drop for FakeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// [`FakeProcess`]'s side: serves the fake API server until standard input ends.
async fn serve_fake() {
    let fake = FakeApiServer::start().await.unwrap();
    // Plays the kubelet: every manager Deployment is rolled out and ready as it is created.
    fake.settle(
        "deployments",
        json!({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1}),
    );
    println!("{}", fake.url());
    tokio::task::spawn_blocking(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if line == "pod-lists" {
                let lists = fake.requests().iter().filter(|(m, p)| m == "GET" && p.contains("/pods?")).count();
                println!("{lists}");
                continue;
            }
            let writes: Vec<_> = fake.requests().into_iter().filter(|(method, _)| method != "GET").collect();
            println!("{}", serde_json::to_string(&writes).unwrap());
        }
    })
    .await
    .unwrap();
}

/// Runs the worker until the returned sender is dropped or sent to.
fn start(
    pool: &PgPool,
    backend: &Arc<KubernetesBackend>,
) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let backend: Arc<dyn Backend> = backend.clone();
    let stopped = async move {
        let _ = stopped.await;
    };
    let task = tokio::spawn(worker::run(pool.clone(), backend, None, stopped, worker::DRAIN));
    (stop, task)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os(FAKE_API_ENV).is_some() {
        return serve_fake().await;
    }
    let url =
        std::env::var("DATABASE_URL").expect("DATABASE_URL: a PostgreSQL server's URL (cargo xtask bench sets it)");
    let admin = PgPool::connect(&url).await.expect("connecting to DATABASE_URL");
    let _ = sqlx::query("DROP DATABASE IF EXISTS opencrane_scale").execute(&admin).await;
    sqlx::query("CREATE DATABASE opencrane_scale").execute(&admin).await.unwrap();
    let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
    let pool = PgPoolOptions::new().max_connections(4).connect_with(options.database("opencrane_scale")).await.unwrap();
    opencrane_db::FLEET_MIGRATOR.run(&pool).await.unwrap();

    let mut fake = FakeProcess::start();
    let client = client_for(&fake.url, Duration::from_secs(10)).unwrap();
    let default: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .create(&PostParams::default(), &default)
        .await
        .unwrap();
    let fakes = Arc::new(Fakes::new("scale-bench"));
    let mut cluster = ClusterSettings::new("example.com");
    cluster.ingress_ip = Some("203.0.113.7".parse().unwrap());
    let charts = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../charts");
    let mut settings = KubernetesSettings::new(cluster, "opencrane-system", charts);
    settings.tools = fakes.tools();
    stamp_fingerprints(client.clone(), fakes.clone());
    let backend = Arc::new(KubernetesBackend::new(client.clone(), settings));

    let customers: usize = std::env::var("SCALE_CUSTOMERS").ok().and_then(|n| n.parse().ok()).unwrap_or(CUSTOMERS);
    seed(&pool, &client, (0..customers).map(|i| format!("scale-{i:04}"))).await;
    let (stop, task) = start(&pool, &backend);
    let provisioned = until("provisioning", async || ready(&pool).await >= customers as i64).await;
    // The last customers' status and events follow their rows' readiness, and stopping the
    // worker aborts the passes under way: wait until the API server has had no write for a
    // second, so the restart's figure counts only what a converged fleet sends.
    let mut last_write = (fake.writes().len(), Instant::now());
    until("the writes to settle", async || {
        let now = fake.writes().len();
        if now != last_write.0 {
            last_write = (now, Instant::now());
        }
        last_write.1.elapsed() >= Duration::from_secs(1)
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap();

    // A restart: every customer is reconciled once more (each pass checks its silo's readiness).
    let (checks_before, writes_before) = (fake.pod_lists(), fake.writes().len());
    let (stop, task) = start(&pool, &backend);
    let restarted = until("the restart", async || fake.pod_lists() >= checks_before + customers).await;
    let restart_writes: Vec<_> = fake.writes().into_iter().skip(writes_before).collect();
    // What they were, by kind (method and path with the customer's name taken out).
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for (method, path) in &restart_writes {
        let path: String = path.split('?').next().unwrap_or_default().chars().filter(|c| !c.is_ascii_digit()).collect();
        *kinds.entry(format!("{method} {path}")).or_default() += 1;
    }
    let (rss, fake_rss) = (rss_mib("self"), fake.rss_mib());

    // A burst of customers created in one transaction while the fleet runs.
    seed(&pool, &client, (0..BURST).map(|i| format!("burst-{i:03}"))).await;
    let burst = until("the burst", async || ready(&pool).await >= (customers + BURST) as i64).await;
    let _ = stop.send(());
    task.await.unwrap();
    pool.close().await;
    let _ = sqlx::query("DROP DATABASE IF EXISTS opencrane_scale WITH (FORCE)").execute(&admin).await;

    println!(
        "fleet at scale      {customers} customers against the fake API server (worker concurrency {}):",
        worker::CONCURRENCY
    );
    println!("  provisioned from nothing in {:.1} s", provisioned.as_secs_f64());
    println!(
        "  a restart re-converged all of them in {:.1} s with {} writes to the API server",
        restarted.as_secs_f64(),
        restart_writes.len()
    );
    for (kind, n) in &kinds {
        println!("    {n} × {kind}");
    }
    println!("  {BURST} customers created at once were ready {:.1} s later", burst.as_secs_f64());
    println!(
        "  RSS {rss:.0} MiB: the reconciler's process (the fake API server, in a process of its own with every object and request it saw: {fake_rss:.0} MiB)"
    );
}
