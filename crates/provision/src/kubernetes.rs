//! The Kubernetes backend: each step applies the objects [`crate::build`] made for it with
//! server-side apply (field manager [`FIELD_MANAGER`], forced: the fleet owns these objects),
//! checks what must be ready, and tears down in order. The silo release goes through
//! `opencrane_deploy::silo::deploy` — the same code path as `opencrane deploy silo` — with the
//! fleet-managed profile and the values of [`build::release_values`]; Helm's trimmed error output
//! becomes the step's message.
//!
//! One file per step (Stackable style), each with its converge and its teardown: [`namespace`],
//! [`quota`], [`network_policy`], [`database`], [`dns`], [`release`], [`readiness`]; the resource
//! mirror ([`mirror`]) and the watch of resources written by others ([`watch`]) apart from them.
//! This module holds the shared I/O (apply, delete, exists), the clients and the dispatch.
//!
//! The thin I/O around the pure builders; its behaviour is tested against `opencrane-fake-kube`
//! (a fake API server) and fake `helm`/`kubectl` executables.

mod database;
pub mod dns;
pub mod mirror;
mod namespace;
mod network_policy;
mod quota;
mod readiness;
mod release;
pub mod watch;

use std::{path::PathBuf, time::Duration};

pub use kube::Client;
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams},
};
use serde_json::Value;

pub use self::watch::{Registry, read_cluster_tenant};
use crate::{
    Error, StepId,
    build::{ClusterSettings, FIELD_MANAGER},
    reconcile::{Backend, StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

/// Everything the backend needs besides the client.
#[derive(Clone, Debug)]
pub struct KubernetesSettings {
    /// What the objects depend on (base domain, ingress address, issuer, database size).
    pub cluster: ClusterSettings,
    /// The fleet's namespace.
    pub fleet_namespace: String,
    /// The fleet's in-cluster URL, for the silos; `None` keeps the profile's default.
    pub fleet_internal_url: Option<String>,
    /// The directory with the `opencrane-silo` chart.
    pub charts_dir: PathBuf,
    /// `kubectl` and `helm` (the image ships both).
    pub tools: opencrane_deploy::run::Tools,
    /// How long Helm may wait for a release.
    pub helm_timeout: String,
    /// The fleet's DNS probes: with them, the `dns` step waits until the customer's record
    /// resolves to the ingress address at the zone's nameservers.
    pub dns_truth: Option<std::sync::Arc<crate::dns_truth::DnsTruth>>,
}

impl KubernetesSettings {
    /// In-cluster defaults for `cluster`.
    pub fn new(cluster: ClusterSettings, fleet_namespace: impl Into<String>, charts_dir: impl Into<PathBuf>) -> Self {
        Self {
            cluster,
            fleet_namespace: fleet_namespace.into(),
            fleet_internal_url: None,
            charts_dir: charts_dir.into(),
            tools: opencrane_deploy::run::Tools::resolve(None, None, None),
            helm_timeout: "10m".into(),
            dns_truth: None,
        }
    }
}

/// The backend.
pub struct KubernetesBackend {
    client: Client,
    settings: KubernetesSettings,
    events: kube::runtime::events::Recorder,
    /// Whether the cluster runs Cilium (its CiliumNetworkPolicy CRD exists), and when that was
    /// last looked at: discovered, never configured, at most every [`CILIUM_RECHECK`].
    cilium: std::sync::Mutex<Option<(std::time::Instant, bool)>>,
    /// The silo chart's digest (or why it could not be read), once per process.
    chart_digest: std::sync::OnceLock<Result<String, String>>,
}

/// How long a Cilium discovery is believed.
const CILIUM_RECHECK: Duration = Duration::from_secs(600);

/// The CRD whose presence means Cilium enforces its policies here.
pub const CILIUM_CRD: &str = "ciliumnetworkpolicies.cilium.io";

/// The release name every silo gets.
pub const RELEASE: &str = "opencrane";

/// The silo manager's Deployment (the chart's name for it with release [`RELEASE`]).
pub const MANAGER: &str = "opencrane-silo-manager";

/// The resource of an object by its apiVersion and kind (the kinds the pipeline applies).
fn resource(api_version: &str, kind: &str) -> Option<ApiResource> {
    let plural = match kind {
        "Namespace" => "namespaces",
        "ResourceQuota" => "resourcequotas",
        "LimitRange" => "limitranges",
        "NetworkPolicy" => "networkpolicies",
        "CiliumNetworkPolicy" => "ciliumnetworkpolicies",
        "CustomResourceDefinition" => "customresourcedefinitions",
        "Cluster" => "clusters",
        "DNSEndpoint" => "dnsendpoints",
        "Certificate" => "certificates",
        "Secret" => "secrets",
        "Deployment" => "deployments",
        "RoleBinding" => "rolebindings",
        "PersistentVolumeClaim" => "persistentvolumeclaims",
        _ => return None,
    };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    Some(ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural))
}

/// Maps a client error to a step failure with an action.
pub fn failure(what: &str, err: &kube::Error) -> StepFailure {
    match err {
        kube::Error::Api(status) => {
            let action = match status.code {
                401 | 403 => {
                    "Give the fleet-manager's ServiceAccount this permission (the opencrane-fleet chart's ClusterRole does), then Retry."
                }
                404 => {
                    "A CustomResourceDefinition may be missing (CloudNativePG, cert-manager, external-dns): install it with `opencrane deploy fleet`, then Retry."
                }
                409 => "Another writer changed the object at the same time; it is retried automatically.",
                422 => "The cluster refused the object; report this as a bug with the message.",
                _ => "The API server failed; it is retried automatically.",
            };
            StepFailure::new(
                &format!("Api{}", status.code),
                format!("{what}: the API server answered {} {}: {}", status.code, status.reason, status.message),
                action,
            )
        }
        other => {
            // The useful part (a timeout, a refused connection) is deep in the source chain.
            let mut text = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            let lower = text.to_ascii_lowercase();
            let timeout = lower.contains("timed out") || lower.contains("timeout") || lower.contains("elapsed");
            StepFailure::new(
                if timeout { "Timeout" } else { "ClusterUnreachable" },
                format!("{what}: {text}"),
                "Check that the fleet-manager reaches the Kubernetes API server; it is retried automatically.",
            )
        }
    }
}

pub(crate) fn not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404)
}

