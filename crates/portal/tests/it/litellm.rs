//! LiteLLM integration: the reconciler against a real silo database and the fake LiteLLM of
//! `opencrane_portal::fake` (built from LiteLLM's documented API shapes: the real proxy needs
//! Prisma engines from binaries.prisma.sh, which this machine cannot reach, so it cannot manage
//! keys here). Requests go through `/chat/completions` of the fake, which enforces blocked keys,
//! model lists and `max_budget` as LiteLLM does.

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};
use opencrane_portal::{fake::FakeLiteLlm, litellm::LiteLlm, reconcile::Reconciler, seal::SecretBox};
use opencrane_silo_db::{
    budgets::{self, BudgetFields},
    grants::{self, NewGrant},
    groups, litellm as key_db,
    models::{self, DefinitionFields},
    tenants::{self, TenantFields},
};
use serde_json::json;
use sqlx::PgPool;

const MASTER: &str = "sk-master-test";

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).single().unwrap()
}

struct World {
    pool: PgPool,
    fake: FakeLiteLlm,
    reconciler: Reconciler,
    eng: uuid::Uuid,
}

async fn limit(
    pool: &PgPool,
    level: &str,
    group_id: Option<uuid::Uuid>,
    tenant: Option<&str>,
    units: i64,
    period: &str,
) {
    let mut conn = pool.acquire().await.unwrap();
    let f = BudgetFields {
        level,
        group_id,
        tenant,
        currency: "USD",
        amount: units * 1_000_000,
        period,
        thresholds: &[50, 80, 100],
    };
    budgets::put(&mut conn, &f).await.unwrap();
}

/// ana (group eng) and bob; deployments fast (two, weighted) and smart; smart denied to bob;
/// ana's own limit 10 USD a month.
async fn world(pool: PgPool) -> World {
    let fake = FakeLiteLlm::start(MASTER).await.unwrap();
    let secrets = Arc::new(SecretBox::from_bytes(&[42; 32]).unwrap());
    let user = |email, subject| TenantFields {
        display_name: "User",
        email,
        subject,
        team: None,
        policy_ref: None,
        cpu: None,
        memory: None,
    };
    tenants::insert(&pool, "ana", &user("ana@acme.test", "s-ana"), "admin").await.unwrap();
    tenants::insert(&pool, "bob", &user("bob@acme.test", "s-bob"), "admin").await.unwrap();
    let eng = groups::insert(&pool, "eng", "team", "", "local").await.unwrap();
    groups::set_members(&pool, eng, &["ana".into()]).await.unwrap();
    let sealed = secrets.seal(b"sk-openai-secret", "credential:openai").unwrap();
    let cred = models::insert_credential(&pool, "openai", "openai", None, &models::KeySource::Sealed(&sealed, "…cret"))
        .await
        .unwrap();
    let def = |public_name, upstream_model, weight| DefinitionFields {
        public_name,
        upstream_model,
        api_base: None,
        credential_id: Some(cred),
        weight,
    };
    models::insert_definition(&pool, &def("fast", "openai/gpt-4o-mini", 3)).await.unwrap();
    models::insert_definition(&pool, &def("fast", "openai/gpt-4.1-mini", 1)).await.unwrap();
    models::insert_definition(&pool, &def("smart", "openai/gpt-4o", 1)).await.unwrap();
    let mut conn = pool.acquire().await.unwrap();
    models::set_fallbacks(&mut conn, "smart", &["fast".into()]).await.unwrap();
    drop(conn);
    let deny = NewGrant {
        payload_type: "model",
        payload_id: "smart",
        subject_type: "tenant",
        subject_id: "bob",
        access: "deny",
        priority: 0,
        note: "",
        created_by: "test",
    };
    grants::insert(&pool, &deny).await.unwrap();
    limit(&pool, "user", None, Some("ana"), 10, "month").await;
    let reconciler = Reconciler::new("acme", pool.clone(), LiteLlm::new(&fake.url, MASTER).unwrap(), secrets);
    World { pool, fake, reconciler, eng }
}

