//! ClusterTenant resources written with kubectl, against the fake API server
//! (`opencrane-fake-kube`; no kube-apiserver runs here): a resource created out of band is
//! adopted through the service layer with the same result as an API create (the original's
//! issue #100), a refusal is written to its status naming the field, an out-of-band edit of a
//! mirrored resource updates the record, and a kubectl delete starts the teardown.

use std::sync::Arc;

use axum::http::Method;
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams},
};
use opencrane_crd::cluster_tenant::ClusterTenant;
use opencrane_fake_kube::FakeApiServer;
use opencrane_provision::{
    Backend as _,
    build::ClusterSettings,
    kubernetes::{KubernetesBackend, KubernetesSettings, client_for},
};
use serde_json::json;
use sqlx::PgPool;

use crate::support::{self, Features, send};

async fn backend(fake: &FakeApiServer) -> (Arc<KubernetesBackend>, kube::Client) {
    let client = client_for(&fake.url(), std::time::Duration::from_secs(2)).unwrap();
    let settings = KubernetesSettings::new(ClusterSettings::new("example.com"), "opencrane-system", "charts");
    (Arc::new(KubernetesBackend::new(client.clone(), settings)), client)
}

/// The service layer of a fleet on `db`, as the controller's registry.
fn registry(db: &PgPool) -> opencrane::fleet::registry::ServiceRegistry {
    let options = opencrane::start::leptos_options(
        std::path::Path::new("target/site"),
        "127.0.0.1:0".parse().unwrap(),
        leptos::config::Env::DEV,
    );
    let state = opencrane::fleet::fleet_state(options, db.clone(), Some("example.com".into()), true, true, false);
    opencrane::fleet::registry::ServiceRegistry { state }
}

fn resource(name: &str, extra: &serde_json::Value) -> serde_json::Value {
    let mut spec = json!({
        "displayName": "Acme Corp", "isolationTier": "shared", "compute": {"mode": "shared"},
        "resources": {"quota": {"cpu": "4"}}, "owner": {"subject": "otto"}, "terminationPolicy": "Delete",
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"apiVersion": "opencrane.io/v1alpha1", "kind": "ClusterTenant", "metadata": {"name": name}, "spec": spec})
}

#[sqlx::test(migrations = false)]
async fn a_resource_created_with_kubectl_is_adopted_like_an_api_create(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let registry = registry(&db);
    let fake = FakeApiServer::start().await.unwrap();
    let (backend, client) = backend(&fake).await;
    let resources: Api<ClusterTenant> = Api::all(client);
    let kubectl = PatchParams::apply("kubectl");

    // kubectl apply → adopted.
    let applied = resources.patch("acme", &kubectl, &Patch::Apply(resource("acme", &json!({})))).await.unwrap();
    backend.observe_resource(&db, &registry, &applied).await.unwrap();
    let adopted = opencrane_fleet_db::cluster_tenants::get(&db, "acme").await.unwrap();

    // The same request through the REST API gives the same record.
    let fleet = support::fleet(db.clone(), Features::default(), false);
    let body = json!({
        "name": "twin", "displayName": "Acme Corp", "isolationTier": "shared", "compute": {"mode": "shared"},
        "resources": {"quota": {"cpu": "4"}}, "owner": {"subject": "otto"}, "terminationPolicy": "Delete",
    });
    assert_eq!(send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&body.to_string()), true).await.status, 201);
    let twin = opencrane_fleet_db::cluster_tenants::get(&db, "twin").await.unwrap();
    let comparable = |r: &opencrane_fleet_db::cluster_tenants::ClusterTenantRow| {
        (r.display_name.clone(), r.quota.clone(), r.termination_policy.clone(), r.phase.clone(), r.generation)
    };
    assert_eq!(comparable(&adopted), comparable(&twin));
    let owners = opencrane_fleet_db::memberships::list(&db, "acme").await.unwrap();
    assert_eq!(owners.iter().map(|m| (m.subject.as_str(), m.role.as_str())).collect::<Vec<_>>(), [("otto", "owner")]);
    let audited: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM audit_log WHERE target = 'acme' AND action = 'cluster_tenant.create' AND actor = 'token:controller'",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(audited, 1, "adoption is audited as the controller");

    // Mirrored; seeing the unchanged resource again (a resync) is no edit and writes nothing.
    backend.publish(&db, "acme").await.unwrap();
    let resynced = resources.get("acme").await.unwrap();
    let audit_before: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log").fetch_one(&db).await.unwrap();
    backend.observe_resource(&db, &registry, &resynced).await.unwrap();
    let audit_after: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log").fetch_one(&db).await.unwrap();
    assert_eq!(audit_before, audit_after, "a resync is not an edit");

    // Edited with kubectl → the record follows.
    let edited = resources
        .patch("acme", &kubectl, &Patch::Apply(resource("acme", &json!({"displayName": "Acme Renamed"}))))
        .await
        .unwrap();
    backend.observe_resource(&db, &registry, &edited).await.unwrap();
    let row = opencrane_fleet_db::cluster_tenants::get(&db, "acme").await.unwrap();
    assert_eq!((row.display_name.as_str(), row.generation), ("Acme Renamed", 2));

    // kubectl delete → the teardown starts; the finalizer holds the resource.
    resources.delete("acme", &DeleteParams::default()).await.unwrap();
    let marked = resources.get("acme").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some(), "held by the fleet's finalizer");
    backend.observe_resource(&db, &registry, &marked).await.unwrap();
    assert_eq!(opencrane_fleet_db::cluster_tenants::get(&db, "acme").await.unwrap().phase, "deleting");
}

#[sqlx::test(migrations = false)]
async fn an_invalid_resource_is_refused_in_its_status_with_the_field_named(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let registry = registry(&db);
    let fake = FakeApiServer::start().await.unwrap();
    let (backend, client) = backend(&fake).await;
    let resources: Api<ClusterTenant> = Api::all(client);
    let bad = resource("acme", &json!({"resources": {"quota": {"cpu": "lots"}}}));
    let applied = resources.patch("acme", &PatchParams::apply("kubectl"), &Patch::Apply(bad)).await.unwrap();
    backend.observe_resource(&db, &registry, &applied).await.unwrap();
    let status = resources.get("acme").await.unwrap().status.unwrap();
    assert!(status.message.unwrap_or_default().contains("spec.resources.quota.cpu"));
    assert!(matches!(opencrane_fleet_db::cluster_tenants::get(&db, "acme").await, Err(opencrane_db::Error::NotFound)));
    let ownerless = resource("beta", &json!({"owner": null}));
    let applied = resources.patch("beta", &PatchParams::apply("kubectl"), &Patch::Apply(ownerless)).await.unwrap();
    backend.observe_resource(&db, &registry, &applied).await.unwrap();
    // Without an owner, the same rule as an operator's API create: adopted, with no owner yet.
    let adopted = opencrane_fleet_db::cluster_tenants::get(&db, "beta").await.unwrap();
    assert_eq!(adopted.name, "beta");
    assert!(opencrane_fleet_db::memberships::list(&db, "beta").await.unwrap().is_empty(), "no owner yet");
}
