//! Step `readiness`: the silo's clustertenant-manager is Ready as the cluster sees it — its
//! Deployment has rolled out the current generation with every replica ready (the kubelet's
//! readiness probe on `/readyz` decides) — or it fails with the manager's own start-up error
//! when its container keeps exiting, read from the Pod's state (the chart's
//! `terminationMessagePolicy: FallbackToLogsOnError` puts the last lines of its log there). Not
//! checked while suspended: no replicas.

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::{Api, api::ListParams};

use super::{KubernetesBackend, MANAGER};
use crate::{
    reconcile::{StepFailure, StepSuccess},
    spec::Desired,
};

/// The manager's Pods, by the chart's component label.
const MANAGER_PODS: &str = "app.kubernetes.io/component=clustertenant-manager";

/// Restarts after which a container that keeps exiting counts as failing to start (the kubelet
/// backs off between them: about a minute and a half of trying).
const RESTARTS_BEFORE_FAILING: i32 = 3;

impl KubernetesBackend {
    pub(super) async fn converge_readiness(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        if desired.suspended {
            return Ok(StepSuccess::skipped("Suspended", "Not checked while suspended (no replicas)."));
        }
        let ns = desired.namespace();
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), &ns);
        let deployment = deployments
            .get_opt(MANAGER)
            .await
            .map_err(|e| super::failure(&format!("reading Deployment {MANAGER}"), &e))?;
        let Some(deployment) = deployment else {
            return Ok(StepSuccess::waiting("Starting", format!("Deployment {MANAGER} does not exist yet; waiting.")));
        };
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let pods = pods
            .list(&ListParams::default().labels(MANAGER_PODS))
            .await
            .map_err(|e| super::failure("listing the manager's Pods", &e))?;
        judge(&deployment, &pods.items, &self.settings.cluster.host(desired))
    }
}

/// The step's answer from the Deployment and its Pods (pure).
fn judge(deployment: &Deployment, pods: &[Pod], host: &str) -> Result<StepSuccess, StepFailure> {
    if let Some(message) = pods.iter().find_map(crash) {
        return Err(StepFailure::new(
            "ManagerNotStarting",
            format!("The silo's clustertenant-manager does not start: {message}"),
            "Fix the cause it names (often a fleet setting the silo is given), then Retry.",
        ));
    }
    let wanted = deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = deployment.status.clone().unwrap_or_default();
    let generation = deployment.metadata.generation.unwrap_or(0);
    let rolled_out = status.observed_generation.unwrap_or(0) >= generation
        && status.updated_replicas.unwrap_or(0) >= wanted
        && status.ready_replicas.unwrap_or(0) >= wanted;
    if rolled_out {
        Ok(StepSuccess::done("Ready", format!("The clustertenant-manager is Ready; the silo is at https://{host}.")))
    } else {
        Ok(StepSuccess::waiting(
            "Starting",
            format!(
                "{} of {wanted} replicas of the clustertenant-manager ready; waiting.",
                status.ready_replicas.unwrap_or(0)
            ),
        ))
    }
}

/// What a Pod's manager container said when it last exited, if it keeps exiting.
fn crash(pod: &Pod) -> Option<String> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    statuses.iter().find_map(|c| {
        let terminated = c.last_state.as_ref().and_then(|s| s.terminated.as_ref());
        let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref());
        let backing_off = waiting.is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"));
        let exited = terminated.filter(|t| t.exit_code != 0)?;
        (backing_off || c.restart_count >= RESTARTS_BEFORE_FAILING).then(|| {
            let said = exited.message.as_deref().map(str::trim).filter(|m| !m.is_empty());
            let last = said.and_then(|m| m.lines().map(str::trim).rfind(|l| !l.is_empty()));
            match last {
                Some(line) => line.chars().take(500).collect(),
                None => format!("it exits with code {} ({} restarts)", exited.exit_code, c.restart_count),
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[allow(clippy::needless_pass_by_value, reason = "test builders take the json! literal")]
    fn deployment(generation: i64, status: serde_json::Value) -> Deployment {
        serde_json::from_value(json!({
            "metadata": { "name": MANAGER, "generation": generation },
            "spec": { "replicas": 1, "selector": {}, "template": {} },
            "status": status,
        }))
        .unwrap()
    }

    #[allow(clippy::needless_pass_by_value, reason = "test builders take the json! literal")]
    fn pod(container: serde_json::Value) -> Pod {
        serde_json::from_value(json!({ "metadata": { "name": "m-1" }, "status": { "containerStatuses": [container] } }))
            .unwrap()
    }

    #[test]
    fn ready_only_when_the_current_generation_rolled_out_with_every_replica_ready() {
        let ready = json!({ "observedGeneration": 2, "updatedReplicas": 1, "readyReplicas": 1 });
        let answer = judge(&deployment(2, ready.clone()), &[], "acme.example.com").unwrap();
        assert_eq!(answer.reason, "Ready");
        assert!(answer.message.ends_with("https://acme.example.com."), "{}", answer.message);
        // The old generation's ready replica is not the new one.
        assert_eq!(judge(&deployment(3, ready), &[], "h").unwrap().reason, "Starting");
        let starting = json!({ "observedGeneration": 2, "updatedReplicas": 1, "readyReplicas": 0 });
        let answer = judge(&deployment(2, starting), &[], "h").unwrap();
        assert_eq!(
            (answer.reason.as_str(), answer.message.as_str()),
            ("Starting", "0 of 1 replicas of the clustertenant-manager ready; waiting.")
        );
    }

    #[test]
    fn a_manager_that_keeps_exiting_fails_the_step_with_its_own_last_words() {
        let crashing = pod(json!({
            "name": "clustertenant-manager", "ready": false, "restartCount": 1, "image": "x", "imageID": "",
            "state": { "waiting": { "reason": "CrashLoopBackOff" } },
            "lastState": { "terminated": { "exitCode": 1, "message":
                "2026-12-07T10:00:00Z INFO starting\nError: the organisation's client is set, but OIDC_ISSUER_URL is not\n" } },
        }));
        let failure = judge(&deployment(1, json!({})), &[crashing], "h").unwrap_err();
        assert_eq!(failure.reason, "ManagerNotStarting");
        assert_eq!(
            failure.message,
            "The silo's clustertenant-manager does not start: Error: the organisation's client is set, but OIDC_ISSUER_URL is not"
        );
        // One restart without a back-off (a node drain, an OOM kill being retried) is not yet a failure.
        let once = pod(json!({
            "name": "clustertenant-manager", "ready": false, "restartCount": 1, "image": "x", "imageID": "",
            "state": { "running": {} }, "lastState": { "terminated": { "exitCode": 137 } },
        }));
        assert_eq!(judge(&deployment(1, json!({})), &[once], "h").unwrap().reason, "Starting");
        let silent = pod(json!({
            "name": "clustertenant-manager", "ready": false, "restartCount": 4, "image": "x", "imageID": "",
            "state": { "running": {} }, "lastState": { "terminated": { "exitCode": 2 } },
        }));
        let failure = judge(&deployment(1, json!({})), &[silent], "h").unwrap_err();
        assert!(failure.message.ends_with("it exits with code 2 (4 restarts)"), "{}", failure.message);
    }
}