/// A request through the fake proxy with the user's key; the status LiteLLM would answer.
async fn chat(fake: &FakeLiteLlm, alias: &str, model: &str, cost: f64) -> u16 {
    let key = fake.key(alias).unwrap().key;
    reqwest::Client::new()
        .post(format!("{}/chat/completions", fake.url))
        .bearer_auth(key)
        .json(&json!({ "model": model, "messages": [], "mock_cost": cost }))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn keys_get_the_allowed_models_and_a_budget_and_a_second_pass_changes_nothing(pool: PgPool) {
    let w = world(pool).await;
    let now = at(2026, 11, 15, 12, 0);
    let report = w.reconciler.pass(now).await.unwrap();
    assert!(report.failures.is_empty(), "{report:?}");
    assert_eq!((report.keys_created, report.models_added, report.credentials_pushed), (2, 3, 1));

    let ana = w.fake.key("opencrane.acme.ana").unwrap();
    assert_eq!(ana.models, ["fast", "smart"]);
    assert_eq!(ana.max_budget, Some(10.0));
    assert!(!ana.blocked);
    assert_eq!(ana.metadata["tenant"], "ana");
    let bob = w.fake.key("opencrane.acme.bob").unwrap();
    assert_eq!(bob.models, ["fast"], "the deny grant keeps smart off bob's key");
    assert_eq!(bob.max_budget, None, "no limit of his own");

    let credential = &w.fake.credentials()["opencrane.acme.openai"];
    assert_eq!(credential["credential_values"]["api_key"], "sk-openai-secret", "decrypted only towards LiteLLM");
    let deployments = w.fake.models();
    let fast: Vec<_> = deployments.iter().filter(|m| m["model_name"] == "fast").collect();
    assert_eq!(fast.len(), 2);
    assert!(fast.iter().all(|m| m["litellm_params"]["litellm_credential_name"] == "opencrane.acme.openai"));
    assert_eq!(w.fake.router_settings()["fallbacks"], json!([{ "smart": ["fast"] }]));

    // The secret of ana's key is stored sealed, and opens to the key LiteLLM issued.
    let sealed = key_db::key_secret(&w.pool, "ana").await.unwrap().unwrap();
    let secrets = SecretBox::from_bytes(&[42; 32]).unwrap();
    assert_eq!(secrets.open(&sealed, "litellm-key:ana").unwrap(), ana.key.as_bytes());

    // Requests: bob cannot call smart; ana can.
    assert_eq!(chat(&w.fake, "opencrane.acme.bob", "smart", 0.01).await, 401);
    assert_eq!(chat(&w.fake, "opencrane.acme.ana", "smart", 0.01).await, 200);

    w.fake.take_calls();
    let again = w.reconciler.pass(now).await.unwrap();
    assert_eq!(again.repaired(), 0, "{again:?}");
    assert!(again.drift.is_empty());
    let writes: Vec<_> = w
        .fake
        .take_calls()
        .into_iter()
        .filter(|c| !c.ends_with("info") && !c.ends_with("list") && c != "spend/logs")
        .collect();
    assert!(writes.is_empty(), "a converged pass only reads: {writes:?}");
}

#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn a_reached_ceiling_blocks_exactly_the_keys_it_covers(pool: PgPool) {
    let w = world(pool).await;
    limit(&w.pool, "group", Some(w.eng), None, 15, "week").await;
    limit(&w.pool, "silo", None, None, 100, "month").await;
    let now = at(2026, 11, 18, 12, 0);
    w.reconciler.pass(now).await.unwrap();

    // ana (in eng) spends 16 this week: eng's weekly ceiling is reached; bob is not in eng.
    w.fake.record_spend("opencrane.acme.ana", "fast", 9.0, at(2026, 11, 17, 9, 0));
    w.fake.record_spend("opencrane.acme.bob", "fast", 7.0, at(2026, 11, 17, 9, 0));
    w.fake.record_spend("opencrane.acme.ana", "smart", 7.0, at(2026, 11, 18, 9, 0));
    let report = w.reconciler.pass(now).await.unwrap();
    assert_eq!(report.spend_ingested, 3);
    assert!(w.fake.key("opencrane.acme.ana").unwrap().blocked, "eng's ceiling covers ana");
    assert!(!w.fake.key("opencrane.acme.bob").unwrap().blocked, "…and not bob");
    assert_eq!(chat(&w.fake, "opencrane.acme.ana", "fast", 0.01).await, 401);
    assert_eq!(chat(&w.fake, "opencrane.acme.bob", "fast", 0.01).await, 200);

    // The silo's monthly ceiling, reached by bob alone, blocks everyone.
    w.fake.record_spend("opencrane.acme.bob", "fast", 90.0, at(2026, 11, 18, 10, 0));
    w.reconciler.pass(now).await.unwrap();
    assert!(w.fake.key("opencrane.acme.bob").unwrap().blocked);
    assert!(w.fake.key("opencrane.acme.ana").unwrap().blocked);

    // Each crossed threshold was noticed once.
    let notices = budgets::open_notices(&w.pool).await.unwrap();
    let before = notices.len();
    assert!(notices.iter().any(|n| n.message.starts_with("The whole silo has used 100%")), "{notices:?}");
    w.reconciler.pass(now).await.unwrap();
    assert_eq!(budgets::open_notices(&w.pool).await.unwrap().len(), before, "once per period");
}

