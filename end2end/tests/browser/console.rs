//! The console in a real browser: hydration works — validation runs in the island as the admin
//! types — and the create, members and delete flows work end to end.

use opencrane_e2e::{Browser, DevServer, wait_for};

/// Islands hydrate when the browser is idle, so input typed right after load can arrive before
/// the island listens. Type, and retype until the island reacts (bounded by the harness timeout).
pub fn type_until(browser: &Browser, input_css: &str, text: &str, reacted: impl Fn(&Browser) -> bool) {
    wait_for(&format!("the island to react to typing into {input_css}"), || {
        let input = browser.wait(input_css);
        browser.clear(&input);
        browser.type_text(&input, text);
        reacted(browser).then_some(())
    });
}

pub fn error_text(browser: &Browser, id: &str) -> String {
    browser.text_of(&format!("#{id}-error")).unwrap_or_default()
}

#[test]
fn validation_messages_appear_while_typing_before_any_submit() {
    let server = DevServer::start();
    let browser = Browser::start();
    browser.goto(&format!("{}/cluster-tenants/new", server.fleet_url));
    type_until(&browser, "#ct-name", "Acme_Corp", |b| !error_text(b, "ct-name").is_empty());
    let message = error_text(&browser, "ct-name");
    assert!(message.contains("lowercase"), "unexpected message: {message}");
    assert!(browser.url().ends_with("/cluster-tenants/new"), "nothing was submitted");

    // Fixing the value clears the message, still without a submit.
    let name = browser.wait("#ct-name");
    browser.clear(&name);
    browser.type_text(&name, "acme");
    wait_for("the name error to clear", || error_text(&browser, "ct-name").is_empty().then_some(()));

    // Number fields are checked as typed too, with the same rules as the server.
    type_until(&browser, "#ct-seat-cap", "ten", |b| error_text(b, "ct-seat-cap").contains("whole number"));
    type_until(&browser, "#ct-memory", "lots", |b| error_text(b, "ct-memory").contains("quantity"));
    assert!(browser.find("#ct-name-error").is_some());
}

