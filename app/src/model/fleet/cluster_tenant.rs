//! ClusterTenant wire types and their validation — the one copy, used by the hydrated form island
//! as the admin types and by the server on every create and update, whether it arrives from a
//! server function or from the REST API.
//!
//! Three layers: [`ClusterTenantForm`] (in `form`) holds exactly what the form's inputs hold
//! (strings); [`ClusterTenantCreateRequest`] is the REST/JSON contract of the reference;
//! [`validate`] turns a request into a [`ClusterTenantSpec`], the normalised desired state that
//! is stored. What the API returns is in `view`, the list's query and page in `list`.

mod form;
mod list;
mod view;

pub use form::*;
pub use list::*;
pub use view::*;

use serde::{Deserialize, Serialize};

use crate::error::FieldErrors;
use opencrane_types::rules;

pub use opencrane_types::{ComputeMode, IsolationTier, Phase, Quota, TerminationPolicy};

/// `compute` of the create body.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComputeRequest {
    /// Required.
    pub mode: Option<ComputeMode>,
    /// Required when `mode` is `dedicated`.
    pub node_pool: Option<String>,
}

/// `resources` of the create body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resources {
    /// Required by the reference ("resources.quota must be provided"); may be empty.
    pub quota: Option<Quota>,
}

/// The IdP identity that becomes the first Owner.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerRequest {
    /// IdP subject.
    #[serde(default)]
    pub subject: String,
    /// Email, informational.
    #[serde(default)]
    pub email: Option<String>,
}

/// `POST /api/v1/cluster-tenants` body (the reference's `ClusterTenantCreateRequest`).
///
/// Required fields are `Option`s so that a missing one is reported as a field error by
/// [`validate`] rather than as a decoding failure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterTenantCreateRequest {
    /// The customer key: DB key, CR name and namespace suffix.
    #[serde(default)]
    pub name: String,
    /// Human-readable name.
    #[serde(default)]
    pub display_name: String,
    /// Optional customer-owned host name; blank means none.
    #[serde(default)]
    pub vanity_domain: Option<String>,
    /// Required.
    #[serde(default)]
    pub isolation_tier: Option<IsolationTier>,
    /// Required.
    #[serde(default)]
    pub compute: Option<ComputeRequest>,
    /// Required (its quota may be empty).
    #[serde(default)]
    pub resources: Option<Resources>,
    /// Seat limit; null = uncapped.
    #[serde(default)]
    pub seat_cap: Option<i64>,
    /// First Owner; defaults to the signed-in user. Needed when the caller is a machine token.
    #[serde(default)]
    pub owner: Option<OwnerRequest>,
    /// What deletion does with the database; default `Retain`.
    #[serde(default)]
    pub termination_policy: Option<TerminationPolicy>,
    /// Platform operators only: give out a name whose deleted customer's data was kept, and
    /// re-attach that data (database, users, sealed keys) to this customer. Audited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reattach_retained: Option<bool>,
    /// Pin of the silo version; blank or absent follows the fleet's default.
    #[serde(default)]
    pub silo_version: Option<String>,
    /// Create suspended (provisioned, but scaled to zero).
    #[serde(default)]
    pub suspended: Option<bool>,
}

/// Distinguishes "field absent" from "field set to null" in a JSON update body.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Patch<T> {
    /// Not in the body: keep the stored value.
    #[default]
    Keep,
    /// `null` (or, for text, blank): clear the value.
    Clear,
    /// A new value.
    Set(T),
}

impl<T> Patch<T> {
    fn apply(self, current: Option<T>) -> Option<T> {
        match self {
            Self::Keep => current,
            Self::Clear => None,
            Self::Set(v) => Some(v),
        }
    }
}

fn patch<'de, D, T>(de: D) -> Result<Patch<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(match Option::<T>::deserialize(de)? {
        None => Patch::Clear,
        Some(v) => Patch::Set(v),
    })
}

