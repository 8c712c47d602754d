//! Scripts written for the original keep working: each contract below is called with the request
//! bodies exactly as the original's clients send them (its CLI `oc`, its generated TypeScript
//! client, its server's own shapes; `../shared/spec/opencrane-reference.md` §2.2), through the
//! real router and a real silo database.

use axum::http::{Method, StatusCode, header};
use serde_json::{Value, json};

use crate::support::{self, Reply, send_as};

/// Checks `body`, the answer of `method path` with `status`, against the schema the router's own
/// OpenAPI document declares for it (its `$ref`s resolved within the document).
fn assert_declared(doc: &Value, method: &str, path: &str, status: u16, body: &Value) {
    let errors = declared_errors(doc, method, path, status, body);
    assert!(errors.is_empty(), "{method} {path} does not answer its declared schema: {errors:?}\n{body}");
}

/// Where `body` differs from the declared schema of `method path` with `status`.
fn declared_errors(doc: &Value, method: &str, path: &str, status: u16, body: &Value) -> Vec<String> {
    let schema = &doc["paths"][format!("/api/v1{path}")][method]["responses"][status.to_string()]["content"]["application/json"]
        ["schema"];
    assert!(schema.is_object(), "{method} {path} {status} declares no schema");
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": doc["components"],
        "allOf": [schema],
    });
    let validator = jsonschema::validator_for(&root).expect("the declared schema compiles");
    validator.iter_errors(body).map(|e| format!("{e} at {}", e.instance_path())).collect()
}

/// An owner's signed-in call on the silo `acme`.
struct Owner {
    app: axum::Router,
    headers: Vec<(&'static str, String)>,
}

impl Owner {
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        let mut headers = self.headers.clone();
        if body.is_some() {
            headers.push(("content-type", "application/json".to_owned()));
        }
        send_as(&self.app, method, path, body.map(|b| b.to_string()).as_deref(), &headers).await
    }
}

