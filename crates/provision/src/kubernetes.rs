//! The Kubernetes backend: each step applies the objects [`crate::build`] made for it with
//! server-side apply (field manager [`FIELD_MANAGER`], forced: the fleet owns these objects),
//! checks what must be ready, and tears down in order. The silo release goes through
//! `opencrane_deploy::silo::deploy` — the same code path as `opencrane deploy silo` — with the
//! fleet-managed profile and the values of [`build::release_values`]; Helm's trimmed error output
//! becomes the step's message.
//!
//! This module is the thin I/O around the pure builders; its behaviour is tested against
//! `opencrane-fake-kube` (a fake API server) and fake `helm`/`kubectl` executables.

use std::{path::PathBuf, time::Duration};

pub use kube::Client;
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams},
};
use serde_json::Value;

use crate::{
    StepId,
    build::{self, ClusterSettings, FIELD_MANAGER},
    probe,
    reconcile::{Backend, StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

/// Everything the backend needs besides the client.
#[derive(Clone, Debug)]
pub struct KubernetesSettings {
    /// What the objects depend on (base domain, ingress address, issuer, database size).
    pub cluster: ClusterSettings,
    /// The fleet's namespace (where its API token Secret is).
    pub fleet_namespace: String,
    /// The fleet's in-cluster URL, for the silos; `None` keeps the profile's default.
    pub fleet_internal_url: Option<String>,
    /// The directory with the `opencrane-silo` chart.
    pub charts_dir: PathBuf,
    /// `kubectl` and `helm` (the image ships both).
    pub tools: opencrane_deploy::run::Tools,
    /// How long Helm may wait for a release.
    pub helm_timeout: String,
    /// Where a silo's manager answers inside the cluster; `{namespace}` is replaced.
    pub readiness_url: String,
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
            readiness_url: "http://opencrane-silo-manager.{namespace}.svc.cluster.local:8080".into(),
        }
    }
}

/// The backend.
pub struct KubernetesBackend {
    client: Client,
    settings: KubernetesSettings,
    events: kube::runtime::events::Recorder,
}

/// The release name every silo gets.
pub const RELEASE: &str = "opencrane";
/// The fleet release's API token Secret (copied into each silo by the release step).
pub const FLEET_API_TOKEN_SECRET: &str = "opencrane-fleet-api-token";

/// The resource of an object by its apiVersion and kind (the kinds the pipeline applies).
fn resource(api_version: &str, kind: &str) -> Option<ApiResource> {
    let plural = match kind {
        "Namespace" => "namespaces",
        "ResourceQuota" => "resourcequotas",
        "LimitRange" => "limitranges",
        "NetworkPolicy" => "networkpolicies",
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

fn not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 404)
}

impl KubernetesBackend {
    /// A backend on `client`.
    pub fn new(client: Client, settings: KubernetesSettings) -> Self {
        let reporter = kube::runtime::events::Reporter { controller: FIELD_MANAGER.into(), instance: None };
        let events = kube::runtime::events::Recorder::new(client.clone(), reporter);
        Self { client, settings, events }
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
        self.api(&resource, namespace)
            .patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(object))
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

    async fn converge_quota(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        let objects = build::quota(desired);
        let ns = desired.namespace();
        if objects.is_empty() {
            let removed = self.delete("v1", "ResourceQuota", Some(&ns), "opencrane-quota").await?
                | self.delete("v1", "LimitRange", Some(&ns), "opencrane-limits").await?;
            let note = if removed { " The earlier quota was removed." } else { "" };
            return Ok(StepSuccess::skipped("NoQuota", format!("No quota declared.{note}")));
        }
        for object in &objects {
            self.apply(object).await?;
        }
        let hard = objects[0].pointer("/spec/hard").map(ToString::to_string).unwrap_or_default();
        Ok(StepSuccess::done("Applied", format!("ResourceQuota {hard} and LimitRange defaults in {ns}.")))
    }