#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn the_calendar_boundary_unblocks_and_moves_the_key_budget(pool: PgPool) {
    let w = world(pool).await;
    let november = at(2026, 11, 30, 22, 0);
    w.reconciler.pass(november).await.unwrap();
    w.fake.record_spend("opencrane.acme.ana", "fast", 10.0, at(2026, 11, 30, 21, 0));
    w.reconciler.pass(november).await.unwrap();
    let ana = w.fake.key("opencrane.acme.ana").unwrap();
    assert!(ana.blocked, "her own limit of 10 is used up");
    assert_eq!(chat(&w.fake, "opencrane.acme.ana", "fast", 0.01).await, 401);

    // Ten minutes into December (UTC): a new month, the limit resets.
    let december = at(2026, 12, 1, 0, 10);
    w.reconciler.pass(december).await.unwrap();
    let ana = w.fake.key("opencrane.acme.ana").unwrap();
    assert!(!ana.blocked);
    assert_eq!(ana.max_budget, Some(20.0), "spend before the period (10) plus the limit (10)");
    assert_eq!(chat(&w.fake, "opencrane.acme.ana", "fast", 4.0).await, 200);
}

#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn the_boundary_follows_the_silo_time_zone(pool: PgPool) {
    let w = world(pool).await;
    opencrane_silo_db::settings::update(&w.pool, "Europe/Berlin", "USD", "allow").await.unwrap();
    let before = at(2026, 11, 30, 22, 30); // 23:30 in Berlin, still November
    w.reconciler.pass(before).await.unwrap();
    w.fake.record_spend("opencrane.acme.ana", "fast", 10.0, at(2026, 11, 30, 22, 0));
    w.reconciler.pass(before).await.unwrap();
    assert!(w.fake.key("opencrane.acme.ana").unwrap().blocked);
    // 23:10 UTC is already 1 December in Berlin.
    w.reconciler.pass(at(2026, 11, 30, 23, 10)).await.unwrap();
    assert!(!w.fake.key("opencrane.acme.ana").unwrap().blocked);
}

