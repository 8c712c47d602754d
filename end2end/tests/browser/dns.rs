//! The fleet's `/dns` page in a real browser, against `opencrane dev` reading a fake API server
//! for the platform issuer (`opencrane-fake-kube`, built from the Kubernetes API documentation; no
//! cluster or cert-manager runs here) and a real BIND 9 for the records: the issuer set up with
//! each bad field named under it and the token never shown again, then the demo customer's row
//! flipping from *missing* to *resolves* when the record appears in the zone.

use opencrane_e2e::{Browser, DevServer, http, wait_for};
use opencrane_fake_kube::FakeApiServer;
use opencrane_provision::probe::bind::Bind;

use crate::console::error_text;

fn choose(browser: &Browser, select_id: &str, value: &str) {
    browser.click(&browser.wait(&format!("#{select_id} option[value='{value}']")));
}

fn save(browser: &Browser) {
    browser.click(&browser.wait("#platform-dns button[type=submit]"));
}

#[test]
fn an_operator_sets_up_the_issuer_and_sees_a_record_appear() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fake = runtime.block_on(FakeApiServer::start()).unwrap();
    let (status, body) = http(
        "POST",
        &format!("{}/api/v1/namespaces", fake.url()),
        &[],
        Some(r#"{"metadata":{"name":"cert-manager"}}"#),
    );
    assert_eq!(status, 201, "{body}");
    let kubeconfig = std::env::temp_dir().join(format!("opencrane-e2e-kubeconfig-{}.yaml", std::process::id()));
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: fake, cluster: {{server: \"{}\"}}}}]\n\
             users: [{{name: fake, user: {{}}}}]\ncontexts: [{{name: fake, context: {{cluster: fake, user: fake}}}}]\n\
             current-context: fake\n",
            fake.url()
        ),
    )
    .unwrap();
    let bind = Bind::start("example.test").unwrap();
    let nameserver = bind.addr.to_string();
    let server = DevServer::start_with_env(
        &[
            "--port",
            "0",
            "--silo-port",
            "0",
            "--platform-base-domain",
            "example.test",
            "--ingress-ip",
            "127.0.0.1",
            "--dns-probe-nameservers",
            &nameserver,
            "--dns-probe-interval-seconds",
            "0",
            "--dns-probe-timeout-seconds",
            "1",
            "--manage-issuer",
            "true",
        ],
        &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
    );
    let browser = Browser::start();
    browser.goto(&format!("{}/dns", server.fleet_url));
    assert!(browser.text(&browser.wait("#issuer")).contains("Not configured"));

    // Bad input: the zone is named under its field, what was typed stays.
    choose(&browser, "issuer-provider", "cloudflare");
    browser.type_text(&browser.wait("#issuer-zone"), "not a zone");
    browser.type_text(&browser.wait("#issuer-email"), "ops@example.test");
    save(&browser);
    let zone = wait_for("the zone's error", || Some(error_text(&browser, "issuer-zone")).filter(|m| !m.is_empty()));
    assert!(zone.contains("fully qualified"), "{zone}");
    assert_eq!(browser.value(&browser.wait("#issuer-email")), "ops@example.test", "what was typed stays");

    // Cloudflare without a token: the original's 422, under the token's field.
    let field = browser.wait("#issuer-zone");
    browser.clear(&field);
    browser.type_text(&field, "example.test");
    save(&browser);
    let token_error =
        wait_for("the token's error", || Some(error_text(&browser, "issuer-token-input")).filter(|m| !m.is_empty()));
    assert!(token_error.contains("cloudflare needs apiToken"), "{token_error}");

    // With the token it is saved; the token is never shown again.
    let token = "cf-e2e-token-never-shown";
    browser.type_text(&browser.wait("#issuer-token-input"), token);
    save(&browser);
    wait_for("saved", || browser.url().contains("saved=issuer").then_some(()));
    let issuer = browser.text(&browser.wait("#issuer"));
    assert!(issuer.contains("cloudflare") && issuer.contains("example.test"), "{issuer}");
    assert!(issuer.contains("Waiting for cert-manager"), "the issuer's own state: {issuer}");
    assert!(browser.text(&browser.wait("#issuer-token")).contains("set, last changed"));
    assert_eq!(browser.value(&browser.wait("#issuer-token-input")), "");
    assert!(!browser.page_text().contains(token));
    let secret = fake.object("/api/v1/namespaces/cert-manager/secrets/opencrane-dns01-cloudflare").unwrap();
    assert!(secret["data"]["api-token"].is_string(), "the token went to the solver Secret");

    // The demo customer's record: missing, then resolves once the zone has it.
    let check = "button[aria-label='Check the DNS of demo now']";
    browser.click(&browser.wait(check));
    let row = "tr[data-host='demo.example.test']";
    wait_for("the first check", || browser.find(&format!("{row}[data-record='missing']")).map(|_| ()));
    bind.set_address("demo.example.test", "127.0.0.1".parse().unwrap());
    browser.click(&browser.wait(check));
    wait_for("the record to resolve", || browser.find(&format!("{row}[data-record='resolves']")).map(|_| ()));
    assert!(browser.text(&browser.wait(row)).contains("Resolves to 127.0.0.1"));
    drop(server);
    let _ = std::fs::remove_file(kubeconfig);
}
