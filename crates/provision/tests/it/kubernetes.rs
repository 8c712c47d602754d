//! The Kubernetes backend through the reconciler, against the fake API server
//! (`opencrane-fake-kube`: no kube-apiserver can run here), fake `kubectl`/`helm` executables
//! (`opencrane_deploy::fake`: no Helm binary either) and the real fleet schema. The test plays
//! CloudNativePG (it creates the database's app Secret) and the silo (a loopback listener that
//! answers `/readyz`). The fake kubectl is not wired to the fake API server, so the objects the
//! release's `kubectl apply` creates (the token Secret) are not in its inventory.

use crate::support;
use std::{
    sync::{
        Arc,
        atomic::{AtomicU16, Ordering},
    },
    time::Duration,
};

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, api::PostParams};
use opencrane_deploy::fake::Fakes;
use opencrane_fake_kube::FakeApiServer;
use opencrane_fleet_db::{cluster_tenants, provisioning};
use opencrane_provision::{
    StepId,
    build::ClusterSettings,
    kubernetes::{KubernetesBackend, KubernetesSettings, client_for},
    reconcile::{Outcome, reconcile},
};
use serde_json::json;
use sqlx::PgPool;

struct Rig {
    fake: FakeApiServer,
    fakes: Fakes,
    backend: KubernetesBackend,
    client: kube::Client,
    ready: Arc<AtomicU16>,
}

async fn rig(test: &str) -> Rig {
    rig_with(test, None).await
}

/// A rig whose `dns` step asks these probes whether the record resolves.
async fn rig_with(test: &str, dns_truth: Option<Arc<opencrane_provision::dns_truth::DnsTruth>>) -> Rig {
    let fake = FakeApiServer::start().await.unwrap();
    // Plays cert-manager: a vanity Certificate is issued as soon as it is applied (the test of the
    // dns step's wait for it overrides this).
    fake.settle("certificates", issued(true));
    let client = client_for(&fake.url(), Duration::from_secs(1)).unwrap();
    let fakes = Fakes::new(test);
    let ready = Arc::new(AtomicU16::new(200));
    let mut cluster = ClusterSettings::new("example.com");
    cluster.ingress_ip = Some("203.0.113.7".parse().unwrap());
    let charts = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../charts");
    let mut settings = KubernetesSettings::new(cluster, "opencrane-system", charts);
    settings.tools = fakes.tools();
    settings.dns_truth = dns_truth;
    let backend = KubernetesBackend::new(client.clone(), settings);
    // Events about cluster-scoped objects go to `default`, which a cluster always has.
    let default: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap();
    Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .create(&PostParams::default(), &default)
        .await
        .unwrap();
    Rig { fake, fakes, backend, client, ready }
}

/// A Certificate's status as cert-manager writes it, issued or still issuing.
fn issued(ready: bool) -> serde_json::Value {
    if ready {
        json!({"conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired"}]})
    } else {
        json!({"conditions": [{"type": "Ready", "status": "False", "reason": "DoesNotExist", "message": "Issuing certificate as Secret does not exist"}]})
    }
}

async fn seed(pool: &PgPool, name: &str, policy: &str) {
    let quota = json!({"cpu": "8", "pods": 50});
    let vanity = format!("portal.{name}.io");
    let desired = cluster_tenants::DesiredState {
        vanity_domain: Some(&vanity),
        silo_version: Some("0.3.1"),
        ..support::desired("Acme", &quota, policy)
    };
    support::seed(pool, name, &desired).await;
}

/// Plays CloudNativePG: the database's app Secret appears.
async fn database_comes_up(client: &kube::Client, name: &str) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &format!("opencrane-{name}"));
    let secret: Secret = serde_json::from_value(
        json!({"metadata": {"name": "opencrane-silo-db-app"}, "stringData": {"uri": "postgres://x"}}),
    )
    .unwrap();
    let _ = secrets.create(&PostParams::default(), &secret).await;
}

