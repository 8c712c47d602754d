//! The ClusterTenant custom resource as a mirror of the fleet database — pure mappings: the spec
//! from a row, one standard condition per step row, the status (phase, conditions, boundNamespace,
//! siloUrl, observedGeneration, message, retained) with the aggregate `Ready` condition. The
//! database, the API and the resource spell phases, tiers and modes the same way (the vocabulary
//! crate's `as_str`).

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use opencrane_crd::cluster_tenant::{
    ClusterTenantSpec, Compute, ComputeMode, IsolationTier, Phase, Quota, Resources, TerminationPolicy, Zitadel,
};
use opencrane_fleet_db::{cluster_tenants::ClusterTenantRow, provisioning::StepRow};

use crate::StepId;

/// The finalizer the fleet puts on every ClusterTenant it provisions: the resource stays until
/// the silo is torn down.
pub const FINALIZER: &str = "opencrane.io/silo";

/// The annotation saying which generation of the fleet's record the resource's spec came from.
pub const FLEET_GENERATION: &str = "opencrane.io/fleet-generation";

fn text(map: &serde_json::Value, key: &str) -> Option<String> {
    map.get(key).and_then(|v| v.as_str()).map(str::to_owned)
}

/// The resource's spec for a stored row.
pub fn spec_from_row(row: &ClusterTenantRow) -> ClusterTenantSpec {
    let quota = Quota {
        cpu: text(&row.quota, "cpu"),
        memory: text(&row.quota, "memory"),
        pods: row.quota.get("pods").and_then(serde_json::Value::as_i64),
        storage: text(&row.quota, "storage"),
        gpu: row.quota.get("gpu").and_then(serde_json::Value::as_i64),
    };
    let declared = quota != Quota::default();
    let zitadel = (row.zitadel_client_id.is_some()
        || row.zitadel_org_id.is_some()
        || row.zitadel_redirect_uri.is_some())
    .then(|| Zitadel {
        client_id: row.zitadel_client_id.clone(),
        org_id: row.zitadel_org_id.clone(),
        redirect_uri: row.zitadel_redirect_uri.clone(),
    });
    ClusterTenantSpec {
        display_name: row.display_name.clone(),
        vanity_domain: row.vanity_domain.clone(),
        isolation_tier: IsolationTier::parse(&row.isolation_tier).unwrap_or_default(),
        compute: Compute {
            mode: ComputeMode::parse(&row.compute_mode).unwrap_or_default(),
            node_pool: row.node_pool.clone(),
        },
        resources: Resources { quota: declared.then_some(quota) },
        zitadel,
        owner: None,
        suspended: row.suspended,
        termination_policy: TerminationPolicy::parse(&row.termination_policy).unwrap_or_default(),
        silo_version: row.silo_version.clone(),
    }
}

fn time(at: DateTime<Utc>) -> Time {
    Time(k8s_openapi::jiff::Timestamp::from_second(at.timestamp()).unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH))
}

/// One condition per step (type `NamespaceReady`, …): `True` when done or not needed, `False`
/// when failed, waiting or torn down, `Unknown` while running. `lastTransitionTime` is when the
/// step last finished (or started); `observedGeneration` is the resource generation it describes.
pub fn conditions(steps: &[StepRow], resource_generation: i64, fallback: DateTime<Utc>) -> Vec<Condition> {
    StepId::ALL
        .into_iter()
        .map(|step| match steps.iter().find(|s| s.step == step.as_str()) {
            Some(row) => {
                let status = match row.state.as_str() {
                    "done" | "skipped" => "True",
                    "running" | "removing" => "Unknown",
                    _ => "False",
                };
                let message = match &row.action {
                    Some(action) if row.state == "failed" => format!("{} Action: {action}", row.message),
                    _ => row.message.clone(),
                };
                Condition {
                    type_: step.condition_type().into(),
                    status: status.into(),
                    reason: row.reason.clone(),
                    message,
                    last_transition_time: time(row.finished_at.or(row.started_at).unwrap_or(fallback)),
                    observed_generation: Some(resource_generation),
                }
            }
            None => Condition {
                type_: step.condition_type().into(),
                status: "Unknown".into(),
                reason: "NotStarted".into(),
                message: "Not started yet.".into(),
                last_transition_time: time(fallback),
                observed_generation: Some(resource_generation),
            },
        })
        .collect()
}

/// The aggregate condition `Ready`: `True` only when every step's condition is, else `False`
/// naming the first step that does not hold yet (so `kubectl wait --for=condition=Ready` and
/// Argo CD/Flux health checks wait for the whole silo).
pub fn ready_condition(per_step: &[Condition], resource_generation: i64, fallback: DateTime<Utc>) -> Condition {
    let latest = per_step.iter().map(|c| c.last_transition_time.clone()).max_by_key(|t| t.0);
    let (status, reason, message, at) = match StepId::ALL.iter().zip(per_step).find(|(_, c)| c.status != "True") {
        None => ("True", "AllStepsReady".to_owned(), "Every provisioning step holds.".to_owned(), latest),
        Some((step, c)) => (
            "False",
            format!("{}NotReady", step.condition_type().trim_end_matches("Ready")),
            format!("{}: {}", step.label(), c.message),
            Some(c.last_transition_time.clone()),
        ),
    };
    Condition {
        type_: "Ready".into(),
        status: status.into(),
        reason,
        message,
        last_transition_time: at.unwrap_or_else(|| time(fallback)),
        observed_generation: Some(resource_generation),
    }
}