/// `PUT /api/v1/cluster-tenants/{name}` body: every field optional; absent fields keep their
/// value. `vanityDomain: ""` or `null` clears the domain; `seatCap: null` removes the cap.
/// `name` and status fields are not writable.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterTenantUpdateRequest {
    /// New display name.
    #[serde(default)]
    pub display_name: Option<String>,
    /// New vanity domain, or clear it.
    #[serde(default, deserialize_with = "patch", skip_serializing_if = "is_keep")]
    #[cfg_attr(feature = "ssr", schemars(with = "Option<String>"))]
    pub vanity_domain: Patch<String>,
    /// New tier.
    #[serde(default)]
    pub isolation_tier: Option<IsolationTier>,
    /// New compute placement.
    #[serde(default)]
    pub compute: Option<ComputeRequest>,
    /// New resources.
    #[serde(default)]
    pub resources: Option<Resources>,
    /// New seat limit, or remove it.
    #[serde(default, deserialize_with = "patch", skip_serializing_if = "is_keep")]
    #[cfg_attr(feature = "ssr", schemars(with = "Option<i64>"))]
    pub seat_cap: Patch<i64>,
    /// New termination policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_policy: Option<TerminationPolicy>,
    /// New silo version pin, or follow the default again.
    #[serde(default, deserialize_with = "patch", skip_serializing_if = "is_keep")]
    #[cfg_attr(feature = "ssr", schemars(with = "Option<String>"))]
    pub silo_version: Patch<String>,
    /// Suspend (`true`) or resume (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended: Option<bool>,
}

fn is_keep<T>(p: &Patch<T>) -> bool {
    matches!(p, Patch::Keep)
}

/// What validation needs to know about this installation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationContext {
    /// `PLATFORM_BASE_DOMAIN`: vanity domains may not sit under it (those hosts are the
    /// platform's own, `<name>.<base>`).
    pub base_domain: Option<String>,
    /// The fleet's own namespace (`POD_NAMESPACE`): no customer's `opencrane-<name>` may be it,
    /// whatever it is called (the built-in reservations only know `opencrane-system`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet_namespace: Option<String>,
    /// Whether a dedicated-cluster provisioner is configured.
    pub dedicated_cluster_available: bool,
}

/// Normalised, validated desired state: what gets stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTenantSpec {
    /// Validated name.
    pub name: String,
    /// Trimmed display name.
    pub display_name: String,
    /// Lower-cased domain, or none.
    pub vanity_domain: Option<String>,
    /// Tier.
    pub isolation_tier: IsolationTier,
    /// Compute mode.
    pub compute_mode: ComputeMode,
    /// Node pool, present exactly when the mode is dedicated.
    pub node_pool: Option<String>,
    /// Quota with blank entries dropped.
    pub quota: Quota,
    /// Seat limit.
    pub seat_cap: Option<i32>,
    /// Scaled to zero, sign-ins blocked.
    pub suspended: bool,
    /// What deletion does with the database.
    pub termination_policy: TerminationPolicy,
    /// Silo version pin.
    pub silo_version: Option<String>,
}

impl ClusterTenantSpec {
    /// The fields (wire names) in which `self` differs from `current` that only a platform
    /// operator may change: suspension, quota, seat cap, tier, compute, version and retention. A
    /// customer's own owners and admins keep the display name and the vanity domain (the
    /// original let them lift a platform suspension and raise their own quota).
    pub fn operator_only_changes(&self, current: &ClusterTenantSpec) -> Vec<&'static str> {
        let changed = [
            ("suspended", self.suspended != current.suspended),
            ("resources.quota", self.quota != current.quota),
            ("seatCap", self.seat_cap != current.seat_cap),
            ("isolationTier", self.isolation_tier != current.isolation_tier),
            ("compute", (self.compute_mode, &self.node_pool) != (current.compute_mode, &current.node_pool)),
            ("siloVersion", self.silo_version != current.silo_version),
            ("terminationPolicy", self.termination_policy != current.termination_policy),
        ];
        changed.into_iter().filter(|(_, differs)| *differs).map(|(field, _)| field).collect()
    }
}

/// Largest accepted seat cap and pod/GPU count; beyond it is a typo, not a plan.
pub const MAX_COUNT: i64 = 1_000_000;

