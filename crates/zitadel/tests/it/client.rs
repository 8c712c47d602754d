//! Every call of the client against the fake Zitadel: token caching and expiry, 401 refresh,
//! 404/409/5xx handling, retries only for idempotent calls, timeouts, and errors that name the
//! call and never carry key material.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use opencrane_zitadel::{Client, Error, GrantChange, KeyError, LoginApp, Timeouts, fake::FakeZitadel};

fn quick() -> Timeouts {
    Timeouts {
        request: Duration::from_secs(5),
        connect: Duration::from_secs(2),
        attempts: 3,
        backoff: Duration::from_millis(10),
    }
}

async fn rig() -> (FakeZitadel, Client) {
    let fake = FakeZitadel::start().await.unwrap();
    let key = fake.service_account(true, Some(Utc::now() + TimeDelta::days(90)));
    let client = Client::new(fake.url(), &key, quick()).unwrap();
    (fake, client)
}

fn app(uris: &[&str]) -> LoginApp {
    LoginApp {
        redirect_uris: uris.iter().map(|u| (*u).to_owned()).collect(),
        post_logout_redirect_uris: vec!["https://acme.example.com/".into()],
    }
}

#[tokio::test]
async fn a_token_is_exchanged_once_and_reused_until_shortly_before_it_expires() {
    let (fake, client) = rig().await;
    for _ in 0..3 {
        client.instance().await.unwrap();
    }
    assert_eq!(fake.exchanges(), 1, "one exchange for three calls");
    assert!(client.last_exchange().is_some_and(|e| e.ok));
    assert!(client.last_successful_exchange().is_some());

    // A token that lives one second is not reused.
    let fake = FakeZitadel::start().await.unwrap();
    fake.set_token_lifetime(1);
    let client = Client::new(fake.url(), &fake.service_account(true, None), quick()).unwrap();
    client.instance().await.unwrap();
    client.instance().await.unwrap();
    assert_eq!(fake.exchanges(), 2);
}

#[tokio::test]
async fn a_revoked_token_is_replaced_once_without_failing_the_call() {
    let (fake, client) = rig().await;
    client.instance().await.unwrap();
    fake.revoke_tokens();
    client.instance().await.unwrap();
    assert_eq!(fake.exchanges(), 2);
}

#[tokio::test]
async fn an_expired_or_removed_key_fails_with_its_id_and_never_its_material() {
    let fake = FakeZitadel::start().await.unwrap();
    let mut expired = fake.service_account(true, Some(Utc::now() - TimeDelta::days(1)));
    let client = Client::new(fake.url(), &expired, quick()).unwrap();
    let err = client.instance().await.unwrap_err();
    assert!(matches!(err, Error::Key(KeyError::Expired { .. })), "{err}");
    assert_eq!(fake.exchanges(), 0, "an expired key is refused before the exchange");

    // The same key with a lying expiry: Zitadel itself refuses it (invalid_grant).
    expired.expiration_date = None;
    let client = Client::new(fake.url(), &expired, quick()).unwrap();
    let err = client.instance().await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(&err, Error::TokenRefused { error, .. } if error == "invalid_grant"), "{message}");
    assert!(message.contains(&expired.key_id) && !message.contains("PRIVATE") && !message.contains("MII"), "{message}");
    assert!(client.last_exchange().is_some_and(|e| !e.ok && e.detail.is_some_and(|d| d.contains("invalid_grant"))));
}

#[tokio::test]
async fn admin_calls_need_iam_owner() {
    let fake = FakeZitadel::start().await.unwrap();
    let client = Client::new(fake.url(), &fake.service_account(false, None), quick()).unwrap();
    let err = client.instance().await.unwrap_err();
    assert!(matches!(err, Error::Status { status: 403, .. }), "{err}");
    assert!(err.to_string().starts_with("read instance (GET /admin/v1/instances/me): Zitadel answered 403"), "{err}");
}

