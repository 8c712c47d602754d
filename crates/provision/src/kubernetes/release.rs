//! Step `release`: the `opencrane-silo` chart installed through `opencrane_deploy::silo::deploy`
//! (the code path of `opencrane deploy silo`) with the fleet-managed profile and the values of
//! [`build::release_values`]; Helm's trimmed output becomes the step's message. Uninstalled
//! first on deletion.
//!
//! The release carries its fingerprint ([`build::release_fingerprint`]: the chart's content and
//! every input) on the manager's Deployment; a release whose fingerprint differs from what the
//! fleet would render now — a new chart shipped with the fleet, changed fleet settings, a
//! customer's new values — is upgraded, so a fleet upgrade reaches every existing silo.

use super::{KubernetesBackend, KubernetesSettings, RELEASE};
use crate::{
    build,
    reconcile::{StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

impl KubernetesBackend {
    pub(super) async fn converge_release(
        &self,
        desired: &Desired,
        done_before: bool,
    ) -> Result<StepSuccess, StepFailure> {
        let ns = desired.namespace();
        // A newly minted silo credential goes into the silo's Secret first (`done_before` is
        // false then); the release itself leaves the Secret alone.
        if let Some(credential) = &desired.silo_credential {
            self.apply(&build::silo_credential_secret(desired, credential)).await?;
        }
        let cilium = self.has_cilium().await?;
        let plan = ReleasePlan::new(&self.settings, desired, cilium, &self.chart_digest()?)?;
        if done_before && self.installed_fingerprint(&ns).await?.as_deref() == Some(plan.fingerprint.as_str()) {
            return Ok(StepSuccess::unchanged("Installed"));
        }
        let settings = self.settings.clone();
        let desired = desired.clone();
        let installed = tokio::task::spawn_blocking(move || install_release(&settings, &desired, &plan))
            .await
            .map_err(|e| StepFailure::new("Crashed", format!("the release task failed: {e}"), "Retry the step."))??;
        Ok(StepSuccess::done("Installed", installed))
    }

    /// The fingerprint on the installed manager Deployment (`None` when there is none, or it was
    /// installed before fingerprints were recorded).
    async fn installed_fingerprint(&self, ns: &str) -> Result<Option<String>, StepFailure> {
        use k8s_openapi::api::apps::v1::Deployment;
        let deployments: kube::Api<Deployment> = kube::Api::namespaced(self.client.clone(), ns);
        let found = deployments
            .get_opt(super::MANAGER)
            .await
            .map_err(|e| super::failure(&format!("reading Deployment {}", super::MANAGER), &e))?;
        Ok(found.and_then(|d| d.metadata.annotations?.remove(build::RELEASE_FINGERPRINT)))
    }

    /// The silo chart's digest, read once per process (the chart ships with the image).
    fn chart_digest(&self) -> Result<String, StepFailure> {
        let chart = self.settings.charts_dir.join("opencrane-silo");
        self.chart_digest
            .get_or_init(|| {
                build::chart_digest(&chart).map_err(|e| format!("reading the chart {}: {e}", chart.display()))
            })
            .clone()
            .map_err(|e| {
                StepFailure::new("ChartUnreadable", e, "Check OPENCRANE_CHARTS_DIR (the image ships the charts).")
            })
    }

    /// Whether the Secret in the silo's namespace holds the credential with this SHA-256.
    pub(super) async fn holds_silo_credential(&self, name: &str, fingerprint: &str) -> Result<bool, StepFailure> {
        use k8s_openapi::api::core::v1::Secret;
        let ns = crate::spec::namespace_of(name);
        let secrets: kube::Api<Secret> = kube::Api::namespaced(self.client.clone(), &ns);
        let secret = opencrane_deploy::silo::FLEET_TOKEN_SECRET;
        let found =
            secrets.get_opt(secret).await.map_err(|e| super::failure(&format!("reading Secret {secret}"), &e))?;
        let token = found.and_then(|s| s.data?.remove("token")).map(|b| b.0).unwrap_or_default();
        Ok(!token.is_empty() && crate::credential::fingerprint(&String::from_utf8_lossy(&token)) == fingerprint)
    }

    pub(super) async fn uninstall_release(&self, name: &str) -> Result<Teardown, StepFailure> {
        let tools = self.settings.tools.clone();
        let ns = crate::spec::namespace_of(name);
        let result = tokio::task::spawn_blocking(move || {
            use opencrane_deploy::{plan::Tool, run::Runner as _};
            let program = tools.path(Tool::Helm).map_err(|e| e.to_string())?.to_path_buf();
            let args: Vec<String> = ["uninstall", RELEASE, "--namespace", &ns, "--wait"].map(String::from).into();
            opencrane_deploy::run::ProcessRunner
                .run(&program, &tools.args(Tool::Helm, &args), None)
                .map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| StepFailure::new("Crashed", format!("the uninstall task failed: {e}"), "Retry the step."))?;
        let removed = match result {
            Ok(output) if output.success => format!("Release {RELEASE} uninstalled."),
            Ok(output) if output.stderr.contains("not found") => format!("Release {RELEASE} was not installed."),
            Ok(output) => {
                return Err(StepFailure::new(
                    "HelmFailed",
                    opencrane_deploy::run::trim_output(&output),
                    "Fix the cause shown, then Retry.",
                ));
            }
            Err(err) => {
                return Err(StepFailure::new("HelmUnavailable", err, "Install helm in the fleet-manager's image."));
            }
        };
        // The silo's credential goes with it (the fleet stops accepting it when deletion starts).
        let secret = opencrane_deploy::silo::FLEET_TOKEN_SECRET;
        let ns = crate::spec::namespace_of(name);
        let gone =
            if self.delete("v1", "Secret", Some(&ns), secret).await? { " Its fleet credential removed." } else { "" };
        Ok(Teardown::Removed(format!("{removed}{gone}")))
    }
}

/// What a release is rendered from, and its fingerprint.
#[derive(Clone, Debug)]
struct ReleasePlan {
    values: serde_json::Value,
    cilium: bool,
    fingerprint: String,
}

impl ReleasePlan {
    fn new(
        settings: &KubernetesSettings,
        desired: &Desired,
        cilium: bool,
        chart_digest: &str,
    ) -> Result<Self, StepFailure> {
        let values = build::release_values(desired, &settings.cluster).map_err(|missing| {
            StepFailure::new(
                "FleetSettingMissing",
                format!("{missing}; the silo would not start."),
                format!("Set {} on the fleet-manager (its chart's values), then Retry.", missing.setting),
            )
        })?;
        let inputs = serde_json::json!({
            "values": values,
            "imageTag": desired.silo_version,
            "cilium": cilium,
            "baseDomain": settings.cluster.base_domain,
            "name": desired.name,
            "fleetInternalUrl": settings.fleet_internal_url,
        });
        let fingerprint = build::release_fingerprint(chart_digest, &inputs);
        Ok(Self { values, cilium, fingerprint })
    }
}

/// Installs or upgrades the silo release (blocking: runs helm and kubectl).
fn install_release(
    settings: &KubernetesSettings,
    desired: &Desired,
    plan: &ReleasePlan,
) -> Result<String, StepFailure> {
    use opencrane_deploy::silo::{SiloMode, SiloOptions, TokenSource};
    let dir = std::env::temp_dir().join(format!("opencrane-release-{}-{}", desired.name, std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| {
        StepFailure::new("NoScratchSpace", format!("creating {}: {e}", dir.display()), "Check the pod's /tmp.")
    })?;
    let values_file = dir.join("provisioner-values.json");
    std::fs::write(&values_file, plan.values.to_string()).map_err(|e| {
        StepFailure::new("NoScratchSpace", format!("writing {}: {e}", values_file.display()), "Check the pod's /tmp.")
    })?;
    let mut helm = opencrane_deploy::HelmOptions::for_charts(&settings.charts_dir);
    helm.release = RELEASE.into();
    helm.image_tag = desired.silo_version.clone();
    helm.values_files = vec![values_file];
    helm.timeout = settings.helm_timeout.clone();
    helm.set.push(format!("clustertenantManager.releaseFingerprint={}", plan.fingerprint));
    if plan.cilium {
        // On a cluster running Cilium the release renders its identity policies too.
        helm.set.push("cilium.enabled=true".into());
    }
    // The silo's own credential is in its Secret already (applied by `converge_release`).
    let mode = SiloMode::FleetManaged {
        fleet_internal_url: settings.fleet_internal_url.clone(),
        token: TokenSource::Installed,
    };
    let options = SiloOptions::new(helm, settings.cluster.base_domain.clone(), desired.name.clone(), mode);
    let mut runner = opencrane_deploy::run::ProcessRunner;
    let result = opencrane_deploy::silo::deploy(&options, &settings.tools, &mut runner, false, &mut |_, _| {});
    let _ = std::fs::remove_dir_all(&dir);
    match result {
        Ok(plan) => Ok(format!(
            "{} (chart opencrane-silo{}).",
            plan.summary,
            desired.silo_version.as_deref().map(|v| format!(", version {v}")).unwrap_or_default()
        )),
        Err(err) => Err(StepFailure::new(
            "ReleaseFailed",
            err.to_string(),
            "Fix the cause shown (Helm's output), then Retry the step.",
        )),
    }
}
