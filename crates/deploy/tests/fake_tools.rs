//! The deploy pipeline against fake `kubectl` and `helm` executables ([`opencrane_deploy::fake`]):
//! no cluster and no Helm binary exist on the test machine.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed step fails the test")]

use std::path::{Path, PathBuf};

use opencrane_deploy::{
    Error, HelmOptions, ProcessRunner, Secret, Tools, ValuesMode,
    fake::Fakes,
    fleet::{self, FleetOptions},
    silo::{self, SiloMode, SiloOptions, TokenSource},
};

fn charts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../charts")
}

fn helm_options() -> HelmOptions {
    HelmOptions { charts_dir: charts(), release: "opencrane".into(), timeout: "10m".into(), ..Default::default() }
}

fn silo_options() -> SiloOptions {
    SiloOptions {
        helm: helm_options(),
        base_domain: "example.com".into(),
        cluster_tenant: "acme".into(),
        namespace: None,
        ingress_ip: None,
        mode: SiloMode::FleetManaged { fleet_internal_url: None, token: TokenSource::Existing },
        kube_api_cidrs: Vec::new(),
        skip_preflight: false,
    }
}

fn no_progress() -> impl FnMut(usize, &str) {
    |_, _| {}
}

fn joined(args: &[String]) -> String {
    args.join(" ")
}

#[test]
fn silo_dry_run_only_reads_and_prints_the_plan() {
    let fakes = Fakes::new("silo-dry");
    let plan = silo::deploy(&silo_options(), &fakes.tools(), &mut ProcessRunner, true, &mut no_progress()).unwrap();
    let calls = fakes.calls();
    let seen: Vec<String> = calls.iter().map(|(tool, args, _)| format!("{tool} {}", joined(args))).collect();
    assert_eq!(
        seen,
        [
            "kubectl --context test-ctx get crd clusters.postgresql.cnpg.io -o name",
            "kubectl --context test-ctx get endpointslices -n default -l kubernetes.io/service-name=kubernetes -o json",
        ],
        "a dry run asks read-only questions and changes nothing"
    );
    let shell = plan.to_shell();
    assert!(shell.contains("kubectl apply --server-side --field-manager=opencrane-deploy -f - <<'EOF'"), "{shell}");
    assert!(shell.contains("name: opencrane-acme"));
    assert!(shell.contains("helm upgrade --install opencrane "));
    assert!(shell.contains("networkPolicy.kubeApiServer.cidrs=[\"10.96.0.1/32\"]"), "{shell}");
    assert!(!shell.contains("kind: Secret"), "the silo's credential stays where the fleet wrote it: {shell}");
}

#[test]
fn silo_preflight_refuses_without_cloudnativepg_and_changes_nothing() {
    let fakes = Fakes::new("silo-nocnpg");
    fakes.without_cnpg();
    let err = silo::deploy(&silo_options(), &fakes.tools(), &mut ProcessRunner, false, &mut no_progress()).unwrap_err();
    assert!(matches!(err, Error::Preflight(_)), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("CloudNativePG operator not found (CRD clusters.postgresql.cnpg.io absent)"), "{message}");
    assert!(message.contains("Install the fleet release first"), "{message}");
    let calls = fakes.calls();
    assert_eq!(calls.len(), 1, "only the preflight query ran: {calls:?}");
    assert!(calls.iter().all(|(tool, _, _)| tool == "kubectl"), "helm never ran");
    // The same refusal in a dry run.
    let err = silo::deploy(&silo_options(), &fakes.tools(), &mut ProcessRunner, true, &mut no_progress()).unwrap_err();
    assert!(err.to_string().contains("Install the fleet release first"));
}

#[test]
fn silo_install_uses_the_customers_own_credential_and_runs_helm() {
    let fakes = Fakes::new("silo-run");
    fakes.with_silo_credential("ocs_the-customers-own");
    let mut opts = silo_options();
    opts.helm.values_mode = ValuesMode::Reuse;
    opts.helm.image_tag = Some("0.2.0".into());
    let mut titles = Vec::new();
    silo::deploy(&opts, &fakes.tools(), &mut ProcessRunner, false, &mut |i, t| titles.push(format!("{i}:{t}")))
        .unwrap();
    let calls = fakes.calls();
    assert_eq!(calls.len(), 5, "{calls:?}");
    let (tool, args, _) = &calls[2];
    assert_eq!(tool, "kubectl");
    assert!(joined(args).contains("get secret opencrane-fleet-token -n opencrane-acme"), "{args:?}");
    assert!(
        calls.iter().all(|(_, args, _)| !joined(args).contains("opencrane-fleet-api-token")),
        "the fleet's own token Secret is never read"
    );
    let (tool, args, stdin) = &calls[3];
    assert_eq!(
        (tool.as_str(), joined(args).as_str()),
        ("kubectl", "--context test-ctx apply --server-side --field-manager=opencrane-deploy -f -")
    );
    let stdin = stdin.as_deref().unwrap();
    assert!(stdin.contains("kind: Namespace") && stdin.contains("name: opencrane-acme"));
    assert!(!stdin.contains("kind: Secret"), "the credential Secret is left as the fleet wrote it: {stdin}");
    let (tool, args, _) = &calls[4];
    assert_eq!(tool, "helm");
    let line = joined(args);
    assert!(line.starts_with("--kube-context test-ctx upgrade --install opencrane "), "{line}");
    assert!(line.contains("--set-string clustertenantManager.image.tag=0.2.0"));
    assert!(line.contains("--reuse-values"));
    assert!(!line.contains("ocs_the-customers-own"), "the credential is never an argument");
    assert_eq!(titles.len(), 2);
    assert!(titles[1].starts_with("2:Silo release opencrane"));
}

