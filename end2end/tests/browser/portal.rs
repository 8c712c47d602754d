//! The silo portal in a real browser, against the demo silo of `opencrane dev`: an admin creates
//! a user and a group, sets a budget, reads the effective-limit panel, defines models with a
//! fallback and uses the test-route tool — and bad input on every form gets a message under the
//! field it is about.

use opencrane_e2e::{Browser, wait_for};

use crate::console::error_text;

/// Submits the form `form` until the island answers with a message under `field` (before
/// hydration a click does nothing, so it is repeated), and returns that message.
fn submit_for_error(browser: &Browser, form: &str, field: &str) -> String {
    wait_for(&format!("a message under {form}-{field}"), || {
        let message = error_text(browser, &format!("{form}-{field}"));
        if message.is_empty() {
            // Before hydration the click posts the page; a later pass may find the button of
            // the page being left, so a click that misses is tried again.
            browser.try_click(&browser.wait(&format!("#{form} button[type=submit]")));
            None
        } else {
            Some(message)
        }
    })
}

fn fill(browser: &Browser, id: &str, text: &str) {
    let input = browser.wait(&format!("#{id}"));
    browser.clear(&input);
    browser.type_text(&input, text);
}

fn choose(browser: &Browser, select_id: &str, value: &str) {
    browser.click(&browser.wait(&format!("#{select_id} option[value='{value}']")));
}

/// Opens the collapsible section holding form `form` (the page may still be settling, so this
/// is done in the page rather than by a click on a node that may be replaced).
fn open_details(browser: &Browser, form: &str) {
    wait_for(&format!("the section of {form} to open"), || {
        let script = format!(
            "const d = document.querySelector('details:has(#{form})'); if (!d) return false; d.open = true; return true;"
        );
        browser.eval(&script).as_bool().unwrap_or(false).then_some(())
    });
}

/// Whether a table cell's text is exactly `text`.
fn has_cell(browser: &Browser, text: &str) -> bool {
    let script = format!("return [...document.querySelectorAll('td')].some(td => td.textContent.trim() === {text:?});");
    browser.eval(&script).as_bool().unwrap_or(false)
}

/// Whether a table row's text is exactly `text` (cells run together).
fn has_row(browser: &Browser, text: &str) -> bool {
    let script = format!("return [...document.querySelectorAll('tr')].some(tr => tr.textContent.trim() === {text:?});");
    browser.eval(&script).as_bool().unwrap_or(false)
}

fn submit_until(browser: &Browser, form: &str, what: &str, done: impl Fn(&Browser) -> bool) {
    browser.click(&browser.wait(&format!("#{form} button[type=submit]")));
    wait_for(what, || done(browser).then_some(()));
}