impl KubernetesBackend {
    /// A backend on `client`.
    pub fn new(client: Client, settings: KubernetesSettings) -> Self {
        let reporter = kube::runtime::events::Reporter { controller: FIELD_MANAGER.into(), instance: None };
        let events = kube::runtime::events::Recorder::new(client.clone(), reporter);
        Self { client, settings, events, cilium: std::sync::Mutex::new(None), chart_digest: std::sync::OnceLock::new() }
    }

    /// Whether the cluster runs Cilium (its CiliumNetworkPolicy CRD exists), re-checked every
    /// ten minutes.
    pub(crate) async fn has_cilium(&self) -> Result<bool, StepFailure> {
        if let Ok(known) = self.cilium.lock()
            && let Some((at, present)) = *known
            && at.elapsed() < CILIUM_RECHECK
        {
            return Ok(present);
        }
        let present = self.exists("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, CILIUM_CRD).await?;
        if let Ok(mut known) = self.cilium.lock() {
            *known = Some((std::time::Instant::now(), present));
        }
        Ok(present)
    }

    /// The client (for leader election on the same connection).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The fleet's namespace.
    pub fn fleet_namespace(&self) -> &str {
        &self.settings.fleet_namespace
    }

    fn api(&self, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    /// Server-side applies one built object.
    async fn apply(&self, object: &Value) -> Result<(), StepFailure> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str);
        let resource = resource(api_version, kind).ok_or_else(|| {
            StepFailure::new("UnknownKind", format!("no resource for {kind}"), "Report this as a bug.")
        })?;
        let api = self.api(&resource, namespace);
        let object = stamped(object);
        let live = api.get_opt(name).await.map_err(|e| failure(&format!("reading {kind} {name}"), &e))?;
        if live.is_some_and(|live| serde_json::to_value(live).is_ok_and(|live| holds(&live, &object))) {
            return Ok(());
        }
        api.patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&object))
            .await
            .map_err(|e| failure(&format!("applying {kind} {name}"), &e))?;
        Ok(())
    }

    /// Deletes one object; returns whether it existed.
    async fn delete(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<bool, StepFailure> {
        let Some(resource) = resource(api_version, kind) else { return Ok(false) };
        match self.api(&resource, namespace).delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(true),
            Err(e) if not_found(&e) => Ok(false),
            Err(e) => Err(failure(&format!("deleting {kind} {name}"), &e)),
        }
    }

    /// Deletes an object the configuration no longer wants, if it is there: read first, so a
    /// converged pass sends no write (a DELETE of nothing is still a write request). Returns
    /// whether it existed.
    async fn prune(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<bool, StepFailure> {
        Ok(self.exists(api_version, kind, namespace, name).await?
            && self.delete(api_version, kind, namespace, name).await?)
    }

    async fn exists(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<bool, StepFailure> {
        let Some(resource) = resource(api_version, kind) else { return Ok(false) };
        match self.api(&resource, namespace).get(name).await {
            Ok(_) => Ok(true),
            Err(e) if not_found(&e) => Ok(false),
            Err(e) => Err(failure(&format!("reading {kind} {name}"), &e)),
        }
    }
}

#[async_trait::async_trait]
impl Backend for KubernetesBackend {
    fn name(&self) -> &'static str {
        "kubernetes"
    }

    async fn converge(&self, step: StepId, desired: &Desired, done_before: bool) -> Result<StepSuccess, StepFailure> {
        match step {
            StepId::Namespace => self.converge_namespace(desired).await,
            StepId::Quota => self.converge_quota(desired).await,
            StepId::NetworkPolicy => self.converge_network_policy(desired).await,
            StepId::Database => self.converge_database(desired).await,
            StepId::Dns => self.converge_dns(desired, done_before).await,
            StepId::Release => self.converge_release(desired, done_before).await,
            StepId::Readiness => self.converge_readiness(desired).await,
            StepId::Identity => Ok(crate::reconcile::not_a_backend_step()),
        }
    }

    async fn teardown(&self, step: StepId, name: &str, delete_database: bool) -> Result<Teardown, StepFailure> {
        match step {
            StepId::Readiness | StepId::Identity => Ok(Teardown::Removed("Nothing to remove.".into())),
            StepId::Release => self.uninstall_release(name).await,
            StepId::Dns => self.remove_dns(name).await,
            StepId::Database => self.remove_database(name, delete_database).await,
            StepId::NetworkPolicy => self.remove_network_policy(name).await,
            StepId::Quota => self.remove_quota(name).await,
            StepId::Namespace => self.remove_namespace(name, delete_database).await,
        }
    }

    async fn holds_credential(&self, name: &str, fingerprint: &str) -> Result<bool, StepFailure> {
        self.holds_silo_credential(name, fingerprint).await
    }

    fn silo_url(&self, desired: &Desired) -> Option<String> {
        (!desired.suspended).then(|| format!("https://{}", self.settings.cluster.host(desired)))
    }

    fn bound_to(&self, desired: &Desired) -> String {
        desired.namespace()
    }

    async fn publish(&self, pool: &opencrane_db::PgPool, name: &str) -> Result<(), crate::Error> {
        self.mirror(pool, name).await
    }
}

