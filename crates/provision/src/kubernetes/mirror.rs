//! The ClusterTenant resource as a mirror of the fleet database: the spec (server-side apply,
//! with the finalizer), the status with its conditions, one Event per condition change, and the
//! release of the resource once the record is gone.

use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams},
};

use super::{KubernetesBackend, not_found};
use crate::Error;
use crate::build::FIELD_MANAGER;

impl KubernetesBackend {
    /// Mirrors the fleet database onto the ClusterTenant resource: the spec (server-side apply,
    /// with the finalizer that holds the resource until the teardown ends) and the status
    /// (phase, one condition per step, observedGeneration) — written only when they differ. Once
    /// the row is gone, the finalizer is removed and the resource deleted.
    pub async fn mirror(&self, pool: &opencrane_db::PgPool, name: &str) -> Result<(), Error> {
        use opencrane_crd::cluster_tenant::ClusterTenant;
        let api: Api<ClusterTenant> = Api::all(self.client.clone());
        let row = match opencrane_fleet_db::cluster_tenants::get(pool, name).await {
            Ok(row) => row,
            Err(opencrane_db::Error::NotFound) => return self.release_resource(&api, name).await,
            Err(err) => return Err(err.into()),
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
        let applied = super::stamped(&applied);
        let live = api.get_opt(name).await.map_err(|e| Error::cluster("reading the ClusterTenant resource", e))?;
        let resource = match live {
            // Nothing to apply: the spec, finalizer and labels are there already.
            Some(live) if serde_json::to_value(&live).is_ok_and(|v| super::holds(&v, &applied)) => live,
            _ => api
                .patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&applied))
                .await
                .map_err(|e| Error::cluster("applying the ClusterTenant resource", e))?,
        };
        let generation = resource.metadata.generation.unwrap_or(1);
        let steps = opencrane_fleet_db::provisioning::steps(pool, name).await?;
        let status = crate::resource::status_from_row(&row, &steps, generation);
        let before = resource.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
        let action = if row.deletion_requested_at.is_some() { "Teardown" } else { "Provision" };
        self.record_transitions(&resource, &before, &status.conditions, action).await;
        if resource.status.as_ref() != Some(&status) {
            let patch = serde_json::json!({ "status": status });
            api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| Error::cluster("writing the ClusterTenant status", e))?;
        }
        if row.deletion_requested_at.is_some() && resource.metadata.deletion_timestamp.is_none() {
            let note = format!("Deletion started; terminationPolicy {}.", row.termination_policy);
            self.record(&resource, "DeletionStarted", &note, "Teardown").await;
            api.delete(name, &DeleteParams::default())
                .await
                .map_err(|e| Error::cluster("deleting the ClusterTenant resource", e))?;
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
    ) -> Result<(), Error> {
        let resource = match api.get(name).await {
            Ok(resource) => resource,
            Err(e) if not_found(&e) => return Ok(()),
            Err(e) => return Err(Error::cluster("reading the ClusterTenant resource", e)),
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
                .map_err(|e| Error::cluster("removing the finalizer", e))?;
        }
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(e) if not_found(&e) => Ok(()),
            Err(e) => Err(Error::cluster("deleting the ClusterTenant resource", e)),
        }
    }
}