    async fn converge_database(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        let cluster = build::database(desired, &self.settings.cluster);
        self.apply(&cluster).await?;
        let ns = desired.namespace();
        let secret = build::database_secret();
        if self.exists("v1", "Secret", Some(&ns), &secret).await? {
            Ok(StepSuccess::done(
                "Ready",
                format!(
                    "CloudNativePG cluster {} ({} instance(s), {}) with its app Secret {secret}.",
                    build::DATABASE_CLUSTER,
                    self.settings.cluster.database_instances,
                    self.settings.cluster.database_storage
                ),
            ))
        } else {
            Ok(StepSuccess::waiting(
                "Starting",
                format!(
                    "CloudNativePG is creating cluster {}; waiting for its app Secret {secret}.",
                    build::DATABASE_CLUSTER
                ),
            ))
        }
    }

    async fn converge_dns(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        let ns = desired.namespace();
        let objects = build::dns(desired, &self.settings.cluster);
        for object in &objects {
            self.apply(object).await?;
        }
        // What is no longer wanted goes.
        if self.settings.cluster.ingress_ip.is_none() {
            self.delete("externaldns.k8s.io/v1alpha1", "DNSEndpoint", Some(&ns), build::DNS_ENDPOINT).await?;
        }
        if desired.vanity_domain.is_none() {
            self.delete("cert-manager.io/v1", "Certificate", Some(&ns), build::VANITY_CERTIFICATE).await?;
        }
        if objects.is_empty() {
            return Ok(StepSuccess::skipped(
                "NotConfigured",
                "No ingress address is configured (no DNS record) and no vanity domain is set (no certificate).",
            ));
        }
        let what: Vec<String> = objects
            .iter()
            .map(|o| match o["kind"].as_str() {
                Some("DNSEndpoint") => format!("DNS record {}", self.settings.cluster.host(desired)),
                _ => format!("certificate for {}", desired.vanity_domain.clone().unwrap_or_default()),
            })
            .collect();
        Ok(StepSuccess::done("Applied", what.join(" and ")))
    }

    async fn converge_release(&self, desired: &Desired, done_before: bool) -> Result<StepSuccess, StepFailure> {
        let ns = desired.namespace();
        if done_before && self.exists("apps/v1", "Deployment", Some(&ns), "opencrane-silo-manager").await? {
            return Ok(StepSuccess::done(
                "Installed",
                format!("Release {RELEASE} in {ns} is unchanged since generation {}.", desired.generation),
            ));
        }
        let settings = self.settings.clone();
        let desired = desired.clone();
        let installed = tokio::task::spawn_blocking(move || install_release(&settings, &desired))
            .await
            .map_err(|e| StepFailure::new("Crashed", format!("the release task failed: {e}"), "Retry the step."))??;
        Ok(StepSuccess::done("Installed", installed))
    }

    async fn converge_readiness(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        if desired.suspended {
            return Ok(StepSuccess::skipped("Suspended", "Not checked while suspended (no replicas)."));
        }
        let base = self.settings.readiness_url.replace("{namespace}", &desired.namespace());
        match probe::readyz(&base).await {
            Ok(200) => Ok(StepSuccess::done(
                "Ready",
                format!(
                    "The clustertenant-manager answers; the silo is at https://{}.",
                    self.settings.cluster.host(desired)
                ),
            )),
            Ok(code) => Ok(StepSuccess::waiting("Starting", format!("{base}/readyz answers {code}; waiting."))),
            Err(err) => Ok(StepSuccess::waiting("Starting", format!("{base}/readyz: {err}; waiting."))),
        }
    }

