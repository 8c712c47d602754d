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

/// `opencrane ensure-secret` (the charts' secret hook) against the fake API server (no
/// kube-apiserver runs here; create's 409 and replace's resourceVersion conflict, which this
/// relies on, are pinned by the fake's conformance tests): created once with every key, a key it
/// has never changed, the keys it lacks added, concurrent runs agreeing on one value.
// Multi-threaded: the command runs as a blocking child process while the fake serves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensure_secret_creates_once_and_never_overwrites() {
    use k8s_openapi::api::core::v1::{Namespace, Secret};
    use kube::{Api, api::PostParams};
    use opencrane::ensure_secret::{Format, ensure};

    let kube = opencrane_fake_kube::FakeApiServer::start().await.unwrap();
    let client = opencrane_provision::kubernetes::client_for(&kube.url(), std::time::Duration::from_secs(5)).unwrap();
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "opencrane-acme"}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "opencrane-acme");
    let value = |secret: &Secret, key: &str| String::from_utf8(secret.data.as_ref().unwrap()[key].0.clone()).unwrap();
    let labels = [("app.kubernetes.io/managed-by".to_owned(), "opencrane".to_owned())].into();
    let key = vec![("OPENCRANE_CREDENTIALS_KEY".to_owned(), Format::Base64(32))];

    let first = ensure(client.clone(), "opencrane-acme", "acme-credentials", &key, &labels).await.unwrap();
    assert_eq!(first.created, ["OPENCRANE_CREDENTIALS_KEY"]);
    let stored = secrets.get("acme-credentials").await.unwrap();
    let sealed_with = value(&stored, "OPENCRANE_CREDENTIALS_KEY");
    assert_eq!(stored.metadata.labels.unwrap()["app.kubernetes.io/managed-by"], "opencrane");
    let again = ensure(client.clone(), "opencrane-acme", "acme-credentials", &key, &labels).await.unwrap();
    assert_eq!((again.created.len(), again.kept.as_slice()), (0, ["OPENCRANE_CREDENTIALS_KEY".to_owned()].as_slice()));
    assert_eq!(value(&secrets.get("acme-credentials").await.unwrap(), "OPENCRANE_CREDENTIALS_KEY"), sealed_with);

    // A Secret the operator made with one key: the other is added, theirs stays.
    let mine: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "acme-litellm"}, "stringData": {}, "data": {"LITELLM_MASTER_KEY": "c2stbWluZQ=="}
    }))
    .unwrap();
    secrets.create(&PostParams::default(), &mine).await.unwrap();
    let both = vec![("LITELLM_MASTER_KEY".to_owned(), Format::Sk(48)), ("LITELLM_SALT_KEY".to_owned(), Format::Sk(48))];
    let added = ensure(client.clone(), "opencrane-acme", "acme-litellm", &both, &labels).await.unwrap();
    assert_eq!(
        (added.created, added.kept),
        (vec!["LITELLM_SALT_KEY".to_owned()], vec!["LITELLM_MASTER_KEY".to_owned()])
    );
    let litellm = secrets.get("acme-litellm").await.unwrap();
    assert_eq!(value(&litellm, "LITELLM_MASTER_KEY"), "sk-mine");
    assert!(value(&litellm, "LITELLM_SALT_KEY").starts_with("sk-"));

    // Five hooks at once on a new Secret: one creates, the others keep what it wrote.
    let token = vec![("token".to_owned(), Format::Alnum(48))];
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..5 {
        let (client, token, labels) = (client.clone(), token.clone(), labels.clone());
        tasks.spawn(async move { ensure(client, "opencrane-acme", "acme-token", &token, &labels).await });
    }
    let runs = tasks.join_all().await;
    let created = runs.iter().map(|r| r.as_ref().unwrap().created.len()).sum::<usize>();
    assert_eq!(created, 1, "{runs:?}");

    // The command itself: flags checked, values never printed.
    let out = Command::new(env!("CARGO_BIN_EXE_opencrane"))
        .args(["ensure-secret", "--namespace", "opencrane-acme", "--name", "acme-token", "--key", "token=alnum:48"])
        .args(["--kube-api-url", &kube.url()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout} {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.trim(), "Secret opencrane-acme/acme-token: created nothing; kept token");
    let stored_token = value(&secrets.get("acme-token").await.unwrap(), "token");
    assert!(!stdout.contains(&stored_token));
    let bad = Command::new(env!("CARGO_BIN_EXE_opencrane"))
        .args(["ensure-secret", "--namespace", "x", "--name", "y", "--key", "token=hex:32"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown format “hex”"));
}