/// The annotation with the digest of the configuration the fleet last applied to an object.
pub const APPLIED_DIGEST: &str = "opencrane.io/applied-digest";

/// `object` with the digest of its configuration stamped on ([`APPLIED_DIGEST`]).
pub(crate) fn stamped(object: &Value) -> Value {
    use sha2::{Digest as _, Sha256};
    let digest: String = Sha256::digest(object.to_string().as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = metadata.entry("annotations").or_insert_with(|| Value::Object(Default::default()));
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(APPLIED_DIGEST.into(), Value::String(digest));
        }
    }
    object
}

/// Whether the live object already holds the stamped configuration, so applying it again would
/// change nothing: the same digest (a configuration that dropped a field has another one, and
/// server-side apply must remove that field) and every field of it with the same value (another
/// writer's edit of one of them is drift, and is applied over). A converged reconcile so reads
/// and never writes; a value the API server normalises (a quantity, say) only costs a write.
pub(crate) fn holds(live: &Value, stamped: &Value) -> bool {
    let digest = |v: &Value| v.pointer("/metadata/annotations").and_then(|a| a.get(APPLIED_DIGEST)).cloned();
    digest(live).is_some() && digest(live) == digest(stamped) && contains(live, stamped)
}

/// Whether every field of `want` is in `live` with the same value (arrays element by element).
fn contains(live: &Value, want: &Value) -> bool {
    match (live, want) {
        (Value::Object(live), Value::Object(want)) => {
            want.iter().all(|(key, value)| live.get(key).is_some_and(|l| contains(l, value)))
        }
        (Value::Array(live), Value::Array(want)) => {
            live.len() == want.len() && live.iter().zip(want).all(|(l, w)| contains(l, w))
        }
        _ => live == want,
    }
}

