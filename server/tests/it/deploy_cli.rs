//! `opencrane deploy` and the charts' `deploy.sh` wrappers, run as processes against fake
//! `kubectl`/`helm` executables (see `opencrane_deploy::fake`; no cluster or Helm exists here).

use std::{path::PathBuf, process::Command};

use opencrane_deploy::fake::Fakes;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn opencrane(fakes: &Fakes) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opencrane"));
    cmd.current_dir(repo())
        .env_remove("RUST_BACKTRACE")
        .env("OPENCRANE_KUBECTL", fakes.dir.join("bin/kubectl"))
        .env("OPENCRANE_HELM", fakes.dir.join("bin/helm"));
    cmd
}

#[test]
fn silo_deploy_refuses_without_the_fleet_and_says_what_to_do() {
    let fakes = Fakes::new("cli-nocnpg");
    fakes.without_cnpg();
    let out = opencrane(&fakes)
        .args(["deploy", "silo", "--base-domain", "example.com", "--cluster-tenant", "acme"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("CloudNativePG operator not found (CRD clusters.postgresql.cnpg.io absent)"), "{stderr}");
    assert!(stderr.contains("opencrane deploy fleet"), "{stderr}");
    assert!(!stderr.contains("backtrace"), "bad input is a message, not a crash: {stderr}");
    let calls = fakes.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].0, "kubectl");
}

/// A hand-deployed silo never gets the fleet's API token: `--fleet-token-file` must hold the
/// customer's own silo credential, and the refusal never echoes what the file held.
#[test]
fn silo_deploy_refuses_a_token_that_is_not_a_silo_credential() {
    let fakes = Fakes::new("cli-fleettoken");
    let file = fakes.dir.join("fleet-api-token");
    std::fs::write(&file, "the-fleets-own-api-token-0123456789").unwrap();
    let out = opencrane(&fakes)
        .args(["deploy", "silo", "--base-domain", "example.com", "--cluster-tenant", "acme", "--fleet-token-file"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--fleet-token-file: this is not a silo credential"), "{stderr}");
    assert!(!stderr.contains("the-fleets-own-api-token"), "{stderr}");
    assert!(fakes.calls().is_empty(), "refused before touching the cluster: {:?}", fakes.calls());
}

#[test]
fn dry_runs_print_the_plan_and_change_nothing() {
    let fakes = Fakes::new("cli-dry");
    let out = opencrane(&fakes)
        .args(["deploy", "silo", "--base-domain", "example.com", "--cluster-tenant", "acme", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("# 2. Silo release opencrane for ClusterTenant acme"), "{plan}");
    assert!(
        plan.contains("helm upgrade --install opencrane charts/opencrane-silo --namespace opencrane-acme"),
        "{plan}"
    );
    assert!(
        fakes.calls().iter().all(|(tool, args, _)| tool == "kubectl" && args.contains(&"get".to_owned())),
        "only reads"
    );

    // The wrapper keeps the documented shell interface and points at its own charts.
    let fakes = Fakes::new("cli-wrapper");
    let out = Command::new(repo().join("charts/opencrane-fleet/deploy.sh"))
        .args(["--base-domain", "example.com", "--platform-operator-seed-email", "ops@example.com", "--dry-run"])
        .env("OPENCRANE_BIN", env!("CARGO_BIN_EXE_opencrane"))
        .env("OPENCRANE_KUBECTL", fakes.dir.join("bin/kubectl"))
        .env("OPENCRANE_HELM", fakes.dir.join("bin/helm"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(
        plan.contains("helm upgrade --install cnpg cloudnative-pg --repo https://cloudnative-pg.github.io/charts"),
        "{plan}"
    );
    assert!(plan.contains("charts/opencrane-fleet/../opencrane-fleet --namespace opencrane-system"), "{plan}");
    assert_eq!(fakes.calls().len(), 1, "the fleet dry run only checks the cluster answers");
}

#[test]
fn missing_required_flags_are_named() {
    let fakes = Fakes::new("cli-flags");
    let out = opencrane(&fakes).args(["deploy", "silo", "--base-domain", "example.com"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cluster-tenant"));
    let out =
        opencrane(&fakes).args(["deploy", "fleet", "--base-domain", "example.com", "--dry-run"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--platform-operator-seed-email or --platform-operator-groups is required")
    );
    assert!(fakes.calls().is_empty(), "validation comes before any cluster call");
}
