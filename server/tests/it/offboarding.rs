//! Suspension and removal on the fleet reach the silo: at its pull of the memberships the silo
//! ends the person's sessions (audited) and its LLM loop blocks their key in LiteLLM — against the
//! fake LiteLLM of `opencrane_portal::fake` (built from LiteLLM's documented admin API: the real
//! proxy cannot manage keys here), whose `/chat/completions` refuses a blocked key as LiteLLM
//! does. Reactivation gives the key back; a removed member stays blocked.

use std::sync::Arc;

use chrono::Utc;
use opencrane_portal::{fake::FakeLiteLlm, litellm::LiteLlm, reconcile::Reconciler, seal::SecretBox};
use opencrane_silo_db::models::{self, DefinitionFields};
use sqlx::PgPool;

use crate::support;

const MASTER: &str = "sk-master-test";
const ALIAS: &str = "opencrane.acme.ana";

async fn chat(fake: &FakeLiteLlm) -> u16 {
    let key = fake.key(ALIAS).unwrap().key;
    let body = serde_json::json!({ "model": "fast", "messages": [], "mock_cost": 0.01 });
    openidconnect::reqwest::Client::new()
        .post(format!("{}/chat/completions", fake.url))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn sessions_of(db: &PgPool, subject: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM user_sessions WHERE subject = $1")
        .bind(subject)
        .fetch_one(db)
        .await
        .unwrap()
}

async fn fleet_sql(db: &PgPool, sql: &str) {
    sqlx::query(sql).execute(db).await.unwrap();
}

#[sqlx::test(migrations = false)]
async fn suspension_and_removal_end_sessions_and_block_the_key(pool: PgPool) {
    let fleet_db = support::fleet_db(&pool).await;
    fleet_sql(&fleet_db, "INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme')").await;
    fleet_sql(
        &fleet_db,
        "INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'otto', 'owner'), ('acme', 's-ana', 'member')",
    )
    .await;
    let credential = crate::trust::issue(&fleet_db, "acme").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let link = opencrane::silo::sync::FleetLink {
        url: format!("http://{}", listener.local_addr().unwrap()),
        token: opencrane::silo::sync::FleetToken::Value(credential),
    };
    tokio::spawn(opencrane::http::serve(listener, support::fleet_internal(fleet_db.clone()), std::future::pending()));

    // The silo: ana's assistant, one model, her session.
    let silo_db = support::silo_db(&pool).await;
    support::add_ana(&silo_db, "sign-in").await;
    let secrets = Arc::new(SecretBox::from_bytes(&[42; 32]).unwrap());
    let sealed = secrets.seal(b"sk-openai-secret", "credential:openai").unwrap();
    let cred =
        models::insert_credential(&silo_db, "openai", "openai", None, &models::KeySource::Sealed(&sealed, "…cret"))
            .await
            .unwrap();
    let definition = DefinitionFields {
        public_name: "fast",
        upstream_model: "openai/gpt-4o-mini",
        api_base: None,
        credential_id: Some(cred),
        weight: 1,
    };
    models::insert_definition(&silo_db, &definition).await.unwrap();
    let fake = FakeLiteLlm::start(MASTER).await.unwrap();
    let reconciler = Reconciler::new("acme", silo_db.clone(), LiteLlm::new(&fake.url, MASTER).unwrap(), secrets);
    let client = openidconnect::reqwest::Client::new();
    let pull = || opencrane::silo::sync::pull_once(&client, &link, "acme", &silo_db);

    assert!(pull().await.unwrap().offboarded.is_empty());
    support::session_cookie(&silo_db, "s-ana", false, false).await;
    support::session_cookie(&silo_db, "otto", false, false).await;
    reconciler.pass(Utc::now()).await.unwrap();
    assert!(!fake.key(ALIAS).unwrap().blocked);
    assert_eq!(chat(&fake).await, 200);

    // Suspended on the fleet: her session ends at the pull, her key is blocked at the next pass.
    fleet_sql(&fleet_db, "UPDATE org_memberships SET status = 'suspended' WHERE subject = 's-ana'").await;
    assert_eq!(pull().await.unwrap().offboarded, ["s-ana"]);
    assert_eq!((sessions_of(&silo_db, "s-ana").await, sessions_of(&silo_db, "otto").await), (0, 1));
    reconciler.pass(Utc::now()).await.unwrap();
    assert!(fake.key(ALIAS).unwrap().blocked, "a suspended member's key is blocked");
    assert_eq!(chat(&fake).await, 401);
    let offboards: Vec<(String, serde_json::Value)> =
        sqlx::query_as("SELECT target, metadata FROM audit_log WHERE action = 'membership.offboard'")
            .fetch_all(&silo_db)
            .await
            .unwrap();
    assert_eq!(offboards.len(), 1);
    assert_eq!(offboards[0].0, "s-ana");
    assert_eq!(
        (offboards[0].1["status"].clone(), offboards[0].1["sessionsEnded"].clone()),
        ("suspended".into(), 1.into())
    );
    assert!(pull().await.unwrap().offboarded.is_empty(), "offboarded once, not at every pull");

    // Reactivated: the key works again.
    fleet_sql(&fleet_db, "UPDATE org_memberships SET status = 'active' WHERE subject = 's-ana'").await;
    assert!(pull().await.unwrap().offboarded.is_empty());
    reconciler.pass(Utc::now()).await.unwrap();
    assert!(!fake.key(ALIAS).unwrap().blocked);
    assert_eq!(chat(&fake).await, 200);

    // Removed: offboarded again, and the key stays blocked while the silo keeps her as removed.
    support::session_cookie(&silo_db, "s-ana", false, false).await;
    fleet_sql(&fleet_db, "DELETE FROM org_memberships WHERE subject = 's-ana'").await;
    assert_eq!(pull().await.unwrap().offboarded, ["s-ana"]);
    assert_eq!(sessions_of(&silo_db, "s-ana").await, 0);
    let kept = opencrane_silo_db::memberships::for_subject(&silo_db, "acme", "s-ana").await.unwrap().unwrap();
    assert_eq!(kept.status, "removed");
    reconciler.pass(Utc::now()).await.unwrap();
    reconciler.pass(Utc::now()).await.unwrap();
    assert!(fake.key(ALIAS).unwrap().blocked, "a removed member's key stays blocked");
    assert_eq!(chat(&fake).await, 401);
}