#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn drift_is_reported_and_repaired(pool: PgPool) {
    let w = world(pool).await;
    let now = at(2026, 11, 15, 12, 0);
    w.reconciler.pass(now).await.unwrap();
    // Someone widens bob's key in LiteLLM's UI, deletes a deployment, and adds keys and models.
    w.fake.tamper("opencrane.acme.bob", |k| {
        k.models.clear();
        k.max_budget = Some(1000.0);
    });
    let smart = w.fake.models().into_iter().find(|m| m["model_name"] == "smart").unwrap();
    let smart_id = smart["model_info"]["id"].as_str().unwrap().to_owned();
    LiteLlm::new(&w.fake.url, MASTER).unwrap().delete_model(&smart_id).await.unwrap();
    w.fake.add_foreign_key("opencrane.acme.ghost");
    w.fake.add_foreign_key("someone-elses-key");
    w.fake.add_foreign_key("opencrane.acme-x.ana");

    let report = w.reconciler.pass(now).await.unwrap();
    assert!(report.drift.iter().any(|d| d == "bob: models changed in LiteLLM"), "{:?}", report.drift);
    assert!(report.drift.iter().any(|d| d == "bob: budget changed in LiteLLM"), "{:?}", report.drift);
    let bob = w.fake.key("opencrane.acme.bob").unwrap();
    assert_eq!((bob.models, bob.max_budget), (vec!["fast".to_owned()], None));
    assert!(w.fake.models().iter().any(|m| m["model_info"]["id"] == smart_id.as_str()), "the deployment is back");
    assert!(w.fake.key("opencrane.acme.ghost").is_none(), "a portal-named key of no user is removed");
    assert!(w.fake.key("someone-elses-key").is_some(), "keys the portal does not own are left alone");
    assert!(w.fake.key("opencrane.acme-x.ana").is_some(), "…and so are another silo's, in a shared LiteLLM");
    let record = key_db::keys(&w.pool, None).await.unwrap().into_iter().find(|k| k.tenant == "bob").unwrap();
    assert!(record.drift.unwrap().contains("models changed"));

    // A key deleted in LiteLLM is issued again with only what is left of the period's budget;
    // a deleted user's key goes.
    w.fake.record_spend("opencrane.acme.ana", "fast", 4.0, now);
    w.reconciler.pass(now).await.unwrap();
    LiteLlm::new(&w.fake.url, MASTER).unwrap().delete_keys(&["opencrane.acme.ana".into()]).await.unwrap();
    tenants::delete(&w.pool, "bob").await.unwrap();
    let report = w.reconciler.pass(now).await.unwrap();
    assert_eq!((report.keys_created, report.orphans_deleted), (1, 1), "{report:?}");
    let reissued = w.fake.key("opencrane.acme.ana").unwrap();
    assert_eq!(reissued.spend, 0.0);
    w.reconciler.pass(now).await.unwrap();
    assert_eq!(w.fake.key("opencrane.acme.ana").unwrap().max_budget, Some(6.0), "10 a month, 4 already spent");
    assert!(w.fake.key("opencrane.acme.bob").is_none());
}

#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn transient_failures_are_retried_and_lasting_ones_reported(pool: PgPool) {
    let w = world(pool).await;
    let now = at(2026, 11, 15, 12, 0);
    // One 500 on the first (idempotent) read is retried.
    w.fake.fail_next(&[500]);
    assert!(w.reconciler.pass(now).await.is_ok());
    // Three in a row exhaust the retries: the pass fails and says where.
    w.fake.fail_next(&[503, 503, 503]);
    let err = w.reconciler.pass(now).await.unwrap_err().to_string();
    assert!(err.contains("503"), "{err}");
    // A LiteLLM that is down is named.
    let down = Reconciler::new(
        "acme",
        w.pool.clone(),
        LiteLlm::new("http://127.0.0.1:9", MASTER).unwrap(),
        Arc::new(SecretBox::from_bytes(&[42; 32]).unwrap()),
    );
    let err = down.pass(now).await.unwrap_err().to_string();
    assert!(err.contains("unreachable"), "{err}");
    // A wrong master key is a 401, not retried.
    let wrong = Reconciler::new(
        "acme",
        w.pool.clone(),
        LiteLlm::new(&w.fake.url, "sk-wrong").unwrap(),
        Arc::new(SecretBox::from_bytes(&[42; 32]).unwrap()),
    );
    assert!(wrong.pass(now).await.unwrap_err().to_string().contains("401"));
}

