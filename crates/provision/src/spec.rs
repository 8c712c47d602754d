//! The desired state of one silo, validated: what every step builds from. It comes from the fleet
//! database's row or from the ClusterTenant custom resource (an object created out of band gets
//! exactly the same checks as an API create).

use opencrane_crd::cluster_tenant::{ClusterTenantSpec, ComputeMode, TerminationPolicy};
use opencrane_fleet_db::cluster_tenants::ClusterTenantRow;
use opencrane_types::{Quota, rules};

/// A ClusterTenant's desired state, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desired {
    /// The ClusterTenant's name (DNS label, ≤ 53 characters).
    pub name: String,
    /// Human-readable name.
    pub display_name: String,
    /// The customer-owned host, if any.
    pub vanity_domain: Option<String>,
    /// The node pool for dedicated compute.
    pub node_pool: Option<String>,
    /// Namespace quota; `None` = no ResourceQuota.
    pub quota: Option<Quota>,
    /// Scale to zero and block sign-ins.
    pub suspended: bool,
    /// Delete the database with the silo (else keep it).
    pub delete_database: bool,
    /// Silo version pin.
    pub silo_version: Option<String>,
    /// The desired-state generation this was read from.
    pub generation: i64,
    /// A newly minted silo credential to install on this pass (set by the reconciler for the
    /// release step, never read from the row: the fleet keeps only its SHA-256).
    pub silo_credential: Option<opencrane_deploy::Secret>,
    /// The customer's sign-in organisation, once the identity step made it.
    pub identity: Option<SiloIdentity>,
}

/// The public ids the silo's per-organisation sign-in needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiloIdentity {
    /// The Zitadel organisation (the org-restricting scope).
    pub org_id: String,
    /// The login app's OIDC client id.
    pub client_id: String,
}

impl SiloIdentity {
    /// Both ids, or nothing.
    pub fn of(org_id: Option<&str>, client_id: Option<&str>) -> Option<Self> {
        Some(Self { org_id: org_id?.to_owned(), client_id: client_id?.to_owned() })
    }
}

/// Why a desired state cannot be provisioned; names the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    /// The field's path, e.g. `spec.resources.quota.cpu`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn invalid(field: &str, message: impl Into<String>) -> Invalid {
    Invalid { field: field.into(), message: message.into() }
}

/// The namespace of a silo.
pub fn namespace_of(name: &str) -> String {
    format!("opencrane-{name}")
}

fn check_name(name: &str) -> Result<(), Invalid> {
    rules::cluster_tenant_name(name).map_err(|message| invalid("metadata.name", message))
}

fn check_count(field: &str, value: Option<i64>) -> Result<(), Invalid> {
    match value {
        Some(n) if n < 0 => Err(invalid(field, "must be zero or more")),
        _ => Ok(()),
    }
}

fn check_quota(quota: Option<Quota>) -> Result<Option<Quota>, Invalid> {
    let Some(quota) = quota.filter(|q| !q.is_empty()) else { return Ok(None) };
    for (field, value) in [
        ("spec.resources.quota.cpu", &quota.cpu),
        ("spec.resources.quota.memory", &quota.memory),
        ("spec.resources.quota.storage", &quota.storage),
    ] {
        if let Some(v) = value {
            rules::quantity(v).map_err(|message| invalid(field, format!("{v:?}: {message}")))?;
        }
    }
    check_count("spec.resources.quota.pods", quota.pods)?;
    check_count("spec.resources.quota.gpu", quota.gpu)?;
    Ok(Some(quota))
}

fn check_version(version: Option<&str>) -> Result<(), Invalid> {
    match version {
        Some(v) => rules::version(v).map_err(|message| invalid("spec.siloVersion", message)),
        None => Ok(()),
    }
}

impl Desired {
    /// From the fleet database's row.
    pub fn from_row(row: &ClusterTenantRow) -> Result<Self, Invalid> {
        check_name(&row.name)?;
        let quota: serde_json::Map<String, serde_json::Value> = match &row.quota {
            serde_json::Value::Object(map) => map.clone(),
            _ => return Err(invalid("spec.resources.quota", "must be an object")),
        };
        let text = |key: &str| quota.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        let number = |key: &str| quota.get(key).and_then(serde_json::Value::as_i64);
        let quota = Quota {
            cpu: text("cpu"),
            memory: text("memory"),
            pods: number("pods"),
            storage: text("storage"),
            gpu: number("gpu"),
        };
        check_version(row.silo_version.as_deref())?;
        let delete_database = match TerminationPolicy::parse(&row.termination_policy) {
            Some(policy) => policy == TerminationPolicy::Delete,
            None => {
                let other = &row.termination_policy;
                return Err(invalid("spec.terminationPolicy", format!("{other:?} is not Retain or Delete")));
            }
        };
        Ok(Self {
            name: row.name.clone(),
            display_name: row.display_name.clone(),
            vanity_domain: row.vanity_domain.clone(),
            node_pool: row
                .node_pool
                .clone()
                .filter(|_| ComputeMode::parse(&row.compute_mode) == Some(ComputeMode::Dedicated)),
            quota: check_quota(Some(quota))?,
            suspended: row.suspended,
            delete_database,
            silo_version: row.silo_version.clone(),
            generation: row.generation,
            silo_credential: None,
            identity: SiloIdentity::of(row.zitadel_org_id.as_deref(), row.zitadel_client_id.as_deref()),
        })
    }

