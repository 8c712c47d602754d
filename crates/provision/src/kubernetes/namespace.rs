//! Step `namespace`: the silo's namespace `opencrane-<name>` (ownership and restricted Pod
//! Security labels) and the RoleBinding that lets the fleet install the release there only;
//! removed last, unless it holds a retained database. A namespace of that name that exists without
//! this customer's ownership label is never taken over (it may be another customer's retained
//! silo, or not the platform's at all).

use kube::api::{ApiResource, GroupVersionKind};

use super::{KubernetesBackend, failure, not_found};
use crate::{
    build,
    reconcile::{StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

impl KubernetesBackend {
    pub(super) async fn converge_namespace(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        let namespaces = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Namespace"), "namespaces");
        let ns = desired.namespace();
        match self.api(&namespaces, None).get(&ns).await {
            Ok(existing) => check_owner(&ns, &desired.name, existing.metadata.labels.as_ref())?,
            Err(e) if not_found(&e) => {}
            Err(e) => return Err(failure(&format!("reading Namespace {ns}"), &e)),
        }
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

/// A namespace that exists may be converged only when it carries this customer's ownership label.
fn check_owner(
    namespace: &str,
    name: &str,
    labels: Option<&std::collections::BTreeMap<String, String>>,
) -> Result<(), StepFailure> {
    let owner = labels.and_then(|l| l.get(build::OWNER_LABEL));
    if owner.is_some_and(|o| o == name) {
        return Ok(());
    }
    let why = match owner {
        Some(other) => format!("it belongs to customer “{other}”"),
        None => format!("it has no {} label", build::OWNER_LABEL),
    };
    Err(StepFailure::new(
        "NamespaceNotOwned",
        format!("Namespace {namespace} already exists and {why}; nothing was applied to it."),
        format!(
            "If the namespace is stale, delete it or label it for this customer (kubectl label namespace {namespace} {}={name}), then Retry; otherwise choose another name.",
            build::OWNER_LABEL
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_namespace_labelled_for_this_customer_is_taken_over() {
        let labels = |v: &str| [(build::OWNER_LABEL.to_owned(), v.to_owned())].into_iter().collect();
        assert!(check_owner("opencrane-acme", "acme", Some(&labels("acme"))).is_ok());
        let theirs = check_owner("opencrane-acme", "acme", Some(&labels("other"))).unwrap_err();
        assert_eq!(theirs.reason, "NamespaceNotOwned");
        assert!(theirs.message.contains("customer “other”"), "{}", theirs.message);
        let unlabelled = check_owner("opencrane-acme", "acme", None).unwrap_err();
        assert!(unlabelled.message.contains("no opencrane.io/cluster-tenant label"), "{}", unlabelled.message);
    }
}
