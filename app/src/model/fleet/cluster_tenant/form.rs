//! The create/edit form of a customer: exactly what its inputs hold (strings), and the step where
//! typing mistakes become field errors before the request is validated.

use serde::{Deserialize, Serialize};

use super::*;
use crate::error::FieldErrors;

/// Exactly what the create/edit form's inputs hold. Turning it into a request is where typing
/// mistakes (letters in a number field) become field errors.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterTenantForm {
    /// Name input.
    pub name: String,
    /// Display name input.
    pub display_name: String,
    /// Vanity domain input.
    pub vanity_domain: String,
    /// Tier select (wire spelling).
    pub isolation_tier: String,
    /// Compute mode radio (wire spelling).
    pub compute_mode: String,
    /// Node pool input.
    pub node_pool: String,
    /// Quota inputs.
    pub cpu: String,
    /// Memory quota input.
    pub memory: String,
    /// Pods quota input.
    pub pods: String,
    /// Storage quota input.
    pub storage: String,
    /// GPU quota input.
    pub gpu: String,
    /// Seat cap input; blank = uncapped.
    pub seat_cap: String,
    /// Termination policy select (wire spelling).
    pub termination_policy: String,
    /// Silo version input; blank = the fleet's default.
    pub silo_version: String,
}

fn parse_count(field: &str, text: &str, errors: &mut FieldErrors) -> Option<i64> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    match text.parse::<i64>() {
        Ok(n) => Some(n),
        Err(_) => {
            errors.add(field, "Enter a whole number.");
            None
        }
    }
}

impl ClusterTenantForm {
    /// A blank form with the defaults a new customer usually gets.
    pub fn new_defaults() -> Self {
        Self {
            isolation_tier: "shared".into(),
            compute_mode: "shared".into(),
            termination_policy: TerminationPolicy::Retain.as_str().into(),
            ..Self::default()
        }
    }

    /// This form with the inputs in `pairs` (named by this struct's own keys, as a posted form
    /// names them) replacing its values; unknown keys are ignored.
    #[must_use]
    pub fn with_pairs<'a>(self, pairs: impl IntoIterator<Item = (&'a str, String)>) -> Self {
        let Ok(serde_json::Value::Object(mut map)) = serde_json::to_value(&self) else { return self };
        for (key, value) in pairs {
            if map.contains_key(key) {
                map.insert(key.to_owned(), serde_json::Value::String(value));
            }
        }
        serde_json::from_value(serde_json::Value::Object(map)).unwrap_or(self)
    }

    /// The form showing a stored ClusterTenant, for editing.
    pub fn from_spec(spec: &ClusterTenantSpec) -> Self {
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        let num = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_default();
        Self {
            name: spec.name.clone(),
            display_name: spec.display_name.clone(),
            vanity_domain: text(&spec.vanity_domain),
            isolation_tier: spec.isolation_tier.as_str().into(),
            compute_mode: spec.compute_mode.as_str().into(),
            node_pool: text(&spec.node_pool),
            cpu: text(&spec.quota.cpu),
            memory: text(&spec.quota.memory),
            pods: num(spec.quota.pods),
            storage: text(&spec.quota.storage),
            gpu: num(spec.quota.gpu),
            seat_cap: num(spec.seat_cap.map(i64::from)),
            termination_policy: spec.termination_policy.as_str().into(),
            silo_version: text(&spec.silo_version),
        }
    }

    /// The request this form submits, or the fields that are not even well-typed.
    pub fn to_request(&self) -> (ClusterTenantCreateRequest, FieldErrors) {
        let mut errors = FieldErrors::new();
        let pods = parse_count("resources.quota.pods", &self.pods, &mut errors);
        let gpu = parse_count("resources.quota.gpu", &self.gpu, &mut errors);
        let seat_cap = parse_count("seatCap", &self.seat_cap, &mut errors);
        let request = ClusterTenantCreateRequest {
            name: self.name.clone(),
            display_name: self.display_name.clone(),
            vanity_domain: Some(self.vanity_domain.clone()),
            isolation_tier: IsolationTier::parse(&self.isolation_tier),
            compute: Some(ComputeRequest {
                mode: ComputeMode::parse(&self.compute_mode),
                node_pool: Some(self.node_pool.clone()),
            }),
            resources: Some(Resources {
                quota: Some(Quota {
                    cpu: Some(self.cpu.clone()),
                    memory: Some(self.memory.clone()),
                    pods,
                    storage: Some(self.storage.clone()),
                    gpu,
                }),
            }),
            seat_cap,
            owner: None,
            termination_policy: TerminationPolicy::parse(&self.termination_policy),
            reattach_retained: None,
            silo_version: Some(self.silo_version.clone()),
            suspended: None,
        };
        if request.termination_policy.is_none() {
            errors.add("terminationPolicy", "Choose what happens to the database on deletion.");
        }
        (request, errors)
    }

    /// Everything wrong with the form as it stands: typing errors first, then [`validate`].
    pub fn check(&self, ctx: &ValidationContext) -> Result<ClusterTenantCreateRequest, FieldErrors> {
        let (request, mut errors) = self.to_request();
        if let Err(rule_errors) = validate(&request, ctx) {
            for (field, message) in rule_errors.0 {
                errors.add(field, message);
            }
        }
        if let Some(tier) = request.isolation_tier.filter(|t| !t.is_available(ctx.dedicated_cluster_available)) {
            errors.add("isolationTier", tier_unavailable_message(tier));
        }
        errors.into_result(request)
    }

    /// The update request this form submits when editing (every field set).
    pub fn to_update(&self, ctx: &ValidationContext) -> Result<ClusterTenantUpdateRequest, FieldErrors> {
        let request = self.check(ctx)?;
        Ok(ClusterTenantUpdateRequest {
            display_name: Some(request.display_name),
            vanity_domain: match trimmed(request.vanity_domain.as_deref()) {
                Some(d) => Patch::Set(d),
                None => Patch::Clear,
            },
            isolation_tier: request.isolation_tier,
            compute: request.compute,
            resources: request.resources,
            seat_cap: match request.seat_cap {
                Some(n) => Patch::Set(n),
                None => Patch::Clear,
            },
            termination_policy: request.termination_policy,
            silo_version: match trimmed(request.silo_version.as_deref()) {
                Some(v) => Patch::Set(v),
                None => Patch::Clear,
            },
            suspended: None,
        })
    }
}

/// The message for a tier this installation cannot provision.
pub fn tier_unavailable_message(tier: IsolationTier) -> String {
    format!("{} is not available: no external provisioner for dedicated clusters is configured.", tier.label())
}