    async fn uninstall_release(&self, name: &str) -> Result<Teardown, StepFailure> {
        let tools = self.settings.tools.clone();
        let ns = crate::spec::namespace_of(name);
        let result = tokio::task::spawn_blocking(move || {
            use opencrane_deploy::{plan::Tool, run::Runner as _};
            let program = tools.path(Tool::Helm).map_err(|e| e.to_string())?.to_path_buf();
            let args: Vec<String> = ["uninstall", RELEASE, "--namespace", &ns, "--wait"].map(String::from).into();
            opencrane_deploy::run::ProcessRunner
                .run(&program, &tools.args(Tool::Helm, &args), None)
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| StepFailure::new("Crashed", format!("the uninstall task failed: {e}"), "Retry the step."))?;
        match result {
            Ok(output) if output.success => Ok(Teardown::Removed(format!("Release {RELEASE} uninstalled."))),
            Ok(output) if output.stderr.contains("not found") => {
                Ok(Teardown::Removed(format!("Release {RELEASE} was not installed.")))
            }
            Ok(output) => Err(StepFailure::new(
                "HelmFailed",
                opencrane_deploy::run::trim_output(&output),
                "Fix the cause shown, then Retry.",
            )),
            Err(err) => Err(StepFailure::new("HelmUnavailable", err, "Install helm in the fleet-manager's image.")),
        }
    }

    async fn remove_database(&self, name: &str, delete_database: bool) -> Result<Teardown, StepFailure> {
        let ns = crate::spec::namespace_of(name);
        if !delete_database {
            let kept = self.exists("postgresql.cnpg.io/v1", "Cluster", Some(&ns), build::DATABASE_CLUSTER).await?;
            return Ok(if kept {
                Teardown::Retained(format!(
                    "CloudNativePG cluster {} and its volumes are kept in namespace {ns} (terminationPolicy Retain).",
                    build::DATABASE_CLUSTER
                ))
            } else {
                Teardown::Removed("No database was created.".into())
            });
        }
        self.delete("postgresql.cnpg.io/v1", "Cluster", Some(&ns), build::DATABASE_CLUSTER).await?;
        let claims_resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "PersistentVolumeClaim"),
            "persistentvolumeclaims",
        );
        let claims = self.api(&claims_resource, Some(&ns));
        let selector = format!("cnpg.io/cluster={}", build::DATABASE_CLUSTER);
        match claims.list(&ListParams::default().labels(&selector)).await {
            Ok(list) => {
                for claim in list.items {
                    let claim_name = claim.metadata.name.unwrap_or_default();
                    self.delete("v1", "PersistentVolumeClaim", Some(&ns), &claim_name).await?;
                }
            }
            Err(e) if not_found(&e) => {}
            Err(e) => return Err(failure("listing the database volumes", &e)),
        }
        self.delete("v1", "Secret", Some(&ns), &build::database_secret()).await?;
        Ok(Teardown::Removed(format!(
            "CloudNativePG cluster {}, its volumes and its app Secret deleted (terminationPolicy Delete).",
            build::DATABASE_CLUSTER
        )))
    }

    async fn remove_namespace(&self, name: &str, delete_database: bool) -> Result<Teardown, StepFailure> {
        let ns = crate::spec::namespace_of(name);
        // The fleet keeps no rights in a namespace it no longer manages.
        self.delete("rbac.authorization.k8s.io/v1", "RoleBinding", Some(&ns), build::INSTALLER_BINDING).await?;
        if !delete_database
            && self.exists("postgresql.cnpg.io/v1", "Cluster", Some(&ns), build::DATABASE_CLUSTER).await?
        {
            return Ok(Teardown::Retained(format!("Namespace {ns} is kept: it holds the retained database.")));
        }
        self.delete("v1", "Namespace", None, &ns).await?;
        if self.exists("v1", "Namespace", None, &ns).await? {
            Ok(Teardown::Waiting(format!("Namespace {ns} is terminating.")))
        } else {
            Ok(Teardown::Removed(format!("Namespace {ns} deleted.")))
        }
    }
}