    /// From the custom resource (name, spec and `metadata.generation`).
    pub fn from_resource(name: &str, spec: &ClusterTenantSpec, generation: i64) -> Result<Self, Invalid> {
        check_name(name)?;
        rules::display_text("Display name", spec.display_name.trim(), rules::DISPLAY_NAME_MAX)
            .map_err(|message| invalid("spec.displayName", message))?;
        if let Some(domain) = &spec.vanity_domain {
            rules::domain_name(domain).map_err(|message| invalid("spec.vanityDomain", message))?;
        }
        let node_pool = match (spec.compute.mode, spec.compute.node_pool.as_deref().map(str::trim)) {
            (ComputeMode::Dedicated, Some(pool)) if !pool.is_empty() => Some(pool.to_owned()),
            (ComputeMode::Dedicated, _) => {
                return Err(invalid("spec.compute.nodePool", "is required when spec.compute.mode is dedicated"));
            }
            (ComputeMode::Shared, Some(pool)) if !pool.is_empty() => {
                return Err(invalid("spec.compute.nodePool", "can only be set when spec.compute.mode is dedicated"));
            }
            (ComputeMode::Shared, _) => None,
        };
        let quota = spec.resources.quota.clone();
        check_version(spec.silo_version.as_deref())?;
        Ok(Self {
            name: name.to_owned(),
            display_name: spec.display_name.trim().to_owned(),
            vanity_domain: spec.vanity_domain.clone(),
            node_pool,
            quota: check_quota(quota)?,
            suspended: spec.suspended,
            delete_database: spec.termination_policy == TerminationPolicy::Delete,
            silo_version: spec.silo_version.clone(),
            generation,
            silo_credential: None,
            // The fleet mirrors its ids here; `provision-render` shows what a release gets.
            identity: spec.zitadel.as_ref().and_then(|z| SiloIdentity::of(z.org_id.as_deref(), z.client_id.as_deref())),
        })
    }

    /// The silo's namespace.
    pub fn namespace(&self) -> String {
        namespace_of(&self.name)
    }

    /// The unit tests' customer: `acme`, display name `Acme`, nothing optional set.
    #[cfg(test)]
    pub(crate) fn example() -> Self {
        Self {
            name: "acme".into(),
            display_name: "Acme".into(),
            vanity_domain: None,
            node_pool: None,
            quota: None,
            suspended: false,
            delete_database: false,
            silo_version: None,
            generation: 1,
            silo_credential: None,
            identity: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use opencrane_crd::cluster_tenant::{Compute, Resources};

    use super::*;

    fn spec() -> ClusterTenantSpec {
        serde_json::from_value(serde_json::json!({"displayName": "Acme"})).unwrap()
    }

    #[test]
    fn a_resource_is_checked_like_an_api_create_and_errors_name_the_field() {
        let ok = Desired::from_resource("acme", &spec(), 3).unwrap();
        assert_eq!((ok.namespace().as_str(), ok.generation, ok.quota.is_none()), ("opencrane-acme", 3, true));
        let too_long = "a".repeat(54);
        let cases: Vec<(&str, ClusterTenantSpec, &str)> = vec![
            ("Acme", spec(), "metadata.name"),
            ("acme-", spec(), "metadata.name"),
            (&too_long, spec(), "metadata.name"),
            ("acme", ClusterTenantSpec { display_name: " ".into(), ..spec() }, "spec.displayName"),
            (
                "acme",
                ClusterTenantSpec { compute: Compute { mode: ComputeMode::Dedicated, node_pool: None }, ..spec() },
                "spec.compute.nodePool",
            ),
            (
                "acme",
                ClusterTenantSpec {
                    resources: Resources {
                        quota: Some(opencrane_crd::cluster_tenant::Quota {
                            cpu: Some("lots".into()),
                            ..Default::default()
                        }),
                    },
                    ..spec()
                },
                "spec.resources.quota.cpu",
            ),
            ("acme", ClusterTenantSpec { silo_version: Some("1 .0".into()), ..spec() }, "spec.siloVersion"),
        ];
        for (name, spec, field) in cases {
            let err = Desired::from_resource(name, &spec, 1).unwrap_err();
            assert_eq!(err.field, field, "{name}: {err}");
        }
    }
}