#[sqlx::test(migrations = false)]
async fn the_originals_silo_calls_work(pool: sqlx::PgPool) {
    let (db, app, headers) = support::silo_with_otto_and_mia(&pool).await;
    let owner = Owner { app, headers };

    // PUT /tenants/{name} with a partial body: only `team` changes; null clears; the user's own
    // limit stays unless it is named.
    let ana = json!({ "name": "ana", "displayName": "Ana Lima", "email": "ana@acme.test", "subject": "s-ana",
                      "team": "eng", "policyRef": null, "monthlyBudgetUsd": 25 });
    assert_eq!(owner.call(Method::POST, "/api/v1/tenants", Some(ana)).await.status, StatusCode::CREATED);
    let changed = owner.call(Method::PUT, "/api/v1/tenants/ana", Some(json!({ "team": "ops" }))).await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.text);
    let user = changed.json();
    assert_eq!((user["team"].clone(), user["displayName"].clone()), (json!("ops"), json!("Ana Lima")));
    assert_eq!(user["email"], "ana@acme.test", "what was not sent is kept");
    assert_eq!(user["ownLimit"], "25.00 USD per month", "the limit is kept");
    let cleared = owner.call(Method::PUT, "/api/v1/tenants/ana", Some(json!({ "team": null }))).await.json();
    assert_eq!(cleared["team"], Value::Null, "null clears");
    let no_limit = owner.call(Method::PUT, "/api/v1/tenants/ana", Some(json!({ "monthlyBudgetUsd": null }))).await;
    assert_eq!(no_limit.json()["ownLimit"], Value::Null, "null removes the user's own limit: {}", no_limit.text);
    let bad = owner.call(Method::PUT, "/api/v1/tenants/ana", Some(json!({ "email": "not-an-address" }))).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.json()["fields"]["email"].is_string(), "the merged body is checked like a whole one: {}", bad.text);
    let wrong_type = owner.call(Method::PUT, "/api/v1/tenants/ana", Some(json!({ "team": 7 }))).await;
    assert!(wrong_type.json()["fields"]["team"].is_string(), "{}", wrong_type.text);
    let missing = owner.call(Method::PUT, "/api/v1/tenants/nobody", Some(json!({ "team": "x" }))).await;
    assert_eq!(missing.json()["code"], "TENANT_NOT_FOUND");

    // PUT /policies/{name} with only a description keeps its domains.
    let policy = json!({ "name": "web", "description": "first", "allowedDomains": ["*.example.com"] });
    assert_eq!(owner.call(Method::POST, "/api/v1/policies", Some(policy)).await.status, StatusCode::CREATED);
    let described =
        owner.call(Method::PUT, "/api/v1/policies/web", Some(json!({ "description": "second" }))).await.json();
    assert_eq!(described["description"], "second");
    assert_eq!(described["allowedDomains"], json!(["*.example.com"]), "the domains are kept");
    let aliased = owner.call(Method::PUT, "/api/v1/policies/web", Some(json!({ "domains": ["a.test"] }))).await;
    assert_eq!(aliased.json()["allowedDomains"], json!(["a.test"]), "the alias replaces: {}", aliased.text);
    // The policies' drift and repair (the original's routes): what the last Kubernetes pass found
    // edited on the AccessPolicy resource behind the portal's back.
    let none = owner.call(Method::GET, "/api/v1/policies/drift", None).await.json();
    assert_eq!((none["count"].clone(), none["drift"].clone()), (json!(0), json!([])), "{none}");
    sqlx::query("UPDATE access_policies SET resource_drift = 'domains was changed on the resource' WHERE name = 'web'")
        .execute(&db)
        .await
        .unwrap();
    let drift = owner.call(Method::GET, "/api/v1/policies/drift", None).await.json();
    assert_eq!(drift["drift"], json!([{ "policy": "web", "resource": "domains was changed on the resource" }]));
    let shown = owner.call(Method::GET, "/api/v1/policies/web", None).await.json();
    assert_eq!(shown["resourceDrift"], "domains was changed on the resource", "{shown}");
    let dry = owner.call(Method::POST, "/api/v1/policies/repair?dryRun=true", None).await;
    assert_eq!((dry.status, dry.json()["drift"][0]["policy"].clone()), (StatusCode::OK, json!("web")));
    let repair = owner.call(Method::POST, "/api/v1/policies/repair", None).await;
    assert_eq!((repair.status, repair.json()["requested"].clone()), (StatusCode::ACCEPTED, json!(true)));
    let bad = owner.call(Method::POST, "/api/v1/policies/repair?dryRun=yes", None).await;
    assert!(bad.json()["fields"]["dryRun"].is_string(), "{}", bad.text);
    let audited = owner.call(Method::GET, "/api/v1/audit?action=policy.repair", None).await.json();
    assert_eq!(audited["data"][0]["actor"], "otto", "the repair is audited");

    // The budget as the CLI sends it ({monthlyLimitUsd}) and as the server does ({currency, ceilingAmount}).
    let put = owner.call(Method::PUT, "/api/v1/ai-budget/global", Some(json!({ "monthlyLimitUsd": 100 }))).await;
    assert_eq!(put.status, StatusCode::NO_CONTENT, "{}", put.text);
    let global = owner.call(Method::GET, "/api/v1/ai-budget/global", None).await.json();
    assert_eq!((global["currency"].clone(), global["ceilingAmount"].clone()), (json!("USD"), json!("100.00")));
    let account = json!({ "currency": "USD", "ceilingAmount": 12.5 });
    let put = owner.call(Method::PUT, "/api/v1/ai-budget/accounts/ana", Some(account)).await;
    assert_eq!(put.status, StatusCode::NO_CONTENT, "{}", put.text);
    let put = owner.call(Method::PUT, "/api/v1/ai-budget/accounts/ana", Some(json!({ "monthlyLimitUsd": 20 }))).await;
    assert_eq!(put.status, StatusCode::NO_CONTENT, "{}", put.text);
    let accounts = owner.call(Method::GET, "/api/v1/ai-budget/accounts", None).await.json();
    assert_eq!(accounts[0]["ceilingAmount"], "20.00", "{accounts}");
    let both = json!({ "ceilingAmount": 1, "monthlyLimitUsd": 1 });
    let both = owner.call(Method::PUT, "/api/v1/ai-budget/global", Some(both)).await;
    assert!(both.json()["fields"]["monthlyLimitUsd"].is_string(), "{}", both.text);
    // A silo that budgets in euros refuses a USD amount, and says what to send.
    let eur = json!({ "timeZone": "Europe/Berlin", "currency": "EUR", "defaultModelAccess": "allow" });
    assert_eq!(owner.call(Method::PUT, "/api/v1/ai-budget/settings", Some(eur)).await.status, StatusCode::OK);
    let usd = owner.call(Method::PUT, "/api/v1/ai-budget/global", Some(json!({ "monthlyLimitUsd": 100 }))).await;
    assert_eq!(
        (usd.status, usd.json()["code"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("CURRENCY_MISMATCH"))
    );
    assert!(usd.json()["error"].as_str().unwrap_or_default().contains("EUR"), "{}", usd.text);

    // Models with the original's field names, isDefault included; GET and PUT one.
    // (The router here has no credentials key, so the credential is stored as a sealed row.)
    let secrets = opencrane_portal::seal::SecretBox::from_bytes(&[7; 32]).unwrap();
    let sealed = secrets.seal(b"sk-compat-123456", "credential:openai").unwrap();
    let credential_id = opencrane_silo_db::models::insert_credential(
        &db,
        "openai",
        "openai",
        None,
        &opencrane_silo_db::models::KeySource::Sealed(&sealed, "…3456"),
    )
    .await
    .unwrap()
    .to_string();
    let one = owner.call(Method::GET, &format!("/api/v1/providers/credentials/{credential_id}"), None).await;
    assert_eq!((one.status, one.json()["name"].clone()), (StatusCode::OK, json!("openai")));
    assert!(!one.text.contains("sk-compat-123456"), "never the secret");
    // The original's credential body {provider, secretRef}: named after the provider, the key left
    // in the operator's Secret (this router runs outside Kubernetes: the first pass would say so).
    let referenced = owner
        .call(
            Method::POST,
            "/api/v1/providers/credentials",
            Some(json!({ "provider": "anthropic", "secretRef": "llm-keys/anthropic" })),
        )
        .await;
    assert_eq!(referenced.status, StatusCode::CREATED, "{}", referenced.text);
    let referenced = referenced.json();
    assert_eq!(
        (referenced["name"].clone(), referenced["secretRef"].clone()),
        (json!("anthropic"), json!("llm-keys/anthropic"))
    );
    assert_eq!(
        (referenced["hint"].clone(), referenced["secretStatus"].clone()),
        (json!(""), json!(null)),
        "{referenced}"
    );
    let stored: Option<Vec<u8>> =
        sqlx::query_scalar("SELECT ciphertext FROM provider_credentials WHERE name = 'anthropic'")
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(stored, None, "nothing sealed: the key stays in the Secret");
    for (body, field) in [
        (json!({ "provider": "mistral", "secretRef": "Not A Name" }), "secretRef"),
        (json!({ "provider": "mistral", "secretRef": "keys", "apiKey": "sk-both-12345678" }), "secretRef"),
        (json!({ "provider": "mistral" }), "apiKey"),
    ] {
        let refused = owner.call(Method::POST, "/api/v1/providers/credentials", Some(body.clone())).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{body}: {}", refused.text);
        assert!(refused.json()["fields"][field].is_string(), "{body}: {}", refused.text);
    }
    // What the pass found is on the credential (GET one) and on /models.
    sqlx::query("UPDATE provider_credentials SET secret_status = 'Secret “llm-keys” does not exist in namespace “opencrane-acme”.' WHERE name = 'anthropic'")
        .execute(&db)
        .await
        .unwrap();
    let path = format!("/api/v1/providers/credentials/{}", referenced["id"].as_str().unwrap());
    let shown = owner.call(Method::GET, &path, None).await.json();
    assert!(shown["secretStatus"].as_str().unwrap().contains("does not exist"), "{shown}");
    let page = owner.call(Method::GET, "/models", None).await;
    assert!(
        page.text.contains("Secret llm-keys/anthropic") && page.text.contains("does not exist in namespace"),
        "{}",
        page.text
    );
    let model = json!({ "publicModelName": "fast", "upstreamModel": "openai/gpt-4o-mini",
                        "apiBase": "https://api.openai.com/v1", "providerCredentialId": credential_id, "isDefault": true });
    let made = owner.call(Method::POST, "/api/v1/models", Some(model)).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text);
    assert_eq!(
        (made.json()["publicName"].clone(), made.json()["credential"].clone()),
        (json!("fast"), json!("openai"))
    );
    let routing = owner.call(Method::GET, "/api/v1/model-routing/defaults", None).await.json();
    assert_eq!(routing["defaults"][0]["model"], "fast", "isDefault made it the silo's default: {routing}");
    let id = made.json()["id"].as_str().unwrap_or_default().to_owned();
    let got = owner.call(Method::GET, &format!("/api/v1/models/{id}"), None).await;
    assert_eq!(got.json()["upstreamModel"], "openai/gpt-4o-mini");
    let weighted = owner.call(Method::PUT, &format!("/api/v1/models/{id}"), Some(json!({ "weight": 3 }))).await;
    assert_eq!((weighted.json()["weight"].clone(), weighted.json()["publicName"].clone()), (json!(3), json!("fast")));
    let unknown = owner.call(Method::GET, "/api/v1/models/00000000-0000-0000-0000-000000000000", None).await;
    assert_eq!(unknown.json()["code"], "MODEL_NOT_FOUND");

    // Routing defaults with the original's scopes: global and clusterTenant both mean this silo.
    for scope in ["global", "clusterTenant"] {
        let body = json!({ "scope": scope, "defaultModel": "fast" });
        let set = owner.call(Method::PUT, "/api/v1/model-routing/defaults", Some(body)).await;
        assert_eq!(set.status, StatusCode::OK, "{scope}: {}", set.text);
        assert_eq!(set.json()["scope"], "silo", "{scope}");
    }

    // The compiled view under the original's name.
    let contract = owner.call(Method::GET, "/api/v1/tenants/ana/effective-contract", None).await;
    let access = owner.call(Method::GET, "/api/v1/tenants/ana/effective-access", None).await;
    assert_eq!(contract.status, StatusCode::OK);
    assert_eq!(contract.json()["user"], access.json()["user"]);

    // Access tokens: the original's body (owner is ignored: a token acts for its creator).
    let in_two_days = (chrono::Utc::now() + chrono::Duration::hours(47)).to_rfc3339();
    let body = json!({ "name": "ci", "owner": "someone-else", "expiresAt": in_two_days });
    let token = owner.call(Method::POST, "/api/v1/access-tokens", Some(body)).await;
    assert_eq!(token.status, StatusCode::CREATED, "{}", token.text);
    assert_eq!(token.headers[header::CACHE_CONTROL], "no-store");
    let secret = token.json()["plainTextToken"].as_str().unwrap_or_default().to_owned();
    assert!(secret.starts_with("ocp_") && secret.len() == 52, "{secret}");
    assert_eq!(token.json()["token"]["ownerSubject"], "otto", "not the body's owner");
    let listed = owner.call(Method::GET, "/api/v1/access-tokens", None).await;
    assert!(listed.text.contains("\"ci\"") && !listed.text.contains(&secret), "metadata only");
    let defaulted = owner.call(Method::POST, "/api/v1/access-tokens", Some(json!({}))).await;
    assert_eq!(defaulted.json()["token"]["name"], "default", "{}", defaulted.text);
    let past = json!({ "expiresAt": "2020-01-01T00:00:00Z" });
    let past = owner.call(Method::POST, "/api/v1/access-tokens", Some(past)).await;
    assert!(past.json()["fields"]["expiresAt"].is_string(), "{}", past.text);
    let token_id = token.json()["id"].as_str().unwrap_or_default().to_owned();
    let revoked = owner.call(Method::DELETE, &format!("/api/v1/access-tokens/{token_id}"), None).await;
    assert_eq!(revoked.status, StatusCode::NO_CONTENT);
    let gone = owner.call(Method::DELETE, "/api/v1/access-tokens/00000000-0000-0000-0000-000000000000", None).await;
    assert_eq!((gone.status, gone.json()["code"].clone()), (StatusCode::NOT_FOUND, json!("TOKEN_NOT_FOUND")));

    // The audit log: the original's envelope, a cursor that pages, and Link rel=next.
    let first = owner.call(Method::GET, "/api/v1/audit?limit=2", None).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    let page = first.json();
    assert_eq!(page["data"].as_array().map(Vec::len), Some(2));
    assert_eq!((page["pagination"]["limit"].clone(), page["pagination"]["hasMore"].clone()), (json!(2), json!(true)));
    let cursor = page["pagination"]["nextCursor"].as_str().unwrap_or_default().to_owned();
    let link = first.headers[header::LINK].to_str().unwrap_or_default().to_owned();
    assert!(link.contains(&format!("cursor={cursor}")) && link.ends_with("rel=\"next\""), "{link}");
    let second = owner.call(Method::GET, &format!("/api/v1/audit?limit=2&cursor={cursor}"), None).await.json();
    assert!(second["data"][0]["id"].as_i64() < page["data"][1]["id"].as_i64(), "older entries next");
    let revoke_entry =
        owner.call(Method::GET, "/api/v1/audit?action=access_token.revoke", None).await.json()["data"][0].clone();
    assert_eq!((revoke_entry["resource"].clone(), revoke_entry["actor"].clone()), (json!("ci"), json!("otto")));
    assert!(revoke_entry["timestamp"].is_string() && revoke_entry["message"].is_string());
    let tenant_entry =
        owner.call(Method::GET, "/api/v1/audit?action=tenant.update", None).await.json()["data"][0].clone();
    assert_eq!(tenant_entry["tenant"], "ana", "a user's entries name the tenant");
    for bad in ["limit=0", "limit=1001", "cursor=abc"] {
        let refused = owner.call(Method::GET, &format!("/api/v1/audit?{bad}"), None).await;
        let field = bad.split('=').next().unwrap_or_default();
        assert!(refused.json()["fields"][field].is_string(), "{bad}: {}", refused.text);
    }

    // Spend, the key and drift of a user under the original's routes.
    for path in ["/api/v1/ai-budget/ana/spend", "/api/v1/spend/ana"] {
        let spend = owner.call(Method::GET, path, None).await;
        assert_eq!(spend.status, StatusCode::OK, "{path}: {}", spend.text);
        let spend = spend.json();
        assert_eq!((spend["tenant"].clone(), spend["spend"].clone()), (json!("ana"), json!("0.00")), "{spend}");
        assert_eq!((spend["currency"].clone(), spend["period"].clone()), (json!("EUR"), json!("month")));
    }
    // Token usage (the original's /token-usage), from the ledger the LiteLLM pass fills.
    sqlx::query(
        "INSERT INTO spend_events (request_id, tenant, model, amount, occurred_at, input_tokens, output_tokens)
         VALUES ('t-1', 'ana', 'fast', 1.25, now(), 1000, 250), ('t-2', 'ana', 'fast', 0.75, now(), 600, 150)",
    )
    .execute(&db)
    .await
    .unwrap();
    let usage = owner.call(Method::GET, "/api/v1/token-usage", None).await;
    assert_eq!(usage.status, StatusCode::OK, "{}", usage.text);
    let ana = &usage.json()[0];
    assert_eq!(
        (ana["userId"].clone(), ana["inputTokens"].clone(), ana["outputTokens"].clone(), ana["totalTokens"].clone()),
        (json!("ana"), json!(1600), json!(400), json!(2000)),
        "{ana}"
    );
    assert_eq!((ana["totalCost"].clone(), ana["currency"].clone()), (json!("2.00"), json!("EUR")), "{ana}");
    let day = owner.call(Method::GET, "/api/v1/token-usage?period=day", None).await.json();
    assert_eq!(day[0]["period"], "day");
    let bad = owner.call(Method::GET, "/api/v1/token-usage?period=year", None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.text);
    sqlx::query("DELETE FROM spend_events WHERE request_id IN ('t-1', 't-2')").execute(&db).await.unwrap();
    let nobody = owner.call(Method::GET, "/api/v1/spend/nobody", None).await;
    assert_eq!(nobody.json()["code"], "TENANT_NOT_FOUND");
    let no_key = owner.call(Method::GET, "/api/v1/ai-budget/ana/litellm-key", None).await;
    assert_eq!((no_key.status, no_key.json()["code"].clone()), (StatusCode::NOT_FOUND, json!("LITELLM_KEY_NOT_FOUND")));
    let no_key = owner.call(Method::POST, "/api/v1/ai-budget/ana/litellm-key/revoke", None).await;
    assert_eq!((no_key.status, no_key.json()["code"].clone()), (StatusCode::NOT_FOUND, json!("LITELLM_KEY_NOT_FOUND")));
    let drift = owner.call(Method::GET, "/api/v1/tenants/drift", None).await.json();
    assert_eq!((drift["count"].clone(), drift["drift"].clone()), (json!(0), json!([])), "all agree: {drift}");
    // Once a pass made ana's key and found LiteLLM's copy changed behind its back:
    sqlx::query(
        "INSERT INTO litellm_keys (tenant, key_alias, token_id, nonce, ciphertext, applied, drift)
         VALUES ('ana', 'acme-ana', 'tok-1', '\\x00', '\\x00', $1, 'models were [\"smart\"]')",
    )
    .bind(json!({ "blocked": false, "models": ["fast"], "maxBudget": 20_000_000 }))
    .execute(&db)
    .await
    .unwrap();
    let key = owner.call(Method::GET, "/api/v1/ai-budget/ana/litellm-key", None).await;
    assert_eq!(key.status, StatusCode::OK, "{}", key.text);
    let key = key.json();
    assert_eq!((key["models"].clone(), key["maxBudget"].clone()), (json!(["fast"]), json!("20.00")), "{key}");
    assert!(key.get("ciphertext").is_none() && key.get("tokenId").is_none(), "never the key: {key}");
    let drift = owner.call(Method::GET, "/api/v1/tenants/drift", None).await.json();
    assert_eq!(drift["drift"], json!([{ "tenant": "ana", "resource": null, "key": "models were [\"smart\"]" }]));
    // Revoking the key (the original's route): asked of the reconciler, audited, shown.
    let revoked = owner.call(Method::POST, "/api/v1/ai-budget/ana/litellm-key/revoke", None).await;
    assert_eq!(revoked.status, StatusCode::ACCEPTED, "{}", revoked.text);
    assert!(revoked.json()["revokeRequestedAt"].is_string(), "{}", revoked.text);
    let shown = owner.call(Method::GET, "/api/v1/ai-budget/ana/litellm-key", None).await.json();
    assert_eq!(shown["revokeRequestedAt"], revoked.json()["revokeRequestedAt"], "{shown}");
    let audited = owner.call(Method::GET, "/api/v1/audit?action=litellm_key.revoke", None).await.json();
    assert_eq!(
        (audited["data"][0]["actor"].clone(), audited["data"][0]["resource"].clone()),
        (json!("otto"), json!("ana"))
    );
    let refused = owner.call(Method::POST, "/api/v1/ai-budget/nobody/litellm-key/revoke", None).await;
    assert_eq!((refused.status, refused.json()["code"].clone()), (StatusCode::NOT_FOUND, json!("TENANT_NOT_FOUND")));
    let dry = owner.call(Method::POST, "/api/v1/tenants/repair?dryRun=true", None).await;
    assert_eq!((dry.status, dry.json()["requested"].clone()), (StatusCode::OK, json!(false)));
    let repair = owner.call(Method::POST, "/api/v1/tenants/repair", None).await;
    assert_eq!((repair.status, repair.json()["requested"].clone()), (StatusCode::ACCEPTED, json!(true)));
    let bad = owner.call(Method::POST, "/api/v1/tenants/repair?dryRun=maybe", None).await;
    assert!(bad.json()["fields"]["dryRun"].is_string());
    let repaired = owner.call(Method::GET, "/api/v1/audit?action=tenant.repair", None).await.json();
    assert_eq!(repaired["data"][0]["actor"], "otto", "the repair is audited");

    // Every list pages the same way: limit and offset, X-Total-Count, Link rel=next.
    for name in ["bo", "cy"] {
        let user = json!({ "name": name, "displayName": name, "email": format!("{name}@acme.test"), "subject": format!("s-{name}") });
        assert_eq!(owner.call(Method::POST, "/api/v1/tenants", Some(user)).await.status, StatusCode::CREATED);
    }
    let first = owner.call(Method::GET, "/api/v1/tenants?limit=2", None).await;
    assert_eq!(first.json().as_array().map(Vec::len), Some(2));
    assert_eq!(first.headers["x-total-count"], "3");
    assert_eq!(first.headers[header::LINK], "</api/v1/tenants?limit=2&offset=2>; rel=\"next\"");
    let last = owner.call(Method::GET, "/api/v1/tenants?limit=2&offset=2", None).await;
    assert_eq!(last.json().as_array().map(Vec::len), Some(1));
    assert!(last.headers.get(header::LINK).is_none(), "nothing follows");
    for list in ["/api/v1/policies", "/api/v1/models", "/api/v1/access-tokens", "/api/v1/groups", "/api/v1/grants"] {
        let all = owner.call(Method::GET, list, None).await;
        assert!(all.headers.contains_key("x-total-count"), "{list}");
        let bad = owner.call(Method::GET, &format!("{list}?limit=0"), None).await;
        assert!(bad.json()["fields"]["limit"].is_string(), "{list}: {}", bad.text);
    }
    let one_token = owner.call(Method::GET, "/api/v1/access-tokens?limit=1", None).await;
    assert!(one_token.headers[header::LINK].to_str().unwrap_or_default().contains("offset=1"), "two tokens, one shown");

    // A sample of answers matches the schemas the document declares for them (generated from the
    // wire types).
    let doc = owner.call(Method::GET, "/api/v1/openapi.json", None).await.json();
    let samples = [
        ("get", "/tenants", "/api/v1/tenants", 200),
        ("get", "/tenants/{name}", "/api/v1/tenants/ana", 200),
        ("get", "/tenants/{name}/effective-access", "/api/v1/tenants/ana/effective-access", 200),
        ("get", "/policies", "/api/v1/policies", 200),
        ("get", "/policies/{name}", "/api/v1/policies/web", 200),
        ("get", "/groups", "/api/v1/groups", 200),
        ("get", "/grants", "/api/v1/grants", 200),
        ("get", "/ai-budget", "/api/v1/ai-budget", 200),
        ("get", "/ai-budget/global", "/api/v1/ai-budget/global", 200),
        ("get", "/ai-budget/accounts", "/api/v1/ai-budget/accounts", 200),
        ("get", "/models", "/api/v1/models", 200),
        ("get", "/models/{id}", &format!("/api/v1/models/{id}"), 200),
        ("get", "/model-routing/defaults", "/api/v1/model-routing/defaults", 200),
        ("get", "/providers/credentials", "/api/v1/providers/credentials", 200),
        ("get", "/access-tokens", "/api/v1/access-tokens", 200),
        ("get", "/tenants/drift", "/api/v1/tenants/drift", 200),
        ("get", "/policies/drift", "/api/v1/policies/drift", 200),
        ("get", "/spend/{name}", "/api/v1/spend/ana", 200),
        ("get", "/token-usage", "/api/v1/token-usage", 200),
        ("get", "/ai-budget/{name}/litellm-key", "/api/v1/ai-budget/ana/litellm-key", 200),
        ("get", "/audit", "/api/v1/audit", 200),
        ("get", "/auth/me", "/api/v1/auth/me", 200),
    ];
    for (method, documented, path, status) in samples {
        let answer = owner.call(Method::GET, path, None).await;
        assert_eq!(answer.status.as_u16(), status, "{path}: {}", answer.text);
        assert_declared(&doc, method, documented, status, &answer.json());
    }
    // (The check can fail: a user whose name is a number, without an e-mail, is not a user.)
    let wrong = declared_errors(&doc, "get", "/tenants/{name}", 200, &json!({ "name": 7, "displayName": "x" }));
    assert!(wrong.len() >= 2, "{wrong:?}");
    let route = owner.call(Method::POST, "/api/v1/model-routing/test", Some(json!({ "user": "ana" }))).await;
    assert_declared(&doc, "post", "/model-routing/test", 200, &route.json());
    let limit = json!({ "level": "user", "target": "ana", "amount": "5" });
    let limit = owner.call(Method::PUT, "/api/v1/ai-budget/limits", Some(limit)).await;
    assert_declared(&doc, "put", "/ai-budget/limits", 200, &limit.json());
    let grant = json!({ "payloadType": "model", "payloadId": "fast", "subjectType": "user", "subjectId": "ana", "access": "deny" });
    let preview = owner.call(Method::POST, "/api/v1/grants/preview", Some(grant.clone())).await;
    assert_declared(&doc, "post", "/grants/preview", 200, &preview.json());
    let made = owner.call(Method::POST, "/api/v1/grants", Some(grant)).await;
    assert_declared(&doc, "post", "/grants", 201, &made.json());

    // /auth/me carries the original's isOrgAdmin, ownedOrgs and, on a silo, clusterTenant.
    let me = owner.call(Method::GET, "/api/v1/auth/me", None).await.json();
    assert_eq!(me["clusterTenant"], "acme");
    assert_eq!(me["user"]["isOrgAdmin"], true);
    assert_eq!(me["user"]["ownedOrgs"], json!([{ "clusterTenant": "acme", "role": "owner" }]));
    let mia = support::browser(&support::session_cookie(&db, "mia", false, false).await);
    let me = send_as(&owner.app, Method::GET, "/api/v1/auth/me", None, &mia).await.json();
    assert_eq!((me["user"]["isOrgAdmin"].clone(), me["user"]["ownedOrgs"].clone()), (json!(false), json!([])));
}