/// Installs or upgrades the silo release (blocking: runs helm and kubectl).
fn install_release(settings: &KubernetesSettings, desired: &Desired) -> Result<String, StepFailure> {
    use opencrane_deploy::silo::{SiloMode, SiloOptions, TokenSource};
    let values = build::release_values(desired);
    let dir = std::env::temp_dir().join(format!("opencrane-release-{}-{}", desired.name, std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| {
        StepFailure::new("NoScratchSpace", format!("creating {}: {e}", dir.display()), "Check the pod's /tmp.")
    })?;
    let values_file = dir.join("provisioner-values.json");
    std::fs::write(&values_file, values.to_string()).map_err(|e| {
        StepFailure::new("NoScratchSpace", format!("writing {}: {e}", values_file.display()), "Check the pod's /tmp.")
    })?;
    let mut helm = opencrane_deploy::HelmOptions::for_charts(&settings.charts_dir);
    helm.release = RELEASE.into();
    helm.image_tag = desired.silo_version.clone();
    helm.values_files = vec![values_file];
    helm.timeout = settings.helm_timeout.clone();
    let mode = SiloMode::FleetManaged {
        fleet_internal_url: settings.fleet_internal_url.clone(),
        token: TokenSource::FleetSecret {
            namespace: settings.fleet_namespace.clone(),
            name: FLEET_API_TOKEN_SECRET.into(),
            key: "token".into(),
        },
    };
    let options = SiloOptions::new(helm, settings.cluster.base_domain.clone(), desired.name.clone(), mode);
    let mut runner = opencrane_deploy::run::ProcessRunner;
    let result = opencrane_deploy::silo::deploy(&options, &settings.tools, &mut runner, false, &mut |_, _| {});
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(plan) => Ok(format!(
            "{} (chart opencrane-silo{}).",
            plan.summary,
            desired.silo_version.as_deref().map(|v| format!(", version {v}")).unwrap_or_default()
        )),
        Err(err) => Err(StepFailure::new(
            "ReleaseFailed",
            err.to_string(),
            "Fix the cause shown (Helm's output), then Retry the step.",
        )),
    }
}

#[async_trait::async_trait]
impl Backend for KubernetesBackend {
    fn name(&self) -> &'static str {
        "kubernetes"
    }

    async fn converge(&self, step: StepId, desired: &Desired, done_before: bool) -> Result<StepSuccess, StepFailure> {
        match step {
            StepId::Namespace => {
                self.apply(&build::namespace(desired)).await?;
                self.apply(&build::installer_binding(desired, &self.settings.cluster)).await?;
                Ok(StepSuccess::done(
                    "Applied",
                    format!(
                        "Namespace {} (restricted Pod Security); the fleet may install the silo release here only.",
                        desired.namespace()
                    ),
                ))
            }
            StepId::Quota => self.converge_quota(desired).await,
            StepId::NetworkPolicy => {
                self.apply(&build::network_policy(desired)).await?;
                Ok(StepSuccess::done(
                    "Applied",
                    format!("{}: no traffic in or out until the release adds its allows.", build::DEFAULT_DENY),
                ))
            }
            StepId::Database => self.converge_database(desired).await,
            StepId::Dns => self.converge_dns(desired).await,
            StepId::Release => self.converge_release(desired, done_before).await,
            StepId::Readiness => self.converge_readiness(desired).await,
        }
    }

    async fn teardown(&self, step: StepId, name: &str, delete_database: bool) -> Result<Teardown, StepFailure> {
        let ns = crate::spec::namespace_of(name);
        match step {
            StepId::Readiness => Ok(Teardown::Removed("Nothing to remove.".into())),
            StepId::Release => self.uninstall_release(name).await,
            StepId::Dns => {
                self.delete("externaldns.k8s.io/v1alpha1", "DNSEndpoint", Some(&ns), build::DNS_ENDPOINT).await?;
                self.delete("cert-manager.io/v1", "Certificate", Some(&ns), build::VANITY_CERTIFICATE).await?;
                Ok(Teardown::Removed("DNS record and vanity certificate deleted.".into()))
            }
            StepId::Database => self.remove_database(name, delete_database).await,
            StepId::NetworkPolicy => {
                self.delete("networking.k8s.io/v1", "NetworkPolicy", Some(&ns), build::DEFAULT_DENY).await?;
                Ok(Teardown::Removed(format!("{} deleted.", build::DEFAULT_DENY)))
            }
            StepId::Quota => {
                self.delete("v1", "ResourceQuota", Some(&ns), "opencrane-quota").await?;
                self.delete("v1", "LimitRange", Some(&ns), "opencrane-limits").await?;
                Ok(Teardown::Removed("Quota and limit range deleted.".into()))
            }
            StepId::Namespace => self.remove_namespace(name, delete_database).await,
        }
    }

    fn silo_url(&self, desired: &Desired) -> Option<String> {
        (!desired.suspended).then(|| format!("https://{}", self.settings.cluster.host(desired)))
    }

    fn bound_to(&self, desired: &Desired) -> String {
        desired.namespace()
    }

    async fn publish(&self, pool: &opencrane_db::PgPool, name: &str) -> Result<(), String> {
        self.mirror(pool, name).await
    }
}

