//! The identity step against the fake Zitadel (`opencrane_zitadel::fake`, built from Zitadel's
//! documented API shapes; no Zitadel can run here) and a real fleet database: fresh → ready, a
//! converged pass writes nothing to Zitadel, a fault at each Zitadel call converges without
//! duplicates (compensating a half-made organisation), healing of ids Zitadel no longer knows,
//! the vanity host in the callbacks, and teardown by termination policy.

use std::time::Duration;

use opencrane_fleet_db::{
    cluster_tenants::{self, DesiredState, ZitadelIds},
    memberships, provisioning,
};
use opencrane_provision::{
    StepId,
    identity::IdentityPlane,
    reconcile::{Outcome, reconcile, reconcile_with},
    spec::SiloIdentity,
};
use opencrane_zitadel::{Client, Timeouts, fake::FakeZitadel};
use serde_json::json;
use sqlx::PgPool;

use crate::reconcile::{FakeCluster, write_marks};

struct Rig {
    zitadel: FakeZitadel,
    plane: IdentityPlane,
    cluster: FakeCluster,
    /// A human user of the fleet's own organisation: the customers' first Owner.
    owner: String,
}

async fn rig() -> Rig {
    let zitadel = FakeZitadel::start().await.unwrap();
    let key = zitadel.service_account(true, None);
    let timeouts = Timeouts { backoff: Duration::from_millis(5), ..Timeouts::default() };
    let client = Client::new(zitadel.url(), &key, timeouts).unwrap();
    let owner = zitadel.add_human(&zitadel.masters_org().unwrap(), "ada@acme.example");
    Rig { plane: IdentityPlane::new(client, "opencrane.example"), cluster: FakeCluster::default(), zitadel, owner }
}

async fn seed(pool: &PgPool, rig: &Rig, name: &str, policy: &str) {
    let quota = json!({});
    cluster_tenants::insert(pool, name, &DesiredState::shared("Acme Corp", &quota, policy)).await.unwrap();
    let mut tx = pool.begin().await.unwrap();
    memberships::upsert(&mut tx, name, &rig.owner, "owner").await.unwrap();
    tx.commit().await.unwrap();
}

async fn ids(pool: &PgPool, name: &str) -> ZitadelIds {
    ZitadelIds::of(&cluster_tenants::get(pool, name).await.unwrap())
}

async fn step(pool: &PgPool, name: &str) -> (String, String, String) {
    let row = provisioning::steps(pool, name).await.unwrap().into_iter().find(|r| r.step == "identity").unwrap();
    (row.state, row.reason, row.message)
}

async fn run(pool: &PgPool, rig: &Rig, name: &str) -> Outcome {
    reconcile_with(pool, &rig.cluster, Some(&rig.plane), name).await.unwrap()
}