#[test]
fn an_admin_sets_up_users_groups_budgets_and_models_and_every_form_names_bad_fields() {
    let server = opencrane_e2e::DevServer::start();
    let browser = Browser::start();
    let silo = server.silo_url.trim_end_matches('/').to_owned();

    // A user: a blank form names every required field; a bad amount is named too.
    browser.goto(&format!("{silo}/users"));
    assert!(submit_for_error(&browser, "new-user", "name").contains("required"));
    for field in ["displayName", "email", "subject"] {
        assert!(!error_text(&browser, &format!("new-user-{field}")).is_empty(), "{field} has a message");
    }
    fill(&browser, "new-user-name", "jane");
    fill(&browser, "new-user-displayName", "Jane Doe");
    fill(&browser, "new-user-email", "not-an-address");
    fill(&browser, "new-user-subject", "s-jane");
    fill(&browser, "new-user-monthlyBudgetUsd", "12.345");
    browser.click(&browser.wait("#new-user button[type=submit]"));
    wait_for("the amount's message", || {
        error_text(&browser, "new-user-monthlyBudgetUsd").contains("two decimals").then_some(())
    });
    assert!(error_text(&browser, "new-user-email").contains("e-mail"));
    fill(&browser, "new-user-email", "jane@acme.test");
    fill(&browser, "new-user-monthlyBudgetUsd", "50");
    submit_until(&browser, "new-user", "jane in the list", |b| b.find("a[href='/users/jane']").is_some());
    assert!(browser.page_text().contains("50.00 USD per month"), "her own limit is listed");

    // A group with jane in it; a bad name is named.
    browser.goto(&format!("{silo}/groups"));
    fill(&browser, "new-group-name", "Engineering Team");
    assert!(submit_for_error(&browser, "new-group", "name").contains("lowercase"));
    fill(&browser, "new-group-name", "engineering");
    browser.click(&browser.wait("#new-group-members input[value=jane]"));
    submit_until(&browser, "new-group", "the group in the list", |b| has_cell(b, "engineering"));
    assert!(has_cell(&browser, "jane"), "jane is listed as a member");

    // A group budget: a bad amount is named; then 100 a month for engineering.
    browser.goto(&format!("{silo}/budgets"));
    open_details(&browser, "new-limit");
    // The whole silo needs no target: the picker hides; a group offers groups only.
    wait_for("the target picker to hide for the whole silo", || {
        browser
            .eval("return document.querySelector('#new-limit-target').closest('.field-slot').hidden;")
            .as_bool()
            .filter(|h| *h)
    });
    choose(&browser, "new-limit-level", "group");
    let group_option = wait_for("the engineering option", || {
        browser
            .eval("const o = [...document.querySelectorAll('#new-limit-target optgroup[label=Groups] option')].find(o => o.textContent === 'engineering'); return o ? o.value : null;")
            .as_str()
            .map(str::to_owned)
    });
    let users_hidden = browser.eval("return document.querySelector('#new-limit-target optgroup[label=Users]').hidden;");
    assert_eq!(users_hidden, true, "a group limit offers no users");
    choose(&browser, "new-limit-target", &group_option);
    fill(&browser, "new-limit-amount", "lots");
    assert!(submit_for_error(&browser, "new-limit", "amount").contains("amount"));
    fill(&browser, "new-limit-amount", "100");
    submit_until(&browser, "new-limit", "the limit in the table", |b| b.page_text().contains("group “engineering”"));
    assert!(browser.page_text().contains("calendar month"), "the period semantics are shown");

    // The effective-limit panel: both limits apply; jane's own 50 binds before the group's 100.
    browser.goto(&format!("{silo}/access?user=jane"));
    let panel = browser.wait(".effective-limits");
    let text = browser.text(&panel);
    assert!(text.contains("user jane") && text.contains("group “engineering”"), "{text}");
    let first = browser.text(&browser.wait(".effective-limits tr.limit-row"));
    assert!(first.contains("user jane") && first.contains("binds first"), "{first}");
    assert!(
        browser.page_text().contains("no model is allowed"),
        "without models her key is blocked, and the page says why"
    );
    assert!(browser.text(&browser.wait(".no-models")).contains("No models are defined"), "an empty table says why");
    let sessions = browser.text(&browser.wait(".access-sessions"));
    assert!(sessions.contains("No active sign-in sessions"), "jane never signed in: {sessions}");

    // Models: a bad upstream is named; then two models and a fallback.
    browser.goto(&format!("{silo}/models"));
    fill(&browser, "new-model-publicName", "fast");
    assert!(submit_for_error(&browser, "new-model", "upstreamModel").contains("model"));
    fill(&browser, "new-model-upstreamModel", "openai/gpt-4o-mini");
    submit_until(&browser, "new-model", "fast in the list", |b| has_cell(b, "openai/gpt-4o-mini"));
    open_details(&browser, "new-model");
    fill(&browser, "new-model-publicName", "smart");
    fill(&browser, "new-model-upstreamModel", "openai/gpt-4o");
    submit_until(&browser, "new-model", "smart in the list", |b| has_cell(b, "openai/gpt-4o"));
    open_details(&browser, "fallbacks");
    choose(&browser, "fallbacks-publicName", "smart");
    fill(&browser, "fallbacks-chain", "smart");
    assert!(submit_for_error(&browser, "fallbacks", "chain").contains("itself"));
    fill(&browser, "fallbacks-chain", "fast");
    submit_until(&browser, "fallbacks", "the chain in the table", |b| has_row(b, "smartfast"));

    // The test-route tool (a GET form the page answers): jane asking for smart gets smart,
    // falling back to fast, and the answer has a link.
    choose(&browser, "route-user", "jane");
    choose(&browser, "route-model", "smart");
    browser.click(&browser.wait(".test-route button[type=submit]"));
    wait_for("the route answer", || browser.find(".route-result"));
    assert!(browser.url().contains("route-user=jane"), "{}", browser.url());
    let result = browser.text(&browser.wait(".route-result"));
    assert!(result.contains("smart") && result.contains("the request named it"), "{result}");
    assert!(result.contains("Fallbacks, in order: fast"), "{result}");
    assert!(result.contains("openai/gpt-4o"), "the deployment is named: {result}");

    // The remaining forms name their bad fields too.
    browser.goto(&format!("{silo}/policies"));
    open_details(&browser, "new-policy");
    fill(&browser, "new-policy-name", "web");
    fill(&browser, "new-policy-allowedDomains", "not a domain");
    assert!(submit_for_error(&browser, "new-policy", "allowedDomains").contains("not a domain"));
    open_details(&browser, "new-grant");
    fill(&browser, "new-grant-subjectId", "ghost");
    assert!(submit_for_error(&browser, "new-grant", "subjectId").contains("ghost"));
    // A grant's preview says whose access would change, and changes nothing; once added, opening
    // its Delete says what removing it would change.
    fill(&browser, "new-grant-subjectId", "jane");
    choose(&browser, "new-grant-access", "deny");
    browser.click(&browser.wait("#new-grant button[data-preview]:not([hidden])"));
    let preview = wait_for("the grant's preview", || browser.find("#new-grant-impact .what-if"));
    let said = browser.text(&preview);
    assert!(said.contains("would change") && said.contains("jane"), "{said}");
    assert!(error_text(&browser, "new-grant-subjectId").is_empty(), "the earlier message is cleared");
    assert!(!browser.page_text().contains("deny * for tenant jane"), "a preview adds nothing");
    submit_until(&browser, "new-grant", "the grant in the table", |b| {
        b.find("summary[aria-label='Delete grant deny * for tenant jane']").is_some()
    });
    browser.click(&browser.wait("summary[aria-label='Delete grant deny * for tenant jane']"));
    let impact = wait_for("the removal's impact", || browser.find(".confirm-details[open] .what-if"));
    assert!(browser.text(&impact).contains("jane"), "removing it changes jane's access: {}", browser.text(&impact));
    browser.goto(&format!("{silo}/budgets"));
    fill(&browser, "settings-timeZone", "Mars/Base");
    assert!(submit_for_error(&browser, "settings", "timeZone").contains("Mars/Base"));
    browser.goto(&format!("{silo}/models"));
    open_details(&browser, "new-credential");
    fill(&browser, "new-credential-name", "openai");
    fill(&browser, "new-credential-apiKey", "short");
    assert!(submit_for_error(&browser, "new-credential", "apiKey").contains("8 characters"));
    open_details(&browser, "defaults");
    choose(&browser, "defaults-scope", "user");
    assert!(submit_for_error(&browser, "defaults", "target").contains("user"));

    // An access token: its secret is shown once, without the stale "No tokens yet" below it.
    browser.goto(&format!("{silo}/tokens"));
    assert!(browser.page_text().contains("No tokens yet"));
    fill(&browser, "token-name", "ci pipeline");
    // The token form is a plain posted form: one click on its own button (the page that answers
    // has other, hidden submit buttons: each token's Revoke behind its disclosure).
    submit_until(&browser, "token-form", "the new token's secret", |b| b.find("#new-token").is_some());
    let page = browser.page_text();
    assert!(page.contains("created") && !page.contains("No tokens yet"), "one truth on the page: {page}");
    browser.click(&browser.wait("a[href='/tokens']"));
    wait_for("the list with the new token", || browser.page_text().contains("ci pipeline").then_some(()));

    // A row action with the wasm: the Delete disclosure opens, and its button waits for the name.
    browser.goto(&format!("{silo}/users"));
    let confirm = wait_for("the confirmation of jane's deletion (once the island is live)", || {
        let open = browser.eval("return document.querySelector('#row-delete-user-jane').closest('details').open;");
        if open != true {
            browser.try_click(&browser.wait("summary[aria-label='Delete user jane']"));
        }
        browser.find("#row-delete-user-jane .confirm-go").filter(|b| !browser.enabled(b))
    });
    let name = browser.wait("#row-delete-user-jane-confirmation");
    browser.type_text(&name, "jan");
    assert!(!browser.enabled(&confirm), "a partial name does not arm the button");
    browser.type_text(&name, "e");
    wait_for("the button to arm", || browser.enabled(&confirm).then_some(()));
    browser.click(&confirm);
    wait_for("jane to be gone", || browser.find("a[href='/users/jane']").is_none().then_some(()));
}