impl KubernetesBackend {
    /// Mirrors the fleet database onto the ClusterTenant resource: the spec (server-side apply,
    /// with the finalizer that holds the resource until the teardown ends) and the status
    /// (phase, one condition per step, observedGeneration) — written only when they differ. Once
    /// the row is gone, the finalizer is removed and the resource deleted.
    pub async fn mirror(&self, pool: &opencrane_db::PgPool, name: &str) -> Result<(), String> {
        use opencrane_crd::cluster_tenant::ClusterTenant;
        let api: Api<ClusterTenant> = Api::all(self.client.clone());
        let row = match opencrane_fleet_db::cluster_tenants::get(pool, name).await {
            Ok(row) => row,
            Err(opencrane_db::Error::NotFound) => return self.release_resource(&api, name).await,
            Err(err) => return Err(err.to_string()),
        };
        let spec = crate::resource::spec_from_row(&row);
        let applied = serde_json::json!({
            "apiVersion": "opencrane.io/v1alpha1",
            "kind": "ClusterTenant",
            "metadata": {
                "name": name,
                "finalizers": [crate::resource::FINALIZER],
                "labels": { "app.kubernetes.io/managed-by": FIELD_MANAGER, "app.kubernetes.io/part-of": "opencrane" },
                // Which version of the fleet's record this spec came from: a spec that differs
                // from that version was edited out of band.
                "annotations": { crate::resource::FLEET_GENERATION: row.generation.to_string() },
            },
            "spec": spec,
        });
        let resource = api
            .patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&applied))
            .await
            .map_err(|e| failure("applying the ClusterTenant resource", &e).message)?;
        let generation = resource.metadata.generation.unwrap_or(1);
        let steps = opencrane_fleet_db::provisioning::steps(pool, name).await.map_err(|e| e.to_string())?;
        let status = crate::resource::status_from_row(&row, &steps, generation);
        let before = resource.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
        let action = if row.deletion_requested_at.is_some() { "Teardown" } else { "Provision" };
        self.record_transitions(&resource, &before, &status.conditions, action).await;
        if resource.status.as_ref() != Some(&status) {
            let patch = serde_json::json!({ "status": status });
            api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| failure("writing the ClusterTenant status", &e).message)?;
        }
        if row.deletion_requested_at.is_some() && resource.metadata.deletion_timestamp.is_none() {
            let note = format!("Deletion started; terminationPolicy {}.", row.termination_policy);
            self.record(&resource, "DeletionStarted", &note, "Teardown").await;
            api.delete(name, &DeleteParams::default())
                .await
                .map_err(|e| failure("deleting the ClusterTenant resource", &e).message)?;
        }
        Ok(())
    }

    /// One Kubernetes Event per step whose condition changed (status or reason), on the
    /// resource: `kubectl describe clustertenant <name>` tells the provisioning story. Best
    /// effort: a failed event is logged, never a failed reconcile.
    async fn record_transitions(
        &self,
        resource: &opencrane_crd::cluster_tenant::ClusterTenant,
        before: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
        after: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
        action: &str,
    ) {
        use kube::{
            Resource as _,
            runtime::events::{Event, EventType},
        };
        let reference = resource.object_ref(&());
        for condition in after {
            let previous = before.iter().find(|c| c.type_ == condition.type_);
            let changed = previous.map(|p| (p.status.as_str(), p.reason.as_str()))
                != Some((condition.status.as_str(), condition.reason.as_str()));
            if !changed || (previous.is_none() && condition.reason == "NotStarted") {
                continue;
            }
            let failed =
                condition.status == "False" && !matches!(condition.reason.as_str(), "Removed" | "Retained" | "Waiting");
            let note: String = format!("{}: {}", condition.type_, condition.message).chars().take(1024).collect();
            let event = Event {
                type_: if failed { EventType::Warning } else { EventType::Normal },
                // The step in the reason: kube-runtime folds events with equal reasons into one series.
                reason: format!("{}{}", condition.type_.trim_end_matches("Ready"), condition.reason)
                    .chars()
                    .take(128)
                    .collect(),
                note: Some(note),
                action: action.into(),
                secondary: None,
            };
            if let Err(err) = self.events.publish(&event, &reference).await {
                tracing::debug!(error = %err, "could not record an event");
            }
        }
    }

    /// One Normal event on the resource (best effort).
    async fn record(
        &self,
        resource: &opencrane_crd::cluster_tenant::ClusterTenant,
        reason: &str,
        note: &str,
        action: &str,
    ) {
        use kube::{
            Resource as _,
            runtime::events::{Event, EventType},
        };
        let event = Event {
            type_: EventType::Normal,
            reason: reason.into(),
            note: Some(note.into()),
            action: action.into(),
            secondary: None,
        };
        if let Err(err) = self.events.publish(&event, &resource.object_ref(&())).await {
            tracing::debug!(error = %err, "could not record an event");
        }
    }

    /// Drops the fleet's finalizer (keeping any other) and deletes the resource.
    pub async fn release_resource(
        &self,
        api: &Api<opencrane_crd::cluster_tenant::ClusterTenant>,
        name: &str,
    ) -> Result<(), String> {
        let resource = match api.get(name).await {
            Ok(resource) => resource,
            Err(e) if not_found(&e) => return Ok(()),
            Err(e) => return Err(failure("reading the ClusterTenant resource", &e).message),
        };
        let finalizers = resource.metadata.finalizers.clone().unwrap_or_default();
        if finalizers.iter().any(|f| f == crate::resource::FINALIZER) {
            self.record(&resource, "TornDown", "The silo is torn down; the fleet released the resource.", "Teardown")
                .await;
            let rest: Vec<&String> = finalizers.iter().filter(|f| *f != crate::resource::FINALIZER).collect();
            // The resourceVersion makes this a compare-and-swap: another writer's change wins.
            let patch = serde_json::json!({
                "metadata": { "finalizers": rest, "resourceVersion": resource.metadata.resource_version },
            });
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| failure("removing the finalizer", &e).message)?;
        }
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(e) if not_found(&e) => Ok(()),
            Err(e) => Err(failure("deleting the ClusterTenant resource", &e).message),
        }
    }
}

