//! Conformance of the fake Zitadel: each behaviour the fleet relies on, asserted with raw HTTP
//! against the shapes in Zitadel's API reference (error bodies `{code, message, details}`;
//! OAuth errors `{error, error_description}`).

use chrono::{TimeDelta, Utc};
use opencrane_zitadel::{ServiceAccountKey, Signer, client::API_SCOPE, fake::FakeZitadel};
use serde_json::{Value, json};

async fn exchange(fake: &FakeZitadel, key: &ServiceAccountKey, aud: &str, scope: &str) -> (u16, Value) {
    let assertion = Signer::new(key).unwrap().assertion(aud, Utc::now()).unwrap();
    let response = reqwest::Client::new()
        .post(format!("{}/oauth/v2/token", fake.url()))
        .form(&[
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", &assertion),
            ("scope", scope),
        ])
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

async fn call(
    fake: &FakeZitadel,
    token: &str,
    method: reqwest::Method,
    path: &str,
    org: Option<&str>,
    body: Value,
) -> (u16, Value) {
    let mut request =
        reqwest::Client::new().request(method, format!("{}{path}", fake.url())).bearer_auth(token).json(&body);
    if let Some(org) = org {
        request = request.header("x-zitadel-orgid", org);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_exchange_checks_the_registered_key_audience_and_expiry() {
    let fake = FakeZitadel::start().await.unwrap();
    let key = fake.service_account(true, None);
    let (status, body) = exchange(&fake, &key, fake.url(), API_SCOPE).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["access_token"].is_string() && body["expires_in"] == 3600);

    let (status, body) = exchange(&fake, &key, "https://elsewhere.example", API_SCOPE).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "wrong audience");

    let unknown = ServiceAccountKey { key_id: "999".into(), ..key.clone() };
    let (status, body) = exchange(&fake, &unknown, fake.url(), API_SCOPE).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "unknown kid");

    // Signed with another pool key under this kid: the signature does not verify.
    let other = fake.add_key(&key.user_id, None);
    let forged = ServiceAccountKey { key: other.key, ..key.clone() };
    let (status, body) = exchange(&fake, &forged, fake.url(), API_SCOPE).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "bad signature");

    let lapsed = fake.add_key(&key.user_id, Some(Utc::now() - TimeDelta::minutes(1)));
    let lapsed = ServiceAccountKey { expiration_date: None, ..lapsed };
    let (status, body) = exchange(&fake, &lapsed, fake.url(), API_SCOPE).await;
    assert_eq!((status, body["error_description"].as_str()), (400, Some("Errors.AuthNKey.Expired")));
}

#[tokio::test]
async fn apis_need_the_zitadel_audience_and_admin_needs_iam_owner() {
    let fake = FakeZitadel::start().await.unwrap();
    let (_, body) = exchange(&fake, &fake.service_account(true, None), fake.url(), "openid").await;
    let no_aud = body["access_token"].as_str().unwrap().to_owned();
    let (status, _) = call(&fake, &no_aud, reqwest::Method::GET, "/admin/v1/instances/me", None, json!({})).await;
    assert_eq!(status, 401);
    let (status, body) = call(&fake, "nonsense", reqwest::Method::GET, "/admin/v1/instances/me", None, json!({})).await;
    assert_eq!((status, body["code"].as_i64()), (401, Some(16)));

    let (_, body) = exchange(&fake, &fake.service_account(false, None), fake.url(), API_SCOPE).await;
    let plain = body["access_token"].as_str().unwrap().to_owned();
    let (status, body) = call(&fake, &plain, reqwest::Method::GET, "/admin/v1/instances/me", None, json!({})).await;
    assert_eq!((status, body["code"].as_i64()), (403, Some(7)));
}

#[tokio::test]
async fn org_scoping_duplicates_no_change_updates_and_faults() {
    let fake = FakeZitadel::start().await.unwrap();
    let (_, body) = exchange(&fake, &fake.service_account(true, None), fake.url(), API_SCOPE).await;
    let token = body["access_token"].as_str().unwrap().to_owned();
    let post = reqwest::Method::POST;
    let (_, body) = call(&fake, &token, post.clone(), "/v2/organizations", None, json!({"name": "Acme"})).await;
    let acme = body["organizationId"].as_str().unwrap().to_owned();
    let (status, body) = call(&fake, &token, post.clone(), "/v2/organizations", None, json!({"name": "Acme"})).await;
    assert_eq!((status, body["code"].as_i64()), (409, Some(6)), "ALREADY_EXISTS");
    let (_, body) = call(&fake, &token, post.clone(), "/v2/organizations", None, json!({"name": "Globex"})).await;
    let globex = body["organizationId"].as_str().unwrap().to_owned();

    let (_, body) =
        call(&fake, &token, post.clone(), "/management/v1/projects", Some(&acme), json!({"name": "opencrane"})).await;
    let project = body["id"].as_str().unwrap().to_owned();
    let path = format!("/management/v1/projects/{project}");
    let (status, body) = call(&fake, &token, reqwest::Method::GET, &path, Some(&globex), json!({})).await;
    assert_eq!((status, body["code"].as_i64()), (404, Some(5)), "another org's id is a 404, like a missing one");
    let (status, _) = call(&fake, &token, reqwest::Method::GET, "/management/v1/orgs/me", Some("123"), json!({})).await;
    assert_eq!(status, 404);

    let app =
        json!({"name": "login", "redirectUris": ["https://a/cb"], "authMethodType": "OIDC_AUTH_METHOD_TYPE_NONE"});
    let (_, body) = call(&fake, &token, post.clone(), &format!("{path}/apps/oidc"), Some(&acme), app.clone()).await;
    assert!(body["clientId"].as_str().is_some_and(|c| c.ends_with("@opencrane")));
    let app_id = body["appId"].as_str().unwrap().to_owned();
    let (status, _) = call(&fake, &token, post.clone(), &format!("{path}/apps/oidc"), Some(&acme), app).await;
    assert_eq!(status, 409);
    let same = json!({"redirectUris": ["https://a/cb"], "authMethodType": "OIDC_AUTH_METHOD_TYPE_NONE"});
    let (status, body) =
        call(&fake, &token, reqwest::Method::PUT, &format!("{path}/apps/{app_id}/oidc_config"), Some(&acme), same)
            .await;
    assert_eq!((status, body["message"].as_str()), (400, Some("No changes (COMMAND-1m88i)")));

    let writes = fake.writes();
    fake.fail("POST", "/management/v1/projects", 500, 1);
    let (status, _) =
        call(&fake, &token, post.clone(), "/management/v1/projects", Some(&acme), json!({"name": "x"})).await;
    assert_eq!(status, 500);
    assert_eq!(fake.writes(), writes, "an injected fault changes nothing");
    assert!(fake.projects(&acme).iter().all(|p| p.name != "x"));
    let (status, _) = call(&fake, &token, post, "/management/v1/projects", Some(&acme), json!({"name": "x"})).await;
    assert_eq!((status, fake.writes()), (200, writes + 1), "the fault was used up; a create counts as one write");

    let (status, _) =
        call(&fake, &token, reqwest::Method::DELETE, &format!("/admin/v1/orgs/{acme}"), None, json!({})).await;
    assert_eq!(status, 200);
    assert!(
        fake.org(&acme).is_none() && fake.projects(&acme).is_empty() && fake.apps(&acme).is_empty(),
        "deletion cascades"
    );
    let (status, _) =
        call(&fake, &token, reqwest::Method::DELETE, &format!("/admin/v1/orgs/{acme}"), None, json!({})).await;
    assert_eq!(status, 404);
}
