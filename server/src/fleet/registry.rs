//! The fleet's service registry: ClusterTenant resources the fleet did not write go through the
//! service layer exactly as API calls do.

use opencrane_crd::cluster_tenant::ClusterTenantSpec;
use opencrane_provision::kubernetes::Registry;

/// The service layer as the Kubernetes backend's [`Registry`]: a ClusterTenant resource applied
/// with kubectl is created, edited or deleted through exactly the functions the console and the
/// REST API call (same validation, same audit entries), acting as the `controller` service token.
pub struct ServiceRegistry {
    /// The fleet's state.
    pub state: app::state::AppState,
}

impl ServiceRegistry {
    fn caller() -> app::state::Caller {
        app::state::Caller {
            principal: Some(app::model::principal::Principal::api_token("controller")),
            request_id: format!("controller-{}", uuid::Uuid::new_v4()),
            session_id: None,
        }
    }
}

/// What a resource's spec asks for, as the API's create request.
pub fn create_request(
    name: &str,
    spec: &ClusterTenantSpec,
) -> app::model::fleet::cluster_tenant::ClusterTenantCreateRequest {
    use app::model::fleet::cluster_tenant as m;
    m::ClusterTenantCreateRequest {
        name: name.to_owned(),
        display_name: spec.display_name.clone(),
        vanity_domain: spec.vanity_domain.clone(),
        // The resource and the API share the vocabulary's enums.
        isolation_tier: Some(spec.isolation_tier),
        compute: Some(m::ComputeRequest { mode: Some(spec.compute.mode), node_pool: spec.compute.node_pool.clone() }),
        resources: Some(m::Resources { quota: Some(spec.resources.quota.clone().unwrap_or_default()) }),
        seat_cap: None,
        owner: spec.owner.as_ref().map(|o| m::OwnerRequest { subject: o.subject.clone(), email: o.email.clone() }),
        termination_policy: Some(spec.termination_policy),
        reattach_retained: None,
        silo_version: spec.silo_version.clone(),
        suspended: Some(spec.suspended),
    }
}

fn refusal(error: &app::error::AppError) -> String {
    match error {
        app::error::AppError::Validation { fields } => {
            fields.0.iter().map(|(field, message)| format!("spec.{field}: {message}")).collect::<Vec<_>>().join("; ")
        }
        other => other.to_string(),
    }
}

#[async_trait::async_trait]
impl Registry for ServiceRegistry {
    async fn adopt(&self, name: &str, spec: &ClusterTenantSpec) -> Result<(), opencrane_provision::Error> {
        let created =
            app::service::fleet::cluster_tenants::create(&self.state, &Self::caller(), create_request(name, spec))
                .await;
        created
            .map(|_| tracing::info!(cluster_tenant = name, "adopted a ClusterTenant resource created out of band"))
            .map_err(|e| opencrane_provision::Error::Refused(refusal(&e)))
    }

    async fn edit(&self, name: &str, spec: &ClusterTenantSpec) -> Result<(), opencrane_provision::Error> {
        let request = create_request(name, spec);
        let update = app::model::fleet::cluster_tenant::ClusterTenantUpdateRequest {
            display_name: Some(request.display_name),
            vanity_domain: match request.vanity_domain {
                Some(domain) => app::model::fleet::cluster_tenant::Patch::Set(domain),
                None => app::model::fleet::cluster_tenant::Patch::Clear,
            },
            isolation_tier: request.isolation_tier,
            compute: request.compute,
            resources: request.resources,
            seat_cap: app::model::fleet::cluster_tenant::Patch::Keep,
            termination_policy: request.termination_policy,
            silo_version: match request.silo_version {
                Some(version) => app::model::fleet::cluster_tenant::Patch::Set(version),
                None => app::model::fleet::cluster_tenant::Patch::Clear,
            },
            suspended: request.suspended,
        };
        app::service::fleet::cluster_tenants::update(&self.state, &Self::caller(), name, update)
            .await
            .map(|_| ())
            .map_err(|e| opencrane_provision::Error::Refused(refusal(&e)))
    }

    async fn delete(&self, name: &str) -> Result<(), opencrane_provision::Error> {
        app::service::fleet::cluster_tenants::delete(&self.state, &Self::caller(), name, None)
            .await
            .map(|_| ())
            .map_err(|e| opencrane_provision::Error::Refused(refusal(&e)))
    }
}
