//! Click-through provisioning with the embedded (local) backend: a customer created in the form
//! gets its own database and clustertenant-manager within seconds, the checklist follows every
//! step live, the silo opens and knows its owner, suspension stops it and resumption brings it
//! back, and deletion honours the termination policy (Delete drops the database, Retain keeps it).

use std::{net::TcpStream, time::Instant};

use opencrane_e2e::{Browser, DevServer, http, wait_for};

use crate::console::{error_text, type_until};

fn database_exists(server: &DevServer, name: &str) -> bool {
    let db = format!("ocsilo_{}", name.replace('-', "_"));
    server.sql(&format!("SELECT count(*) FROM pg_database WHERE datname = '{db}'")) == "1"
}

fn step_state(browser: &Browser, step: &str) -> String {
    browser
        .eval(&format!(
            "const e = document.querySelector('li.step[data-step={step}]'); return e ? e.dataset.state : '';"
        ))
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn answers(url: &str) -> bool {
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    TcpStream::connect(authority).is_ok()
}

/// Opens the delete dialog: in place once the island is live, as the page with `?delete=1`
/// before (either way the dialog is open).
fn open_delete_dialog(browser: &Browser) {
    browser.click(&browser.wait("button[aria-haspopup=dialog]"));
    browser.wait("#delete-confirm");
}

#[test]
fn a_customer_created_in_the_console_gets_a_working_silo_that_suspends_resumes_and_deletes() {
    let server = DevServer::start();
    let browser = Browser::start();
    browser.goto(&format!("{}/cluster-tenants/new", server.fleet_url));
    type_until(&browser, "#ct-display-name", " ", |b| !error_text(b, "ct-display-name").is_empty());
    browser.type_text(&browser.wait("#ct-name"), "e2e-prov");
    let display = browser.wait("#ct-display-name");
    browser.clear(&display);
    browser.type_text(&display, "Provisioned Ltd");
    browser.click(&browser.wait("#ct-termination-policy option[value=Delete]"));

    let clicked = Instant::now();
    browser.click(&browser.wait("button[type=submit]"));
    wait_for("the detail page after create", || browser.url().contains("/cluster-tenants/e2e-prov").then_some(()));
    // The checklist lists every step from the start and updates without a reload.
    assert!(browser.find("li.step[data-step=namespace]").is_some(), "every step is listed before it runs");
    wait_for("the checklist to reach Ready", || (step_state(&browser, "readiness") == "done").then_some(()));
    eprintln!("create → Ready in the browser: {:?}", clicked.elapsed());
    for step in ["database", "release", "readiness"] {
        assert_eq!(step_state(&browser, step), "done", "{step}");
    }
    assert_eq!(step_state(&browser, "namespace"), "skipped", "the local backend says why a step does not apply");
    assert!(database_exists(&server, "e2e-prov"), "the silo got its own database");
    // One truth: the status card on the same page says Ready too, without a reload.
    wait_for("the status card to say Ready", || {
        let card = browser.text_of(".status-card")?;
        (card.contains("Ready") && !card.contains("not serving")).then_some(())
    });

    // Open the silo: its own server, which knows its owner (the member list pulled from the fleet).
    browser.goto(&format!("{}/cluster-tenants/e2e-prov", server.fleet_url));
    let silo_url = wait_for("the Open silo link", || {
        browser
            .eval("const a = document.querySelector('a.open-silo'); return a ? a.href : null;")
            .as_str()
            .map(str::to_owned)
    });
    let silo_url = silo_url.trim_end_matches('/').to_owned();
    assert_ne!(silo_url, server.silo_url, "not the demo silo");
    browser.goto(&format!("{silo_url}/members"));
    wait_for("the new silo's member list", || browser.page_text().contains("dev-local-subject").then_some(()));
    // The new silo learnt it is ready within seconds (it asks every 2 s until it is at rest).
    browser.wait_for("the new silo to know it is ready", || {
        browser.goto(&format!("{silo_url}/"));
        let phase = browser.eval(
            "const dt = [...document.querySelectorAll('dt')].find(d => d.textContent === 'Phase'); return dt ? dt.nextElementSibling.textContent : null;",
        );
        phase.as_str().is_some_and(|p| p.contains("Ready")).then_some(())
    });
    assert_eq!(browser.eval("return document.body.dataset.role;"), "silo");

    // Suspend: the silo stops answering; Resume: it comes back on the same address.
    browser.goto(&format!("{}/cluster-tenants/e2e-prov", server.fleet_url));
    // A posted form (with or without the wasm): the page it answers shows the new state.
    // The label is read in one script, never through an element that a reload could make stale.
    let label =
        || browser.eval("const b = document.querySelector('button.suspend'); return b ? b.textContent.trim() : null;");
    let toggle = |from: &str, to: &str| {
        wait_for(&format!("the {from} button"), || (label() == from).then_some(()));
        browser.click(&browser.wait("button.suspend"));
        wait_for(&format!("{from} to take effect"), || (label() == to).then_some(()));
    };
    toggle("Suspend", "Resume");
    assert!(browser.page_text().contains("yes: scaled to zero"), "the desired state says suspended");
    wait_for("the silo to stop answering", || (!answers(&silo_url)).then_some(()));
    toggle("Resume", "Suspend");
    wait_for("the silo to answer again", || {
        let (status, _) = answers(&silo_url).then(|| http("GET", &format!("{silo_url}/readyz"), &[], None))?;
        (status == 200).then_some(())
    });

    // Delete with "Delete all data": the teardown runs, the list confirms, the database is gone.
    // The checklist follows the resumption live and offers the silo again when it is Ready.
    browser.goto(&format!("{}/cluster-tenants/e2e-prov", server.fleet_url));
    wait_for("Ready again on the page", || browser.find(".checklist a.open-silo"));
    open_delete_dialog(&browser);
    assert!(browser.page_text().contains("Delete all data"), "the dialog offers the retention choice");
    browser.click(&browser.wait("input[name=termination-policy][value=Delete]"));
    browser.type_text(&browser.wait("#delete-confirm"), "e2e-prov");
    browser.click(&browser.wait(".dialog button[type=submit]"));
    browser.wait_for("the list after the teardown", || {
        browser.url().contains("/cluster-tenants?deleted=e2e-prov").then_some(())
    });
    assert!(!database_exists(&server, "e2e-prov"), "terminationPolicy Delete drops the database");
    assert!(!answers(&silo_url), "the silo server is gone");
}

#[test]
fn deleting_with_retain_keeps_the_database() {
    let server = DevServer::start();
    let token = server.token();
    let auth = [("Authorization", format!("Bearer {token}"))];
    let headers: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, body) = http(
        "POST",
        &format!("{}/api/v1/cluster-tenants", server.fleet_url),
        &headers,
        Some(
            r#"{"name":"e2e-keep","displayName":"Keep","isolationTier":"shared","compute":{"mode":"shared"},"resources":{"quota":{}},"owner":{"subject":"dev-local-subject"}}"#,
        ),
    );
    assert_eq!(status, 201, "{body}");
    let started = Instant::now();
    wait_for("Ready over the API", || {
        let (_, body) =
            http("GET", &format!("{}/api/v1/cluster-tenants/e2e-keep/status", server.fleet_url), &headers, None);
        body.contains(r#""phase":"ready""#).then_some(())
    });
    eprintln!("create → Ready over the API: {:?}", started.elapsed());

    let browser = Browser::start();
    browser.goto(&format!("{}/cluster-tenants/e2e-keep", server.fleet_url));
    open_delete_dialog(&browser);
    // Retain is preset from the customer's policy.
    let retain_checked =
        browser.eval("return document.querySelector('input[name=termination-policy][value=Retain]').checked;");
    assert_eq!(retain_checked, true);
    browser.type_text(&browser.wait("#delete-confirm"), "e2e-keep");
    browser.click(&browser.wait(".dialog button[type=submit]"));
    browser.wait_for("the list after the teardown", || {
        browser.url().contains("/cluster-tenants?deleted=e2e-keep").then_some(())
    });
    assert!(database_exists(&server, "e2e-keep"), "terminationPolicy Retain keeps the database");
    let (status, _) = http("GET", &format!("{}/api/v1/cluster-tenants/e2e-keep", server.fleet_url), &headers, None);
    assert_eq!(status, 404);
}
