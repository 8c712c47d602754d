//! Billing in a real browser against `opencrane dev`: an operator defines a plan on `/billing`,
//! puts the demo customer on it from the customer's billing page, sees its month-to-date amount
//! in the overview agree with the statement, and downloads the statement as CSV.

use opencrane_e2e::{Browser, DevServer, wait_for};

fn fill(browser: &Browser, id: &str, text: &str) {
    let input = browser.wait(&format!("#{id}"));
    browser.clear(&input);
    browser.type_text(&input, text);
}

#[test]
fn an_operator_defines_a_plan_assigns_it_and_downloads_the_statement() {
    let server = DevServer::start();
    let browser = Browser::start();
    browser.goto(&format!("{}/billing", server.fleet_url));
    browser.click(&browser.wait("#billing-plans summary"));
    fill(&browser, "plan-name", "Team");
    fill(&browser, "plan-currency", "EUR");
    fill(&browser, "plan-seat-price", "abc");
    browser.click(&browser.wait("#billing-plan button[type=submit]"));
    let message =
        wait_for("the price's message", || browser.text_of("#plan-seat-price-error").filter(|m| !m.is_empty()));
    assert!(message.contains("decimal amount"), "{message}");
    assert_eq!(browser.value(&browser.wait("#plan-name")), "Team", "what was typed stays");
    // Every seat included and a minimum: the month comes to at least 25.00 EUR whatever the demo
    // silo reports.
    fill(&browser, "plan-seat-price", "12.50");
    fill(&browser, "plan-included", "1000");
    fill(&browser, "plan-minimum", "25");
    browser.click(&browser.wait("#billing-plan button[type=submit]"));
    wait_for("the plan to be defined", || browser.url().contains("saved=Team").then_some(()));
    assert!(browser.find("#billing-plans tr[data-plan='Team']").is_some());

    // The demo customer goes on it from its billing page.
    browser.click(&browser.wait("a[aria-label='Open the billing of demo']"));
    wait_for("the customer's billing page", || browser.find("#assign-plan").map(|_| ()));
    browser.click(&browser.wait("#assign-plan-plan option[value='Team']"));
    browser.click(&browser.wait("#assign-plan button[type=submit]"));
    wait_for("the plan to be assigned", || browser.url().contains("saved=plan").then_some(()));
    assert!(browser.text(&browser.wait("#plan-history")).contains("Team"));
    let total = browser.text(&browser.wait("#statement .stat"));
    assert!(total.starts_with("Total ") && total.ends_with(" EUR"), "{total}");

    // The overview agrees with the statement, and forecasts the month's end.
    browser.goto(&format!("{}/billing", server.fleet_url));
    let row = browser.wait("tr[data-customer='demo'] td[data-field='month-to-date']");
    let month_to_date = browser.text(&row);
    assert_eq!(format!("Total {month_to_date}"), total, "the overview and the statement agree");
    let amount: f64 = month_to_date.trim_end_matches(" EUR").parse().unwrap();
    assert!(amount >= 25.0, "the minimum applies: {month_to_date}");
    assert!(browser.find("#billing-overview svg[aria-label='Billed per month in EUR']").is_some(), "the trend");

    // The statement's CSV, as the download link serves it.
    browser.goto(&format!("{}/billing/demo", server.fleet_url));
    let href = browser
        .eval("return document.querySelector(\"#statement a[href*='format=csv']\").getAttribute('href');")
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(href.contains("/export?format=csv"), "{href}");
    let csv = browser.eval_async(&format!(
        "const done = arguments[arguments.length - 1]; fetch({href:?}).then(r => r.text()).then(done, e => done(String(e)));"
    ));
    let csv = csv.as_str().unwrap_or_default();
    assert!(csv.starts_with("customer,month,status,kind,description,amount,currency,usage_days\n"), "{csv}");
    let last = csv.lines().last().unwrap_or_default();
    assert!(last.starts_with("demo,") && last.contains(",total,"), "{csv}");
    assert!(last.contains(month_to_date.trim_end_matches(" EUR")), "the CSV's total is the page's: {csv}");
}