/// Plays Helm's effect and the kubelet's: once the fake helm ran an upgrade for `name`, the
/// manager's Deployment exists with the fingerprint that upgrade was given, and its status says
/// the current generation rolled out, ready or not as `rig.ready` says (200: ready).
async fn release_materialises(rig: &Rig, name: &str) {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{Patch, PatchParams};
    let ns = format!("opencrane-{name}");
    let upgrade = rig
        .fakes
        .calls()
        .into_iter()
        .rev()
        .find(|(tool, args, _)| tool == "helm" && args.iter().any(|a| a == "upgrade") && args.contains(&ns));
    let Some((_, args, _)) = upgrade else { return };
    let fingerprint =
        args.iter().find_map(|a| a.strip_prefix("clustertenantManager.releaseFingerprint=")).unwrap_or_default();
    let deployments: Api<Deployment> = Api::namespaced(rig.client.clone(), &ns);
    let manager = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "opencrane-silo-manager", "annotations": {"opencrane.io/release-fingerprint": fingerprint}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}}},
    });
    let applied = deployments
        .patch("opencrane-silo-manager", &PatchParams::apply("helm").force(), &Patch::Apply(&manager))
        .await
        .unwrap();
    let ready = i32::from(rig.ready.load(Ordering::SeqCst) == 200);
    let status = json!({"status": {"observedGeneration": applied.metadata.generation, "replicas": 1, "updatedReplicas": 1, "readyReplicas": ready}});
    deployments.patch_status("opencrane-silo-manager", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
}

/// Reconciles until converged (playing CloudNativePG when the database step waits, and Helm's
/// effect after an upgrade); returns the outcomes seen.
async fn until_converged(pool: &PgPool, rig: &Rig, name: &str) -> Vec<Outcome> {
    let mut seen = Vec::new();
    for _ in 0..6 {
        let outcome = reconcile(pool, &rig.backend, name).await.unwrap();
        release_materialises(rig, name).await;
        seen.push(outcome.clone());
        match outcome {
            Outcome::Converged => return seen,
            Outcome::Waiting(StepId::Database) => database_comes_up(&rig.client, name).await,
            _ => {}
        }
    }
    panic!("{name} did not converge: {seen:?}");
}

/// What exists besides the cluster's own `default` namespace and the events in it.
fn silo_objects(fake: &FakeApiServer) -> Vec<String> {
    fake.inventory().into_iter().filter(|p| !p.contains("namespaces/default")).collect()
}

