//! Conformance of the fake API server with the behaviour the Kubernetes API documentation
//! describes, for each semantic the fleet's controller relies on — exercised through the real
//! kube-rs client, as the controller will use it. A test here failing means the fake drifted
//! from Kubernetes, not that the controller is wrong.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed step fails the test")]

use std::time::Duration;

use futures_util::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
    runtime::watcher,
};
use opencrane_crd::cluster_tenant::ClusterTenant;
use opencrane_fake_kube::FakeApiServer;
use serde_json::json;

fn client(fake: &FakeApiServer) -> Client {
    Client::try_from(kube::Config::new(fake.url().parse().unwrap())).unwrap()
}

fn code(err: &kube::Error) -> (u16, String) {
    match err {
        kube::Error::Api(status) => (status.code, status.reason.clone()),
        other => panic!("not an API error: {other}"),
    }
}

fn namespace(name: &str) -> Namespace {
    serde_json::from_value(json!({"metadata": {"name": name}})).unwrap()
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

fn cluster_tenant(name: &str, display: &str) -> serde_json::Value {
    json!({
        "apiVersion": "opencrane.io/v1alpha1",
        "kind": "ClusterTenant",
        "metadata": {"name": name},
        "spec": {"displayName": display},
    })
}

/// Create, get, list; a second create of the same name is 409 AlreadyExists (API concepts:
/// "Create … if the object already exists, 409").
#[tokio::test]
async fn create_get_list_and_already_exists() {
    let fake = FakeApiServer::start().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client(&fake));
    let created = namespaces.create(&PostParams::default(), &namespace("acme")).await.unwrap();
    assert!(created.metadata.uid.is_some() && created.metadata.resource_version.is_some());
    assert_eq!(namespaces.get("acme").await.unwrap().metadata.uid, created.metadata.uid);
    let list = namespaces.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    let again = namespaces.create(&PostParams::default(), &namespace("acme")).await.unwrap_err();
    assert_eq!(code(&again), (409, "AlreadyExists".into()));
    let missing = namespaces.get("nope").await.unwrap_err();
    assert_eq!(code(&missing), (404, "NotFound".into()));
}

/// A namespaced object needs its namespace (404 otherwise), and a label selector filters lists.
#[tokio::test]
async fn namespaced_objects_need_their_namespace_and_lists_filter_by_label() {
    let fake = FakeApiServer::start().await.unwrap();
    let c = client(&fake);
    let maps: Api<ConfigMap> = Api::namespaced(c.clone(), "acme");
    let err = maps.create(&PostParams::default(), &config_map("one")).await.unwrap_err();
    assert_eq!(code(&err).0, 404);
    Api::<Namespace>::all(c.clone()).create(&PostParams::default(), &namespace("acme")).await.unwrap();
    let mut labelled = config_map("two");
    labelled.metadata.labels = Some([("team".to_owned(), "a".to_owned())].into());
    maps.create(&PostParams::default(), &config_map("one")).await.unwrap();
    maps.create(&PostParams::default(), &labelled).await.unwrap();
    let selected = maps.list(&ListParams::default().labels("team=a")).await.unwrap();
    assert_eq!(selected.items.iter().map(|m| m.metadata.name.clone().unwrap()).collect::<Vec<_>>(), ["two"]);
    let by_name = maps.list(&ListParams::default().fields("metadata.name=one")).await.unwrap();
    assert_eq!(by_name.items.len(), 1);
}

/// Optimistic concurrency: a replace carrying a stale resourceVersion is 409 Conflict.
#[tokio::test]
async fn a_replace_with_a_stale_resource_version_conflicts() {
    let fake = FakeApiServer::start().await.unwrap();
    let c = client(&fake);
    Api::<Namespace>::all(c.clone()).create(&PostParams::default(), &namespace("acme")).await.unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(c, "acme");
    let first = maps.create(&PostParams::default(), &config_map("cm")).await.unwrap();
    let mut changed = first.clone();
    changed.data = Some([("k".to_owned(), "w".to_owned())].into());
    let replaced = maps.replace("cm", &PostParams::default(), &changed).await.unwrap();
    assert_ne!(replaced.metadata.resource_version, first.metadata.resource_version);
    let stale = maps.replace("cm", &PostParams::default(), &changed).await.unwrap_err();
    assert_eq!(code(&stale), (409, "Conflict".into()));
}