#[tokio::test]
async fn an_organisation_with_project_roles_login_app_and_grants_round_trips() {
    let (fake, client) = rig().await;
    let org = client.create_organization("Acme").await.unwrap();
    assert_eq!(client.organization(&org).await.unwrap().map(|o| o.name), Some("Acme".into()));
    let dup = client.create_organization("Acme").await.unwrap_err();
    assert!(dup.is_already_exists(), "{dup}");
    client.create_organization("Globex").await.unwrap();
    assert!(client.rename_organization(&org, "Globex").await.unwrap_err().is_already_exists());
    let same = client.rename_organization(&org, "Acme").await.unwrap_err();
    assert!(matches!(same, Error::Status { status: 400, .. }), "no changes: {same}");
    client.rename_organization(&org, "Acme Corp").await.unwrap();
    assert_eq!(client.organization(&org).await.unwrap().map(|o| o.name), Some("Acme Corp".into()));
    client.rename_organization(&org, "Acme").await.unwrap();

    let project = client.create_project(&org, "opencrane").await.unwrap();
    assert_eq!(client.projects_named(&org, "opencrane").await.unwrap().len(), 1);
    assert_eq!(client.project(&org, &project).await.unwrap().map(|p| p.id), Some(project.clone()));
    client
        .add_project_roles(&org, &project, &[("owner", "Owner"), ("admin", "Admin"), ("member", "Member")])
        .await
        .unwrap();
    let roles: Vec<String> = client.project_roles(&org, &project).await.unwrap().into_iter().map(|r| r.key).collect();
    assert_eq!(roles, ["admin", "member", "owner"]);
    assert!(client.add_project_roles(&org, &project, &[("owner", "Owner")]).await.unwrap_err().is_already_exists());

    let created = client
        .create_login_app(&org, &project, "login", &app(&["https://acme.example.com/api/v1/auth/callback"]))
        .await
        .unwrap();
    let listed = client.apps_named(&org, &project, "login").await.unwrap();
    assert_eq!((listed.len(), listed[0].client_id.as_str()), (1, created.client_id.as_str()));
    let both = app(&["https://acme.example.com/api/v1/auth/callback", "https://portal.acme.io/api/v1/auth/callback"]);
    client.update_login_app(&org, &project, &created.app_id, &both).await.unwrap();
    let read = client.app(&org, &project, &created.app_id).await.unwrap().unwrap();
    assert_eq!(read.redirect_uris, both.redirect_uris);
    let stored = &fake.apps(&org)[0].config;
    assert_eq!(stored["authMethodType"], "OIDC_AUTH_METHOD_TYPE_NONE", "a public PKCE client");
    assert_eq!(stored["grantTypes"], serde_json::json!(["OIDC_GRANT_TYPE_AUTHORIZATION_CODE"]));
    let unchanged = client.update_login_app(&org, &project, &created.app_id, &both).await.unwrap_err();
    assert!(
        matches!(unchanged, Error::Status { status: 400, .. }),
        "Zitadel refuses an update without changes: {unchanged}"
    );

    // One grant per user and project: created, then left alone, then its roles replaced.
    let owner = client.user_id();
    let first = client.ensure_user_grant(&org, &owner, &project, &["owner"]).await.unwrap();
    assert!(matches!(first, GrantChange::Created(_)));
    let again = client.ensure_user_grant(&org, &owner, &project, &["owner"]).await.unwrap();
    assert!(matches!(again, GrantChange::Unchanged(_)));
    let writes = fake.writes();
    let changed = client.ensure_user_grant(&org, &owner, &project, &["admin"]).await.unwrap();
    assert!(matches!(changed, GrantChange::Updated(_)));
    assert_eq!(fake.writes(), writes + 1, "a role change is one update, not a second grant");
    assert_eq!(fake.count("POST", &format!("/management/v1/users/{owner}/grants")), 1, "never re-POSTed");
    let grant = fake.grants(&org);
    assert_eq!((grant.len(), grant[0].roles.as_slice()), (1, ["admin".to_owned()].as_slice()));
    let grant_id = grant[0].id.clone();
    client.deactivate_user_grant(&org, &owner, &grant_id).await.unwrap();
    assert!(fake.grants(&org)[0].inactive);
    assert!(matches!(
        client.ensure_user_grant(&org, &owner, &project, &["admin"]).await.unwrap(),
        GrantChange::Updated(_)
    ));
    assert!(!fake.grants(&org)[0].inactive, "ensure reactivates");
    assert!(client.remove_user_grant(&org, &owner, &grant_id).await.unwrap());
    assert!(!client.remove_user_grant(&org, &owner, &grant_id).await.unwrap(), "gone is fine");

    assert!(client.add_org_owner(&org, &owner).await.unwrap());
    assert!(!client.add_org_owner(&org, &owner).await.unwrap(), "a member already");
    let members = client.org_members(&org).await.unwrap();
    assert_eq!((members.len(), members[0].roles.as_slice()), (1, ["ORG_OWNER".to_owned()].as_slice()));
    let human = fake.add_human(&org, "ada@acme.example");
    let users = client.org_users(&org).await.unwrap();
    assert_eq!(users.iter().find(|u| u.user_id == human).and_then(|u| u.email.as_deref()), Some("ada@acme.example"));

    assert!(client.delete_organization(&org).await.unwrap());
    assert!(!client.delete_organization(&org).await.unwrap(), "404 tolerated");
    assert_eq!(client.organization(&org).await.unwrap(), None);
}