fn helm_calls(fakes: &Fakes, verb: &str) -> usize {
    fakes.calls().iter().filter(|(tool, args, _)| tool == "helm" && args.iter().any(|a| a == verb)).count()
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_fresh_create_reaches_ready_and_a_converged_reconcile_changes_nothing(pool: PgPool) {
    let rig = rig("k8s-fresh").await;
    seed(&pool, "acme", "Retain").await;
    let outcomes = until_converged(&pool, &rig, "acme").await;
    assert_eq!(outcomes.first(), Some(&Outcome::Waiting(StepId::Database)), "waits for CloudNativePG without failing");
    let row = cluster_tenants::get(&pool, "acme").await.unwrap();
    assert_eq!(
        (row.phase.as_str(), row.silo_url.as_deref(), row.failed_attempts),
        ("ready", Some("https://acme.example.com"), 0)
    );
    let ns = "api/v1/namespaces/opencrane-acme";
    let mut expected = vec![
        "api/v1/namespaces/opencrane-acme".to_owned(),
        "apis/apps/v1/namespaces/opencrane-acme/deployments/opencrane-silo-manager".to_owned(),
        format!("{ns}/limitranges/opencrane-limits"),
        format!("{ns}/resourcequotas/opencrane-quota"),
        format!("{ns}/secrets/opencrane-fleet-token"),
        format!("{ns}/secrets/opencrane-silo-db-app"),
        "apis/cert-manager.io/v1/namespaces/opencrane-acme/certificates/opencrane-silo-vanity".to_owned(),
        "apis/externaldns.k8s.io/v1alpha1/namespaces/opencrane-acme/dnsendpoints/opencrane-silo".to_owned(),
        "apis/networking.k8s.io/v1/namespaces/opencrane-acme/networkpolicies/opencrane-default-deny".to_owned(),
        "apis/rbac.authorization.k8s.io/v1/namespaces/opencrane-acme/rolebindings/opencrane-fleet-silo-installer"
            .to_owned(),
        "apis/postgresql.cnpg.io/v1/namespaces/opencrane-acme/clusters/opencrane-silo-db".to_owned(),
    ];
    expected.sort();
    let mut inventory = silo_objects(&rig.fake);
    inventory.sort();
    assert_eq!(inventory, expected);
    let applied = rig.fake.object("/api/v1/namespaces/opencrane-acme").unwrap();
    assert_eq!(applied["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "restricted");
    let steps = provisioning::steps(&pool, "acme").await.unwrap();
    let floor = steps.iter().find(|s| s.step == StepId::NetworkPolicy.as_str()).unwrap();
    assert!(floor.message.contains("Cilium identity: not on this cluster"), "{}", floor.message);

    // The silo's own credential: in its Secret, and on the customer's row only as its SHA-256.
    let secret = rig.fake.object(&format!("/{ns}/secrets/opencrane-fleet-token")).unwrap();
    let token = serde_json::from_value::<k8s_openapi::ByteString>(secret["data"]["token"].clone()).unwrap();
    let token = String::from_utf8(token.0).unwrap();
    assert!(token.starts_with(opencrane_provision::credential::PREFIX));
    let issued = opencrane_fleet_db::silo_credentials::issued(&pool, "acme").await.unwrap().unwrap();
    assert_eq!(issued.sha256, opencrane_provision::credential::fingerprint(&token));
    let helm_args = rig.fakes.calls().into_iter().map(|(_, a, stdin)| format!("{a:?} {stdin:?}")).collect::<String>();
    assert!(!helm_args.contains(&token), "the credential never reaches a command line or stdin of helm/kubectl");

    // The release went through `opencrane deploy silo`'s code path, once, with the pin.
    assert_eq!(helm_calls(&rig.fakes, "upgrade"), 1);
    let upgrade =
        rig.fakes.calls().into_iter().find(|(t, a, _)| t == "helm" && a.contains(&"upgrade".to_owned())).unwrap().1;
    assert!(upgrade.iter().any(|a| a.ends_with("profiles/fleet-managed.yaml")), "{upgrade:?}");
    assert!(!upgrade.contains(&"cilium.enabled=true".to_owned()), "no Cilium here: {upgrade:?}");
    assert!(upgrade.iter().any(|a| a.ends_with("provisioner-values.json")), "{upgrade:?}");
    assert!(upgrade.contains(&"clustertenantManager.image.tag=0.3.1".to_owned()), "{upgrade:?}");

    // Converged: another reconcile (and the resource's mirror) reads and re-checks, sends no
    // write to the API server at all (issue 20: it sent 7 no-op server-side applies), changes no
    // object, runs no Helm upgrade and writes nothing to the fleet database.
    let versions = |fake: &FakeApiServer| -> Vec<String> {
        let mut all: Vec<String> = silo_objects(fake)
            .iter()
            .map(|p| fake.object(&format!("/{p}")).unwrap()["metadata"]["resourceVersion"].to_string())
            .collect();
        all.sort();
        all
    };
    use opencrane_provision::Backend as _;
    rig.backend.publish(&pool, "acme").await.unwrap();
    let before = versions(&rig.fake);
    let requests_before = rig.fake.requests().len();
    let row_before = cluster_tenants::get(&pool, "acme").await.unwrap();
    assert_eq!(reconcile(&pool, &rig.backend, "acme").await.unwrap(), Outcome::Converged);
    let calls = rig.fake.requests().len() - requests_before;
    eprintln!("API calls per converged reconcile: {calls}");
    // The readiness step reads the manager's Deployment and lists its Pods (the cluster's view,
    // which also names a manager that does not start).
    assert!(calls <= 14, "{calls} API calls for a converged reconcile");
    rig.backend.publish(&pool, "acme").await.unwrap();
    let writes: Vec<(String, String)> =
        rig.fake.requests()[requests_before..].iter().filter(|(m, _)| m != "GET").cloned().collect();
    assert!(writes.is_empty(), "a converged reconcile wrote: {writes:?}");
    assert_eq!(versions(&rig.fake), before, "a converged reconcile changed an object");
    assert_eq!(helm_calls(&rig.fakes, "upgrade"), 1, "no second Helm upgrade");
    assert_eq!(cluster_tenants::get(&pool, "acme").await.unwrap(), row_before);

    // A customer with neither quota nor vanity domain: what is not wanted is looked for, and a
    // converged pass deletes nothing (it sent a DELETE of the absent objects on every pass).
    let empty = json!({});
    support::seed(&pool, "plain", &support::desired("Plain", &empty, "Retain")).await;
    database_comes_up(&rig.client, "plain").await;
    until_converged(&pool, &rig, "plain").await;
    rig.backend.publish(&pool, "plain").await.unwrap();
    let requests_before = rig.fake.requests().len();
    assert_eq!(reconcile(&pool, &rig.backend, "plain").await.unwrap(), Outcome::Converged);
    rig.backend.publish(&pool, "plain").await.unwrap();
    let writes: Vec<(String, String)> =
        rig.fake.requests()[requests_before..].iter().filter(|(m, _)| m != "GET").cloned().collect();
    assert!(writes.is_empty(), "a converged reconcile wrote: {writes:?}");
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_fault_at_each_step_is_reported_there_and_converges_without_duplicates(pool: PgPool) {
    let cases: [(StepId, &str); 5] = [
        (StepId::Namespace, "/api/v1/namespaces/opencrane-"),
        (StepId::Quota, "/resourcequotas/"),
        (StepId::NetworkPolicy, "/networkpolicies/"),
        (StepId::Database, "/clusters/"),
        (StepId::Dns, "/dnsendpoints/"),
    ];
    for (i, (step, path)) in cases.into_iter().enumerate() {
        for fault in ["500", "409", "timeout"] {
            let name = format!("f{i}-{fault}");
            let rig = rig(&format!("k8s-{name}")).await;
            seed(&pool, &name, "Retain").await;
            match fault {
                "timeout" => rig.fake.stall("PATCH", path, Duration::from_millis(1500), 1),
                code => rig.fake.fail("PATCH", path, code.parse().unwrap(), 1),
            }
            let mut first = reconcile(&pool, &rig.backend, &name).await.unwrap();
            if first == Outcome::Waiting(StepId::Database) {
                database_comes_up(&rig.client, &name).await;
                first = reconcile(&pool, &rig.backend, &name).await.unwrap();
            }
            assert_eq!(first, Outcome::Failed(step), "{name}");
            let steps = provisioning::steps(&pool, &name).await.unwrap();
            let failed = steps.iter().find(|s| s.step == step.as_str()).unwrap();
            let expected_reason = if fault == "timeout" { "Timeout".to_owned() } else { format!("Api{fault}") };
            assert_eq!(
                (failed.state.as_str(), failed.reason.as_str()),
                ("failed", expected_reason.as_str()),
                "{name}: {}",
                failed.message
            );
            assert!(failed.action.as_deref().is_some_and(|a| !a.is_empty()), "{name}: an action");
            // The fault cleared (it fired once); Retry converges with one object each and one install.
            provisioning::request_retry(&pool, &name, Some(step.as_str())).await.unwrap();
            until_converged(&pool, &rig, &name).await;
            // One object of each kind, but the two Secrets (the database's and the credential's).
            let mut kinds: Vec<String> =
                silo_objects(&rig.fake).iter().map(|p| p.rsplit('/').nth(1).unwrap().to_owned()).collect();
            kinds.sort();
            let mut unique = kinds.clone();
            unique.dedup();
            unique.push("secrets".into());
            unique.sort();
            assert_eq!(kinds, unique, "{name}: an object exists twice");
            assert_eq!(helm_calls(&rig.fakes, "upgrade"), 1, "{name}: one install");
        }
    }
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_failing_helm_upgrade_puts_helms_words_in_the_condition(pool: PgPool) {
    let rig = rig("k8s-helm").await;
    seed(&pool, "acme", "Retain").await;
    rig.fakes.fail_on("helm", "upgrade");
    let mut outcome = reconcile(&pool, &rig.backend, "acme").await.unwrap();
    if outcome == Outcome::Waiting(StepId::Database) {
        database_comes_up(&rig.client, "acme").await;
        outcome = reconcile(&pool, &rig.backend, "acme").await.unwrap();
    }
    assert_eq!(outcome, Outcome::Failed(StepId::Release));
    let steps = provisioning::steps(&pool, "acme").await.unwrap();
    let release = steps.iter().find(|s| s.step == "release").unwrap();
    assert!(release.message.contains("UPGRADE FAILED"), "{}", release.message);
    assert_eq!(cluster_tenants::get(&pool, "acme").await.unwrap().phase, "failed");
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_silo_that_does_not_answer_yet_is_waited_for_not_failed(pool: PgPool) {
    let rig = rig("k8s-ready").await;
    seed(&pool, "acme", "Retain").await;
    rig.ready.store(503, Ordering::SeqCst);
    let mut outcome = reconcile(&pool, &rig.backend, "acme").await.unwrap();
    if outcome == Outcome::Waiting(StepId::Database) {
        database_comes_up(&rig.client, "acme").await;
        outcome = reconcile(&pool, &rig.backend, "acme").await.unwrap();
    }
    assert_eq!(outcome, Outcome::Waiting(StepId::Readiness));
    let row = cluster_tenants::get(&pool, "acme").await.unwrap();
    assert_eq!((row.phase.as_str(), row.failed_attempts), ("provisioning", 0));
    rig.ready.store(200, Ordering::SeqCst);
    release_materialises(&rig, "acme").await;
    assert_eq!(reconcile(&pool, &rig.backend, "acme").await.unwrap(), Outcome::Converged);
}

/// A namespace `opencrane-<name>` that exists without this customer's ownership label (another
/// customer's retained silo, or something else entirely) is never taken over: the first step
/// fails saying why, and nothing is applied in it.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_namespace_that_is_not_this_customers_is_never_taken_over(pool: PgPool) {
    let rig = rig("k8s-foreign-ns").await;
    let foreign: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": "opencrane-acme", "labels": {"team": "payments"}}}))
            .unwrap();
    let namespaces = Api::<k8s_openapi::api::core::v1::Namespace>::all(rig.client.clone());
    namespaces.create(&PostParams::default(), &foreign).await.unwrap();
    seed(&pool, "acme", "Retain").await;
    assert_eq!(reconcile(&pool, &rig.backend, "acme").await.unwrap(), Outcome::Failed(StepId::Namespace));
    let steps = opencrane_fleet_db::provisioning::steps(&pool, "acme").await.unwrap();
    let first = steps.iter().find(|s| s.step == "namespace").unwrap();
    assert_eq!((first.state.as_str(), first.reason.as_str()), ("failed", "NamespaceNotOwned"), "{}", first.message);
    let kept = namespaces.get("opencrane-acme").await.unwrap();
    assert_eq!(kept.metadata.labels.unwrap().get("opencrane.io/cluster-tenant"), None, "the namespace was not touched");
    assert_eq!(silo_objects(&rig.fake), ["api/v1/namespaces/opencrane-acme"], "nothing else was applied");
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn deleting_at_any_step_leaves_nothing_but_what_retain_keeps(pool: PgPool) {
    let stops: [(StepId, &str); 5] = [
        (StepId::Quota, "/resourcequotas/"),
        (StepId::NetworkPolicy, "/networkpolicies/"),
        (StepId::Database, "/clusters/"),
        (StepId::Dns, "/dnsendpoints/"),
        (StepId::Readiness, ""),
    ];
    for policy in ["Retain", "Delete"] {
        for (i, (step, path)) in stops.into_iter().enumerate() {
            let name = format!("d{i}-{}", policy.to_lowercase());
            let rig = rig(&format!("k8s-{name}")).await;
            seed(&pool, &name, policy).await;
            // Provisioning stops at `step` (a fault, or a silo that never answers).
            if path.is_empty() {
                rig.ready.store(503, Ordering::SeqCst);
            } else {
                rig.fake.fail("PATCH", path, 500, 100);
            }
            for _ in 0..3 {
                if reconcile(&pool, &rig.backend, &name).await.unwrap() == Outcome::Waiting(StepId::Database) {
                    database_comes_up(&rig.client, &name).await;
                }
            }
            rig.fake.heal();
            provisioning::request_deletion(&pool, &name).await.unwrap();
            let mut outcome = Outcome::Gone;
            for _ in 0..5 {
                outcome = reconcile(&pool, &rig.backend, &name).await.unwrap();
                if outcome == Outcome::Deleted {
                    break;
                }
            }
            assert_eq!(outcome, Outcome::Deleted, "{name}");
            let left = silo_objects(&rig.fake);
            let database_made = i >= 3;
            let kept: Vec<String> = if policy == "Retain" && database_made {
                let ns = format!("opencrane-{name}");
                let mut kept = vec![
                    format!("api/v1/namespaces/{ns}"),
                    format!("api/v1/namespaces/{ns}/secrets/opencrane-silo-db-app"),
                    format!("apis/postgresql.cnpg.io/v1/namespaces/{ns}/clusters/opencrane-silo-db"),
                ];
                kept.sort();
                kept
            } else {
                Vec::new()
            };
            let mut left_sorted = left.clone();
            left_sorted.sort();
            assert_eq!(left_sorted, kept, "{name} (stopped at {step:?})");
            assert!(matches!(cluster_tenants::get(&pool, &name).await, Err(opencrane_db::Error::NotFound)));
        }
    }
}

/// The ClusterTenant resource mirrors the fleet database: spec, finalizer and one condition per
/// step while provisioning; deletion marks it and the finalizer holds it until the teardown ends.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn the_resource_mirrors_the_fleet_database_and_is_held_until_the_teardown_ends(pool: PgPool) {
    use opencrane_crd::cluster_tenant::{ClusterTenant, Phase};
    use opencrane_provision::Backend as _;
    let rig = rig("k8s-mirror").await;
    seed(&pool, "acme", "Delete").await;
    let resources: Api<ClusterTenant> = Api::all(rig.client.clone());

    // While waiting for the database, the resource already tells the story.
    assert_eq!(reconcile(&pool, &rig.backend, "acme").await.unwrap(), Outcome::Waiting(StepId::Database));
    rig.backend.publish(&pool, "acme").await.unwrap();
    let waiting = resources.get("acme").await.unwrap();
    assert_eq!(waiting.spec.display_name, "Acme");
    assert_eq!(waiting.metadata.finalizers.as_deref(), Some(&["opencrane.io/silo".to_owned()][..]));
    let status = waiting.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Provisioning));
    let database = status.conditions.iter().find(|c| c.type_ == "DatabaseReady").unwrap();
    assert_eq!((database.status.as_str(), database.reason.as_str()), ("Unknown", "Starting"));
    assert_eq!(status.observed_generation, None, "not converged yet");

    until_converged(&pool, &rig, "acme").await;
    rig.backend.publish(&pool, "acme").await.unwrap();
    let ready = resources.get("acme").await.unwrap();
    let status = ready.status.clone().unwrap();
    assert_eq!(status.phase, Some(Phase::Ready));
    assert_eq!(status.observed_generation, ready.metadata.generation);
    assert_eq!(status.silo_url.as_deref(), Some("https://acme.example.com"));
    assert_eq!(status.conditions.len(), 9, "Ready and one per step");
    assert!(status.conditions.iter().any(|c| c.type_ == "Ready"));
    assert!(status.conditions.iter().all(|c| c.status == "True"), "{:?}", status.conditions);
    let identity = status.conditions.iter().find(|c| c.type_ == "IdentityReady").unwrap();
    assert_eq!(identity.reason, "NotConfigured", "no Zitadel in this test: skipped, which satisfies Ready");

    // Publishing a converged state again changes nothing.
    rig.backend.publish(&pool, "acme").await.unwrap();
    assert_eq!(resources.get("acme").await.unwrap().metadata.resource_version, ready.metadata.resource_version);

    // Deletion: the resource is marked (held by the finalizer) until the teardown finished.
    provisioning::request_deletion(&pool, "acme").await.unwrap();
    rig.backend.publish(&pool, "acme").await.unwrap();
    let marked = resources.get("acme").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.status.unwrap().phase, Some(Phase::Deleting));
    let mut outcome = Outcome::Gone;
    for _ in 0..5 {
        outcome = reconcile(&pool, &rig.backend, "acme").await.unwrap();
        if outcome == Outcome::Deleted {
            break;
        }
    }
    assert_eq!(outcome, Outcome::Deleted);
    rig.backend.publish(&pool, "acme").await.unwrap();
    assert!(resources.get("acme").await.unwrap_err().to_string().contains("404"), "the resource is gone");
    assert!(silo_objects(&rig.fake).is_empty(), "{:?}", rig.fake.inventory());
    // `kubectl describe` tells the story: an event per step transition, warnings for none here.
    let events: Vec<String> =
        rig.fake.inventory().into_iter().filter(|p| p.contains("namespaces/default/events/")).collect();
    let reasons: Vec<String> = events
        .iter()
        .filter_map(|p| rig.fake.object(&format!("/{p}")))
        .map(|e| e["reason"].as_str().unwrap_or_default().to_owned())
        .collect();
    for expected in [
        "NamespaceApplied",
        "DatabaseStarting",
        "DatabaseReady",
        "ReleaseInstalled",
        "SiloReady",
        "DeletionStarted",
        "TornDown",
    ] {
        assert!(reasons.iter().any(|r| r == expected), "no {expected} event in {reasons:?}");
    }
    let database = events
        .iter()
        .filter_map(|p| rig.fake.object(&format!("/{p}")))
        .find(|e| e["reason"] == "DatabaseStarting")
        .unwrap();
    assert_eq!(database["regarding"]["kind"], "ClusterTenant");
    assert!(database["note"].as_str().unwrap().contains("CloudNativePG"), "{database}");
}

/// With the fleet's DNS probes, the `dns` step waits (a running step saying what it sees, not a
/// failure) until the record resolves at the zone's nameservers: a real BIND 9 on loopback, the
/// record added with an RFC 2136 update as external-dns' rfc2136 provider would.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn the_dns_step_waits_until_the_record_resolves(pool: PgPool) {
    use opencrane_provision::{
        dns_truth::{DnsTruth, DnsTruthSettings},
        probe::bind::Bind,
    };
    let bind = Bind::start("example.com").unwrap();
    let truth = DnsTruth::new(DnsTruthSettings {
        base_domain: "example.com".into(),
        ingress_ip: Some("203.0.113.7".parse().unwrap()),
        nameservers: vec![bind.addr],
        tls_port: 443,
        timeout: Duration::from_secs(2),
        concurrency: 1,
        interval: Duration::ZERO,
    });
    let rig = rig_with("dns-wait", Some(Arc::new(truth))).await;
    seed(&pool, "acme", "Delete").await;
    let mut waited = false;
    for _ in 0..6 {
        match reconcile(&pool, &rig.backend, "acme").await.unwrap() {
            Outcome::Waiting(StepId::Database) => database_comes_up(&rig.client, "acme").await,
            Outcome::Waiting(StepId::Dns) => {
                waited = true;
                break;
            }
            other => panic!("expected the dns step to wait for the record, got {other:?}"),
        }
    }
    assert!(waited, "the dns step never waited");
    let steps = provisioning::steps(&pool, "acme").await.unwrap();
    let dns = steps.iter().find(|s| s.step == "dns").unwrap();
    assert_eq!((dns.state.as_str(), dns.reason.as_str()), ("running", "WaitingForDns"), "{dns:?}");
    assert!(dns.message.contains("acme.example.com") && dns.message.contains("no address yet"), "{}", dns.message);
    assert_eq!(cluster_tenants::get(&pool, "acme").await.unwrap().failed_attempts, 0, "a wait is no failure");

    bind.set_address("acme.example.com", "198.51.100.9".parse().unwrap());
    assert_eq!(reconcile(&pool, &rig.backend, "acme").await.unwrap(), Outcome::Waiting(StepId::Dns));
    let steps = provisioning::steps(&pool, "acme").await.unwrap();
    let dns = steps.iter().find(|s| s.step == "dns").unwrap();
    assert!(dns.message.contains("answers 198.51.100.9"), "a wrong address is named: {}", dns.message);

    bind.set_address("acme.example.com", "203.0.113.7".parse().unwrap());
    let seen = until_converged(&pool, &rig, "acme").await;
    assert_eq!(seen.last(), Some(&Outcome::Converged));
    let steps = provisioning::steps(&pool, "acme").await.unwrap();
    assert_eq!(steps.iter().find(|s| s.step == "dns").unwrap().state, "done");

    // Once done for this generation, a routine reconcile does not wait again.
    bind.delete("acme.example.com");
    assert_eq!(reconcile(&pool, &rig.backend, "acme").await.unwrap(), Outcome::Converged);

    // Nameservers the fleet cannot ask do not hold a new silo back; the step says so.
    let mut bind = bind;
    bind.stop();
    seed(&pool, "beta", "Delete").await;
    assert_eq!(until_converged(&pool, &rig, "beta").await.last(), Some(&Outcome::Converged));
    let steps = provisioning::steps(&pool, "beta").await.unwrap();
    let dns = steps.iter().find(|s| s.step == "dns").unwrap();
    assert!(dns.message.contains("could not be checked"), "{}", dns.message);
}

/// With a vanity domain the `dns` step also waits until cert-manager reports the vanity
/// Certificate Ready (cert-manager played through the status subresource, as it writes it), and
/// the DNS truth shows that condition beside the served certificate.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn the_dns_step_waits_for_the_vanity_certificate_and_the_truth_shows_its_condition(pool: PgPool) {
    use opencrane_provision::dns_truth::{DnsTruth, DnsTruthSettings};
    let rig = rig("cert-wait").await;
    rig.fake.settle("certificates", issued(false));
    seed(&pool, "acme", "Delete").await;
    let mut waited = false;
    for _ in 0..6 {
        match reconcile(&pool, &rig.backend, "acme").await.unwrap() {
            Outcome::Waiting(StepId::Database) => database_comes_up(&rig.client, "acme").await,
            Outcome::Waiting(StepId::Dns) => {
                waited = true;
                break;
            }
            other => panic!("expected the dns step to wait for the certificate, got {other:?}"),
        }
    }
    assert!(waited, "the dns step never waited");
    let steps = provisioning::steps(&pool, "acme").await.unwrap();
    let dns = steps.iter().find(|s| s.step == "dns").unwrap();
    assert_eq!((dns.state.as_str(), dns.reason.as_str()), ("running", "WaitingForCertificate"), "{dns:?}");
    assert!(
        dns.message.contains("portal.acme.io") && dns.message.contains("Issuing certificate as Secret does not exist"),
        "{}",
        dns.message
    );

    // The DNS truth reads the same condition (nameservers unreachable here: only the certificate
    // part matters).
    let truth = DnsTruth::new(DnsTruthSettings {
        base_domain: "example.com".into(),
        ingress_ip: Some("127.0.0.1".parse().unwrap()),
        nameservers: vec![format!("127.0.0.1:{}", support::free_port()).parse().unwrap()],
        tls_port: support::free_port(),
        timeout: Duration::from_millis(500),
        concurrency: 1,
        interval: Duration::ZERO,
    })
    .with_cluster(rig.client.clone());
    let rows = truth.check("acme", Some("portal.acme.io")).await;
    assert_eq!(rows.len(), 2);
    assert!(rows[0].certificate.as_ref().unwrap().get("certManager").is_none(), "the canonical host has none");
    let cert_manager = &rows[1].certificate.as_ref().unwrap()["certManager"];
    assert_eq!(cert_manager["ready"], false, "{cert_manager}");
    assert!(cert_manager["text"].as_str().unwrap().starts_with("not ready: DoesNotExist"), "{cert_manager}");

    // cert-manager issues it: the step finishes, the silo converges, the truth says ready.
    let certificates: Api<kube::api::DynamicObject> = Api::namespaced_with(
        rig.client.clone(),
        "opencrane-acme",
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("cert-manager.io", "v1", "Certificate"),
            "certificates",
        ),
    );
    let status = json!({ "status": issued(true) });
    certificates
        .patch_status("opencrane-silo-vanity", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(until_converged(&pool, &rig, "acme").await.last(), Some(&Outcome::Converged));
    let rows = truth.check("acme", Some("portal.acme.io")).await;
    assert_eq!(rows[1].certificate.as_ref().unwrap()["certManager"]["ready"], true);
}

