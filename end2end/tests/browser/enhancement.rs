//! Progressive enhancement in a real browser: the create forms of both roles work with
//! JavaScript switched off (posted, answered by the server with messages under the fields, then
//! the confirmation), and what an admin types before the islands hydrate is kept.

use std::time::Duration;

use opencrane_e2e::{Browser, DevServer, wait_for};

use crate::console::error_text;

fn fill(browser: &Browser, css: &str, text: &str) {
    let input = browser.wait(css);
    browser.clear(&input);
    browser.type_text(&input, text);
}

/// Marks the current page (a property on its window) so that a later check can tell whether the
/// browser loaded a new one. An island answering in place keeps the mark; a posted form does not.
fn mark_page(browser: &Browser) {
    browser.eval("window.__opencraneMark = true; return true;");
}

fn page_marked(browser: &Browser) -> bool {
    browser.eval("return window.__opencraneMark === true;").as_bool().unwrap_or(false)
}

#[test]
fn the_create_forms_of_both_roles_work_without_javascript() {
    let server = DevServer::start();
    let browser = Browser::start_without_javascript();

    // Fleet: a refused post comes back with the typed values and the message under the field.
    browser.goto(&format!("{}/cluster-tenants/new", server.fleet_url));
    fill(&browser, "#ct-name", "NoJS_Acme");
    fill(&browser, "#ct-display-name", "No Script Ltd");
    mark_page(&browser);
    browser.click(&browser.wait("#ct-form button[type=submit]"));
    let message = wait_for("the server's message under the name", || {
        Some(error_text(&browser, "ct-name")).filter(|m| !m.is_empty())
    });
    assert!(message.contains("lowercase"), "unexpected message: {message}");
    assert!(!page_marked(&browser), "the browser posted the form: the message came with a new page");
    assert_eq!(browser.value(&browser.wait("#ct-display-name")), "No Script Ltd", "what was typed is kept");

    fill(&browser, "#ct-name", "nojs-acme");
    browser.click(&browser.wait("#ct-form button[type=submit]"));
    wait_for("the new customer's page", || browser.url().contains("/cluster-tenants/nojs-acme").then_some(()));
    let confirmation = browser.text(&browser.wait("[role=status]"));
    assert!(confirmation.contains("Customer created"), "unexpected confirmation: {confirmation}");

    // Deleting works without script: Delete… asks for the page with the dialog open, a wrong name
    // comes back in the dialog with why, the right one starts the teardown.
    browser.click(&browser.wait("button[aria-haspopup=dialog]"));
    fill(&browser, "#delete-confirm", "nojs-acm");
    browser.click(&browser.wait("input[name=termination-policy][value=Delete]"));
    browser.click(&browser.wait("#delete-form button[type=submit]"));
    // Read through the page load the post starts (the old page's element goes stale under it).
    let why = browser.wait_for("the refusal", || {
        browser.text_of("[role=dialog] [role=alert]").filter(|t| t.contains("Type “nojs-acme” to confirm"))
    });
    assert!(why.contains("Type “nojs-acme” to confirm"), "unexpected refusal: {why}");
    assert_eq!(browser.value(&browser.wait("#delete-confirm")), "nojs-acm", "what was typed is kept");
    fill(&browser, "#delete-confirm", "nojs-acme");
    browser.click(&browser.wait("#delete-form button[type=submit]"));
    wait_for("the teardown's page", || browser.url().contains("deleting=1").then_some(()));
    let said = browser.page_text();
    assert!(said.contains("Deletion started") || said.contains("was deleted"), "{said}");

    // Silo: the new-user form sits in a disclosure, which opens without script too.
    let silo = server.silo_url.trim_end_matches('/');
    browser.goto(&format!("{silo}/users"));
    if browser.find("details[open]:has(#new-user)").is_none() {
        browser.click(&browser.wait("details:has(#new-user) > summary"));
    }
    fill(&browser, "#new-user-name", "nojs-ana");
    fill(&browser, "#new-user-displayName", "Ana Without Script");
    fill(&browser, "#new-user-email", "ana@nojs.test");
    mark_page(&browser);
    browser.click(&browser.wait("#new-user button[type=submit]"));
    let missing = wait_for("the server's message under the subject", || {
        Some(error_text(&browser, "new-user-subject")).filter(|m| !m.is_empty())
    });
    assert!(!missing.contains("subject:"), "said in words: {missing}");
    assert!(!page_marked(&browser), "posted by the browser");
    assert_eq!(browser.value(&browser.wait("#new-user-displayName")), "Ana Without Script");
    // The refused form is open again (a closed disclosure would hide its messages).
    fill(&browser, "#new-user-subject", "sub-nojs-ana");
    browser.click(&browser.wait("#new-user button[type=submit]"));
    wait_for("the confirmation", || browser.url().contains("saved=new-user").then_some(()));
    let page = browser.text(&browser.wait("main"));
    assert!(page.contains("User created."), "the page confirms: {page}");
    assert!(page.contains("Ana Without Script"), "the new user is listed");

    // Row actions are forms as well: Suspend posts at once; Delete opens a disclosure that asks
    // for the name, refuses a wrong one with why (open again, what was typed kept), then deletes.
    browser.click(&browser.wait("button[aria-label='Suspend user nojs-ana']"));
    wait_for("the suspension", || browser.find("button[aria-label='Resume user nojs-ana']"));
    browser.click(&browser.wait("summary[aria-label='Delete user nojs-ana']"));
    fill(&browser, "#row-delete-user-nojs-ana-confirmation", "nojs");
    mark_page(&browser);
    browser.click(&browser.wait("#row-delete-user-nojs-ana button[type=submit]"));
    let why = wait_for("the refusal", || browser.find(".row-action [role=alert]:not([hidden])"));
    assert!(browser.text(&why).contains("name"), "it says why: {}", browser.text(&why));
    assert!(!page_marked(&browser), "posted by the browser");
    assert_eq!(browser.value(&browser.wait("#row-delete-user-nojs-ana-confirmation")), "nojs");
    fill(&browser, "#row-delete-user-nojs-ana-confirmation", "nojs-ana");
    browser.click(&browser.wait("#row-delete-user-nojs-ana button[type=submit]"));
    wait_for("the user to be gone", || (!browser.page_text().contains("Ana Without Script")).then_some(()));
}

#[test]
fn what_is_typed_before_the_islands_hydrate_is_kept() {
    let server = DevServer::start();
    let browser = Browser::start();
    // Every response arrives late, so the page is usable long before its wasm is loaded.
    browser.slow_network(Duration::from_millis(2500));
    browser.goto(&format!("{}/cluster-tenants/new", server.fleet_url));
    fill(&browser, "#ct-name", "Early_Bird");
    fill(&browser, "#ct-display-name", "Early Bird Ltd");
    assert!(!browser.wasm_loaded(), "typed before the island could listen");

    // Once hydrated, the island has adopted the values and checks them as it does while typing.
    let message = wait_for("the island to check the value typed before it woke", || {
        Some(error_text(&browser, "ct-name")).filter(|m| !m.is_empty())
    });
    assert!(message.contains("lowercase"), "unexpected message: {message}");
    assert!(browser.wasm_loaded());
    assert_eq!(browser.value(&browser.wait("#ct-name")), "Early_Bird");
    assert_eq!(browser.value(&browser.wait("#ct-display-name")), "Early Bird Ltd");
}