fn trimmed(s: Option<&str>) -> Option<String> {
    s.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

/// Validates a create request. Checks run in the reference's order (name and display name,
/// tier, vanity domain, compute, resources, seat cap) and every failing field gets a message.
/// Tier *availability* is separate (`IsolationTier::is_available`): it is a 422, not a 400.
pub fn validate(req: &ClusterTenantCreateRequest, ctx: &ValidationContext) -> Result<ClusterTenantSpec, FieldErrors> {
    let mut errors = FieldErrors::new();
    let name = req.name.trim().to_owned();
    errors.check("name", rules::cluster_tenant_name(&name));
    if ctx.fleet_namespace.as_deref().is_some_and(|ns| ns == format!("opencrane-{name}")) {
        errors.add("name", format!("“{name}” is reserved: opencrane-{name} is the fleet's own namespace."));
    }
    let display_name = req.display_name.trim().to_owned();
    errors.check("displayName", rules::display_text("Display name", &display_name, rules::DISPLAY_NAME_MAX));

    if req.isolation_tier.is_none() {
        errors.add("isolationTier", "Choose an isolation tier.");
    }

    let vanity_domain = trimmed(req.vanity_domain.as_deref()).map(|d| d.to_ascii_lowercase());
    if let Some(domain) = &vanity_domain {
        errors.check("vanityDomain", rules::domain_name(domain));
        if let Some(base) = ctx.base_domain.as_deref().map(str::to_ascii_lowercase).filter(|b| !b.is_empty())
            && (*domain == base || domain.ends_with(&format!(".{base}")))
        {
            errors.add(
                "vanityDomain",
                format!("Hosts under {base} belong to the platform; every customer already gets <name>.{base}."),
            );
        }
    }

    let compute = req.compute.clone().unwrap_or_default();
    let node_pool = trimmed(compute.node_pool.as_deref());
    match compute.mode {
        None => errors.add("compute.mode", "Choose where the workloads run."),
        Some(ComputeMode::Dedicated) => match &node_pool {
            None => errors.add("compute.nodePool", "A node pool is required for dedicated compute."),
            Some(pool) => {
                errors.check("compute.nodePool", rules::label_value(pool).map_err(|m| format!("Node pool: {m}")))
            }
        },
        Some(ComputeMode::Shared) => {
            if node_pool.is_some() {
                errors.add("compute.nodePool", "A node pool can only be set with dedicated compute.");
            }
        }
    }

    let quota = match req.resources.as_ref().and_then(|r| r.quota.as_ref()) {
        None => {
            errors.add("resources.quota", "resources.quota must be provided (it may be empty).");
            Quota::default()
        }
        Some(q) => {
            let quota = Quota {
                cpu: trimmed(q.cpu.as_deref()),
                memory: trimmed(q.memory.as_deref()),
                pods: q.pods,
                storage: trimmed(q.storage.as_deref()),
                gpu: q.gpu,
            };
            for (field, value) in [
                ("resources.quota.cpu", &quota.cpu),
                ("resources.quota.memory", &quota.memory),
                ("resources.quota.storage", &quota.storage),
            ] {
                if let Some(v) = value {
                    errors.check(field, rules::quantity(v));
                }
            }
            for (field, value) in [("resources.quota.pods", quota.pods), ("resources.quota.gpu", quota.gpu)] {
                errors.check(field, count(value));
            }
            quota
        }
    };

    errors.check("seatCap", count(req.seat_cap));
    let silo_version = trimmed(req.silo_version.as_deref());
    if let Some(version) = &silo_version {
        errors.check("siloVersion", rules::version(version));
    }

    let (Some(isolation_tier), Some(compute_mode)) = (req.isolation_tier, compute.mode) else {
        return Err(errors);
    };
    errors.into_result(ClusterTenantSpec {
        name,
        display_name,
        vanity_domain,
        isolation_tier,
        compute_mode,
        node_pool: node_pool.filter(|_| compute_mode == ComputeMode::Dedicated),
        quota,
        seat_cap: req.seat_cap.and_then(|c| i32::try_from(c).ok()),
        suspended: req.suspended.unwrap_or(false),
        termination_policy: req.termination_policy.unwrap_or_default(),
        silo_version,
    })
}

fn count(value: Option<i64>) -> Result<(), String> {
    match value {
        Some(n) if n < 0 => Err("Must be zero or more.".into()),
        Some(n) if n > MAX_COUNT => Err(format!("Must be at most {MAX_COUNT}.")),
        _ => Ok(()),
    }
}

impl ClusterTenantUpdateRequest {
    /// The create request that results from applying this update to `current`; validating it
    /// with [`validate`] validates the update (one validator for both).
    pub fn merge_into(self, current: &ClusterTenantSpec) -> ClusterTenantCreateRequest {
        let vanity = match self.vanity_domain {
            Patch::Set(d) if d.trim().is_empty() => Patch::Clear,
            other => other,
        };
        ClusterTenantCreateRequest {
            name: current.name.clone(),
            display_name: self.display_name.unwrap_or_else(|| current.display_name.clone()),
            vanity_domain: vanity.apply(current.vanity_domain.clone()),
            isolation_tier: self.isolation_tier.or(Some(current.isolation_tier)),
            compute: self.compute.or_else(|| {
                Some(ComputeRequest { mode: Some(current.compute_mode), node_pool: current.node_pool.clone() })
            }),
            resources: self.resources.or_else(|| Some(Resources { quota: Some(current.quota.clone()) })),
            seat_cap: self.seat_cap.apply(current.seat_cap.map(i64::from)),
            owner: None,
            termination_policy: self.termination_policy.or(Some(current.termination_policy)),
            reattach_retained: None,
            silo_version: self.silo_version.apply(current.silo_version.clone()),
            suspended: self.suspended.or(Some(current.suspended)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ValidationContext {
        ValidationContext { base_domain: Some("example.com".into()), ..Default::default() }
    }

    fn valid_request() -> ClusterTenantCreateRequest {
        ClusterTenantCreateRequest {
            name: "acme".into(),
            display_name: "Acme Corp".into(),
            vanity_domain: None,
            isolation_tier: Some(IsolationTier::Shared),
            compute: Some(ComputeRequest { mode: Some(ComputeMode::Shared), node_pool: None }),
            resources: Some(Resources { quota: Some(Quota::default()) }),
            seat_cap: None,
            owner: None,
            termination_policy: None,
            reattach_retained: None,
            silo_version: None,
            suspended: None,
        }
    }

    #[test]
    fn retention_and_version_default_and_are_checked() {
        let spec = validate(&valid_request(), &ctx()).unwrap();
        assert_eq!(
            (spec.termination_policy, spec.silo_version.as_deref(), spec.suspended),
            (TerminationPolicy::Retain, None, false)
        );
        let mut req = valid_request();
        req.silo_version = Some(" 0.4.0-rc.1 ".into());
        req.termination_policy = Some(TerminationPolicy::Delete);
        let spec = validate(&req, &ctx()).unwrap();
        assert_eq!(
            (spec.silo_version.as_deref(), spec.termination_policy),
            (Some("0.4.0-rc.1"), TerminationPolicy::Delete)
        );
        req.silo_version = Some("1 .0".into());
        let errors = validate(&req, &ctx()).unwrap_err();
        assert!(errors.0.iter().any(|(field, _)| field == "siloVersion"), "{errors:?}");
        let update = ClusterTenantUpdateRequest { suspended: Some(true), ..Default::default() };
        let merged = update.merge_into(&validate(&valid_request(), &ctx()).unwrap());
        assert_eq!(merged.suspended, Some(true));
        assert_eq!(merged.termination_policy, Some(TerminationPolicy::Retain), "absent fields keep their value");
    }

    #[test]
    fn a_minimal_request_is_valid_and_normalised() {
        let mut req = valid_request();
        req.name = "  acme ".into();
        req.display_name = " Acme Corp ".into();
        req.vanity_domain = Some(" Portal.Acme.IO ".into());
        let spec = validate(&req, &ctx()).unwrap();
        assert_eq!(spec.name, "acme");
        assert_eq!(spec.display_name, "Acme Corp");
        assert_eq!(spec.vanity_domain.as_deref(), Some("portal.acme.io"));
        assert_eq!(spec.node_pool, None);
    }

    #[test]
    fn every_missing_required_field_is_named() {
        let errors = validate(&ClusterTenantCreateRequest::default(), &ctx()).unwrap_err();
        for field in ["name", "displayName", "isolationTier", "compute.mode", "resources.quota"] {
            assert!(errors.get(field).is_some(), "{field} missing from {errors:?}");
        }
    }

    #[test]
    fn compute_rules() {
        let mut req = valid_request();
        req.compute = Some(ComputeRequest { mode: Some(ComputeMode::Dedicated), node_pool: Some(" ".into()) });
        assert!(validate(&req, &ctx()).unwrap_err().get("compute.nodePool").unwrap().contains("required"));
        req.compute = Some(ComputeRequest { mode: Some(ComputeMode::Dedicated), node_pool: Some("gpu pool".into()) });
        assert!(validate(&req, &ctx()).unwrap_err().get("compute.nodePool").is_some());
        req.compute = Some(ComputeRequest { mode: Some(ComputeMode::Dedicated), node_pool: Some("gpu-a".into()) });
        assert_eq!(validate(&req, &ctx()).unwrap().node_pool.as_deref(), Some("gpu-a"));
        req.compute = Some(ComputeRequest { mode: Some(ComputeMode::Shared), node_pool: Some("gpu-a".into()) });
        assert!(validate(&req, &ctx()).unwrap_err().get("compute.nodePool").unwrap().contains("only"));
    }

    #[test]
    fn quota_and_counts() {
        let mut req = valid_request();
        req.resources = Some(Resources {
            quota: Some(Quota {
                cpu: Some("8".into()),
                memory: Some("lots".into()),
                pods: Some(-1),
                storage: Some(" ".into()),
                gpu: Some(MAX_COUNT + 1),
            }),
        });
        req.seat_cap = Some(-5);
        let errors = validate(&req, &ctx()).unwrap_err();
        assert!(errors.get("resources.quota.cpu").is_none());
        assert!(errors.get("resources.quota.memory").is_some());
        assert!(errors.get("resources.quota.pods").is_some());
        assert!(errors.get("resources.quota.storage").is_none(), "blank means unset");
        assert!(errors.get("resources.quota.gpu").is_some());
        assert!(errors.get("seatCap").is_some());
    }

    #[test]
    fn vanity_domains_under_the_platform_base_are_refused() {
        let mut req = valid_request();
        req.vanity_domain = Some("beta.example.com".into());
        assert!(validate(&req, &ctx()).unwrap_err().get("vanityDomain").unwrap().contains("belong to the platform"));
        req.vanity_domain = Some("example.com".into());
        assert!(validate(&req, &ctx()).is_err());
        req.vanity_domain = Some("notexample.com".into());
        assert!(validate(&req, &ctx()).is_ok());
    }

    #[test]
    fn dedicated_cluster_is_refused_unless_available() {
        let mut form = ClusterTenantForm::new_defaults();
        form.name = "acme".into();
        form.display_name = "Acme".into();
        form.isolation_tier = "dedicatedCluster".into();
        assert!(form.check(&ctx()).unwrap_err().get("isolationTier").unwrap().contains("not available"));
        let available = ValidationContext { dedicated_cluster_available: true, ..ctx() };
        assert!(form.check(&available).is_ok());
    }

    #[test]
    fn form_typing_errors_come_before_rule_errors() {
        let mut form = ClusterTenantForm::new_defaults();
        form.name = "acme".into();
        form.display_name = "Acme".into();
        form.seat_cap = "ten".into();
        form.pods = "12".into();
        let errors = form.check(&ctx()).unwrap_err();
        assert_eq!(errors.get("seatCap"), Some("Enter a whole number."));
        assert_eq!(errors.0.len(), 1);
    }

    #[test]
    fn a_form_round_trips_through_a_spec() {
        let mut form = ClusterTenantForm::new_defaults();
        form.name = "acme".into();
        form.display_name = "Acme".into();
        form.compute_mode = "dedicated".into();
        form.node_pool = "pool-a".into();
        form.cpu = "4".into();
        form.pods = "20".into();
        form.seat_cap = "50".into();
        let spec = validate(&form.check(&ctx()).unwrap(), &ctx()).unwrap();
        assert_eq!(ClusterTenantForm::from_spec(&spec), form);
    }

    #[test]
    fn the_fleets_own_namespace_is_reserved_whatever_it_is_called() {
        let ctx = ValidationContext { fleet_namespace: Some("opencrane-prod".into()), ..ctx() };
        let request = ClusterTenantCreateRequest { name: "prod".into(), ..valid_request() };
        let errors = validate(&request, &ctx).unwrap_err();
        assert!(errors.get("name").is_some_and(|m| m.contains("fleet's own namespace")), "{errors:?}");
        assert!(validate(&valid_request(), &ctx).is_ok());
    }

    #[test]
    fn only_display_name_and_vanity_domain_are_the_customers_to_change() {
        let current = validate(&valid_request(), &ctx()).unwrap();
        let own = ClusterTenantUpdateRequest {
            display_name: Some("Acme Inc".into()),
            vanity_domain: Patch::Set("portal.acme.io".into()),
            ..Default::default()
        };
        let spec = validate(&own.merge_into(&current), &ctx()).unwrap();
        assert!(spec.operator_only_changes(&current).is_empty());
        let resume = ClusterTenantUpdateRequest { suspended: Some(true), ..Default::default() };
        let spec = validate(&resume.merge_into(&current), &ctx()).unwrap();
        assert_eq!(spec.operator_only_changes(&current), ["suspended"]);
        let mut quota = current.quota.clone();
        quota.cpu = Some("64".into());
        let raise = ClusterTenantUpdateRequest {
            resources: Some(Resources { quota: Some(quota) }),
            seat_cap: Patch::Set(500),
            silo_version: Patch::Set("9.9.9".into()),
            ..Default::default()
        };
        let spec = validate(&raise.merge_into(&current), &ctx()).unwrap();
        assert_eq!(spec.operator_only_changes(&current), ["resources.quota", "seatCap", "siloVersion"]);
        // Sending the current values back (what the edit form does) changes nothing.
        let same = ClusterTenantUpdateRequest { suspended: Some(false), ..Default::default() };
        assert!(validate(&same.merge_into(&current), &ctx()).unwrap().operator_only_changes(&current).is_empty());
    }

    #[test]
    fn updates_merge_then_validate_with_the_same_rules() {
        let current = validate(&valid_request(), &ctx()).unwrap();
        let update: ClusterTenantUpdateRequest = serde_json::from_str(r#"{"seatCap": 10}"#).unwrap();
        let merged = validate(&update.merge_into(&current), &ctx()).unwrap();
        assert_eq!(merged.seat_cap, Some(10));
        assert_eq!(merged.display_name, "Acme Corp");

        let mut capped = current.clone();
        capped.seat_cap = Some(5);
        capped.vanity_domain = Some("acme.io".into());
        let clear: ClusterTenantUpdateRequest =
            serde_json::from_str(r#"{"seatCap": null, "vanityDomain": ""}"#).unwrap();
        let merged = validate(&clear.merge_into(&capped), &ctx()).unwrap();
        assert_eq!((merged.seat_cap, merged.vanity_domain), (None, None));

        let keep: ClusterTenantUpdateRequest = serde_json::from_str("{}").unwrap();
        assert_eq!(validate(&keep.merge_into(&capped), &ctx()).unwrap(), capped);

        let bad: ClusterTenantUpdateRequest = serde_json::from_str(r#"{"displayName": "  "}"#).unwrap();
        assert!(validate(&bad.merge_into(&current), &ctx()).unwrap_err().get("displayName").is_some());
    }

    #[test]
    fn unknown_fields_are_rejected_by_name() {
        let err = serde_json::from_str::<ClusterTenantCreateRequest>(r#"{"displayname": "x"}"#).unwrap_err();
        assert!(err.to_string().contains("displayname"), "{err}");
        let err = serde_json::from_str::<ClusterTenantUpdateRequest>(r#"{"name": "x"}"#).unwrap_err();
        assert!(err.to_string().contains("name"), "{err}");
    }

    #[test]
    fn list_query_reads_and_writes_urls() {
        let params = [("q", "ac me"), ("phase", "ready"), ("sort", "createdAt"), ("order", "desc"), ("page", "3")];
        let get = |k: &str| params.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned());
        let q = ListQuery::from_params(get);
        assert_eq!(q.search.as_deref(), Some("ac me"));
        assert_eq!(q.phase, Some(Phase::Ready));
        assert_eq!(q.sort, SortBy::CreatedAt);
        assert!(q.descending);
        assert_eq!(q.offset, 100);
        assert_eq!(q.page(), 3);
        assert_eq!(q.href(|_| {}), "/cluster-tenants?q=ac%20me&phase=ready&sort=createdAt&order=desc&page=3");
        assert_eq!(q.href(|q| *q = ListQuery::default()), "/cluster-tenants");
        let junk = ListQuery::from_params(|k| (k == "page").then(|| "-4".to_owned()));
        assert_eq!(junk.offset, 0);
        // A cursor link keeps the page number; a numbered page drops the cursor.
        let mut keyset = q.clone();
        keyset.after = Some("acme.2026-01-01T00:00:00.000000Z".into());
        let href = keyset.href(|_| {});
        assert!(href.ends_with("&page=3&after=acme.2026-01-01T00%3A00%3A00.000000Z"), "{href}");
        assert!(!keyset.href(|q| q.at_page(5)).contains("after"), "page links jump by offset");
    }
}