/// A client for `url` with the request timeouts the backend relies on (a stuck API call fails
/// its step instead of hanging the reconcile).
pub fn client_for(url: &str, timeout: Duration) -> Result<Client, Error> {
    let uri = url.parse().map_err(|e| Error::Config(format!("{url}: {e}")))?;
    let mut config = kube::Config::new(uri);
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    config.connect_timeout = Some(timeout);
    Client::try_from(config).map_err(|e| Error::Config(e.to_string()))
}

/// The client for the cluster this process runs in (or the current kube context), with the
/// same request timeouts.
pub async fn default_client() -> Result<Client, Error> {
    let mut config = kube::Config::infer().await.map_err(|e| Error::Config(e.to_string()))?;
    config.read_timeout = Some(Duration::from_secs(30));
    config.connect_timeout = Some(Duration::from_secs(10));
    Client::try_from(config).map_err(|e| Error::Config(e.to_string()))
}

/// The in-cluster client, when this process runs in a pod (never the developer's kube context).
pub async fn in_cluster_client() -> Option<Client> {
    let config = kube::Config::incluster().ok()?;
    Client::try_from(config).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{APPLIED_DIGEST, holds, stamped};

    fn quota(hard: &str) -> serde_json::Value {
        json!({ "apiVersion": "v1", "kind": "ResourceQuota",
                "metadata": { "name": "q", "namespace": "opencrane-acme", "labels": { "a": "b" } },
                "spec": { "hard": { "pods": hard }, "scopes": ["NotTerminating"] } })
    }

    /// What the API server adds (resourceVersion, managedFields, defaults, status) is not drift;
    /// a changed or missing field, a changed array or a configuration that dropped a field is.
    #[test]
    fn a_live_object_holds_the_configuration_only_when_applying_it_would_change_nothing() {
        let applied = stamped(&quota("10"));
        assert_eq!(applied["metadata"]["labels"]["a"], "b");
        let mut live = applied.clone();
        live["metadata"]["resourceVersion"] = json!("42");
        live["metadata"]["annotations"]["other"] = json!("kept");
        live["status"] = json!({ "used": { "pods": "1" } });
        assert!(holds(&live, &applied));

        let mut edited = live.clone();
        edited["spec"]["hard"]["pods"] = json!("99");
        assert!(!holds(&edited, &applied), "another writer's edit is drift");
        let mut scoped = live.clone();
        scoped["spec"]["scopes"] = json!(["NotTerminating", "BestEffort"]);
        assert!(!holds(&scoped, &applied), "an array is compared whole");
        let mut unstamped = live.clone();
        unstamped["metadata"]["annotations"].as_object_mut().unwrap().remove(APPLIED_DIGEST);
        assert!(!holds(&unstamped, &applied), "an object the fleet never stamped is applied");

        let mut fewer = quota("10");
        fewer["metadata"]["labels"].as_object_mut().unwrap().remove("a");
        let fewer = stamped(&fewer);
        assert!(!holds(&live, &fewer), "a dropped field changes the digest, so apply removes it");
        assert!(holds(&live, &stamped(&quota("10"))), "the digest is stable");
        assert!(!holds(&live, &stamped(&quota("11"))));
    }
}