/// A client for `url` with the request timeouts the backend relies on (a stuck API call fails
/// its step instead of hanging the reconcile).
pub fn client_for(url: &str, timeout: Duration) -> Result<Client, String> {
    let uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
    let mut config = kube::Config::new(uri);
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    config.connect_timeout = Some(timeout);
    Client::try_from(config).map_err(|e| e.to_string())
}

/// The client for the cluster this process runs in (or the current kube context), with the
/// same request timeouts.
pub async fn default_client() -> Result<Client, String> {
    let mut config = kube::Config::infer().await.map_err(|e| e.to_string())?;
    config.read_timeout = Some(Duration::from_secs(30));
    config.connect_timeout = Some(Duration::from_secs(10));
    Client::try_from(config).map_err(|e| e.to_string())
}

/// What the fleet does about ClusterTenant resources it did not write: the service layer's
/// create, update and delete, so a resource applied with kubectl gets exactly the checks and
/// effects of an API call (implemented by the server, which owns the service layer).
#[async_trait::async_trait]
pub trait Registry: Send + Sync {
    /// A resource without a fleet record: create the record (the error names the field).
    async fn adopt(&self, name: &str, spec: &opencrane_crd::cluster_tenant::ClusterTenantSpec) -> Result<(), String>;
    /// A resource whose spec was edited out of band: update the record.
    async fn edit(&self, name: &str, spec: &opencrane_crd::cluster_tenant::ClusterTenantSpec) -> Result<(), String>;
    /// A resource deleted with kubectl: start the teardown.
    async fn delete(&self, name: &str) -> Result<(), String>;
}

