//! Step `release`: the `opencrane-silo` chart installed through `opencrane_deploy::silo::deploy`
//! (the code path of `opencrane deploy silo`) with the fleet-managed profile and the values of
//! [`build::release_values`]; Helm's trimmed output becomes the step's message. Uninstalled
//! first on deletion.

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
        if done_before && self.exists("apps/v1", "Deployment", Some(&ns), "opencrane-silo-manager").await? {
            return Ok(StepSuccess::unchanged("Installed"));
        }
        let cilium = self.has_cilium().await?;
        let settings = self.settings.clone();
        let desired = desired.clone();
        let installed = tokio::task::spawn_blocking(move || install_release(&settings, &desired, cilium))
            .await
            .map_err(|e| StepFailure::new("Crashed", format!("the release task failed: {e}"), "Retry the step."))??;
        Ok(StepSuccess::done("Installed", installed))
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

/// Installs or upgrades the silo release (blocking: runs helm and kubectl).
fn install_release(settings: &KubernetesSettings, desired: &Desired, cilium: bool) -> Result<String, StepFailure> {
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
    if cilium {
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
