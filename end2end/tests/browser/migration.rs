//! Moving a shared installation onto per-silo databases with the real `opencrane dev` and the
//! real `opencrane migrate-shared` (which finds the dev fleet through its state directory): the
//! local provisioner gives each migrated customer its silo, a copy killed with SIGKILL in the
//! middle leaves nothing and resumes without duplicates, and the migrated silos' signed-in pages
//! show their users, groups and budgets.

#![allow(clippy::expect_used, reason = "test code: a failed step fails the test")]

use std::{
    io::{BufRead as _, BufReader, Write as _},
    process::{Command, Output, Stdio},
};

use opencrane_e2e::{Browser, DevServer, binary, http, wait_for};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/migrate/fixtures/shared_original.sql");

fn migrate(server: &DevServer, source: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(binary());
    cmd.args(["migrate-shared", "--source-url", source, "--wait-seconds", "60", "--state-dir"])
        .arg(server.state_dir())
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null());
    cmd
}

fn run(mut cmd: Command) -> Output {
    let out = cmd.output().expect("running opencrane migrate-shared");
    assert!(
        out.status.success(),
        "migrate-shared failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

#[test]
fn a_shared_installation_moves_into_silos_and_a_killed_copy_resumes() {
    let server = DevServer::start();
    server.sql("CREATE DATABASE shared_original");
    let loaded = server.psql("shared_original").args(["-q", "-f", FIXTURE]).output().expect("psql");
    assert!(loaded.status.success(), "{}", String::from_utf8_lossy(&loaded.stderr));
    let source = server.postgres_url("shared_original");

    // Provision: the dev fleet's provisioner makes every customer's silo.
    let out = run(migrate(&server, &source, &["--phase", "provision"]));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(report["customers"].as_array().map(Vec::len), Some(3), "{report}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[provision] 3/3 initech: its silo is ready"), "{stderr}");
    assert_eq!(server.sql("SELECT count(*) FROM pg_database WHERE datname LIKE 'ocsilo_%'"), "4", "demo + 3");

    // Hold acme's copy in the middle (its audit table locked), then kill the process.
    let mut lock =
        server.psql("ocsilo_acme").arg("-q").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("psql");
    let mut stdin = lock.stdin.take().expect("stdin");
    writeln!(stdin, "BEGIN; LOCK TABLE audit_log IN ACCESS EXCLUSIVE MODE; SELECT 'locked';").expect("lock");
    let mut lines = BufReader::new(lock.stdout.take().expect("stdout")).lines();
    assert_eq!(lines.next().and_then(Result::ok).as_deref(), Some("locked"));
    let mut copying = migrate(&server, &source, &["--customer", "acme"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    wait_for("the copy to wait on the locked table", || {
        let waiting = server
            .sql("SELECT count(*) FROM pg_stat_activity WHERE datname = 'ocsilo_acme' AND wait_event_type = 'Lock'");
        (waiting == "1").then_some(())
    });
    copying.kill().expect("SIGKILL");
    copying.wait().expect("reaped");
    writeln!(stdin, "ROLLBACK;").expect("unlock");
    drop(stdin);
    lock.wait().expect("psql ends");
    wait_for("the killed copy's transaction to end", || {
        (server.sql("SELECT count(*) FROM pg_stat_activity WHERE datname = 'ocsilo_acme' AND state <> 'idle'") == "0")
            .then_some(())
    });
    assert_eq!(server.sql_in("ocsilo_acme", "SELECT count(*) FROM tenants"), "0", "nothing of the killed copy");
    assert_eq!(server.sql_in("ocsilo_acme", "SELECT count(*) FROM shared_import"), "0");
    assert_eq!(
        server.sql_in("opencrane_fleet", "SELECT phase FROM shared_migrations WHERE cluster_tenant = 'acme'"),
        "provisioned"
    );

    // The next run resumes and finishes; one more changes nothing.
    let out = run(migrate(&server, &source, &[]));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    for customer in report["customers"].as_array().expect("customers") {
        assert_eq!(customer["phase"], "cut-over", "{customer}");
    }
    assert_eq!(server.sql_in("ocsilo_acme", "SELECT count(*) FROM tenants"), "202", "no duplicates");
    let fleet_audit = server.sql_in("opencrane_fleet", "SELECT count(*) FROM audit_log");
    run(migrate(&server, &source, &[]));
    assert_eq!(
        server.sql_in("opencrane_fleet", "SELECT count(*) FROM audit_log"),
        fleet_audit,
        "a second run is a no-op"
    );
    assert_eq!(
        server.sql_in("ocsilo_acme", "SELECT count(*) FROM audit_log WHERE request_id = 'shared-migration'"),
        "1"
    );

    // The migrated silo's own pages, signed in.
    let headers = [("Authorization", format!("Bearer {}", server.token()))];
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, body) =
        http("GET", &format!("{}/api/v1/cluster-tenants/acme/provisioning", server.fleet_url), &headers, None);
    assert_eq!(status, 200, "{body}");
    let view: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let silo = view["siloUrl"].as_str().expect("the silo's URL").trim_end_matches('/').to_owned();
    let browser = Browser::start();
    browser.goto(&format!("{silo}/users"));
    wait_for("the migrated users", || browser.page_text().contains("Ana Añejo").then_some(()));
    browser.goto(&format!("{silo}/groups"));
    wait_for("the migrated groups", || {
        let text = browser.page_text();
        (text.contains("everyone") && text.contains("acme-eng")).then_some(())
    });
    browser.goto(&format!("{silo}/budgets"));
    wait_for("the migrated budgets", || {
        let text = browser.page_text();
        (text.contains("ben-ws") && text.contains("EUR")).then_some(())
    });
}