#[test]
fn a_customer_created_in_the_form_appears_in_the_list_and_deleting_it_needs_the_typed_name() {
    let server = DevServer::start();
    let browser = Browser::start();
    browser.goto(&format!("{}/cluster-tenants/new", server.fleet_url));
    // Wait until the island is live (a blank display name shows a message), then enter values.
    type_until(&browser, "#ct-display-name", " ", |b| !error_text(b, "ct-display-name").is_empty());
    let name = browser.wait("#ct-name");
    browser.type_text(&name, "e2e-acme");
    let display = browser.wait("#ct-display-name");
    browser.clear(&display);
    browser.type_text(&display, "E2E Acme Ltd");
    let seats = browser.wait("#ct-seat-cap");
    browser.type_text(&seats, "12");
    let cpu = browser.wait("#ct-cpu");
    browser.type_text(&cpu, "2");
    browser.click(&browser.wait("button[type=submit]"));
    wait_for("the detail page after create", || {
        browser.url().contains("/cluster-tenants/e2e-acme?created=1").then_some(())
    });
    assert!(browser.page_text().contains("E2E Acme Ltd"));

    browser.goto(&format!("{}/cluster-tenants", server.fleet_url));
    let row = browser.wait("a[href='/cluster-tenants/e2e-acme']");
    assert_eq!(browser.text(&row), "e2e-acme");
    assert!(browser.page_text().contains("1 / 12"), "seats used / cap in the list");
    // The list has no island: it is live at once and fetched no wasm (the form page before did,
    // by its content-hashed name).
    wait_for("the list to be marked live", || browser.hydrated().then_some(()));
    let fetched = |b: &Browser| {
        b.eval("return performance.getEntriesByType('resource').map(e => e.name).join(' ');")
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(!fetched(&browser).contains(".wasm"), "{}", fetched(&browser));
    browser.goto(&format!("{}/cluster-tenants/new", server.fleet_url));
    wait_for("the form's island", || browser.hydrated().then_some(()));
    let on_form = fetched(&browser);
    assert!(
        on_form.split(' ').any(|url| url.contains("/pkg/opencrane-fleet.")
            && url.ends_with(".wasm")
            && !url.ends_with("/opencrane-fleet.wasm")),
        "the fleet's own bundle, by its hashed name: {on_form}"
    );
    assert!(!on_form.contains("opencrane-silo"), "never a silo's bundle: {on_form}");

    // Members: add one, suspend her (her seat is freed), then remove her after a confirmation.
    browser.goto(&format!("{}/cluster-tenants/e2e-acme/members", server.fleet_url));
    assert!(browser.page_text().contains("1 of 12 seats in use"), "the creator holds the first seat");
    let subject = browser.wait("#member-subject");
    browser.type_text(&subject, "e2e-ana");
    browser.click(&browser.wait("#member-form button[type=submit]"));
    wait_for("the member to be added", || browser.url().contains("saved=member-added").then_some(()));
    assert!(browser.page_text().contains("2 of 12 seats in use"));
    browser.click(&browser.wait("button[aria-label='Suspend e2e-ana']"));
    wait_for("the suspension", || browser.url().contains("saved=member-suspended").then_some(()));
    assert!(browser.page_text().contains("1 of 12 seats in use"), "her seat is freed");
    browser.click(&browser.wait("summary[aria-label='Remove e2e-ana']"));
    browser.click(&browser.wait("#member-remove-e2e-ana .confirm-go"));
    wait_for("the member to be gone", || browser.url().contains("saved=member-removed").then_some(()));
    assert!(!browser.page_text().contains("e2e-ana"), "her row is gone");

    // Invite by e-mail: pending, holding no seat; then withdrawn (a plain post).
    let email = browser.wait("#member-email");
    browser.type_text(&email, "e2e-bea@example.com");
    browser.click(&browser.wait("#member-form button[type=submit]"));
    wait_for("the invitation", || browser.url().contains("saved=invited").then_some(()));
    let text = browser.page_text();
    assert!(text.contains("Pending invitations") && text.contains("e2e-bea@example.com"), "{text}");
    assert!(text.contains("1 of 12 seats in use"), "an invitation holds no seat");
    browser.click(&browser.wait("button[aria-label='Withdraw the invitation of e2e-bea@example.com']"));
    wait_for("the withdrawal", || browser.url().contains("saved=invitation-cancelled").then_some(()));
    assert!(!browser.page_text().contains("e2e-bea@example.com"));

    // A customer an API client created has no owner: its page says so and offers Invite owner.
    let body = r#"{"name":"e2e-robot","displayName":"Robot Made","isolationTier":"shared","compute":{"mode":"shared"},"resources":{"quota":{}}}"#;
    let (status, text) = opencrane_e2e::http(
        "POST",
        &format!("{}/api/v1/cluster-tenants", server.fleet_url),
        &[("Authorization", &format!("Bearer {}", server.token())), ("Content-Type", "application/json")],
        Some(body),
    );
    assert_eq!(status, 201, "{text}");
    browser.goto(&format!("{}/cluster-tenants/e2e-robot/members", server.fleet_url));
    assert!(browser.page_text().contains("no active owner yet"), "{}", browser.page_text());
    let owner_email = browser.wait("#owner-email");
    browser.type_text(&owner_email, "boss@robot.example");
    browser.click(&browser.wait("#invite-owner-form button[type=submit]"));
    wait_for("the owner's invitation", || browser.url().contains("saved=invited").then_some(()));
    let text = browser.page_text();
    assert!(text.contains("boss@robot.example") && text.contains("owner"), "{text}");

    // Delete: the confirm button stays disabled until the exact name is typed.
    browser.goto(&format!("{}/cluster-tenants/e2e-acme", server.fleet_url));
    wait_for("the page's islands", || browser.hydrated().then_some(()));
    browser.click(&browser.wait("button[aria-haspopup=dialog]"));
    browser.wait("#delete-confirm");
    // A modal dialog: it fits a small screen (scrolling inside), Tab stays in it, Escape closes it
    // and gives focus back to the button that opened it.
    browser.resize(420, 600);
    let fits = browser.eval(
        "const d = document.querySelector('[role=dialog]'); return d.getBoundingClientRect().bottom <= window.innerHeight && getComputedStyle(d).overflowY === 'auto';",
    );
    assert_eq!(fits, true, "the dialog fits at 420×600 and scrolls inside");
    let inside = "return document.querySelector('[role=dialog]').contains(document.activeElement);";
    let cancel = browser.wait("[role=dialog] .btn.ghost");
    browser.type_text(&cancel, "\u{E004}");
    assert_eq!(browser.eval(inside), true, "Tab from the last control stays in the dialog");
    browser.type_text(&browser.wait("#delete-confirm"), "\u{E00C}");
    wait_for("the dialog to close", || browser.find("[role=dialog]").is_none().then_some(()));
    wait_for("focus back on the Delete… button", || {
        let focused = browser.eval("return document.activeElement.getAttribute('aria-haspopup');");
        (focused == "dialog").then_some(())
    });
    browser.resize(1280, 900);
    browser.click(&browser.wait("button[aria-haspopup=dialog]"));
    browser.wait("#delete-confirm");
    let confirm_button = browser.wait(".dialog button[type=submit]");
    assert!(!browser.enabled(&confirm_button), "enabled before typing");
    let input = browser.wait("#delete-confirm");
    browser.type_text(&input, "e2e-acm");
    assert!(!browser.enabled(&confirm_button), "enabled with a partial name");
    browser.type_text(&input, "e");
    wait_for("the delete button to enable", || browser.enabled(&confirm_button).then_some(()));
    browser.click(&confirm_button);
    browser.wait_for("the list after delete", || {
        browser.url().contains("/cluster-tenants?deleted=e2e-acme").then_some(())
    });
    assert!(browser.page_text().contains("was deleted"));
    assert!(browser.find("a[href='/cluster-tenants/e2e-acme']").is_none(), "the row is gone");

    // The same server answers the REST API with the dev token, and only with it.
    let (status, body) = opencrane_e2e::http(
        "GET",
        &format!("{}/api/v1/cluster-tenants", server.fleet_url),
        &[("Authorization", &format!("Bearer {}", server.token()))],
        None,
    );
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("e2e-acme"));
    let (status, _) = opencrane_e2e::http(
        "GET",
        &format!("{}/api/v1/cluster-tenants", server.fleet_url),
        &[("Authorization", "Bearer not-the-token")],
        None,
    );
    assert_eq!(status, 401);
}

#[test]
fn the_demo_silo_is_served_on_its_own_port_and_ctrl_c_leaves_nothing_running() {
    let mut server = DevServer::start();
    let browser = Browser::start();
    browser.goto(&server.silo_url);
    wait_for("the silo overview", || browser.page_text().contains("opencrane-demo").then_some(()));
    assert_eq!(browser.eval("return document.body.dataset.role;"), "silo");
    browser.goto(&format!("{}/members", server.silo_url));
    assert!(browser.page_text().contains("dev-local-subject"), "the owner is projected into the silo");

    let postgres = server.postgres_pid().expect("the dev server's PostgreSQL pid");
    assert!(std::path::Path::new(&format!("/proc/{postgres}")).exists());
    let status = server.stop().expect("the dev server was running");
    assert!(status.success(), "opencrane dev exited with {status}");
    assert!(!std::path::Path::new(&format!("/proc/{postgres}")).exists(), "PostgreSQL outlived Ctrl-C");
}