/// The resource's status for a row and its steps. `observedGeneration` is the resource's
/// generation once the row converged on its own current generation.
pub fn status_from_row(
    row: &ClusterTenantRow,
    steps: &[StepRow],
    resource_generation: i64,
) -> opencrane_crd::cluster_tenant::ClusterTenantStatus {
    let converged = row.observed_generation == Some(row.generation);
    let per_step = conditions(steps, resource_generation, row.created_at);
    let mut all = vec![ready_condition(&per_step, resource_generation, row.created_at)];
    all.extend(per_step);
    opencrane_crd::cluster_tenant::ClusterTenantStatus {
        phase: Phase::parse(&row.phase),
        conditions: all,
        bound_namespace: row.bound_namespace.clone(),
        silo_url: row.silo_url.clone(),
        provisioner: row.provisioner.clone(),
        observed_generation: converged.then_some(resource_generation),
        message: row.message.clone(),
        retained: serde_json::from_value(row.retained.clone()).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> ClusterTenantRow {
        let at = DateTime::parse_from_rfc3339("2026-11-29T10:00:00Z").unwrap().with_timezone(&Utc);
        ClusterTenantRow {
            name: "acme".into(),
            display_name: "Acme".into(),
            vanity_domain: Some("portal.acme.io".into()),
            isolation_tier: "shared".into(),
            compute_mode: "dedicated".into(),
            node_pool: Some("gpu".into()),
            quota: serde_json::json!({"cpu": "8", "pods": 100}),
            seat_cap: None,
            phase: "failed".into(),
            message: Some("Step database failed".into()),
            bound_namespace: Some("opencrane-acme".into()),
            provisioner: Some("kubernetes".into()),
            zitadel_org_id: None,
            zitadel_project_id: None,
            zitadel_app_id: None,
            zitadel_client_id: Some("c-1".into()),
            zitadel_redirect_uri: None,
            created_at: at,
            updated_at: at,
            suspended: true,
            termination_policy: "Delete".into(),
            silo_version: Some("0.3.1".into()),
            generation: 3,
            observed_generation: Some(2),
            silo_url: None,
            deletion_requested_at: None,
            retained: serde_json::json!([]),
            failed_attempts: 1,
        }
    }

    fn step(step: &str, state: &str) -> StepRow {
        StepRow {
            step: step.into(),
            state: state.into(),
            reason: "R".into(),
            message: "M".into(),
            action: (state == "failed").then(|| "Do X.".into()),
            started_at: None,
            finished_at: None,
            generation: 3,
        }
    }

    #[test]
    fn the_spec_carries_every_desired_field() {
        let spec = spec_from_row(&row());
        assert_eq!(spec.compute, Compute { mode: ComputeMode::Dedicated, node_pool: Some("gpu".into()) });
        assert_eq!(spec.resources.quota.as_ref().and_then(|q| q.cpu.as_deref()), Some("8"));
        assert_eq!(spec.resources.quota.as_ref().and_then(|q| q.pods), Some(100));
        assert!(spec.suspended);
        assert_eq!(spec.termination_policy, TerminationPolicy::Delete);
        assert_eq!(spec.silo_version.as_deref(), Some("0.3.1"));
        assert_eq!(spec.zitadel.and_then(|z| z.client_id).as_deref(), Some("c-1"));
        let no_quota = ClusterTenantRow { quota: serde_json::json!({}), ..row() };
        assert_eq!(spec_from_row(&no_quota).resources.quota, None, "an empty quota is no quota");
    }

    #[test]
    fn one_standard_condition_per_step_with_the_action_on_failure() {
        let steps = [
            step("namespace", "done"),
            step("quota", "skipped"),
            step("networkPolicy", "running"),
            step("database", "failed"),
        ];
        let conditions = conditions(&steps, 7, Utc::now());
        let types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, StepId::ALL.map(StepId::condition_type));
        let status: Vec<&str> = conditions.iter().map(|c| c.status.as_str()).collect();
        assert_eq!(status, ["True", "True", "Unknown", "False", "Unknown", "Unknown", "Unknown", "Unknown"]);
        assert!(conditions[3].message.ends_with("Action: Do X."));
        assert!(conditions.iter().all(|c| c.observed_generation == Some(7)));
        assert_eq!(conditions[4].reason, "NotStarted");
    }

    #[test]
    fn ready_holds_only_when_every_step_does() {
        let all_done: Vec<StepRow> = StepId::ALL.iter().map(|s| step(s.as_str(), "done")).collect();
        let status = status_from_row(&row(), &all_done, 4);
        assert_eq!(status.conditions.len(), StepId::ALL.len() + 1);
        let ready = &status.conditions[0];
        assert_eq!(
            (ready.type_.as_str(), ready.status.as_str(), ready.reason.as_str()),
            ("Ready", "True", "AllStepsReady")
        );
        let mut one_failed = all_done.clone();
        one_failed[3] = step("database", "failed");
        let ready = status_from_row(&row(), &one_failed, 4).conditions.remove(0);
        assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", "DatabaseNotReady"));
        assert!(ready.message.starts_with("Database: M"), "{}", ready.message);
        let ready = status_from_row(&row(), &all_done[..StepId::ALL.len() - 1], 4).conditions.remove(0);
        assert_eq!((ready.status.as_str(), ready.reason.as_str()), ("False", "SiloNotReady"));
    }

    #[test]
    fn observed_generation_waits_for_convergence() {
        let status = status_from_row(&row(), &[], 5);
        assert_eq!((status.phase, status.observed_generation), (Some(Phase::Failed), None));
        let converged = ClusterTenantRow { observed_generation: Some(3), phase: "ready".into(), ..row() };
        assert_eq!(status_from_row(&converged, &[], 5).observed_generation, Some(5));
    }
}
