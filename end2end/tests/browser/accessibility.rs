//! Every page of both roles, as `opencrane dev` serves them, checked in the same Chromium: axe-core
//! (from npm, injected into the page) finds no violation of any impact at 1280 px, and at 420 px no
//! page scrolls sideways as a whole (a wide table scrolls inside its own wrapper).

use std::path::PathBuf;

use opencrane_e2e::{Browser, DevServer, http, wait_for};

/// axe-core's browser build, installed by `cargo xtask test` beside the test OpenID Provider.
fn axe_source() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("oidc/node_modules/axe-core/axe.min.js");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (npm ci --prefix end2end/oidc installs it)", path.display()))
}

/// The violations axe finds on the current page, one line each (rule, impact, where).
fn violations(browser: &Browser, axe: &str) -> Vec<String> {
    if !browser.eval("return typeof window.axe === 'object';").as_bool().unwrap_or(false) {
        browser.eval(&format!("{axe}\nreturn true;"));
    }
    let found = browser.eval_async(
        "const done = arguments[arguments.length - 1];
         axe.run(document)
           .then(r => done({ passes: r.passes.length, violations: r.violations.map(v => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')}`) }))
           .catch(e => done({ error: String(e) }));",
    );
    assert!(found["error"].is_null(), "axe failed: {found}");
    // A page axe checked nothing on would pass silently.
    assert!(found["passes"].as_u64().unwrap_or(0) > 0, "axe checked nothing: {found}");
    let list = found["violations"].as_array().unwrap_or_else(|| panic!("no violations list: {found}"));
    list.iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect()
}

/// How far the page scrolls sideways as a whole, in CSS pixels (0: it fits).
fn sideways(browser: &Browser) -> i64 {
    browser
        .eval("return document.documentElement.scrollWidth - document.documentElement.clientWidth;")
        .as_i64()
        .unwrap_or(i64::MAX)
}

fn pages_of(base: &str, paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| format!("{base}{p}")).collect()
}

#[test]
fn every_page_of_both_roles_passes_axe_and_fits_a_narrow_screen() {
    let axe = axe_source();
    let server = DevServer::start();
    let browser = Browser::start();
    // A silo user, for the user's own page (the development identity, same-origin, as the console).
    let (status, body) = http(
        "POST",
        &format!("{}/api/v1/tenants", server.silo_url),
        &[("Origin", &server.silo_url), ("Sec-Fetch-Site", "same-origin")],
        Some(r#"{"name":"ana","displayName":"Ana Example","email":"ana@example.com","subject":"ana-subject"}"#),
    );
    assert_eq!(status, 201, "{body}");
    let user = "/users/ana".to_owned();
    let mut pages = pages_of(
        &server.fleet_url,
        &[
            "/",
            "/cluster-tenants",
            "/cluster-tenants/new",
            "/cluster-tenants/demo",
            // The delete dialog, open (as the page without wasm asks for it).
            "/cluster-tenants/demo?delete=1",
            "/cluster-tenants/demo/edit",
            "/cluster-tenants/demo/members",
            "/billing",
            "/dns",
            "/identity",
            "/audit",
            "/sessions",
        ],
    );
    pages.extend(pages_of(
        &server.silo_url,
        &[
            "/",
            "/users",
            &user,
            "/groups",
            "/policies",
            "/access",
            "/budgets",
            "/models",
            "/members",
            "/audit",
            "/sessions",
            "/tokens",
        ],
    ));
    // The silo's members page links to where membership is managed: the fleet console.
    browser.goto(&format!("{}/members", server.silo_url));
    let manage = browser.eval("return document.querySelector('#manage-members a').getAttribute('href');");
    assert_eq!(manage, format!("{}/cluster-tenants/demo/members", server.fleet_url).as_str());
    let mut problems = Vec::new();
    for (width, height) in [(1280, 900), (420, 800)] {
        browser.resize(width, height);
        for page in &pages {
            browser.goto(page);
            wait_for("the page to render", || browser.find("main h1").map(|_| ()));
            if width == 1280 {
                problems.extend(violations(&browser, &axe).into_iter().map(|v| format!("{page}: {v}")));
            } else {
                let wide = sideways(&browser);
                if wide > 0 {
                    problems.push(format!("{page} at {width} px scrolls sideways by {wide} px"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}
