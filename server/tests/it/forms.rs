//! Forms without wasm (progressive enhancement, see `app::forms`): a URL-encoded post to a page
//! runs the same server function as the island and answers with a redirect (303), or with the
//! page again — the typed values kept, each message under its field — with the error's status.
//! The forms are taken from the rendered pages, as a browser without JavaScript would.

use axum::http::{Method, StatusCode};
use serde_json::json;
use sqlx::PgPool;

use crate::support::{self, Reply, send_as};

/// Headers of a same-origin form post (or a navigation) with `cookie`.
pub(crate) fn form_headers(cookie: &str, site: &str) -> Vec<(&'static str, String)> {
    vec![
        ("cookie", cookie.to_owned()),
        ("host", "console.test".to_owned()),
        ("origin", "https://console.test".to_owned()),
        ("sec-fetch-site", site.to_owned()),
        ("accept", "text/html".to_owned()),
        ("content-type", "application/x-www-form-urlencoded".to_owned()),
    ]
}

fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"").replace("&#39;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// The hidden fields of the form with DOM id `form` on `page`, as the browser would post them.
pub(crate) fn hidden_fields(page: &str, form: &str) -> Vec<(String, String)> {
    let start = page.find(&format!(r#"id="{form}""#)).unwrap_or_else(|| panic!("no form {form} on the page"));
    let end = start + page[start..].find("</form>").expect("the form ends");
    let html = &page[start..end];
    let mut fields = Vec::new();
    for input in html.split("<input").skip(1) {
        let tag = &input[..input.find('>').unwrap_or(input.len())];
        if !tag.contains(r#"type="hidden""#) {
            continue;
        }
        let attr = |name: &str| {
            let key = format!(r#"{name}=""#);
            tag.find(&key).map(|i| {
                let rest = &tag[i + key.len()..];
                unescape(&rest[..rest.find('"').unwrap_or(rest.len())])
            })
        };
        fields.push((attr("name").expect("a named hidden field"), attr("value").unwrap_or_default()));
    }
    assert!(fields.iter().any(|(k, _)| k == app::forms::TARGET), "the form {form} says what it does");
    fields
}

pub(crate) fn encode(hidden: &[(String, String)], fields: &[(&str, &str)]) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in hidden {
        out.append_pair(k, v);
    }
    for (k, v) in fields {
        out.append_pair(k, v);
    }
    out.finish()
}

/// The silo's new-user form as typed for a user named `name` (Ana Lima, team research).
fn new_user(name: &'static str) -> Vec<(&'static str, &'static str)> {
    vec![
        ("name", name),
        ("displayName", "Ana Lima"),
        ("email", "ana@acme.test"),
        ("subject", "sub-ana"),
        ("team", "research"),
        ("policyRef", ""),
        ("monthlyBudgetUsd", ""),
    ]
}

pub(crate) fn error_under(page: &Reply, input_id: &str) -> String {
    let marker = format!(r#"id="{input_id}-error""#);
    let at = page.text.find(&marker).unwrap_or_else(|| panic!("no error slot for {input_id}"));
    let rest = &page.text[at..];
    let inner = &rest[rest.find('>').unwrap_or(0) + 1..];
    unescape(&inner[..inner.find("</p>").unwrap_or(0)]).replace("<!>", "")
}

#[sqlx::test(migrations = false)]
async fn the_customer_form_works_without_wasm(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet_signed_in(db.clone());
    let cookie = support::session_cookie(&db, "op", true, false).await;
    let nav = form_headers(&cookie, "same-origin");

    let page = send_as(&fleet, Method::GET, "/cluster-tenants/new", None, &nav).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text.contains(r#"method="post""#), "a real form");
    assert!(page.text.contains(r#"name="display_name""#), "named fields");
    let hidden = hidden_fields(&page.text, "ct-form");
    let defaults = [
        ("isolation_tier", "shared"),
        ("compute_mode", "shared"),
        ("termination_policy", "Retain"),
        ("cpu", ""),
        ("seat_cap", "ten"),
    ];

    // Refused: the page again, with what was typed and each message under its field.
    let mut bad = vec![("name", "Acme_Corp"), ("display_name", "Acme <Corp>")];
    bad.extend(defaults);
    let refused = send_as(&fleet, Method::POST, "/cluster-tenants/new", Some(&encode(&hidden, &bad)), &nav).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.text.contains(r#"value="Acme_Corp""#), "the typed name is kept");
    assert!(refused.text.contains(r#"value="Acme &lt;Corp&gt;""#), "the typed display name is kept, escaped");
    assert!(error_under(&refused, "ct-name").contains("lowercase"), "{}", error_under(&refused, "ct-name"));
    assert!(error_under(&refused, "ct-seat-cap").contains("whole number"));
    assert!(refused.text.contains("fields need attention; see below."), "one sentence above, no JSON keys");
    assert!(!refused.text.contains("seatCap:"), "no JSON key in the banner");
    assert_eq!(refused.headers["cache-control"], "no-store");

    // Accepted: created by the same service, and a 303 to the new customer's page.
    let mut good = vec![("name", "forms-acme"), ("display_name", "Forms Acme")];
    good.extend(defaults.iter().map(|&(k, v)| if k == "seat_cap" { (k, "12") } else { (k, v) }));
    let created = send_as(&fleet, Method::POST, "/cluster-tenants/new", Some(&encode(&hidden, &good)), &nav).await;
    assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.text);
    assert_eq!(created.headers["location"], "/cluster-tenants/forms-acme?created=1");
    let seats: Option<i32> = sqlx::query_scalar("SELECT seat_cap FROM cluster_tenants WHERE name = 'forms-acme'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(seats, Some(12));

    // The edit form posts too; the name is fixed whatever the post says.
    let edit = send_as(&fleet, Method::GET, "/cluster-tenants/forms-acme/edit", None, &nav).await;
    assert!(edit.text.contains(r#"value="Forms Acme""#), "the stored values are in the HTML before hydration");
    let hidden = hidden_fields(&edit.text, "ct-form");
    let mut change = vec![("name", "other"), ("display_name", "Forms Acme Ltd")];
    change.extend(defaults.iter().map(|&(k, v)| if k == "seat_cap" { (k, "12") } else { (k, v) }));
    let saved =
        send_as(&fleet, Method::POST, "/cluster-tenants/forms-acme/edit", Some(&encode(&hidden, &change)), &nav).await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.text);
    assert_eq!(saved.headers["location"], "/cluster-tenants/forms-acme?saved=1");
    let display: String = sqlx::query_scalar("SELECT display_name FROM cluster_tenants WHERE name = 'forms-acme'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(display, "Forms Acme Ltd");

    // Suspend and Delete work without wasm too. Suspend is a one-button form…
    let detail = send_as(&fleet, Method::GET, "/cluster-tenants/forms-acme", None, &nav).await;
    let suspend = hidden_fields(&detail.text, "suspend-form");
    let suspended =
        send_as(&fleet, Method::POST, "/cluster-tenants/forms-acme", Some(&encode(&suspend, &[])), &nav).await;
    assert_eq!(suspended.status, StatusCode::SEE_OTHER, "{}", suspended.text);
    let is_suspended: bool = sqlx::query_scalar("SELECT suspended FROM cluster_tenants WHERE name = 'forms-acme'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert!(is_suspended);
    // …the Delete… button asks for the page with the dialog open (a GET form)…
    assert!(detail.text.contains(r#"name="delete" value="1""#), "Delete… opens the dialog without wasm");
    // Closed until asked for: the dialog waits in an inert template (the wasm opens it in place).
    let (before, template) = detail.text.split_once(r#"<template id="delete-dialog">"#).unwrap_or_default();
    assert!(!before.contains(r#"id="delete-form""#) && template.contains(r#"id="delete-form""#), "{}", detail.text);
    let asked = send_as(&fleet, Method::GET, "/cluster-tenants/forms-acme?delete=1", None, &nav).await;
    assert!(asked.text.contains(r#"role="dialog""#), "the dialog is open");
    assert!(!asked.text.contains(r#"<template id="delete-dialog">"#), "in the page, not a template");
    let delete = hidden_fields(&asked.text, "delete-form");
    // …a wrong name is refused in the dialog (open again, what was typed and chosen kept)…
    let wrong = [("confirmation", "forms-acm"), ("termination-policy", "Delete")];
    let refused =
        send_as(&fleet, Method::POST, "/cluster-tenants/forms-acme", Some(&encode(&delete, &wrong)), &nav).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.text.contains(r#"role="dialog""#) && refused.text.contains("Type “forms-acme” to confirm."));
    assert!(refused.text.contains(r#"value="forms-acm""#), "the typed name is kept");
    let delete_radio = refused.text.split(r#"value="Delete""#).nth(1).and_then(|rest| rest.split('>').next());
    assert!(delete_radio.is_some_and(|attrs| attrs.contains("checked")), "the chosen policy is kept");
    let bad_policy = [("confirmation", "forms-acme"), ("termination-policy", "Shred")];
    let refused =
        send_as(&fleet, Method::POST, "/cluster-tenants/forms-acme", Some(&encode(&delete, &bad_policy)), &nav).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "an unknown policy is named, not guessed");
    assert!(refused.text.contains("Choose whether the data is kept or deleted."));
    // …and the right name starts the deletion, then the page follows it.
    let right = [("confirmation", "forms-acme"), ("termination-policy", "Delete")];
    let deleting =
        send_as(&fleet, Method::POST, "/cluster-tenants/forms-acme", Some(&encode(&delete, &right)), &nav).await;
    assert_eq!(deleting.status, StatusCode::SEE_OTHER, "{}", deleting.text);
    assert_eq!(deleting.headers["location"], "/cluster-tenants/forms-acme?deleting=1");
    let followed = send_as(&fleet, Method::GET, "/cluster-tenants/forms-acme?deleting=1", None, &nav).await;
    assert!(
        followed.text.contains("Deletion started") || followed.text.contains("was deleted"),
        "the page says what happened: {}",
        followed.status
    );

    // The same checks as a server-function call: a cross-site post is refused…
    let cross = form_headers(&cookie, "cross-site");
    let forged = send_as(&fleet, Method::POST, "/cluster-tenants/new", Some(&encode(&hidden, &good)), &cross).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    // …a silo's form is not run by the fleet…
    let portal = app::forms::Posted::Portal {
        target: app::islands::silo::portal_form::FormTarget::CreateUser,
        done: "/users".into(),
        kinds: Vec::new(),
        fixed: Vec::new(),
    };
    let wrong = vec![(app::forms::TARGET.to_owned(), portal.hidden())];
    let other_role = send_as(&fleet, Method::POST, "/users", Some(&encode(&wrong, &[])), &nav).await;
    assert_eq!(other_role.status, StatusCode::BAD_REQUEST);
    // Signing out one's other sessions is a posted form too.
    let other = support::session_cookie(&db, "op", true, false).await;
    let elsewhere = form_headers(&other, "same-origin");
    assert_eq!(send_as(&fleet, Method::GET, "/sessions", None, &elsewhere).await.status, StatusCode::OK);
    let sessions = send_as(&fleet, Method::GET, "/sessions", None, &nav).await;
    let hidden_revoke = hidden_fields(&sessions.text, "revoke-my-other-sessions");
    let ended = send_as(&fleet, Method::POST, "/sessions", Some(&encode(&hidden_revoke, &[])), &nav).await;
    assert_eq!(ended.status, StatusCode::SEE_OTHER, "{}", ended.text);
    assert_eq!(ended.headers["location"], "/sessions");
    assert_ne!(
        send_as(&fleet, Method::GET, "/sessions", None, &elsewhere).await.status,
        StatusCode::OK,
        "the other session is over"
    );
    assert_eq!(send_as(&fleet, Method::GET, "/sessions", None, &nav).await.status, StatusCode::OK, "this one is not");
    // …and a post without a session is answered like the page: sign in first.
    let anonymous = form_headers("", "same-origin");
    let nobody = send_as(&fleet, Method::POST, "/cluster-tenants/new", Some(&encode(&hidden, &good)), &anonymous).await;
    assert_ne!(nobody.status, StatusCode::SEE_OTHER, "nothing was created without a caller");
}

#[sqlx::test(migrations = false)]
async fn a_silo_form_works_without_wasm_and_confirms(pool: PgPool) {
    let (db, silo, owner) = support::silo_with_otto_and_mia(&pool).await;
    let cookie = owner.iter().find(|(k, _)| *k == "cookie").map(|(_, v)| v.clone()).unwrap();
    let nav = form_headers(&cookie, "same-origin");

    let page = send_as(&silo, Method::GET, "/users", None, &nav).await;
    assert_eq!(page.status, StatusCode::OK);
    let hidden = hidden_fields(&page.text, "new-user");
    let typed = new_user;

    let refused = send_as(&silo, Method::POST, "/users", Some(&encode(&hidden, &typed("Ana!"))), &nav).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(refused.text.contains(r#"value="research""#), "what was typed is kept");
    assert!(!error_under(&refused, "new-user-name").is_empty(), "the message sits under the name");
    assert!(!refused.text.contains("name: "), "no JSON key in the banner");

    let created = send_as(&silo, Method::POST, "/users", Some(&encode(&hidden, &typed("ana"))), &nav).await;
    assert_eq!(created.status, StatusCode::SEE_OTHER, "{}", created.text);
    assert_eq!(created.headers["location"], "/users?saved=new-user");
    let team: Option<String> =
        sqlx::query_scalar("SELECT team FROM tenants WHERE name = 'ana'").fetch_one(&db).await.unwrap();
    assert_eq!(team.as_deref(), Some("research"));
    let after = send_as(&silo, Method::GET, "/users?saved=new-user", None, &nav).await;
    assert!(after.text.contains("User created."), "the page confirms what the form did");
    assert!(after.text.contains("Ana Lima"));

    // Row actions are forms too: suspend, then delete with the typed name (a disclosure, no wasm).
    let hidden = hidden_fields(&after.text, "row-suspend-user-ana");
    let suspended = send_as(&silo, Method::POST, "/users", Some(&encode(&hidden, &[])), &nav).await;
    assert_eq!(suspended.status, StatusCode::SEE_OTHER, "{}", suspended.text);
    let is_suspended: bool =
        sqlx::query_scalar("SELECT suspended FROM tenants WHERE name = 'ana'").fetch_one(&db).await.unwrap();
    assert!(is_suspended);
    // The user's page carries their LLM key and Revoke key (a confirmation disclosure).
    sqlx::query(
        "INSERT INTO litellm_keys (tenant, key_alias, token_id, nonce, ciphertext) VALUES ('ana', 'acme-ana', 't', '\\x00', '\\x00')",
    )
    .execute(&db)
    .await
    .unwrap();
    let user_page = send_as(&silo, Method::GET, "/users/ana", None, &nav).await;
    assert!(user_page.text.contains(r#"id="llm-key""#), "{}", user_page.text);
    let hidden = hidden_fields(&user_page.text, "row-revoke-key-of-ana");
    let revoked = send_as(&silo, Method::POST, "/users/ana", Some(&encode(&hidden, &[])), &nav).await;
    assert_eq!((revoked.status, revoked.headers["location"].to_str().unwrap()), (StatusCode::SEE_OTHER, "/users/ana"));
    let after = send_as(&silo, Method::GET, "/users/ana", None, &nav).await;
    assert!(after.text.contains("the next pass deletes it in LiteLLM"), "the page says what happens next");
    let page = send_as(&silo, Method::GET, "/users", None, &nav).await;
    assert!(page.text.contains("revoking"), "and the list shows it");
    let hidden = hidden_fields(&page.text, "row-delete-user-ana");
    let wrong = send_as(&silo, Method::POST, "/users", Some(&encode(&hidden, &[("confirmation", "an")])), &nav).await;
    assert!(wrong.status.is_client_error(), "{}", wrong.status);
    assert!(wrong.text.contains(r#"<details open class="confirm-details">"#), "the confirmation opens again");
    let input =
        wrong.text.split(r#"id="row-delete-user-ana-confirmation""#).nth(1).and_then(|rest| rest.split('>').next());
    assert!(input.is_some_and(|attrs| attrs.contains(r#"value="an""#)), "with what was typed");
    assert!(wrong.text.contains("Type the user"), "and why");
    let gone = send_as(&silo, Method::POST, "/users", Some(&encode(&hidden, &[("confirmation", "ana")])), &nav).await;
    assert_eq!(gone.status, StatusCode::SEE_OTHER, "{}", gone.text);
    assert_eq!(gone.headers["location"], "/users");
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM tenants WHERE name = 'ana'").fetch_one(&db).await.unwrap();
    assert_eq!(left, 0);

    // A new access token without wasm: the answer is the page with the secret, once, never cached
    // and never compressed (asked for gzip, by a request this site started).
    let tokens = send_as(&silo, Method::GET, "/tokens", None, &nav).await;
    let mut gzip_nav = nav.clone();
    gzip_nav.push(("accept-encoding", "gzip".to_owned()));
    let hidden = hidden_fields(&tokens.text, "token-form");
    let blank =
        send_as(&silo, Method::POST, "/tokens", Some(&encode(&hidden, &[("name", ""), ("role", "member")])), &nav)
            .await;
    assert_eq!(blank.status, StatusCode::BAD_REQUEST);
    assert!(!error_under(&blank, "token-name").is_empty(), "the message sits under the name");
    let made = send_as(
        &silo,
        Method::POST,
        "/tokens",
        Some(&encode(&hidden, &[("name", "ci pipeline"), ("role", "member"), ("expiresInDays", "30")])),
        &gzip_nav,
    )
    .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    assert_eq!(made.headers["cache-control"], "no-store");
    assert!(!made.headers.contains_key("content-encoding"), "a page with a secret is never compressed (BREACH)");
    assert!(made.text.contains(r#"id="new-token""#) && made.text.contains("ocp_"), "the secret is shown");
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM access_tokens WHERE name = 'ci pipeline'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(stored, 1);
    // Revoking it is a posted form behind a confirmation step; the page then says so.
    let id: String = sqlx::query_scalar("SELECT id::text FROM access_tokens WHERE name = 'ci pipeline'")
        .fetch_one(&db)
        .await
        .unwrap();
    let list = send_as(&silo, Method::GET, "/tokens", None, &nav).await;
    assert!(list.text.contains(r#"<summary aria-label="Revoke ci pipeline""#), "the step names the token");
    let hidden = hidden_fields(&list.text, &format!("revoke-token-{id}"));
    let revoked = send_as(&silo, Method::POST, "/tokens", Some(&encode(&hidden, &[])), &nav).await;
    assert_eq!(revoked.status, StatusCode::SEE_OTHER, "{}", revoked.text);
    assert_eq!(revoked.headers["location"], "/tokens?saved=revoked");
    let after = send_as(&silo, Method::GET, "/tokens?saved=revoked", None, &nav).await;
    assert!(after.text.contains("Token revoked"), "the page confirms it");
    let live: i64 =
        sqlx::query_scalar("SELECT count(*) FROM access_tokens WHERE name = 'ci pipeline' AND revoked_at IS NULL")
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(live, 0);

    // A secret is never echoed back into the page.
    let models = send_as(&silo, Method::GET, "/models", None, &nav).await;
    // Empty tables say what they are and how to fill them.
    assert!(models.text.contains("No fallback chains") && models.text.contains("No default models"));
    let hidden = hidden_fields(&models.text, "new-credential");
    let keys = [("name", "Bad Name!"), ("provider", "openai"), ("apiKey", "sk-never-shown-again")];
    let refused = send_as(&silo, Method::POST, "/models", Some(&encode(&hidden, &keys)), &nav).await;
    assert!(refused.status.is_client_error(), "{}", refused.status);
    assert!(!refused.text.contains("sk-never-shown-again"), "the key is not in the page");
    // The quick set-up posts too (this silo has no credentials key: refused under the key, in words).
    let hidden = hidden_fields(&models.text, "quick-setup");
    let quick = [("provider", "openai"), ("apiKey", "sk-quick-never-shown")];
    let refused = send_as(&silo, Method::POST, "/models", Some(&encode(&hidden, &quick)), &nav).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.status);
    assert!(
        error_under(&refused, "quick-setup-apiKey").contains("credentials key"),
        "{}",
        error_under(&refused, "quick-setup-apiKey")
    );
    assert!(!refused.text.contains("sk-quick-never-shown"), "the key is not in the page");
}

#[sqlx::test(migrations = false)]
async fn the_members_page_lists_seats_and_its_form_works_without_wasm(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    sqlx::query("INSERT INTO cluster_tenants (name, display_name, seat_cap) VALUES ('acme', 'Acme', 2)")
        .execute(&db)
        .await
        .unwrap();
    sqlx::query("INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'otto', 'owner')")
        .execute(&db)
        .await
        .unwrap();
    let fleet = support::fleet_signed_in(db.clone());
    let owner = support::session_cookie(&db, "otto", false, false).await;
    let nav = form_headers(&owner, "same-origin");

    let page = send_as(&fleet, Method::GET, "/cluster-tenants/acme/members", None, &nav).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains("Members of Acme"));
    assert!(page.text.contains("1 of 2 seats in use"), "seat use against the cap");
    assert!(page.text.contains(">otto<"), "the owner is listed");
    assert!(page.text.contains(r#"id="member-status-otto""#), "row actions for those who may manage");
    let hidden = hidden_fields(&page.text, "member-form");

    let added = send_as(
        &fleet,
        Method::POST,
        "/cluster-tenants/acme/members",
        Some(&encode(&hidden, &[("subject", "ana"), ("role", "admin")])),
        &nav,
    )
    .await;
    assert_eq!(added.status, StatusCode::SEE_OTHER, "{}", added.text);
    assert_eq!(added.headers["location"], "/cluster-tenants/acme/members?saved=member-added");
    let after = send_as(&fleet, Method::GET, "/cluster-tenants/acme/members?saved=member-added", None, &nav).await;
    assert!(after.text.contains("Member added"));
    assert!(after.text.contains("2 of 2 seats in use"));

    // The seat cap is the server's: refused with its words, what was typed kept.
    let full = send_as(
        &fleet,
        Method::POST,
        "/cluster-tenants/acme/members",
        Some(&encode(&hidden, &[("subject", "bo"), ("role", "member")])),
        &nav,
    )
    .await;
    assert_eq!(full.status, StatusCode::CONFLICT, "{}", full.text);
    assert!(full.text.contains(r#"value="bo""#), "the subject is kept");
    assert!(full.text.to_lowercase().contains("seat"), "the refusal says why");

    // Row actions are posted forms too: suspend ana (her seat is freed), then remove her after the
    // confirmation step; removing the last owner is refused beside its button, in words.
    let suspend = hidden_fields(&after.text, "member-status-ana");
    let suspended =
        send_as(&fleet, Method::POST, "/cluster-tenants/acme/members", Some(&encode(&suspend, &[])), &nav).await;
    assert_eq!(suspended.status, StatusCode::SEE_OTHER, "{}", suspended.text);
    assert_eq!(suspended.headers["location"], "/cluster-tenants/acme/members?saved=member-suspended");
    let after = send_as(&fleet, Method::GET, "/cluster-tenants/acme/members?saved=member-suspended", None, &nav).await;
    assert!(after.text.contains("Member suspended") && after.text.contains("1 of 2 seats in use"));
    let last_owner = hidden_fields(&after.text, "member-remove-otto");
    let kept =
        send_as(&fleet, Method::POST, "/cluster-tenants/acme/members", Some(&encode(&last_owner, &[])), &nav).await;
    assert_eq!(kept.status, StatusCode::CONFLICT, "{}", kept.text);
    assert!(kept.text.contains(r#"<details open class="confirm-details">"#), "the confirmation is open again");
    assert!(kept.text.contains("last active owner"), "and says why");
    let remove = hidden_fields(&after.text, "member-remove-ana");
    let removed =
        send_as(&fleet, Method::POST, "/cluster-tenants/acme/members", Some(&encode(&remove, &[])), &nav).await;
    assert_eq!(removed.headers["location"], "/cluster-tenants/acme/members?saved=member-removed");
    let left: i64 =
        sqlx::query_scalar("SELECT count(*) FROM org_memberships WHERE subject = 'ana'").fetch_one(&db).await.unwrap();
    assert_eq!(left, 0, "ana is no member any more");

    // A member who may not manage gets neither the list nor the form, and a post is refused.
    sqlx::query("UPDATE cluster_tenants SET seat_cap = 3 WHERE name = 'acme'").execute(&db).await.unwrap();
    sqlx::query("INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'mia', 'member')")
        .execute(&db)
        .await
        .unwrap();
    let mia = form_headers(&support::session_cookie(&db, "mia", false, false).await, "same-origin");
    // (A plain member does not administer the customer on the fleet: the page is refused.)
    let read_only = send_as(&fleet, Method::GET, "/cluster-tenants/acme/members", None, &mia).await;
    assert_eq!(read_only.status, StatusCode::FORBIDDEN);
    assert!(!read_only.text.contains(r#"id="member-form""#), "no form for a member");
    assert!(!read_only.text.contains(">ana<"), "no member list for a member");
    let refused = send_as(
        &fleet,
        Method::POST,
        "/cluster-tenants/acme/members",
        Some(&encode(&hidden, &[("subject", "eve"), ("role", "owner")])),
        &mia,
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "the post is checked like the call: {}", refused.status);
}

/// Billing from the pages alone: an operator defines a plan on `/billing` (bad input named under
/// its field, what was typed kept), puts a customer on it from its billing page, and the overview
/// lists every customer — billed, unbilled, with no account, deleted with history — with its
/// month-to-date and a forecast; its owner sees only their own, read-only.
#[sqlx::test(migrations = false)]
async fn billing_works_from_the_pages_without_wasm(pool: PgPool) {
    use chrono::{Datelike, Utc};
    let db = support::fleet_db(&pool).await;
    for sql in [
        "INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme'), ('beta', 'Beta'), ('gamma', 'Gamma')",
        "INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'otto', 'owner'), ('beta', 'bea', 'owner')",
        "INSERT INTO billing_accounts (subject, email, display_name) VALUES ('otto', 'otto@example.com', 'Otto Ltd')",
    ] {
        sqlx::query(sql).execute(&db).await.unwrap();
    }
    let today = Utc::now().date_naive();
    let first = today.with_day(1).unwrap();
    // acme's and beta's silos report the first of the month over the internal API, each with its
    // own credential; "gone" was deleted with its usage held, priced when a fleet starts.
    let internal = support::fleet_internal(db.clone());
    let report = json!({ "activeSeats": 3, "spend": [{ "model": "fast", "currency": "EUR", "amount": "2" }] });
    for name in ["acme", "beta"] {
        let auth = format!("Bearer {}", crate::trust::issue(&db, name).await);
        let headers = [("authorization", auth), ("content-type", "application/json".to_owned())];
        let path = format!("/api/internal/cluster-tenants/{name}/usage/{first}");
        let put = send_as(&internal, Method::PUT, &path, Some(&report.to_string()), &headers).await;
        assert_eq!(put.status, StatusCode::OK, "{}", put.text);
    }
    let mut conn = db.acquire().await.unwrap();
    let line = opencrane_fleet_db::usage::SpendLine { model: "fast".into(), currency: "EUR".into(), amount: 2_000_000 };
    let day = opencrane_fleet_db::usage::DayUsage { active_seats: 2, spend: vec![line] };
    opencrane_fleet_db::usage::record(&mut conn, "gone", first, day).await.unwrap();
    drop(conn);
    assert_eq!(app::service::fleet::book::backfill(&db, first).await.unwrap(), 1, "gone's month is priced once");
    assert_eq!(app::service::fleet::book::backfill(&db, first).await.unwrap(), 0);
    let fleet = support::fleet_signed_in(db.clone());
    let operator = support::session_cookie(&db, "ana", true, false).await;
    let nav = form_headers(&operator, "same-origin");

    let page = send_as(&fleet, Method::GET, "/billing", None, &nav).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert!(page.text.contains(r#"id="billing-plans""#) && page.text.contains("No plans yet"));
    let hidden = hidden_fields(&page.text, "billing-plan");
    let plan = |price: &'static str| {
        vec![
            ("name", "Team"),
            ("currency", "EUR"),
            ("seatPrice", price),
            ("includedSeats", "1"),
            ("markupPercent", "10"),
        ]
    };
    let refused = send_as(&fleet, Method::POST, "/billing", Some(&encode(&hidden, &plan("-3"))), &nav).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(error_under(&refused, "plan-seat-price").contains("0 or more"), "the price is named under its field");
    assert!(refused.text.contains(r#"value="Team""#), "what was typed stays");
    let made = send_as(&fleet, Method::POST, "/billing", Some(&encode(&hidden, &plan("30"))), &nav).await;
    assert_eq!(made.status, StatusCode::SEE_OTHER, "{}", made.text);
    assert_eq!(made.headers["location"], "/billing?saved=Team");

    // acme goes on Team from the first of the month, from its billing page.
    let acme = send_as(&fleet, Method::GET, "/billing/acme", None, &nav).await;
    assert!(acme.text.contains(r#"aria-label="Active seats per day""#), "the usage chart");
    let assign = hidden_fields(&acme.text, "assign-plan");
    let too_early = (first - chrono::Duration::days(1)).to_string();
    let closed = send_as(
        &fleet,
        Method::POST,
        "/billing/acme",
        Some(&encode(&assign, &[("plan", "Team"), ("effectiveFrom", &too_early)])),
        &nav,
    )
    .await;
    assert!(error_under(&closed, "assign-plan-from").contains("closed"), "a closed month is refused under its field");
    let from = first.to_string();
    let assigned = send_as(
        &fleet,
        Method::POST,
        "/billing/acme",
        Some(&encode(&assign, &[("plan", "Team"), ("effectiveFrom", &from)])),
        &nav,
    )
    .await;
    assert_eq!(assigned.status, StatusCode::SEE_OTHER, "{}", assigned.text);
    assert_eq!(assigned.headers["location"], "/billing/acme?saved=plan");
    let statement = send_as(&fleet, Method::GET, "/billing/acme?saved=plan", None, &nav).await;
    assert!(statement.text.contains("The plan is assigned."));
    let day = format!("day-{first}");
    assert!(
        statement.text.contains(&format!(r##"href="#{day}""##)) && statement.text.contains(&format!(r#"id="{day}""#)),
        "each line links to the usage rows it came from"
    );

    // The overview: acme billed to Otto Ltd; beta (an owner with no account) and gamma (no usage,
    // no plan) unbilled; gone (deleted, its usage kept) listed.
    let overview = send_as(&fleet, Method::GET, "/api/v1/billing/customers", None, &nav).await;
    assert_eq!(overview.status, StatusCode::OK, "{}", overview.text);
    let o = overview.json();
    let row = |name: &str| o["items"].as_array().unwrap().iter().find(|r| r["clusterTenant"] == name).cloned();
    let acme_row = row("acme").expect("acme is listed");
    assert_eq!((acme_row["plan"].clone(), acme_row["account"]["name"].clone()), (json!("Team"), json!("Otto Ltd")));
    let days = i64::from(opencrane_entitlements::statement::month_bounds(first).1.day());
    // 2 seat-days above the included one × 30.00 ÷ days in month, + 2.00 EUR + 10 %.
    let cents = |micros: i64| (micros + days * 5_000) / days / 10_000 * 10_000;
    let expected = cents(60_000_000) + 2_200_000;
    assert_eq!(acme_row["monthToDate"], json!(opencrane_entitlements::format_amount(expected)), "{acme_row}");
    if today.day() < u32::try_from(days).unwrap() {
        assert!(acme_row["forecast"].is_string(), "an open month has a forecast: {acme_row}");
    }
    for name in ["beta", "gamma", "gone"] {
        let r = row(name).unwrap_or_else(|| panic!("{name} is listed"));
        assert!(r["plan"].is_null(), "{r}");
    }
    assert_eq!(row("gone").unwrap()["deleted"], json!(true));
    assert!(row("beta").unwrap()["account"].is_null());
    assert_eq!(o["totals"][0]["currency"], "EUR");
    assert_eq!(o["trend"].as_array().unwrap().len(), 6, "six months");
    let unbilled = send_as(&fleet, Method::GET, "/api/v1/billing/customers?status=unbilled", None, &nav).await.json();
    assert_eq!(unbilled["total"], json!(3), "{unbilled}");
    // A revised report re-prices the month at once: the overview and the statement still agree.
    let auth = format!("Bearer {}", crate::trust::issue(&db, "acme").await);
    let revised = json!({ "activeSeats": 5, "spend": [{ "model": "fast", "currency": "EUR", "amount": "2" }] });
    let headers = [("authorization", auth), ("content-type", "application/json".to_owned())];
    let path = format!("/api/internal/cluster-tenants/acme/usage/{first}");
    assert_eq!(
        send_as(&internal, Method::PUT, &path, Some(&revised.to_string()), &headers).await.status,
        StatusCode::OK
    );
    let month = first.format("%Y-%m").to_string();
    let statement = send_as(&fleet, Method::GET, &format!("/api/v1/billing/acme/statements/{month}"), None, &nav).await;
    let again = send_as(&fleet, Method::GET, "/api/v1/billing/customers?q=acme", None, &nav).await.json();
    assert_eq!(again["items"][0]["monthToDate"], statement.json()["total"], "{again}");
    assert_eq!(
        again["items"][0]["monthToDate"],
        json!(opencrane_entitlements::format_amount(cents(120_000_000) + 2_200_000))
    );
    assert_eq!(again["items"][0]["seats"], json!(5));
    let searched = send_as(&fleet, Method::GET, "/api/v1/billing/customers?q=otto", None, &nav).await.json();
    assert_eq!(searched["items"][0]["clusterTenant"], "acme", "the account's name is searched: {searched}");
    let bad = send_as(&fleet, Method::GET, "/api/v1/billing/customers?month=2026-13", None, &nav).await.json();
    assert!(bad["fields"]["month"].is_string(), "{bad}");
    let bad = send_as(&fleet, Method::GET, "/api/v1/billing/customers?page=0", None, &nav).await.json();
    assert!(bad["fields"]["page"].is_string(), "{bad}");

    // The page: grouped by account, the trend as SVG with the forecast drawn hollow.
    let page = send_as(&fleet, Method::GET, "/billing", None, &nav).await;
    assert!(page.text.contains("Account Otto Ltd"), "grouped by account");
    assert!(page.text.contains("No billing account"), "the unbilled group");
    assert!(page.text.contains(r#"aria-label="Billed per month in EUR""#), "the trend chart");
    assert!(page.text.contains(r#"data-customer="gone""#) && page.text.contains("(deleted)"));
    assert!(page.text.contains(r#"data-plan="Team""#), "the plan is listed");

    // acme's owner: only acme, and neither the plans nor the plan form.
    let owner = support::session_cookie(&db, "otto", false, false).await;
    let theirs = send_as(&fleet, Method::GET, "/billing", None, &form_headers(&owner, "same-origin")).await;
    assert!(theirs.text.contains(r#"data-customer="acme""#), "{}", theirs.text);
    assert!(!theirs.text.contains(r#"data-customer="beta""#) && !theirs.text.contains(r#"data-customer="gone""#));
    assert!(!theirs.text.contains(r#"id="billing-plans""#) && !theirs.text.contains(r#"id="billing-plan""#));
    let nothing = send_as(&fleet, Method::GET, "/billing?q=zzz", None, &form_headers(&owner, "same-origin")).await;
    assert!(
        nothing.text.contains(r#"id="billing-overview""#) && nothing.text.contains("No customers match"),
        "a search that matches nothing keeps its filters"
    );
    let own_page = send_as(&fleet, Method::GET, "/billing/acme", None, &form_headers(&owner, "same-origin")).await;
    assert!(!own_page.text.contains(r#"id="assign-plan""#), "read-only for the owner");
}

/// With the wasm, an island sends the fields the browser would post through one server function
/// (`/api/forms/post`, `app::api::forms`) and the same form layer: the answer is where to go next
/// or the error the island places under its fields. A form of the other role is refused there,
/// and so is the token form (only the page it answers shows the secret).
/// The described form's preview takes the same fields (`/api/silo/portal/preview`).
#[sqlx::test(migrations = false)]
async fn an_island_sends_the_posted_fields_through_the_same_form_layer(pool: PgPool) {
    let (db, silo, owner) = support::silo_with_otto_and_mia(&pool).await;
    let cookie = owner.iter().find(|(k, _)| *k == "cookie").map(|(_, v)| v.clone()).unwrap();
    let nav = form_headers(&cookie, "same-origin");
    // As the island's server-function client sends it.
    let json_headers = |headers: &[(&'static str, String)]| {
        let mut h: Vec<(&'static str, String)> =
            headers.iter().filter(|(k, _)| !matches!(*k, "content-type" | "accept")).cloned().collect();
        h.extend([("content-type", "application/json".to_owned()), ("accept", "application/json".to_owned())]);
        h
    };
    let island = json_headers(&nav);
    let call =
        |hidden: &[(String, String)], fields: &[(&str, &str)]| json!({ "fields": encode(hidden, fields) }).to_string();

    let page = send_as(&silo, Method::GET, "/users", None, &nav).await;
    let hidden = hidden_fields(&page.text, "new-user");
    let typed = new_user;
    let refused = send_as(&silo, Method::POST, "/api/forms/post", Some(&call(&hidden, &typed("Ana!"))), &island).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert_eq!(refused.json()["kind"], "validation", "{}", refused.text);
    assert!(refused.json()["fields"]["name"].is_string(), "the message is for the name field: {}", refused.text);
    let mut not_a_number = typed("ana");
    not_a_number.retain(|(k, _)| *k != "monthlyBudgetUsd");
    not_a_number.push(("monthlyBudgetUsd", "lots"));
    let refused = send_as(&silo, Method::POST, "/api/forms/post", Some(&call(&hidden, &not_a_number)), &island).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(refused.json()["fields"]["monthlyBudgetUsd"].is_string(), "encoded by the server: {}", refused.text);

    let created = send_as(&silo, Method::POST, "/api/forms/post", Some(&call(&hidden, &typed("ana"))), &island).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    assert_eq!(created.json(), json!("/users?saved=new-user"), "where the island sends the browser");
    let team: Option<String> =
        sqlx::query_scalar("SELECT team FROM tenants WHERE name = 'ana'").fetch_one(&db).await.unwrap();
    assert_eq!(team.as_deref(), Some("research"));

    // The grant form's preview: the same fields, nothing changes.
    let policies = send_as(&silo, Method::GET, "/policies", None, &nav).await;
    let hidden = hidden_fields(&policies.text, "new-grant");
    let grant =
        [("payloadId", "*"), ("subjectType", "tenant"), ("subjectId", "ana"), ("access", "deny"), ("priority", "5")];
    let preview = send_as(&silo, Method::POST, "/api/silo/portal/preview", Some(&call(&hidden, &grant)), &island).await;
    assert_eq!(preview.status, StatusCode::OK, "{}", preview.text);
    assert!(preview.json()["evaluated"].is_number(), "{}", preview.text);
    let grants: i64 = sqlx::query_scalar("SELECT count(*) FROM grants").fetch_one(&db).await.unwrap();
    assert_eq!(grants, 0, "a preview changes nothing");
    let bad =
        [("payloadId", "*"), ("subjectType", "tenant"), ("subjectId", "ana"), ("access", "deny"), ("priority", "high")];
    let refused = send_as(&silo, Method::POST, "/api/silo/portal/preview", Some(&call(&hidden, &bad)), &island).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(refused.json()["fields"]["priority"].is_string(), "{}", refused.text);

    // A row action: the typed confirmation is a field, checked by the server.
    let page = send_as(&silo, Method::GET, "/users", None, &nav).await;
    let hidden = hidden_fields(&page.text, "row-delete-user-ana");
    let wrong =
        send_as(&silo, Method::POST, "/api/forms/post", Some(&call(&hidden, &[("confirmation", "an")])), &island).await;
    assert!(wrong.status.is_client_error(), "{}", wrong.text);
    let gone =
        send_as(&silo, Method::POST, "/api/forms/post", Some(&call(&hidden, &[("confirmation", "ana")])), &island)
            .await;
    assert_eq!((gone.status, gone.json()), (StatusCode::OK, json!("/users")), "{}", gone.text);
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM tenants WHERE name = 'ana'").fetch_one(&db).await.unwrap();
    assert_eq!(left, 0);

    // The token form is not sent this way: its secret would be lost.
    let tokens = send_as(&silo, Method::GET, "/tokens", None, &nav).await;
    let hidden = hidden_fields(&tokens.text, "token-form");
    let token = [("name", "ci"), ("role", "member"), ("expiresInDays", "30")];
    let refused = send_as(&silo, Method::POST, "/api/forms/post", Some(&call(&hidden, &token)), &island).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert_eq!(refused.json()["code"], "FORM_NOT_HERE");
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM access_tokens").fetch_one(&db).await.unwrap();
    assert_eq!(stored, 0, "no token was created");

    // A silo's form sent to the fleet's form function is not one of its forms.
    let fleet_db = support::fleet_db(&pool).await;
    let fleet = support::fleet_signed_in(fleet_db.clone());
    let op = form_headers(&support::session_cookie(&fleet_db, "op", true, false).await, "same-origin");
    let page = send_as(&silo, Method::GET, "/users", None, &nav).await;
    let hidden = hidden_fields(&page.text, "new-user");
    let elsewhere =
        send_as(&fleet, Method::POST, "/api/forms/post", Some(&call(&hidden, &typed("eve"))), &json_headers(&op)).await;
    assert_eq!(elsewhere.status, StatusCode::BAD_REQUEST, "{}", elsewhere.text);
    assert_eq!(elsewhere.json()["code"], "FORM_NOT_HERE");
    // Nobody signed in: refused by the function the form names, nothing created.
    let anonymous = json_headers(&form_headers("", "same-origin"));
    let nobody = send_as(&silo, Method::POST, "/api/forms/post", Some(&call(&hidden, &typed("eve"))), &anonymous).await;
    assert_eq!(nobody.status, StatusCode::UNAUTHORIZED, "{}", nobody.text);
    // And a cross-site call is refused before any of it runs.
    let cross = json_headers(&form_headers(&cookie, "cross-site"));
    let forged = send_as(&silo, Method::POST, "/api/forms/post", Some(&call(&hidden, &typed("eve"))), &cross).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.text);
    let eve: i64 = sqlx::query_scalar("SELECT count(*) FROM tenants WHERE name = 'eve'").fetch_one(&db).await.unwrap();
    assert_eq!(eve, 0);
}