/// `POST /ai-budget/{name}/litellm-key/revoke` records a request; the next pass deletes the key
/// in LiteLLM (requests with it are refused from then on) and issues a new one under the same
/// limits — the period's spend so far still counts against it. A pass that cannot reach LiteLLM
/// keeps the request for the next one.
#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn a_revoked_key_stops_working_and_a_new_one_keeps_the_limit(pool: PgPool) {
    let w = world(pool).await;
    let now = at(2026, 11, 15, 12, 0);
    w.reconciler.pass(now).await.unwrap();
    w.fake.record_spend("opencrane.acme.ana", "fast", 4.0, at(2026, 11, 14, 9, 0));
    w.reconciler.pass(now).await.unwrap();
    let old = w.fake.key("opencrane.acme.ana").unwrap();
    let issued = key_db::keys(&w.pool, None).await.unwrap().into_iter().find(|k| k.tenant == "ana").unwrap();

    assert!(key_db::request_revocation(&w.pool, "ana").await.unwrap());
    assert!(!key_db::request_revocation(&w.pool, "nobody").await.unwrap(), "no key, nothing to revoke");
    // LiteLLM down: the pass fails and the request stays.
    w.fake.fail_next(&[503; 60]);
    let down = w.reconciler.pass(now).await;
    assert!(down.is_err() || !down.as_ref().unwrap().failures.is_empty(), "{down:?}");
    let pending = key_db::keys(&w.pool, Some(&["ana".into()])).await.unwrap().remove(0);
    assert!(pending.revoke_requested_at.is_some(), "kept for the next pass");
    w.fake.heal();

    let report = w.reconciler.pass(now).await.unwrap();
    assert!(report.failures.is_empty(), "{report:?}");
    assert_eq!((report.keys_revoked, report.keys_created), (1, 1), "{report:?}");
    let new = w.fake.key("opencrane.acme.ana").unwrap();
    assert_ne!(new.key, old.key, "a new secret");
    assert_eq!(new.models, old.models);
    assert_eq!(new.max_budget, Some(6.0), "4 of ana's 10 a month are spent: 6 left on the new key");
    let refused = reqwest::Client::new()
        .post(format!("{}/chat/completions", w.fake.url))
        .bearer_auth(&old.key)
        .json(&json!({ "model": "fast", "messages": [] }))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 401, "the revoked key no longer works");
    assert_eq!(chat(&w.fake, "opencrane.acme.ana", "fast", 0.01).await, 200);
    let record = key_db::keys(&w.pool, Some(&["ana".into()])).await.unwrap().remove(0);
    assert_eq!(record.revoke_requested_at, None);
    assert!(record.issued_at > issued.issued_at, "{record:?}");
    let sealed = key_db::key_secret(&w.pool, "ana").await.unwrap().unwrap();
    let secrets = SecretBox::from_bytes(&[42; 32]).unwrap();
    assert_eq!(secrets.open(&sealed, "litellm-key:ana").unwrap(), new.key.as_bytes(), "the new secret is stored");
    assert!(w.fake.key("opencrane.acme.bob").is_some_and(|b| b.key != new.key), "bob's key untouched");
    assert_eq!(w.reconciler.pass(now).await.unwrap().repaired(), 0, "then converged");
}

/// The pass stores each request's tokens from LiteLLM's spend logs beside its cost (what
/// `GET /token-usage` sums; the original's table of token snapshots had no writer at all).
#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn token_counts_are_ingested_with_the_spend(pool: PgPool) {
    let w = world(pool).await;
    let now = at(2026, 11, 15, 12, 0);
    w.reconciler.pass(now).await.unwrap();
    w.fake.record_usage("opencrane.acme.ana", "fast", 2.0, (1200, 300), at(2026, 11, 14, 9, 0));
    w.fake.record_usage("opencrane.acme.ana", "smart", 1.0, (800, 200), at(2026, 11, 14, 10, 0));
    w.fake.record_usage("opencrane.acme.bob", "fast", 0.5, (100, 50), at(2026, 11, 14, 11, 0));
    w.fake.record_usage("opencrane.acme.bob", "fast", 0.5, (7, 7), at(2026, 10, 31, 11, 0));
    let report = w.reconciler.pass(now).await.unwrap();
    assert_eq!(report.spend_ingested, 4, "{report:?}");
    let usage = budgets::token_usage(&w.pool, at(2026, 11, 1, 0, 0), at(2026, 12, 1, 0, 0)).await.unwrap();
    let row = |t: &str| usage.iter().find(|r| r.tenant.as_deref() == Some(t)).cloned().unwrap();
    assert_eq!((row("ana").input_tokens, row("ana").output_tokens, row("ana").requests), (2000, 500, 2));
    assert_eq!((row("ana").cost, row("bob").input_tokens), (3_000_000, 100), "October is not November");
    // Ingesting the same logs again counts nothing twice.
    w.reconciler.pass(now).await.unwrap();
    let again = budgets::token_usage(&w.pool, at(2026, 11, 1, 0, 0), at(2026, 12, 1, 0, 0)).await.unwrap();
    assert_eq!(again, usage);
}

