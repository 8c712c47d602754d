//! Sign-in through a real OpenID Provider, on both roles: the fleet with its confidential client,
//! the demo silo with its organisation's public PKCE client chosen by request host (resolved to
//! loopback by the browser). Checks the cookie attributes, that sign-out kills the old cookie, and
//! that a member of nothing is refused on the silo.

use opencrane_e2e::{Browser, DevServer, OidcProvider, free_port, http, wait_for};
use serde_json::{Value, json};

struct Setup {
    _provider: OidcProvider,
    server: DevServer,
    fleet: String,
    silo: String,
    issuer: String,
}

fn setup() -> Setup {
    let (op_port, fleet_port, silo_port) = (free_port(), free_port(), free_port());
    let fleet = format!("http://127.0.0.1:{fleet_port}");
    let silo = format!("http://demo.example.test:{silo_port}");
    let clients = json!([
        {
            "client_id": "fleet-console",
            "client_secret": "fleet-console-secret",
            "redirect_uris": [format!("{fleet}/api/v1/auth/callback")],
            "post_logout_redirect_uris": [format!("{fleet}/")],
            "token_endpoint_auth_method": "client_secret_basic",
            "grant_types": ["authorization_code"],
            "response_types": ["code"]
        },
        {
            "client_id": "demo-org-login",
            "redirect_uris": [format!("{silo}/api/v1/auth/callback")],
            "post_logout_redirect_uris": [format!("{silo}/")],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code"],
            "response_types": ["code"]
        }
    ]);
    let provider = OidcProvider::start(op_port, &clients, "urn:zitadel:iam:org:id:demo-org");
    let issuer = provider.issuer.clone();
    let redirect = format!("{fleet}/api/v1/auth/callback");
    let (fleet_port, silo_port) = (fleet_port.to_string(), silo_port.to_string());
    let server = DevServer::start_with(&[
        "--port",
        &fleet_port,
        "--silo-port",
        &silo_port,
        "--platform-base-domain",
        "example.test",
        "--silo-org-client-id",
        "demo-org-login",
        "--silo-org-id",
        "demo-org",
        "--oidc-issuer-url",
        &issuer,
        "--oidc-client-id",
        "fleet-console",
        "--oidc-client-secret",
        "fleet-console-secret",
        "--oidc-redirect-uri",
        &redirect,
        "--platform-operator-groups",
        "platform-ops",
    ]);
    Setup { _provider: provider, server, fleet, silo, issuer }
}

/// Completes the provider's login and consent pages as `login`, until the browser is back on
/// `app`.
fn sign_in_at_provider(browser: &Browser, issuer: &str, app: &str, login: &str) {
    wait_for("the provider's pages to hand back to the application", || {
        let url = browser.url();
        if url.starts_with(app) {
            return Some(());
        }
        if url.starts_with(issuer) {
            if let Some(input) = browser.find("input[name=login]") {
                browser.clear(&input);
                browser.type_text(&input, login);
                let password = browser.wait("input[name=password]");
                browser.type_text(&password, "any-password");
                browser.click(&browser.wait("button[type=submit]"));
            } else if let Some(button) = browser.find("button[type=submit]") {
                browser.try_click(&button);
            }
        }
        None
    });
}

fn session_cookie(browser: &Browser) -> Option<Value> {
    browser.cookies().into_iter().find(|c| c["name"] == "opencrane-session")
}

fn me(base: &str, cookie: &str) -> Value {
    let (status, body) = http("GET", &format!("{base}/api/v1/auth/me"), &[("Cookie", cookie)], None);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap_or(Value::Null)
}

