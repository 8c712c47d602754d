//! Step `namespace`: the silo's namespace `opencrane-<name>` (ownership and restricted Pod
//! Security labels) and the RoleBinding that lets the fleet install the release there only;
//! removed last, unless it holds a retained database.

use super::KubernetesBackend;
use crate::{
    build,
    reconcile::{StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

impl KubernetesBackend {
    pub(super) async fn converge_namespace(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
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

    pub(super) async fn remove_namespace(&self, name: &str, delete_database: bool) -> Result<Teardown, StepFailure> {
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