/// A credential whose key stays in a Kubernetes Secret of the silo's namespace (the original's
/// `secretRef`), against the fake API server (`opencrane-fake-kube`, no kube-apiserver runs here):
/// a missing Secret or key is said on the credential and the pass, nothing is pushed; once the
/// Secret holds the key LiteLLM gets it (never the database); a changed key is pushed again; a
/// converged pass pushes nothing. Outside Kubernetes the credential says why it cannot be read.
#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn a_secret_referenced_key_is_read_at_each_pass_and_its_problems_are_shown(pool: PgPool) {
    use k8s_openapi::{ByteString, api::core::v1::Secret};
    use kube::api::{ObjectMeta, PostParams};
    use opencrane_portal::secrets::SecretReader;

    const NS: &str = "opencrane-acme";
    let server = opencrane_fake_kube::FakeApiServer::start().await.unwrap();
    let kube = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
    let namespace = k8s_openapi::api::core::v1::Namespace {
        metadata: ObjectMeta { name: Some(NS.into()), ..Default::default() },
        ..Default::default()
    };
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(kube.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let w = world(pool).await;
    let id = models::insert_credential(
        &w.pool,
        "anthropic",
        "anthropic",
        None,
        &models::KeySource::SecretRef("llm/anthropic"),
    )
    .await
    .unwrap();
    let status = |pool: PgPool| async move {
        models::credentials(&pool).await.unwrap().into_iter().find(|c| c.id == id).unwrap().secret_status
    };
    let now = at(2026, 11, 15, 12, 0);

    // Outside Kubernetes: said, not pushed, the rest of the pass goes on.
    let report = w.reconciler.pass(now).await.unwrap();
    assert!(report.failures.iter().any(|f| f.contains("outside Kubernetes")), "{report:?}");
    assert!(status(w.pool.clone()).await.unwrap().contains("outside Kubernetes"));
    assert!(!w.fake.credentials().contains_key("opencrane.acme.anthropic"));
    assert!(w.fake.credentials().contains_key("opencrane.acme.openai"), "the sealed credential still went");

    let reconciler = Reconciler::new(
        "acme",
        w.pool.clone(),
        LiteLlm::new(&w.fake.url, MASTER).unwrap(),
        Arc::new(SecretBox::from_bytes(&[42; 32]).unwrap()),
    )
    .with_secret_reader(SecretReader::new(kube.clone(), NS));
    let report = reconciler.pass(now).await.unwrap();
    assert!(report.failures.iter().any(|f| f.contains("“llm” does not exist")), "{report:?}");
    assert_eq!(
        status(w.pool.clone()).await.as_deref(),
        Some("Secret “llm” does not exist in namespace “opencrane-acme”.")
    );

    let secrets: kube::Api<Secret> = kube::Api::namespaced(kube.clone(), NS);
    let mut secret = Secret {
        metadata: ObjectMeta { name: Some("llm".into()), ..Default::default() },
        data: Some([("openai".to_owned(), ByteString(b"sk-x".to_vec()))].into()),
        ..Default::default()
    };
    secrets.create(&PostParams::default(), &secret).await.unwrap();
    reconciler.pass(now).await.unwrap();
    assert_eq!(status(w.pool.clone()).await.as_deref(), Some("Secret “llm” has no key “anthropic” (it has openai)."));

    secret.data = Some([("anthropic".to_owned(), ByteString(b"sk-ant-first".to_vec()))].into());
    secrets.replace("llm", &PostParams::default(), &secret).await.unwrap();
    let report = reconciler.pass(now).await.unwrap();
    assert!(report.failures.is_empty(), "{report:?}");
    assert_eq!(status(w.pool.clone()).await, None, "read");
    let pushed = &w.fake.credentials()["opencrane.acme.anthropic"];
    assert_eq!(pushed["credential_values"]["api_key"], "sk-ant-first");
    assert_eq!(models::credential_secret(&w.pool, id).await.unwrap(), None, "never stored in the database");

    w.fake.take_calls();
    reconciler.pass(now).await.unwrap();
    let calls = w.fake.take_calls();
    assert!(!calls.iter().any(|c| c == "credentials/new" || c == "credentials/delete"), "converged: {calls:?}");

    // The operator rotates the key in the Secret: the next pass pushes it.
    secret.data = Some([("anthropic".to_owned(), ByteString(b"sk-ant-second".to_vec()))].into());
    secrets.replace("llm", &PostParams::default(), &secret).await.unwrap();
    let report = reconciler.pass(now).await.unwrap();
    assert_eq!(report.credentials_pushed, 1, "{report:?}");
    assert_eq!(w.fake.credentials()["opencrane.acme.anthropic"]["credential_values"]["api_key"], "sk-ant-second");
}