/// Exactly one organisation for `name`, holding one project with the three roles, one login
/// app and one grant of `owner` to the Owner; answers its id.
fn exactly_one_org(rig: &Rig, name: &str) -> String {
    let orgs: Vec<_> = rig.zitadel.orgs().into_iter().filter(|o| o.name == format!("Acme Corp ({name})")).collect();
    assert_eq!(orgs.len(), 1, "{name}: one organisation, not {orgs:?}");
    let org = &orgs[0].id;
    let projects = rig.zitadel.projects(org);
    assert_eq!(projects.len(), 1, "{name}: one project");
    assert_eq!(projects[0].roles.keys().collect::<Vec<_>>(), ["admin", "member", "owner"]);
    assert_eq!(rig.zitadel.apps(org).len(), 1, "{name}: one login app");
    let grants = rig.zitadel.grants(org);
    assert_eq!(grants.len(), 1, "{name}: one grant");
    assert_eq!(
        (grants[0].user_id.as_str(), grants[0].roles.as_slice()),
        (rig.owner.as_str(), ["owner".to_owned()].as_slice())
    );
    org.clone()
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_fresh_customer_gets_its_organisation_and_the_release_its_login_app(pool: PgPool) {
    let rig = rig().await;
    seed(&pool, &rig, "acme", "Retain").await;
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);

    let org = exactly_one_org(&rig, "acme");
    let stored = ids(&pool, "acme").await;
    assert!(stored.is_complete(), "{stored:?}");
    assert_eq!(stored.org_id.as_deref(), Some(org.as_str()));
    assert_eq!(stored.redirect_uri.as_deref(), Some("https://acme.opencrane.example/api/v1/auth/callback"));
    let app = &rig.zitadel.apps(&org)[0];
    assert_eq!(Some(&app.client_id), stored.client_id.as_ref());
    assert_eq!(app.config["redirectUris"], json!(["https://acme.opencrane.example/api/v1/auth/callback"]));
    assert_eq!(app.config["authMethodType"], "OIDC_AUTH_METHOD_TYPE_NONE", "a public PKCE client: no secret");
    assert_eq!(rig.zitadel.org(&org).unwrap().members.get(&rig.owner), Some(&vec!["ORG_OWNER".to_owned()]));

    let (state, reason, message) = step(&pool, "acme").await;
    assert_eq!((state.as_str(), reason.as_str()), ("done", "OrganisationReady"));
    assert!(message.contains("1 Owner and 0 other members granted"), "{message}");
    // The release carries the organisation's own client: the silo signs in its own users.
    let released = rig.cluster.released.lock().unwrap().last().cloned().unwrap();
    assert_eq!(released.1, SiloIdentity::of(stored.org_id.as_deref(), stored.client_id.as_deref()));
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_converged_pass_writes_nothing_to_zitadel_or_the_database(pool: PgPool) {
    let rig = rig().await;
    seed(&pool, &rig, "acme", "Retain").await;
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    let (writes, marks) = (rig.zitadel.writes(), write_marks(&pool, "acme").await);
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    assert_eq!(rig.zitadel.writes(), writes, "zero Zitadel writes on a converged pass");
    assert_eq!(write_marks(&pool, "acme").await, marks, "and no database write");
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_fault_at_each_zitadel_call_converges_without_duplicates(pool: PgPool) {
    let rig = rig().await;
    let calls = [
        ("POST", "/v2/organizations"),
        ("POST", "/management/v1/projects/_search"),
        ("POST", "/management/v1/projects"),
        ("POST", "/roles/_search"),
        ("POST", "/roles/_bulk"),
        ("POST", "/apps/_search"),
        ("POST", "/apps/oidc"),
        ("POST", "/users/grants/_search"),
        ("POST", "/grants"),
        ("POST", "/orgs/me/members/_search"),
        ("POST", "/orgs/me/members"),
    ];
    for (index, (method, suffix)) in calls.into_iter().enumerate() {
        let name = format!("acme{index}");
        seed(&pool, &rig, &name, "Retain").await;
        rig.zitadel.fail(method, suffix, 503, 10);
        let failed = run(&pool, &rig, &name).await;
        rig.zitadel.clear_faults();
        assert_eq!(failed, Outcome::Failed(StepId::Identity), "{method} {suffix}");
        let (state, reason, message) = step(&pool, &name).await;
        assert_eq!((state.as_str(), reason.as_str()), ("failed", "ZitadelUnavailable"), "{suffix}: {message}");
        assert!(message.contains("Zitadel answered 503"), "{message}");
        let row = cluster_tenants::get(&pool, &name).await.unwrap();
        assert_eq!(row.phase, "failed", "a Zitadel outage is a failed step, and the customer stays");
        if suffix != "/v2/organizations" {
            // The organisation made on the failed pass was deleted again (or kept for healing).
            let left = rig.zitadel.orgs().into_iter().filter(|o| o.name == format!("Acme Corp ({name})")).count();
            assert!(left <= 1, "{suffix}: {left} organisations");
        }
        assert_eq!(run(&pool, &rig, &name).await, Outcome::Converged, "{suffix}");
        exactly_one_org(&rig, &name);
        assert!(ids(&pool, &name).await.is_complete());
    }
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_half_made_organisation_is_deleted_when_its_pass_fails(pool: PgPool) {
    let rig = rig().await;
    seed(&pool, &rig, "acme", "Retain").await;
    rig.zitadel.fail("POST", "/apps/oidc", 400, 1);
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Failed(StepId::Identity));
    assert!(rig.zitadel.orgs().iter().all(|o| o.name != "Acme Corp (acme)"), "no half-made organisation is left");
    assert_eq!(ids(&pool, "acme").await, ZitadelIds::default());
    let (_, reason, message) = step(&pool, "acme").await;
    assert_eq!(reason, "ZitadelRefused");
    assert!(message.contains("deleted again"), "{message}");
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn ids_zitadel_lost_or_never_stored_are_healed_not_duplicated(pool: PgPool) {
    let rig = rig().await;
    seed(&pool, &rig, "acme", "Retain").await;
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    let first = ids(&pool, "acme").await;

    // The app's ids were lost (an older fleet, a failed write): the app is adopted, not made twice.
    let partial = ZitadelIds { app_id: None, client_id: None, ..first.clone() };
    cluster_tenants::set_zitadel_ids(&pool, "acme", &partial).await.unwrap();
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    assert_eq!(ids(&pool, "acme").await, first);
    exactly_one_org(&rig, "acme");

    // The organisation was deleted in the console: a new one is made and the release follows.
    rig.zitadel.remove_org(first.org_id.as_deref().unwrap());
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    let healed = ids(&pool, "acme").await;
    assert!(healed.is_complete() && healed.org_id != first.org_id, "{healed:?}");
    exactly_one_org(&rig, "acme");
    let released = rig.cluster.released.lock().unwrap().last().cloned().unwrap();
    assert_eq!(released.1, SiloIdentity::of(healed.org_id.as_deref(), healed.client_id.as_deref()));
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn the_vanity_host_joins_the_callbacks_when_it_is_set(pool: PgPool) {
    let rig = rig().await;
    seed(&pool, &rig, "acme", "Retain").await;
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    let quota = json!({});
    let vanity =
        DesiredState { vanity_domain: Some("portal.acme.io"), ..DesiredState::shared("Acme Corp", &quota, "Retain") };
    cluster_tenants::update_desired(&pool, "acme", &vanity).await.unwrap();
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    let org = exactly_one_org(&rig, "acme");
    let config = &rig.zitadel.apps(&org)[0].config;
    assert_eq!(
        config["redirectUris"],
        json!(["https://acme.opencrane.example/api/v1/auth/callback", "https://portal.acme.io/api/v1/auth/callback"])
    );
    assert_eq!(config["postLogoutRedirectUris"], json!(["https://acme.opencrane.example/", "https://portal.acme.io/"]));
    let writes = rig.zitadel.writes();
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    assert_eq!(rig.zitadel.writes(), writes, "in step: no further update");
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn every_member_holds_their_role_and_a_suspended_one_loses_the_grant(pool: PgPool) {
    let rig = rig().await;
    seed(&pool, &rig, "acme", "Retain").await;
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    let org = ids(&pool, "acme").await.org_id.unwrap();
    let ada = rig.zitadel.add_human(&org, "ada@acme.example");
    let bob = rig.zitadel.add_human(&org, "bob@acme.example");
    let mut tx = pool.begin().await.unwrap();
    memberships::upsert(&mut tx, "acme", &ada, "admin").await.unwrap();
    memberships::upsert(&mut tx, "acme", &bob, "member").await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    let role_of = |user: &str| {
        rig.zitadel.grants(&org).into_iter().find(|g| g.user_id == user).map(|g| (g.roles.clone(), g.inactive))
    };
    assert_eq!(role_of(&ada), Some((vec!["admin".to_owned()], false)));
    assert_eq!(role_of(&bob), Some((vec!["member".to_owned()], false)));

    // Bob is suspended, Ada promoted: Bob's grant is deactivated (his account untouched), Ada's
    // grant carries the new role (one grant, updated in place).
    let mut tx = pool.begin().await.unwrap();
    memberships::set_status(&mut tx, "acme", &bob, "suspended").await.unwrap();
    memberships::upsert(&mut tx, "acme", &ada, "owner").await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    assert_eq!(role_of(&bob), Some((vec!["member".to_owned()], true)));
    assert_eq!(role_of(&ada), Some((vec!["owner".to_owned()], false)));
    assert_eq!(rig.zitadel.grants(&org).len(), 3, "one grant per member");
    let (_, _, message) = step(&pool, "acme").await;
    assert!(message.contains("2 Owners and 0 other members granted; 1 suspended member without access"), "{message}");
    let writes = rig.zitadel.writes();
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    assert_eq!(rig.zitadel.writes(), writes, "in line: nothing written");
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn the_organisation_is_renamed_with_the_display_name(pool: PgPool) {
    let rig = rig().await;
    seed(&pool, &rig, "acme", "Retain").await;
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    let org = ids(&pool, "acme").await.org_id.unwrap();
    let quota = json!({});
    cluster_tenants::update_desired(&pool, "acme", &DesiredState::shared("Acme Group", &quota, "Retain"))
        .await
        .unwrap();
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    assert_eq!(rig.zitadel.org(&org).unwrap().name, "Acme Group (acme)", "renamed in place, not a new org");
    assert_eq!(ids(&pool, "acme").await.org_id.as_deref(), Some(org.as_str()));
    let writes = rig.zitadel.writes();
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    assert_eq!(rig.zitadel.writes(), writes);
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn deletion_follows_the_termination_policy(pool: PgPool) {
    let rig = rig().await;
    for (name, policy) in [("gone", "Delete"), ("kept", "Retain")] {
        seed(&pool, &rig, name, policy).await;
        assert_eq!(run(&pool, &rig, name).await, Outcome::Converged);
        let org = ids(&pool, name).await.org_id.unwrap();
        provisioning::request_deletion(&pool, name).await.unwrap();
        assert_eq!(run(&pool, &rig, name).await, Outcome::Deleted, "{name}");
        assert_eq!(rig.zitadel.org(&org).is_some(), policy == "Retain", "{name}: the organisation follows the policy");
    }
    let held = opencrane_fleet_db::tombstones::get(&pool, "kept").await.unwrap().unwrap();
    assert!(held.retained.to_string().contains("Zitadel organisation"), "{}", held.retained);
    let gone = opencrane_fleet_db::tombstones::get(&pool, "gone").await.unwrap();
    assert!(gone.is_none(), "nothing kept, nothing held");
}

/// A re-attach (the service layer stores the tombstone's organisation on the new row) converges
/// on the kept organisation: its project and login app are adopted by their managed names, not
/// made again, and no second organisation appears (Zitadel's org names are instance-unique, so
/// before the tombstone remembered the org the new one could not even be created).
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_reattached_customer_gets_its_kept_organisation_back(pool: PgPool) {
    let rig = rig().await;
    seed(&pool, &rig, "acme", "Retain").await;
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);
    let before = ids(&pool, "acme").await;
    provisioning::request_deletion(&pool, "acme").await.unwrap();
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Deleted);
    let held = opencrane_fleet_db::tombstones::get(&pool, "acme").await.unwrap().unwrap();
    assert_eq!(held.zitadel_org_id, before.org_id, "the tombstone remembers the kept organisation");

    // What the service layer does on an operator's re-attach.
    opencrane_fleet_db::tombstones::remove(&pool, "acme").await.unwrap();
    seed(&pool, &rig, "acme", "Retain").await;
    let kept = ZitadelIds { org_id: held.zitadel_org_id.clone(), ..ZitadelIds::default() };
    cluster_tenants::set_zitadel_ids(&pool, "acme", &kept).await.unwrap();
    assert_eq!(run(&pool, &rig, "acme").await, Outcome::Converged);

    let org = exactly_one_org(&rig, "acme");
    let after = ids(&pool, "acme").await;
    assert_eq!(Some(org), before.org_id, "the same organisation");
    assert_eq!(
        (after.project_id, after.app_id, after.client_id),
        (before.project_id, before.app_id, before.client_id),
        "its project and login app adopted"
    );
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn without_zitadel_the_step_says_so_and_is_skipped(pool: PgPool) {
    let rig = rig().await;
    seed(&pool, &rig, "acme", "Retain").await;
    assert_eq!(reconcile(&pool, &rig.cluster, "acme").await.unwrap(), Outcome::Converged);
    let (state, reason, message) = step(&pool, "acme").await;
    assert_eq!((state.as_str(), reason.as_str()), ("skipped", "NotConfigured"));
    assert!(message.contains("ZITADEL_MGMT_API_URL"), "{message}");
    assert!(rig.zitadel.orgs().iter().all(|o| o.name == "masters"));
}
