//! ClusterTenant resources the fleet did not write: adopted, edited or deleted through the
//! server's service layer ([`Registry`]), watched until shutdown.

use kube::{
    Api,
    api::{Patch, PatchParams},
};

use super::{Client, KubernetesBackend};
use crate::Error;

/// What the fleet does about ClusterTenant resources it did not write: the service layer's
/// create, update and delete, so a resource applied with kubectl gets exactly the checks and
/// effects of an API call (implemented by the server, which owns the service layer).
#[async_trait::async_trait]
pub trait Registry: Send + Sync {
    /// A resource without a fleet record: create the record (the error names the field).
    async fn adopt(&self, name: &str, spec: &opencrane_crd::cluster_tenant::ClusterTenantSpec) -> Result<(), Error>;
    /// A resource whose spec was edited out of band: update the record.
    async fn edit(&self, name: &str, spec: &opencrane_crd::cluster_tenant::ClusterTenantSpec) -> Result<(), Error>;
    /// A resource deleted with kubectl: start the teardown.
    async fn delete(&self, name: &str) -> Result<(), Error>;
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
    ) -> Result<(), Error> {
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
            Err(err) => return Err(err.into()),
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
                .map_err(|e| Error::cluster("writing the refusal", e))?;
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

/// One ClusterTenant resource.
pub async fn read_cluster_tenant(
    client: &Client,
    name: &str,
) -> Result<opencrane_crd::cluster_tenant::ClusterTenant, Error> {
    Api::<opencrane_crd::cluster_tenant::ClusterTenant>::all(client.clone())
        .get(name)
        .await
        .map_err(|e| Error::cluster("reading the ClusterTenant resource", e))
}