/// Bring your own key: one pasted key defines the provider's models (with `auto` and
/// `auto-embedding`) behind its own sealed credential; what an admin defined is never touched, and
/// removal takes only what the quick set-up made. The original's raw-key routes are retired (410).
#[sqlx::test(migrations = false)]
async fn one_provider_key_gives_working_models(pool: sqlx::PgPool) {
    let (db, _, headers) = support::silo_with_otto_and_mia(&pool).await;
    let secrets = opencrane_portal::seal::SecretBox::from_bytes(&[9; 32]).unwrap();
    let owner = Owner { app: support::silo_signed_in_sealing(db.clone(), secrets), headers };

    // An admin's own "auto" comes first: the quick set-up keeps it.
    let mine = json!({ "publicName": "auto", "upstreamModel": "openai/gpt-4.1-nano" });
    assert_eq!(owner.call(Method::POST, "/api/v1/models", Some(mine)).await.status, StatusCode::CREATED);
    let before = owner.call(Method::GET, "/api/v1/providers/byok", None).await.json();
    let openai = before.as_array().and_then(|all| all.iter().find(|p| p["provider"] == "openai")).cloned();
    assert_eq!(openai.as_ref().map(|p| p["configured"].clone()), Some(json!(false)), "{before}");

    let short = owner.call(Method::PUT, "/api/v1/providers/byok/openai", Some(json!({ "apiKey": "sk" }))).await;
    assert!(short.json()["fields"]["apiKey"].is_string(), "{}", short.text);
    let set =
        owner.call(Method::PUT, "/api/v1/providers/byok/openai", Some(json!({ "apiKey": "sk-byok-secret-1" }))).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    let outcome = set.json();
    assert_eq!(outcome["credential"], "byok-openai");
    assert_eq!(outcome["kept"], json!(["auto"]), "the admin's auto stays");
    assert!(
        outcome["seeded"]
            .as_array()
            .is_some_and(|s| s.contains(&json!("auto-embedding")) && s.contains(&json!("gpt-4o-mini")))
    );
    assert!(!set.text.contains("sk-byok-secret-1"), "never the key");
    let models = owner.call(Method::GET, "/api/v1/models", None).await.json();
    let embedding = models.as_array().and_then(|m| m.iter().find(|d| d["publicName"] == "auto-embedding")).cloned();
    assert_eq!(embedding.map(|d| d["credential"].clone()), Some(json!("byok-openai")));
    let status = owner.call(Method::GET, "/api/v1/providers/byok", None).await;
    assert!(!status.text.contains("sk-byok-secret-1"));
    let openai = status.json().as_array().and_then(|all| all.iter().find(|p| p["provider"] == "openai")).cloned();
    assert_eq!(
        openai.as_ref().map(|p| (p["configured"].clone(), p["hint"].clone())),
        Some((json!(true), json!("…et-1")))
    );

    // Pasting again replaces the key and defines nothing twice.
    let again = owner
        .call(Method::PUT, "/api/v1/providers/byok/openai", Some(json!({ "apiKey": "sk-byok-secret-2" })))
        .await
        .json();
    assert_eq!(again["seeded"], json!([]), "{again}");
    let rotated: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'credential.rotate'")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(rotated, 1);

    // An admin's own deployment on the quick set-up's key keeps the key at removal.
    let theirs = json!({ "publicName": "research", "upstreamModel": "openai/o3", "credential": "byok-openai" });
    assert_eq!(owner.call(Method::POST, "/api/v1/models", Some(theirs)).await.status, StatusCode::CREATED);
    let removed = owner.call(Method::DELETE, "/api/v1/providers/byok/openai", None).await;
    assert_eq!(removed.status, StatusCode::OK, "{}", removed.text);
    assert_eq!(removed.json()["left"], json!(["research"]));
    let names: Vec<Value> = owner
        .call(Method::GET, "/api/v1/models", None)
        .await
        .json()
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|d| d["publicName"].clone())
        .collect();
    assert_eq!(names.len(), 2, "the admin's auto and research stay, the seeded ones are gone: {names:?}");
    assert!(names.contains(&json!("auto")) && names.contains(&json!("research")));

    let unknown =
        owner.call(Method::PUT, "/api/v1/providers/byok/azure", Some(json!({ "apiKey": "sk-azure-123" }))).await;
    assert_eq!(
        (unknown.status, unknown.json()["code"].clone()),
        (StatusCode::NOT_FOUND, json!("BYOK_PROVIDER_UNKNOWN"))
    );
    let retired =
        owner.call(Method::PUT, "/api/v1/providers/keys/openai", Some(json!({ "apiKey": "sk-x-123456" }))).await;
    assert_eq!((retired.status, retired.json()["code"].clone()), (StatusCode::GONE, json!("ROUTE_RETIRED")));
}