impl KubernetesBackend {
    /// Handles one observed ClusterTenant resource: adopt it, take over an out-of-band edit or
    /// deletion, or release a resource whose record is gone. Refusals are written to the
    /// resource's status, naming the field.
    pub async fn observe_resource(
        &self,
        pool: &opencrane_db::PgPool,
        registry: &dyn Registry,
        resource: &opencrane_crd::cluster_tenant::ClusterTenant,
    ) -> Result<(), String> {
        use opencrane_crd::cluster_tenant::ClusterTenant;
        let api: Api<ClusterTenant> = Api::all(self.client.clone());
        let Some(name) = resource.metadata.name.clone() else { return Ok(()) };
        let ours = resource.metadata.finalizers.iter().flatten().any(|f| f == crate::resource::FINALIZER);
        let deleting = resource.metadata.deletion_timestamp.is_some();
        let outcome = match opencrane_fleet_db::cluster_tenants::get(pool, &name).await {
            Err(opencrane_db::Error::NotFound) if ours || deleting => {
                // The record is gone (torn down, or deleted while the resource waited): let it go.
                return self.release_resource(&api, &name).await;
            }
            Err(opencrane_db::Error::NotFound) => registry.adopt(&name, &resource.spec).await,
            Err(err) => return Err(err.to_string()),
            Ok(row) if deleting && row.deletion_requested_at.is_none() => registry.delete(&name).await,
            Ok(row) => {
                let mirrored_from = resource
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(crate::resource::FLEET_GENERATION))
                    .and_then(|g| g.parse::<i64>().ok());
                // The owner is only read at adoption and the Zitadel ids are the fleet's: neither
                // counts as an edit (else every resync of an adopted resource would "edit" it).
                let mut seen = resource.spec.clone();
                seen.owner = None;
                seen.zitadel = None;
                let mut mirrored = crate::resource::spec_from_row(&row);
                mirrored.zitadel = None;
                let edited =
                    mirrored_from == Some(row.generation) && row.deletion_requested_at.is_none() && mirrored != seen;
                if edited { registry.edit(&name, &resource.spec).await } else { Ok(()) }
            }
        };
        if let Err(refusal) = outcome {
            let patch = serde_json::json!({ "status": {
                "phase": "failed",
                "message": format!("Refused by the fleet: {refusal}"),
            }});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| failure("writing the refusal", &e).message)?;
        }
        Ok(())
    }

    /// Watches every ClusterTenant resource and hands each to [`Self::observe_resource`] until
    /// `shutdown`; `progress` gets the time of each event or restart (the watch-health signal).
    pub async fn watch_resources(
        &self,
        pool: &opencrane_db::PgPool,
        registry: &dyn Registry,
        progress: &std::sync::atomic::AtomicI64,
        shutdown: impl Future<Output = ()>,
    ) {
        use futures_util::StreamExt as _;
        use kube::runtime::{WatchStreamExt as _, watcher};
        let api: Api<opencrane_crd::cluster_tenant::ClusterTenant> = Api::all(self.client.clone());
        let mut events = watcher(api, watcher::Config::default()).default_backoff().boxed();
        tokio::pin!(shutdown);
        loop {
            let event = tokio::select! {
                () = &mut shutdown => return,
                event = events.next() => event,
            };
            let Some(event) = event else { return };
            match event {
                Ok(watcher::Event::Apply(resource) | watcher::Event::InitApply(resource)) => {
                    progress.store(chrono::Utc::now().timestamp(), std::sync::atomic::Ordering::Relaxed);
                    if let Err(err) = self.observe_resource(pool, registry, &resource).await {
                        tracing::warn!(cluster_tenant = ?resource.metadata.name, error = %err, "could not take over a resource change");
                    }
                }
                Ok(_) => progress.store(chrono::Utc::now().timestamp(), std::sync::atomic::Ordering::Relaxed),
                Err(err) => tracing::warn!(error = %err, "ClusterTenant watch failed; retrying with backoff"),
            }
        }
    }
}

/// The in-cluster client, when this process runs in a pod (never the developer's kube context).
pub async fn in_cluster_client() -> Option<Client> {
    let config = kube::Config::incluster().ok()?;
    Client::try_from(config).ok()
}

/// One ClusterTenant resource.
pub async fn read_cluster_tenant(
    client: &Client,
    name: &str,
) -> Result<opencrane_crd::cluster_tenant::ClusterTenant, String> {
    Api::<opencrane_crd::cluster_tenant::ClusterTenant>::all(client.clone())
        .get(name)
        .await
        .map_err(|e| failure("reading the ClusterTenant resource", &e).message)
}