/// A hand-deployed silo never gets the fleet's API token: without the customer's own credential
/// in its namespace (or one that is not a silo credential) the deploy stops before changing
/// anything. Before, `deploy silo` copied the fleet's token Secret into the silo namespace.
#[test]
fn silo_install_refuses_without_the_customers_credential() {
    let fakes = Fakes::new("silo-nocred");
    let err = silo::deploy(&silo_options(), &fakes.tools(), &mut ProcessRunner, false, &mut no_progress()).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Preflight(_)), "{err:?}");
    assert!(message.contains("opencrane-acme/opencrane-fleet-token holds no silo credential"), "{message}");
    assert!(message.contains("--fleet-token-file"), "{message}");
    fakes.with_silo_credential("fleet-token-value");
    let err = silo::deploy(&silo_options(), &fakes.tools(), &mut ProcessRunner, false, &mut no_progress()).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("does not hold a silo credential"), "{message}");
    assert!(!message.contains("fleet-token-value"), "the value is never echoed: {message}");
    assert!(
        fakes.calls().iter().all(|(tool, args, _)| tool == "kubectl" && joined(args).contains(" get ")),
        "nothing was applied or installed"
    );
}

#[test]
fn a_failing_helm_stops_the_deploy_with_its_message() {
    let fakes = Fakes::new("silo-helmfail");
    fakes.fail_on("helm", "opencrane");
    let mut opts = silo_options();
    opts.mode = SiloMode::FleetManaged { fleet_internal_url: None, token: TokenSource::Value(Secret::new("ocs_t")) };
    let err = silo::deploy(&opts, &fakes.tools(), &mut ProcessRunner, false, &mut no_progress()).unwrap_err();
    match &err {
        Error::Step { index, output, .. } => {
            assert_eq!(*index, 2);
            assert!(output.contains("UPGRADE FAILED: release opencrane failed"), "{output}");
        }
        other => panic!("expected a step error, got {other:?}"),
    }
}

#[test]
fn missing_tools_are_named_with_the_flag_to_pass() {
    let tools = Tools { kubectl: None, helm: None, kube_context: None };
    let err = silo::deploy(&silo_options(), &tools, &mut ProcessRunner, true, &mut no_progress()).unwrap_err();
    assert!(err.to_string().contains("kubectl not found on PATH") && err.to_string().contains("--kubectl"), "{err}");
    let mut opts = silo_options();
    opts.skip_preflight = true;
    let plan = silo::deploy(&opts, &tools, &mut ProcessRunner, true, &mut no_progress()).unwrap();
    assert_eq!(plan.steps.len(), 2, "a dry run without preflight needs no tools");
}

#[test]
fn fleet_install_runs_the_singletons_before_the_fleet_release() {
    let fakes = Fakes::new("fleet-run");
    let mut opts = FleetOptions::new(HelmOptions::for_charts(charts()), "example.com", Some("ops@example.com".into()));
    opts.dns_provider = Some("google".into());
    fleet::deploy(&opts, &fakes.tools(), &mut ProcessRunner, false, &mut no_progress()).unwrap();
    let calls = fakes.calls();
    let releases: Vec<String> = calls
        .iter()
        .filter(|(tool, _, _)| tool == "helm")
        .map(|(_, args, _)| args.iter().skip_while(|a| *a != "--install").nth(1).cloned().unwrap_or_default())
        .collect();
    assert_eq!(releases, ["ingress-nginx", "cert-manager", "cnpg", "external-dns", "opencrane"]);
    assert!(joined(&calls[0].1).ends_with("get --raw /readyz"));
    assert!(calls.iter().any(|(tool, args, stdin)| tool == "kubectl"
        && args.contains(&"apply".to_owned())
        && stdin.as_deref().is_some_and(|s| s.contains("name: opencrane-system"))));

    fakes.fail_on("helm", "cnpg");
    let err = fleet::deploy(&opts, &fakes.tools(), &mut ProcessRunner, false, &mut no_progress()).unwrap_err();
    assert!(err.to_string().starts_with("step 3 (CloudNativePG operator"), "{err}");
}