/// The fleet's answers match the response schemas its document declares, which are generated
/// from the same wire types the handlers serialise (a drift between the two fails here): a
/// customer, its list, provisioning and status, members (added, invited, suspended), invitations
/// and the caller's billing account.
#[sqlx::test(migrations = false)]
async fn the_fleets_answers_match_their_declared_schemas(pool: sqlx::PgPool) {
    use crate::support::{Features, send};
    let db = support::fleet_db(&pool).await;
    let fleet = support::fleet(db.clone(), Features::default(), false);
    let doc = send(&fleet, Method::GET, "/api/v1/openapi.json", None, true).await.json();
    let call = |method: Method, path: String, body: Option<Value>| {
        let fleet = fleet.clone();
        async move { send(&fleet, method, &path, body.map(|b| b.to_string()).as_deref(), true).await }
    };
    let created =
        call(Method::POST, "/api/v1/cluster-tenants".into(), serde_json::from_str(&support::create_body("acme")).ok())
            .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    assert_declared(&doc, "post", "/cluster-tenants", 201, &created.json());
    let member = call(
        Method::POST,
        "/api/v1/cluster-tenants/acme/members".into(),
        Some(json!({ "subject": "ana", "role": "admin" })),
    )
    .await;
    assert_declared(&doc, "post", "/cluster-tenants/{name}/members", 201, &member.json());
    let invited = call(
        Method::POST,
        "/api/v1/cluster-tenants/acme/members".into(),
        Some(json!({ "email": "bo@acme.test", "role": "member" })),
    )
    .await;
    assert_declared(&doc, "post", "/cluster-tenants/{name}/members", 201, &invited.json());
    let suspended = call(Method::POST, "/api/v1/cluster-tenants/acme/members/ana/suspend".into(), None).await;
    assert_declared(&doc, "post", "/cluster-tenants/{name}/members/{subject}/suspend", 200, &suspended.json());
    let samples = [
        ("/cluster-tenants", "/api/v1/cluster-tenants"),
        ("/cluster-tenants/{name}", "/api/v1/cluster-tenants/acme"),
        ("/cluster-tenants/{name}/provisioning", "/api/v1/cluster-tenants/acme/provisioning"),
        ("/cluster-tenants/{name}/status", "/api/v1/cluster-tenants/acme/status"),
        ("/cluster-tenants/{name}/members", "/api/v1/cluster-tenants/acme/members"),
        ("/cluster-tenants/{name}/invitations", "/api/v1/cluster-tenants/acme/invitations"),
    ];
    for (documented, path) in samples {
        let answer = call(Method::GET, path.into(), None).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}: {}", answer.text);
        assert_declared(&doc, "get", documented, 200, &answer.json());
    }
    // A wrong answer is caught (the check can fail).
    let mut wrong = call(Method::GET, "/api/v1/cluster-tenants/acme".into(), None).await.json();
    wrong["isolationTier"] = json!("everywhere");
    assert!(!declared_errors(&doc, "get", "/cluster-tenants/{name}", 200, &wrong).is_empty());
}