/// Server-side apply creates or updates; `metadata.generation` moves only when the spec changes
/// (not for metadata or status); the main resource ignores status and `/status` ignores the rest.
#[tokio::test]
async fn apply_creates_then_updates_and_generation_follows_the_spec_only() {
    let fake = FakeApiServer::start().await.unwrap();
    let tenants: Api<ClusterTenant> = Api::all(client(&fake));
    let apply = PatchParams::apply("test-manager").force();
    let created = tenants.patch("acme", &apply, &Patch::Apply(cluster_tenant("acme", "Acme"))).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let same = tenants.patch("acme", &apply, &Patch::Apply(cluster_tenant("acme", "Acme"))).await.unwrap();
    assert_eq!(same.metadata.resource_version, created.metadata.resource_version, "an unchanged apply is no write");
    let mut labelled = cluster_tenant("acme", "Acme");
    labelled["metadata"]["labels"] = json!({"x": "y"});
    let relabelled = tenants.patch("acme", &apply, &Patch::Apply(labelled)).await.unwrap();
    assert_eq!(relabelled.metadata.generation, Some(1), "metadata is not spec");
    let changed = tenants.patch("acme", &apply, &Patch::Apply(cluster_tenant("acme", "Acme Two"))).await.unwrap();
    assert_eq!(changed.metadata.generation, Some(2));

    let status = json!({"status": {"phase": "ready", "observedGeneration": 2}});
    let with_status = tenants.patch_status("acme", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    assert_eq!(with_status.metadata.generation, Some(2), "status is not spec");
    assert_eq!(with_status.status.unwrap().observed_generation, Some(2));
    let mut sneaky = cluster_tenant("acme", "Acme Two");
    sneaky["status"] = json!({"phase": "failed"});
    let main = tenants.patch("acme", &apply, &Patch::Apply(sneaky)).await.unwrap();
    assert_eq!(main.status.unwrap().observed_generation, Some(2), "the main resource ignores status");
    let spec_via_status = json!({"spec": {"displayName": "Changed"}});
    let ignored = tenants.patch_status("acme", &PatchParams::default(), &Patch::Merge(&spec_via_status)).await.unwrap();
    assert_eq!(ignored.spec.display_name, "Acme Two", "/status ignores the spec");
}

/// Finalizers: a delete only sets `deletionTimestamp` while finalizers remain; removing the last
/// one removes the object.
#[tokio::test]
async fn finalizers_hold_a_deletion_until_the_last_one_is_removed() {
    let fake = FakeApiServer::start().await.unwrap();
    let tenants: Api<ClusterTenant> = Api::all(client(&fake));
    let mut object = cluster_tenant("acme", "Acme");
    object["metadata"]["finalizers"] = json!(["opencrane.io/silo"]);
    tenants.patch("acme", &PatchParams::apply("m"), &Patch::Apply(object)).await.unwrap();
    tenants.delete("acme", &DeleteParams::default()).await.unwrap();
    let marked = tenants.get("acme").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    // (kube-runtime's finalizer helper sends a JSON patch with a `test` op; the unit tests cover
    // that patch type.)
    let remove = json!({"metadata": {"finalizers": []}});
    tenants.patch("acme", &PatchParams::default(), &Patch::Merge(&remove)).await.unwrap();
    assert_eq!(code(&tenants.get("acme").await.unwrap_err()).0, 404);
}

/// Deleting a namespace: it terminates (no new objects: 403), its objects are deleted (honouring
/// their finalizers), and it disappears when empty.
#[tokio::test]
async fn deleting_a_namespace_takes_its_objects_and_waits_for_their_finalizers() {
    let fake = FakeApiServer::start().await.unwrap();
    let c = client(&fake);
    let namespaces: Api<Namespace> = Api::all(c.clone());
    namespaces.create(&PostParams::default(), &namespace("acme")).await.unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(c, "acme");
    maps.create(&PostParams::default(), &config_map("plain")).await.unwrap();
    let mut held = config_map("held");
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    maps.create(&PostParams::default(), &held).await.unwrap();

    namespaces.delete("acme", &DeleteParams::default()).await.unwrap();
    let terminating = namespaces.get("acme").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(terminating.status.unwrap().phase.as_deref(), Some("Terminating"));
    assert_eq!(code(&maps.get("plain").await.unwrap_err()).0, 404);
    assert!(maps.get("held").await.unwrap().metadata.deletion_timestamp.is_some());
    let refused = maps.create(&PostParams::default(), &config_map("late")).await.unwrap_err();
    assert_eq!(code(&refused).0, 403);

    let release = json!({"metadata": {"finalizers": null}});
    maps.patch("held", &PatchParams::default(), &Patch::Merge(&release)).await.unwrap();
    assert_eq!(code(&namespaces.get("acme").await.unwrap_err()).0, 404, "an empty terminating namespace goes");
    assert!(fake.inventory().is_empty());
}

/// A watch (list, then watch from the list's resourceVersion, as kube-runtime's watcher does)
/// sees additions, modifications and deletions in order.
#[tokio::test]
async fn a_watcher_sees_every_change() {
    let fake = FakeApiServer::start().await.unwrap();
    let tenants: Api<ClusterTenant> = Api::all(client(&fake));
    let apply = PatchParams::apply("m");
    tenants.patch("before", &apply, &Patch::Apply(cluster_tenant("before", "Before"))).await.unwrap();
    let mut events = watcher(tenants.clone(), watcher::Config::default()).boxed();
    let mut seen = Vec::new();
    let record = |event: watcher::Event<ClusterTenant>, seen: &mut Vec<String>| match event {
        watcher::Event::InitApply(o) => seen.push(format!("init {}", o.spec.display_name)),
        watcher::Event::Apply(o) => seen.push(format!("apply {}", o.spec.display_name)),
        watcher::Event::Delete(o) => seen.push(format!("delete {}", o.metadata.name.unwrap_or_default())),
        watcher::Event::Init | watcher::Event::InitDone => {}
    };
    while !seen.contains(&"init Before".to_owned()) {
        record(events.next().await.unwrap().unwrap(), &mut seen);
    }
    tenants.patch("acme", &apply, &Patch::Apply(cluster_tenant("acme", "Acme"))).await.unwrap();
    tenants.patch("acme", &apply, &Patch::Apply(cluster_tenant("acme", "Acme Two"))).await.unwrap();
    tenants.delete("acme", &DeleteParams::default()).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !seen.contains(&"delete acme".to_owned()) {
        let next = tokio::time::timeout_at(deadline, events.next()).await.expect("events within 10 s");
        record(next.unwrap().unwrap(), &mut seen);
    }
    let after_init: Vec<&str> = seen.iter().skip_while(|s| s.starts_with("init")).map(String::as_str).collect();
    assert_eq!(after_init, ["apply Acme", "apply Acme Two", "delete acme"]);
}

/// Injected faults answer with the requested status, or late, and then stop.
#[tokio::test]
async fn injected_faults_fire_the_requested_number_of_times() {
    let fake = FakeApiServer::start().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client(&fake));
    namespaces.create(&PostParams::default(), &namespace("acme")).await.unwrap();
    fake.fail("GET", "/namespaces/acme", 500, 1);
    assert_eq!(code(&namespaces.get("acme").await.unwrap_err()).0, 500);
    assert!(namespaces.get("acme").await.is_ok(), "the fault fired once");
    fake.stall("GET", "/namespaces/acme", Duration::from_millis(300), 1);
    let started = std::time::Instant::now();
    namespaces.get("acme").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    let gets = fake.requests().iter().filter(|(m, p)| m == "GET" && p.contains("/namespaces/acme")).count();
    assert_eq!(gets, 3, "every request is counted");
}

