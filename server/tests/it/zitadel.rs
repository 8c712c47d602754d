//! The fleet's identity plane over HTTP: rotating the Zitadel service-account key (the
//! original's `sa-key:rotate` contract, and the two-phase mint → activate → revoke across a
//! restart) and the reconcile pass. Zitadel is the fake (`opencrane_zitadel::fake`, from the
//! documented API shapes) and the key's Secret lives on the fake Kubernetes API server
//! (`opencrane_fake_kube`); neither real one can run here.

use std::sync::Arc;

use app::{
    service::fleet::identity::{IdentityRuntime, KeySlot, KeyStore},
    state::{AppState, RoleSettings},
};
use axum::http::{Method, StatusCode};
use base64::Engine as _;
use chrono::{TimeDelta, Utc};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use opencrane::{
    fleet::key_store::SecretKeyStore,
    http::{AuthConfig, auth::Scope},
};
use opencrane_fake_kube::FakeApiServer;
use opencrane_provision::identity::IdentityPlane;
use opencrane_zitadel::{Client, ServiceAccountKey, Timeouts, fake::FakeZitadel};
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::support::{self, TOKEN, send};

const NS: &str = "opencrane-system";
const SECRET: &str = "zitadel-sa";
const SECRET_KEY: &str = "service-account-key";

struct Rig {
    zitadel: FakeZitadel,
    _kube: FakeApiServer,
    secrets: Api<Secret>,
    store: Arc<SecretKeyStore>,
    key: ServiceAccountKey,
    db: PgPool,
}

fn quick() -> Timeouts {
    Timeouts { backoff: std::time::Duration::from_millis(5), ..Timeouts::default() }
}

async fn rig(pool: &PgPool, expires_in: TimeDelta) -> Rig {
    let db = support::fleet_db(pool).await;
    let zitadel = FakeZitadel::start().await.unwrap();
    let key = zitadel.service_account(true, Some(Utc::now() + expires_in));
    let kube = FakeApiServer::start().await.unwrap();
    let client = opencrane_provision::kubernetes::client_for(&kube.url(), std::time::Duration::from_secs(2)).unwrap();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    namespaces.create(&Default::default(), &serde_json::from_value(namespace).unwrap()).await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    let encoded = base64::engine::general_purpose::STANDARD.encode(key.to_json());
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET, "namespace": NS},
                        "data": {SECRET_KEY: encoded, "other": "a2VlcA=="}});
    secrets.create(&Default::default(), &serde_json::from_value(secret).unwrap()).await.unwrap();
    let store = Arc::new(SecretKeyStore::new(client, NS, SECRET, SECRET_KEY));
    Rig { zitadel, _kube: kube, secrets, store, key, db }
}

impl Rig {
    /// A fleet process started with the key its Secret holds now (as after a restart).
    async fn fleet(&self, persist: bool) -> (axum::Router, AppState) {
        let stored = self.store.read(KeySlot::Active).await.unwrap().unwrap();
        let key = ServiceAccountKey::parse(&stored).unwrap();
        let client = Client::new(self.zitadel.url(), &key, quick()).unwrap();
        let plane = Arc::new(IdentityPlane::new(client, "example.com"));
        let store: Option<Arc<dyn KeyStore>> = persist.then(|| self.store.clone() as Arc<dyn KeyStore>);
        let mut state = opencrane::fleet::fleet_state(
            support::options(),
            self.db.clone(),
            Some("example.com".into()),
            true,
            true,
            false,
        );
        if let RoleSettings::Fleet(fleet) = &mut state.role {
            fleet.identity = Some(IdentityRuntime::new(plane, store));
        }
        let auth = AuthConfig::tokens_only(vec![("test".into(), TOKEN.into())], false, Scope::Fleet, true);
        (opencrane::http::router(state.clone(), auth), state)
    }

    async fn secret_key(&self, slot: &str) -> Option<Value> {
        let secret = self.secrets.get(SECRET).await.unwrap();
        let bytes = secret.data.unwrap_or_default().remove(slot)?;
        Some(serde_json::from_slice(&bytes.0).unwrap())
    }
}

