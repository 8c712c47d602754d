//! The fleet's `/identity` page in a real browser, against `opencrane dev` linked to the fake
//! Zitadel (`opencrane_zitadel::fake`, built from Zitadel's documented API shapes; no Zitadel can
//! run here): the expiry banner, an upload refused with a sentence and never echoed back, an
//! upload that rotates, the two-phase rotation, the reconcile pass's result, and the demo
//! customer's own organisation on its page.

use chrono::{TimeDelta, Utc};
use opencrane_e2e::{Browser, DevServer, wait_for};
use opencrane_zitadel::fake::FakeZitadel;

use crate::console::error_text;

fn submit(browser: &Browser, form: &str) {
    browser.click(&browser.wait(&format!("#{form} button[type=submit]")));
    wait_for(form, || browser.url().contains(&format!("saved={form}")).then_some(()));
}

#[test]
fn an_operator_sees_the_expiring_key_rotates_it_and_reconciles() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let zitadel = runtime.block_on(FakeZitadel::start()).unwrap();
    let key = zitadel.service_account(true, Some(Utc::now() + TimeDelta::days(5) + TimeDelta::hours(1)));
    let key_file = std::env::temp_dir().join(format!("opencrane-e2e-zitadel-{}.json", std::process::id()));
    std::fs::write(&key_file, key.to_json()).unwrap();
    let server = DevServer::start_with(&[
        "--port",
        "0",
        "--silo-port",
        "0",
        "--zitadel-mgmt-api-url",
        zitadel.url(),
        "--zitadel-sa-key-file",
        key_file.to_str().unwrap(),
    ]);
    let browser = Browser::start();
    let page = format!("{}/identity", server.fleet_url);
    browser.goto(&page);
    assert_eq!(browser.text(&browser.wait("#key-id")), key.key_id);
    let warning = browser.text(&browser.wait(".notice.bad"));
    assert!(warning.contains("expires in 5 days"), "the expiry banner: {warning}");

    // A refused upload: a sentence under the field, the key in use unchanged, nothing echoed.
    if browser.find("details[open]:has(#zitadel-upload)").is_none() {
        browser.click(&browser.wait("details:has(#zitadel-upload) > summary"));
    }
    let secret_marker = "MIIsecret-looking-material";
    browser.type_text(
        &browser.wait("#zitadel-key"),
        &format!("{{\"keyId\":\"1\",\"userId\":\"2\",\"key\":\"{secret_marker}\""),
    );
    browser.click(&browser.wait("#zitadel-upload button[type=submit]"));
    let refused = wait_for("the refusal", || Some(error_text(&browser, "zitadel-key")).filter(|m| !m.is_empty()));
    assert!(refused.contains("not JSON"), "{refused}");
    assert_eq!(browser.value(&browser.wait("#zitadel-key")), "", "an uploaded key is never shown again");
    assert!(!browser.page_text().contains(secret_marker));
    assert_eq!(browser.text(&browser.wait("#key-id")), key.key_id);

    // A good upload rotates; the banner goes with the old key.
    let fresh = zitadel.add_key(&key.user_id, Some(Utc::now() + TimeDelta::days(200)));
    if browser.find("details[open]:has(#zitadel-upload)").is_none() {
        browser.click(&browser.wait("details:has(#zitadel-upload) > summary"));
    }
    browser.type_text(&browser.wait("#zitadel-key"), &fresh.to_json());
    submit(&browser, "zitadel-upload");
    assert!(browser.text(&browser.wait("[role=status]")).contains("Key rotated"));
    assert_eq!(browser.text(&browser.wait("#key-id")), fresh.key_id);
    assert!(browser.find(".notice.bad").is_none(), "no expiry banner for a key with 199 days left");

    // Two-phase: mint (not in use yet), activate (in use, old key in its grace period), revoke.
    submit(&browser, "zitadel-prepare");
    assert!(browser.text(&browser.wait("#rotation-state")).contains("not in use yet"));
    assert_eq!(browser.text(&browser.wait("#key-id")), fresh.key_id);
    submit(&browser, "zitadel-activate");
    let minted = browser.text(&browser.wait("#key-id"));
    assert_ne!(minted, fresh.key_id, "the minted key is in use");
    assert!(browser.text(&browser.wait("#rotation-state")).contains("stays valid until"));
    submit(&browser, "zitadel-revoke");
    assert!(browser.text(&browser.wait("[role=status]")).contains("The old key was revoked"));
    assert!(!zitadel.keys_of(&key.user_id).contains(&fresh.key_id), "the old key is gone in Zitadel");

    // Reconcile now: the result is shown on the page.
    submit(&browser, "zitadel-reconcile");
    let result = browser.text(&browser.wait("#reconcile-result"));
    assert!(result.contains("Finished") && result.contains("Members adopted"), "{result}");
    // The demo customer got its own organisation from the identity step; its page shows it.
    let org = wait_for("the demo customer's organisation", || {
        browser.goto(&format!("{}/cluster-tenants/demo", server.fleet_url));
        browser.text_of("#zitadel-org").filter(|id| id.chars().all(|c| c.is_ascii_digit()) && !id.is_empty())
    });
    assert!(zitadel.org(&org).is_some(), "the organisation exists in Zitadel");
    assert!(browser.find("a[href$='/ui/console/orgs/{org}']".replace("{org}", &org).as_str()).is_some());
    let _ = std::fs::remove_file(key_file);
}