/// A test's stand-in controller (`settle`): objects of the settled plural are created with the
/// status their controller would write; others, and objects that existed before, are untouched.
#[tokio::test]
async fn a_settled_kind_is_created_with_its_controllers_status() {
    let fake = FakeApiServer::start().await.unwrap();
    let tenants: Api<ClusterTenant> = Api::all(client(&fake));
    let apply = PatchParams::apply("test-manager").force();
    tenants.patch("before", &apply, &Patch::Apply(cluster_tenant("before", "Before"))).await.unwrap();
    fake.settle("clustertenants", json!({"phase": "ready"}));
    tenants.patch("acme", &apply, &Patch::Apply(cluster_tenant("acme", "Acme"))).await.unwrap();
    let stored = |name: &str| fake.object(&format!("/apis/opencrane.io/v1alpha1/clustertenants/{name}")).unwrap();
    assert_eq!(stored("acme")["status"]["phase"], "ready");
    assert!(stored("before").get("status").is_none(), "only new objects");
    let configs: Api<ConfigMap> = Api::namespaced(client(&fake), "default");
    Api::<Namespace>::all(client(&fake)).create(&PostParams::default(), &namespace("default")).await.unwrap();
    configs.create(&PostParams::default(), &config_map("c")).await.unwrap();
    assert!(fake.object("/api/v1/namespaces/default/configmaps/c").unwrap().get("status").is_none());
}
