//! Step `release`: the `opencrane-silo` chart installed through `opencrane_deploy::silo::deploy`
//! (the code path of `opencrane deploy silo`) with the fleet-managed profile and the values of
//! [`build::release_values`]; Helm's trimmed output becomes the step's message. Uninstalled
//! first on deletion.

use super::{FLEET_API_TOKEN_SECRET, KubernetesBackend, KubernetesSettings, RELEASE};
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
        if done_before && self.exists("apps/v1", "Deployment", Some(&ns), "opencrane-silo-manager").await? {
            return Ok(StepSuccess::done(
                "Installed",
                format!("Release {RELEASE} in {ns} is unchanged since generation {}.", desired.generation),
            ));
        }
        let settings = self.settings.clone();
        let desired = desired.clone();
        let installed = tokio::task::spawn_blocking(move || install_release(&settings, &desired))
            .await
            .map_err(|e| StepFailure::new("Crashed", format!("the release task failed: {e}"), "Retry the step."))??;
        Ok(StepSuccess::done("Installed", installed))
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
        match result {
            Ok(output) if output.success => Ok(Teardown::Removed(format!("Release {RELEASE} uninstalled."))),
            Ok(output) if output.stderr.contains("not found") => {
                Ok(Teardown::Removed(format!("Release {RELEASE} was not installed.")))
            }
            Ok(output) => Err(StepFailure::new(
                "HelmFailed",
                opencrane_deploy::run::trim_output(&output),
                "Fix the cause shown, then Retry.",
            )),
            Err(err) => Err(StepFailure::new("HelmUnavailable", err, "Install helm in the fleet-manager's image.")),
        }
    }
}

/// Installs or upgrades the silo release (blocking: runs helm and kubectl).
fn install_release(settings: &KubernetesSettings, desired: &Desired) -> Result<String, StepFailure> {
    use opencrane_deploy::silo::{SiloMode, SiloOptions, TokenSource};
    let values = build::release_values(desired);
    let dir = std::env::temp_dir().join(format!("opencrane-release-{}-{}", desired.name, std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| {
        StepFailure::new("NoScratchSpace", format!("creating {}: {e}", dir.display()), "Check the pod's /tmp.")
    })?;
    let values_file = dir.join("provisioner-values.json");
    std::fs::write(&values_file, values.to_string()).map_err(|e| {
        StepFailure::new("NoScratchSpace", format!("writing {}: {e}", values_file.display()), "Check the pod's /tmp.")
    })?;
    let mut helm = opencrane_deploy::HelmOptions::for_charts(&settings.charts_dir);
    helm.release = RELEASE.into();
    helm.image_tag = desired.silo_version.clone();
    helm.values_files = vec![values_file];
    helm.timeout = settings.helm_timeout.clone();
    let mode = SiloMode::FleetManaged {
        fleet_internal_url: settings.fleet_internal_url.clone(),
        token: TokenSource::FleetSecret {
            namespace: settings.fleet_namespace.clone(),
            name: FLEET_API_TOKEN_SECRET.into(),
            key: "token".into(),
        },
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