/// On a cluster running Cilium (its CiliumNetworkPolicy CRD exists, discovered rather than
/// configured), the `networkPolicy` step adds the identity layer's default deny, the checklist
/// says which layers are active, the release renders its identity policies, and a retained
/// teardown still removes the policy. Without the CRD the first test's silo has none of it.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn on_a_cilium_cluster_the_identity_layer_is_applied_and_reported(pool: PgPool) {
    use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
    let rig = rig("k8s-cilium").await;
    let crd = ApiResource::from_gvk(&GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"));
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "ciliumnetworkpolicies.cilium.io"},
        "spec": {"group": "cilium.io", "names": {"kind": "CiliumNetworkPolicy", "plural": "ciliumnetworkpolicies"}, "scope": "Namespaced"},
    }))
    .unwrap();
    Api::<DynamicObject>::all_with(rig.client.clone(), &crd).create(&PostParams::default(), &object).await.unwrap();

    seed(&pool, "acme", "Retain").await;
    until_converged(&pool, &rig, "acme").await;
    let path = "/apis/cilium.io/v2/namespaces/opencrane-acme/ciliumnetworkpolicies/opencrane-identity-default-deny";
    let policy = rig.fake.object(path).expect("the identity layer's default deny");
    assert_eq!(policy["spec"]["endpointSelector"], json!({}));
    assert_eq!((policy["spec"]["ingress"].clone(), policy["spec"]["egress"].clone()), (json!([{}]), json!([{}])));
    let steps = provisioning::steps(&pool, "acme").await.unwrap();
    let step = steps.iter().find(|s| s.step == StepId::NetworkPolicy.as_str()).unwrap();
    assert!(
        step.message.contains("NetworkPolicy floor ✓, Cilium identity ✓, mutual auth required"),
        "{}",
        step.message
    );
    let upgrade =
        rig.fakes.calls().into_iter().find(|(t, a, _)| t == "helm" && a.contains(&"upgrade".to_owned())).unwrap().1;
    assert!(upgrade.contains(&"cilium.enabled=true".to_owned()), "{upgrade:?}");

    provisioning::request_deletion(&pool, "acme").await.unwrap();
    for _ in 0..5 {
        if reconcile(&pool, &rig.backend, "acme").await.unwrap() == Outcome::Deleted {
            break;
        }
    }
    assert!(rig.fake.object("/api/v1/namespaces/opencrane-acme").is_some(), "Retain keeps the namespace");
    assert!(rig.fake.object(path).is_none(), "the identity policy went with the teardown");
}
