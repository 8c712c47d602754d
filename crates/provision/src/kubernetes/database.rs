//! Step `database`: the silo's CloudNativePG cluster, ready once its app Secret exists; on
//! deletion kept (Retain) or deleted with its volumes and Secret (Delete).

use kube::api::{ApiResource, GroupVersionKind, ListParams};

use super::{KubernetesBackend, failure, not_found};
use crate::{
    build,
    reconcile::{StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

impl KubernetesBackend {
    pub(super) async fn converge_database(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
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

    pub(super) async fn remove_database(&self, name: &str, delete_database: bool) -> Result<Teardown, StepFailure> {
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
}