#[test]
fn operators_sign_in_to_the_fleet_and_signing_out_kills_the_cookie() {
    let Setup { _provider: _op, server, fleet, issuer, .. } = setup();
    let browser = Browser::start();
    browser.goto(&format!("{fleet}/cluster-tenants"));
    assert!(browser.page_text().contains("Sign-in required"));
    let (status, _) = http("GET", &format!("{fleet}/api/v1/cluster-tenants"), &[], None);
    assert_eq!(status, 401, "outside dev identity, the API needs a credential");

    browser.click(&browser.wait("main a.sign-in"));
    wait_for("the provider login page", || browser.url().starts_with(&issuer).then_some(()));
    let authorize = browser.url();
    assert!(authorize.contains("client_id=fleet-console") || browser.page_text().contains("Sign-in"), "{authorize}");
    sign_in_at_provider(&browser, &issuer, &fleet, "ana");
    wait_for("the customers list after sign-in", || {
        (browser.url().ends_with("/cluster-tenants") && browser.page_text().contains("ana@example.com")).then_some(())
    });
    assert!(browser.page_text().contains("operator"), "the header shows the role");

    let cookie = session_cookie(&browser).expect("a session cookie");
    assert_eq!(cookie["httpOnly"], true);
    assert_eq!(cookie["sameSite"], "Strict");
    assert_eq!(cookie["path"], "/");
    assert!(
        !browser.cookies().iter().any(|c| c["name"] == "opencrane-login"),
        "the login transaction cookie is deleted at the callback"
    );
    let header = format!("opencrane-session={}", cookie["value"].as_str().unwrap_or_default());
    let who = me(&fleet, &header);
    assert_eq!(who["authenticated"], true);
    assert_eq!(who["user"]["isPlatformOperator"], true);

    // The session is listed on the Sessions page, marked as this one.
    browser.goto(&format!("{fleet}/sessions"));
    assert!(browser.page_text().contains("This session"));

    // The audit log recorded the sign-in.
    browser.goto(&format!("{fleet}/audit?action=auth."));
    wait_for("the sign-in in the audit log", || browser.page_text().contains("auth.sign_in").then_some(()));

    // Sign out: the provider's logout page follows, and the old cookie no longer works.
    browser.goto(&format!("{fleet}/cluster-tenants"));
    browser.click(&browser.wait("form[action='/api/v1/auth/logout'] button"));
    wait_for("the provider's logout step", || browser.url().starts_with(&issuer).then_some(()));
    assert_eq!(me(&fleet, &header)["authenticated"], false, "the old cookie is dead after sign-out");
    drop(server);
}

#[test]
fn the_silo_signs_in_with_its_organisation_client_chosen_by_host() {
    let Setup { _provider: _op, server, silo, issuer, .. } = setup();
    let browser = Browser::start_with_hosts(&["demo.example.test"]);
    browser.goto(&format!("{silo}/"));
    wait_for("the sign-in prompt", || browser.find("main a.sign-in"));
    browser.click(&browser.wait("main a.sign-in"));
    wait_for("the provider login page", || browser.url().starts_with(&issuer).then_some(()));
    sign_in_at_provider(&browser, &issuer, &silo, "eve");
    wait_for("the silo after sign-in", || browser.url().starts_with(&silo).then_some(()));
    // eve signed in through the organisation as a newcomer: the fleet admitted her as a member
    // (a seat was free) and recorded the sign-in.
    let members_url = format!("{}/api/v1/cluster-tenants/demo/members", server.fleet_url);
    let token = format!("Bearer {}", server.token());
    wait_for("eve admitted as a member at her first sign-in", || {
        let (status, body) = opencrane_e2e::http("GET", &members_url, &[("Authorization", &token)], None);
        let members: serde_json::Value = serde_json::from_str(&body).ok()?;
        let eve = members.as_array()?.iter().find(|m| m["subject"] == "eve")?.clone();
        (status == 200 && eve["role"] == "member" && eve["lastSignInAt"].is_string()).then_some(())
    });

    // The same person's cookie is useless on the fleet: sessions are per role and database.
    let cookie = session_cookie(&browser).expect("a silo session cookie");
    let header = format!("opencrane-session={}", cookie["value"].as_str().unwrap_or_default());
    assert_eq!(me(&server.fleet_url, &header)["authenticated"], false);
    let who = me(&silo.replace("demo.example.test", "127.0.0.1"), &header);
    assert_eq!(who["user"]["sub"], "eve", "the silo knows the session (the provider uses the login name as subject)");

    // An operator signs in (the provider remembers the browser: consent only) and sees the silo.
    browser.click(&browser.wait("form[action='/api/v1/auth/logout'] button"));
    wait_for("the provider's logout step", || browser.url().starts_with(&issuer).then_some(()));
    // Confirm at the provider and wait until it hands back to the silo: starting the next sign-in
    // while the logout is still in flight would race it (and land on the signed-out silo).
    wait_for("the sign-out to finish", || {
        if browser.url().starts_with(&silo) {
            return Some(());
        }
        if let Some(confirm) = browser.find("button[type=submit][value=yes], button[autofocus]") {
            browser.try_click(&confirm);
        }
        None
    });
    browser.goto(&format!("{silo}/api/v1/auth/login?returnTo=/&prompt=login"));
    sign_in_at_provider(&browser, &issuer, &silo, "ana");
    wait_for("the silo overview", || browser.page_text().contains("opencrane-demo").then_some(()));
    assert!(browser.page_text().contains("ana@example.com"));
}