#[tokio::test]
async fn org_scoped_calls_see_only_their_organisation() {
    let (_fake, client) = rig().await;
    let acme = client.create_organization("Acme").await.unwrap();
    let globex = client.create_organization("Globex").await.unwrap();
    let project = client.create_project(&acme, "opencrane").await.unwrap();
    assert_eq!(client.project(&globex, &project).await.unwrap(), None, "another org's project is a 404");
    assert!(client.projects_named(&globex, "opencrane").await.unwrap().is_empty());
}

#[tokio::test]
async fn machine_keys_are_minted_listed_and_removed() {
    let (fake, client) = rig().await;
    let user = client.user_id();
    let expires = Utc::now() + TimeDelta::days(30);
    let minted = client.add_machine_key(&user, expires).await.unwrap();
    assert_eq!(minted.user_id, user);
    assert!(minted.key.contains("PRIVATE KEY"));
    let listed = client.machine_keys(&user).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().any(|k| k.id == minted.key_id && k.expiration_date.is_some()));
    // The new key signs in on its own.
    let candidate = client.candidate(&minted).unwrap();
    candidate.instance().await.unwrap();
    let old = client.key_id();
    assert_eq!(client.swap_key(&minted).unwrap(), old);
    assert!(client.remove_machine_key(&user, &old).await.unwrap());
    assert!(!client.remove_machine_key(&user, &old).await.unwrap());
    client.instance().await.unwrap();
    assert_eq!(fake.keys_of(&user), std::slice::from_ref(&minted.key_id));
}

#[tokio::test]
async fn server_errors_are_retried_only_for_idempotent_calls() {
    let (fake, client) = rig().await;
    let org = client.create_organization("Acme").await.unwrap();
    fake.fail("GET", "/management/v1/orgs/me", 503, 2);
    assert!(client.organization(&org).await.unwrap().is_some(), "a read is retried");
    assert_eq!(fake.count("GET", "/management/v1/orgs/me"), 3);

    fake.fail("POST", "/v2/organizations", 503, 1);
    let err = client.create_organization("Globex").await.unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert!(err.to_string().starts_with("create organisation (POST /v2/organizations): Zitadel answered 503"), "{err}");
    assert_eq!(fake.count("POST", "/v2/organizations"), 2, "a create is not retried");
    assert_eq!(fake.orgs().iter().filter(|o| o.name == "Globex").count(), 0);
}

#[tokio::test]
async fn a_token_endpoint_server_error_is_retried_and_then_transient() {
    let fake = FakeZitadel::start().await.unwrap();
    let client = Client::new(fake.url(), &fake.service_account(true, None), quick()).unwrap();
    fake.fail("POST", "/oauth/v2/token", 503, 2);
    client.token().await.unwrap();
    fake.fail("POST", "/oauth/v2/token", 503, 3);
    fake.revoke_tokens();
    let fresh = Client::new(fake.url(), &fake.service_account(true, None), quick()).unwrap();
    let err = fresh.token().await.unwrap_err();
    assert!(err.is_transient() && !matches!(err, Error::TokenRefused { .. }), "{err}");
}

#[tokio::test]
async fn a_stalled_zitadel_is_a_timeout_naming_the_call() {
    let fake = FakeZitadel::start().await.unwrap();
    let timeouts = Timeouts { request: Duration::from_millis(300), attempts: 1, ..quick() };
    let client = Client::new(fake.url(), &fake.service_account(true, None), timeouts).unwrap();
    client.instance().await.unwrap();
    fake.stall("GET", "/admin/v1/instances/me", Duration::from_secs(3), 1);
    let err = client.instance().await.unwrap_err();
    assert!(matches!(err, Error::Unreachable { .. }) && err.to_string().contains("timed out"), "{err}");
    assert!(err.is_transient());
}