fn key_in_use(state: &AppState) -> String {
    match &state.role {
        RoleSettings::Fleet(fleet) => fleet.identity.as_ref().unwrap().plane.client().key_id(),
        RoleSettings::Silo(_) => unreachable!(),
    }
}

async fn rotate(router: &axum::Router, body: &Value) -> crate::support::Reply {
    send(router, Method::POST, "/api/v1/admin/zitadel/sa-key:rotate", Some(&body.to_string()), true).await
}

#[sqlx::test(migrations = false)]
async fn an_uploaded_key_is_validated_persisted_first_then_used(pool: PgPool) {
    let rig = rig(&pool, TimeDelta::days(90)).await;
    let (router, state) = rig.fleet(true).await;
    let fresh = rig.zitadel.add_key(&rig.key.user_id, Some(Utc::now() + TimeDelta::days(365)));
    let reply = rotate(&router, &json!({ "serviceAccountKey": fresh.to_json() })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let body = reply.json();
    assert_eq!((body["rotated"].as_bool(), body["keyId"].as_str()), (Some(true), Some(fresh.key_id.as_str())));
    assert_eq!(body["previousKeyId"], rig.key.key_id);
    assert_eq!(
        (body["validation"]["tokenExchangeOk"].as_bool(), body["validation"]["instanceScopeOk"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(key_in_use(&state), fresh.key_id);
    assert_eq!(rig.secret_key(SECRET_KEY).await.unwrap()["keyId"], fresh.key_id, "persisted in the Secret");
    assert!(rig.secrets.get(SECRET).await.unwrap().data.unwrap().contains_key("other"), "other keys stay");
    // The object form of the body works too, and key material is nowhere in the audit log.
    let third = rig.zitadel.add_key(&rig.key.user_id, None);
    let key_value: Value = serde_json::from_str(&third.to_json()).unwrap();
    assert_eq!(rotate(&router, &json!({ "serviceAccountKey": key_value })).await.status, StatusCode::OK);
    let audit: Vec<String> = sqlx::query_scalar("SELECT metadata::text FROM audit_log WHERE action LIKE 'zitadel.%'")
        .fetch_all(&rig.db)
        .await
        .unwrap();
    assert_eq!(audit.len(), 2);
    assert!(audit.iter().all(|a| !a.contains("PRIVATE KEY") && !a.contains("MII")), "{audit:?}");
}

#[sqlx::test(migrations = false)]
async fn a_bad_key_is_refused_with_a_sentence_and_the_old_key_stays(pool: PgPool) {
    let rig = rig(&pool, TimeDelta::days(90)).await;
    let (router, state) = rig.fleet(true).await;
    let good = rig.zitadel.add_key(&rig.key.user_id, None);
    let good_json: Value = serde_json::from_str(&good.to_json()).unwrap();
    let without = |field: &str| {
        let mut v = good_json.clone();
        v.as_object_mut().unwrap().remove(field);
        v
    };
    let with = |field: &str, value: Value| {
        let mut v = good_json.clone();
        v[field] = value;
        v
    };
    let plain = rig.zitadel.service_account(false, None);
    let unregistered = ServiceAccountKey { key_id: "999999".into(), ..good.clone() };
    let cases = [
        (json!("{not json"), "is not JSON"),
        (without("keyId"), "no `keyId`"),
        (without("userId"), "no `userId`"),
        (without("key"), "no `key`"),
        (with("key", json!(opencrane_zitadel::fake::EC_TEST_KEY)), "not an RSA private key"),
        (
            with("key", json!("-----BEGIN RSA PRIVATE KEY-----\nnonsense\n-----END RSA PRIVATE KEY-----\n")),
            "not a valid RSA private key",
        ),
        (with("expirationDate", json!("2020-01-01T00:00:00Z")), "expired on 2020-01-01"),
        (serde_json::from_str(&unregistered.to_json()).unwrap(), "invalid_grant"),
        (serde_json::from_str(&plain.to_json()).unwrap(), "IAM_OWNER"),
    ];
    for (key, expected) in cases {
        let reply = rotate(&router, &json!({ "serviceAccountKey": key })).await;
        assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY, "{expected}: {}", reply.text);
        let body = reply.json();
        assert_eq!(body["rotated"], false);
        let detail = body["validation"]["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(expected), "{expected}: {detail}");
        assert!(
            !reply.text.contains("-----BEGIN") && !reply.text.contains("MII"),
            "never key material: {}",
            reply.text
        );
        assert_eq!(key_in_use(&state), rig.key.key_id, "{expected}: the old key stays in use");
        assert_eq!(rig.secret_key(SECRET_KEY).await.unwrap()["keyId"], rig.key.key_id);
    }
    assert_eq!(body_code(&rotate(&router, &json!({})).await), (400, "INVALID_REQUEST".into()));
    assert_eq!(
        body_code(&rotate(&router, &json!({ "serviceAccountKey": "  " })).await),
        (400, "INVALID_REQUEST".into())
    );

    // Zitadel away: 502, nothing changed.
    rig.zitadel.fail("POST", "/oauth/v2/token", 503, 10);
    let reply = rotate(&router, &json!({ "serviceAccountKey": good_json })).await;
    rig.zitadel.clear_faults();
    assert_eq!(body_code(&reply), (502, "ZITADEL_UNREACHABLE".into()), "{}", reply.text);
    assert_eq!(key_in_use(&state), rig.key.key_id);

    // Without the Secret to persist in, rotation is refused before any validation.
    let (unpersisted, _) = rig.fleet(false).await;
    let exchanges = rig.zitadel.exchanges();
    let reply = rotate(&unpersisted, &json!({ "serviceAccountKey": good_json })).await;
    assert_eq!(body_code(&reply), (409, "SECRET_PERSISTENCE_NOT_CONFIGURED".into()));
    assert_eq!(rig.zitadel.exchanges(), exchanges);
}

fn body_code(reply: &crate::support::Reply) -> (u16, String) {
    (reply.status.as_u16(), reply.json()["code"].as_str().unwrap_or_default().to_owned())
}

#[sqlx::test(migrations = false)]
async fn a_two_phase_rotation_survives_a_restart_and_the_old_key_is_refused_after_revocation(pool: PgPool) {
    let rig = rig(&pool, TimeDelta::days(5)).await;
    let (router, state) = rig.fleet(true).await;
    let overview = send(&router, Method::GET, "/api/v1/admin/zitadel", None, true).await.json();
    assert_eq!(overview["keyId"], rig.key.key_id);
    assert_eq!(overview["daysLeft"], 4);
    assert!(overview["banners"][0]["message"].as_str().unwrap().contains("expires in 4 days"), "{overview}");

    let prepared = send(&router, Method::POST, "/api/v1/admin/zitadel/sa-key:prepare", None, true).await;
    assert_eq!(prepared.status, StatusCode::CREATED, "{}", prepared.text);
    let new_key = prepared.json()["keyId"].as_str().unwrap().to_owned();
    assert_eq!(prepared.json()["state"], "prepared");
    assert_eq!(key_in_use(&state), rig.key.key_id, "prepared, not in use");
    assert_eq!(rig.secret_key(&format!("{SECRET_KEY}.next")).await.unwrap()["keyId"], new_key);
    assert!(!prepared.text.contains("PRIVATE"), "{}", prepared.text);
    let again = send(&router, Method::POST, "/api/v1/admin/zitadel/sa-key:prepare", None, true).await;
    assert_eq!(body_code(&again), (409, "ROTATION_STATE".into()), "one rotation at a time");

    // The fleet restarts: the new process still signs with the old key and resumes the rotation.
    drop(router);
    let (router, state) = rig.fleet(true).await;
    assert_eq!(key_in_use(&state), rig.key.key_id);
    let active = send(&router, Method::POST, "/api/v1/admin/zitadel/sa-key:activate", None, true).await;
    assert_eq!(active.status, StatusCode::OK, "{}", active.text);
    assert_eq!(
        (active.json()["state"].as_str(), active.json()["previousKeyId"].as_str()),
        (Some("active"), Some(rig.key.key_id.as_str()))
    );
    assert!(active.json()["revokeAfter"].is_string(), "a grace period you can see");
    assert_eq!(key_in_use(&state), new_key);
    assert_eq!(rig.secret_key(SECRET_KEY).await.unwrap()["keyId"], new_key);
    assert!(rig.secret_key(&format!("{SECRET_KEY}.next")).await.is_none());
    // Still valid during the grace period.
    assert!(Client::new(rig.zitadel.url(), &rig.key, quick()).unwrap().token().await.is_ok());

    // Another restart, then the grace period is cut short.
    let (router, state) = rig.fleet(true).await;
    assert_eq!(key_in_use(&state), new_key, "the persisted key is the one in use after a restart");
    let revoked = send(&router, Method::POST, "/api/v1/admin/zitadel/sa-key:revoke", None, true).await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.text);
    assert_eq!(revoked.json()["state"], "done");
    assert!(!rig.zitadel.keys_of(&rig.key.user_id).contains(&rig.key.key_id));
    let refused = Client::new(rig.zitadel.url(), &rig.key, quick()).unwrap().token().await.unwrap_err();
    assert!(refused.to_string().contains("invalid_grant"), "{refused}");
    let actions: Vec<String> =
        sqlx::query_scalar("SELECT action FROM audit_log WHERE action LIKE 'zitadel.%' ORDER BY id")
            .fetch_all(&rig.db)
            .await
            .unwrap();
    assert_eq!(actions, ["zitadel.sa_key.prepare", "zitadel.sa_key.activate", "zitadel.sa_key.revoke"]);
}

#[sqlx::test(migrations = false)]
async fn two_replicas_revoking_at_the_end_of_the_grace_period_record_it_once(pool: PgPool) {
    let rig = rig(&pool, TimeDelta::days(90)).await;
    let (router, _) = rig.fleet(true).await;
    assert_eq!(
        send(&router, Method::POST, "/api/v1/admin/zitadel/sa-key:prepare", None, true).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        send(&router, Method::POST, "/api/v1/admin/zitadel/sa-key:activate", None, true).await.status,
        StatusCode::OK
    );
    sqlx::query("UPDATE zitadel_key_rotations SET revoke_after = now() - interval '1 minute'")
        .execute(&rig.db)
        .await
        .unwrap();
    // Two fleet replicas whose minute ticks coincide.
    let ((_, a), (_, b)) = (rig.fleet(true).await, rig.fleet(true).await);
    tokio::join!(app::service::fleet::identity::revoke_due(&a), app::service::fleet::identity::revoke_due(&b));
    assert!(!rig.zitadel.keys_of(&rig.key.user_id).contains(&rig.key.key_id), "the old key is revoked");
    let state: String = sqlx::query_scalar("SELECT state FROM zitadel_key_rotations").fetch_one(&rig.db).await.unwrap();
    assert_eq!(state, "done");
    let recorded: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE action = 'zitadel.sa_key.revoke'")
        .fetch_one(&rig.db)
        .await
        .unwrap();
    assert_eq!(recorded, 1, "one revocation, one audit entry");
}

#[sqlx::test(migrations = false)]
async fn an_upload_during_a_prepared_rotation_cancels_it_and_deletes_the_minted_key(pool: PgPool) {
    let rig = rig(&pool, TimeDelta::days(90)).await;
    let (router, state) = rig.fleet(true).await;
    let prepared = send(&router, Method::POST, "/api/v1/admin/zitadel/sa-key:prepare", None, true).await.json();
    let minted = prepared["keyId"].as_str().unwrap().to_owned();
    let uploaded = rig.zitadel.add_key(&rig.key.user_id, None);
    assert_eq!(rotate(&router, &json!({ "serviceAccountKey": uploaded.to_json() })).await.status, StatusCode::OK);
    assert_eq!(key_in_use(&state), uploaded.key_id);
    assert!(!rig.zitadel.keys_of(&rig.key.user_id).contains(&minted), "the minted key is deleted in Zitadel");
    assert!(rig.secret_key(&format!("{SECRET_KEY}.next")).await.is_none());
    let states: Vec<String> = sqlx::query_scalar("SELECT state FROM zitadel_key_rotations ORDER BY prepared_at")
        .fetch_all(&rig.db)
        .await
        .unwrap();
    assert_eq!(states, ["cancelled", "done"]);
}

#[sqlx::test(migrations = false)]
async fn reconcile_heals_incomplete_customers_and_adopts_organisation_users(pool: PgPool) {
    let rig = rig(&pool, TimeDelta::days(90)).await;
    let (router, _) = rig.fleet(true).await;
    sqlx::query("INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme'), ('globex', 'Globex')")
        .execute(&rig.db)
        .await
        .unwrap();
    let reply = send(&router, Method::POST, "/api/v1/admin/zitadel/reconcile", Some(r#"{"name":"acme"}"#), true).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let report = reply.json();
    assert_eq!(report["reconciled"], json!(["acme"]), "{report}");
    let org: Option<String> = sqlx::query_scalar("SELECT zitadel_org_id FROM cluster_tenants WHERE name = 'acme'")
        .fetch_one(&rig.db)
        .await
        .unwrap();
    let org = org.expect("healed");
    let release: String =
        sqlx::query_scalar("SELECT state FROM provisioning_steps WHERE cluster_tenant = 'acme' AND step = 'release'")
            .fetch_optional(&rig.db)
            .await
            .unwrap()
            .unwrap_or_else(|| "pending".into());
    assert_eq!(release, "pending", "the release runs again with the new ids");
    let shown = send(&router, Method::GET, "/api/v1/cluster-tenants/acme", None, true).await.json();
    assert_eq!(shown["zitadel"]["orgId"], org.as_str());
    assert_eq!(
        shown["zitadel"]["consoleUrl"].as_str(),
        Some(format!("{}/ui/console/orgs/{org}", rig.zitadel.url()).as_str()),
        "the customer links to its organisation"
    );

    // A user who signed up in the customer's organisation becomes a member on the next pass.
    let ada = rig.zitadel.add_human(&org, "ada@acme.example");
    // As the reconciler leaves a converged customer: not due.
    sqlx::query("UPDATE cluster_tenants SET observed_generation = generation, phase = 'ready' WHERE name = 'acme'")
        .execute(&rig.db)
        .await
        .unwrap();
    assert!(!opencrane_fleet_db::provisioning::due(&rig.db).await.unwrap().iter().any(|d| d.name == "acme"));
    let report = send(&router, Method::POST, "/api/v1/admin/zitadel/reconcile", None, true).await.json();
    let skipped: Vec<(String, String)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap().into(), s["reason"].as_str().unwrap().into()))
        .collect();
    assert!(skipped.contains(&("acme".into(), "already-provisioned".into())), "{report}");
    assert_eq!(report["reconciled"], json!(["globex"]));
    let acme = report["memberAdoption"].as_array().unwrap().iter().find(|a| a["name"] == "acme").unwrap().clone();
    assert_eq!(acme["adopted"], 1, "{report}");
    let role: String =
        sqlx::query_scalar("SELECT role FROM org_memberships WHERE cluster_tenant = 'acme' AND subject = $1")
            .bind(&ada)
            .fetch_one(&rig.db)
            .await
            .unwrap();
    assert_eq!(role, "member");
    assert!(
        opencrane_fleet_db::provisioning::due(&rig.db).await.unwrap().iter().any(|d| d.name == "acme"),
        "the identity step runs again to grant the adopted member"
    );
    let shown = send(&router, Method::GET, "/api/v1/admin/zitadel", None, true).await.json();
    assert_eq!(shown["lastReconcile"]["reconciled"], json!(["globex"]), "the page shows the last pass");
}

#[sqlx::test(migrations = false)]
async fn member_changes_reach_the_organisations_grants(pool: PgPool) {
    let rig = rig(&pool, TimeDelta::days(90)).await;
    let (router, state) = rig.fleet(true).await;
    sqlx::query("INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme')")
        .execute(&rig.db)
        .await
        .unwrap();
    let plane = match &state.role {
        RoleSettings::Fleet(fleet) => fleet.identity.as_ref().unwrap().plane.clone(),
        RoleSettings::Silo(_) => unreachable!(),
    };
    // The identity step, as the provisioner runs it.
    let converge = || async {
        let row = opencrane_fleet_db::cluster_tenants::get(&rig.db, "acme").await.unwrap();
        let desired = opencrane_provision::spec::Desired::from_row(&row).unwrap();
        let ids = opencrane_fleet_db::cluster_tenants::ZitadelIds::of(&row);
        plane.converge(&rig.db, &desired, &ids).await.unwrap();
    };
    converge().await;
    let org: String = sqlx::query_scalar("SELECT zitadel_org_id FROM cluster_tenants WHERE name = 'acme'")
        .fetch_one(&rig.db)
        .await
        .unwrap();
    let ada = rig.zitadel.add_human(&org, "ada@acme.example");
    // Converged, as the reconciler leaves it: not due, the identity step done.
    sqlx::query("UPDATE cluster_tenants SET observed_generation = generation, phase = 'ready' WHERE name = 'acme'")
        .execute(&rig.db)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO provisioning_steps (cluster_tenant, step, state, reason, generation)
         VALUES ('acme', 'identity', 'done', 'OrganisationReady', 1)",
    )
    .execute(&rig.db)
    .await
    .unwrap();
    assert!(!opencrane_fleet_db::provisioning::due(&rig.db).await.unwrap().iter().any(|d| d.name == "acme"));

    let body = json!({ "subject": ada, "role": "member" }).to_string();
    let added = send(&router, Method::POST, "/api/v1/cluster-tenants/acme/members", Some(&body), true).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.text);
    let (state_now, reason): (String, String) = sqlx::query_as(
        "SELECT state, reason FROM provisioning_steps WHERE cluster_tenant = 'acme' AND step = 'identity'",
    )
    .fetch_one(&rig.db)
    .await
    .unwrap();
    assert_eq!((state_now.as_str(), reason.as_str()), ("pending", "Requeued"), "the identity step runs again");
    assert!(opencrane_fleet_db::provisioning::due(&rig.db).await.unwrap().iter().any(|d| d.name == "acme"));
    converge().await;
    assert_eq!(rig.zitadel.grants(&org).iter().filter(|g| g.user_id == ada).count(), 1);

    // The removal offboards in order, the grant first: while Zitadel cannot delete it, nothing
    // is removed (before, the row went first and a failed grant deletion was only logged).
    let path = format!("/api/v1/cluster-tenants/acme/members/{ada}");
    let grant = rig.zitadel.grants(&org).into_iter().find(|g| g.user_id == ada).unwrap();
    rig.zitadel.fail("DELETE", &format!("/grants/{}", grant.id), 503, 20);
    let refused = send(&router, Method::DELETE, &path, None, true).await;
    assert_eq!(
        (refused.status, refused.json()["code"].clone()),
        (StatusCode::BAD_GATEWAY, json!("ZITADEL_UNREACHABLE"))
    );
    let members = send(&router, Method::GET, "/api/v1/cluster-tenants/acme/members", None, true).await;
    assert!(members.json().as_array().unwrap().iter().any(|m| m["subject"] == ada.as_str()), "still a member");
    assert_eq!(rig.zitadel.grants(&org).iter().filter(|g| g.user_id == ada).count(), 1, "and still granted");
    rig.zitadel.clear_faults();
    assert_eq!(send(&router, Method::DELETE, &path, None, true).await.status, StatusCode::OK);
    assert!(rig.zitadel.grants(&org).iter().all(|g| g.user_id != ada), "a removed member's grant is deleted");
}

#[sqlx::test(migrations = false)]
async fn only_operators_reach_the_identity_plane(pool: PgPool) {
    let rig = rig(&pool, TimeDelta::days(90)).await;
    let (router, _) = rig.fleet(true).await;
    let owner = support::browser(&support::session_cookie(&rig.db, "otto", false, false).await);
    for path in ["/api/v1/admin/zitadel/sa-key:prepare", "/api/v1/admin/zitadel/reconcile"] {
        let reply = support::send_as(&router, Method::POST, path, Some("{}"), &owner).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{path}: {}", reply.text);
        assert!(reply.text.contains("FORBIDDEN_NOT_PLATFORM_OPERATOR"));
        let anonymous = support::send_as(&router, Method::POST, path, Some("{}"), &support::browser("")).await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED, "{path}");
    }
    assert!(rig.zitadel.keys_of(&rig.key.user_id).len() == 1, "nothing was minted");
}
