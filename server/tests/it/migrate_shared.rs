//! The migration from the original's shared database (`opencrane_migrate`), against real
//! PostgreSQL databases: the source is the original's schema written from the reference
//! (`fixtures/shared_original.sql`), the fleet this project's, and each customer's silo database
//! one of its own. The provisioner is not part of these tests: [`TestSilos`] hands out a freshly
//! migrated silo database per customer, as the local provisioner would (the end-to-end test with
//! `opencrane dev` covers that path, and a kill -9 in the middle of a copy).

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Mutex,
};

use opencrane_migrate::{Error, Options, Phase, Reach, Silos, run::run};
use opencrane_portal::seal::SecretBox;
use sqlx::{PgPool, Row as _, postgres::PgPoolOptions};

use crate::support;

const FIXTURE: &str = include_str!("../../../crates/migrate/fixtures/shared_original.sql");

/// One silo database per customer, created (and migrated) the first time it is asked for, on
/// the test's PostgreSQL; all sealed with one key.
struct TestSilos {
    admin: PgPool,
    key: String,
    made: Mutex<BTreeMap<String, PgPool>>,
}

impl TestSilos {
    fn new(admin: &PgPool) -> Self {
        Self { admin: admin.clone(), key: SecretBox::generate_base64().unwrap(), made: Mutex::default() }
    }

    fn pool(&self, customer: &str) -> PgPool {
        self.made.lock().unwrap()[customer].clone()
    }

    async fn database(&self, customer: &str) -> PgPool {
        if let Some(pool) = self.made.lock().unwrap().get(customer) {
            return pool.clone();
        }
        let pool = support::silo_db(&self.admin).await;
        self.made.lock().unwrap().insert(customer.to_owned(), pool.clone());
        pool
    }
}

#[async_trait::async_trait]
impl Silos for TestSilos {
    async fn reach(&self, customer: &str) -> Result<Option<Reach>, Error> {
        Ok(Some(Reach::Database(self.database(customer).await)))
    }

    fn credentials_key(&self, _customer: &str) -> Option<SecretBox> {
        SecretBox::from_base64(&self.key).ok()
    }
}

/// A new database holding the original's shared schema and seed; its URL.
async fn source(admin: &PgPool, sql: &str) -> String {
    let name = format!("shared_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE \"{name}\"")).execute(admin).await.unwrap();
    let options = (*admin.connect_options()).clone().database(&name);
    let pool = PgPoolOptions::new().max_connections(1).connect_with(options).await.unwrap();
    sqlx::raw_sql(sql).execute(&pool).await.unwrap();
    pool.close().await;
    // The test server's URL with this database.
    let server = std::env::var("DATABASE_URL").unwrap();
    let base = server.rsplit_once('/').map_or(server.as_str(), |(base, _)| base);
    format!("{base}/{name}")
}

/// Every row of every table of the source, as text, to show it never changes.
async fn fingerprint(url: &str) -> String {
    let pool = PgPoolOptions::new().max_connections(1).connect(url).await.unwrap();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let mut out = String::new();
    for t in tables {
        let rows: Vec<String> =
            sqlx::query_scalar(&format!("SELECT to_jsonb(t)::text FROM public.\"{t}\" t ORDER BY 1"))
                .fetch_all(&pool)
                .await
                .unwrap();
        out.push_str(&format!("{t}:{}\n", rows.join("|")));
    }
    pool.close().await;
    out
}

fn options(until: Phase) -> Options {
    Options { until, ..Options::default() }
}

async fn names(pool: &PgPool, sql: &str) -> BTreeSet<String> {
    sqlx::query_scalar(sql).fetch_all(pool).await.unwrap().into_iter().collect()
}

#[sqlx::test(migrations = false)]
async fn the_shared_database_moves_into_one_database_per_silo(pool: PgPool) {
    let fleet = support::fleet_db(&pool).await;
    let url = source(&pool, FIXTURE).await;
    let before = fingerprint(&url).await;
    let silos = TestSilos::new(&pool);
    let quiet = |_| {};

    // Preflight: the plan, and nothing written anywhere.
    let plan = run(&url, &fleet, &silos, &options(Phase::Preflight), &quiet).await.unwrap();
    let customers: Vec<&str> = plan.customers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(customers, ["acme", "globex", "initech"]);
    assert_eq!(plan.customers[0].rows["tenants"], 202);
    assert_eq!(plan.customers[0].rows["group_members"], 204, "202 in everyone, 2 in acme-eng");
    let unplaced: BTreeSet<(String, String)> = plan.unplaced.iter().map(|u| (u.table.clone(), u.row.clone())).collect();
    for expected in [
        ("tenants", "drifter"),
        ("groups", "ghosts (g-ghost)"),
        ("groups", "Bad Name! (g-bad)"),
        ("groups.members", "ghosts/nobody-here"),
        ("grants", "gr3"),
        ("grants", "gr4"),
        ("access_tokens", "t2"),
        ("access_tokens", "t3"),
        ("access_policies", "gone-only"),
        ("groups", "verbose (g-long)"),
    ] {
        assert!(unplaced.contains(&(expected.0.to_owned(), expected.1.to_owned())), "{expected:?} in {unplaced:?}");
    }
    assert!(plan.unplaced.iter().any(|u| u.table == "audit_log" && u.row.starts_with("1 entries")), "{unplaced:?}");
    assert_eq!(plan.unplaced.len(), 11, "{:#?}", plan.unplaced);
    let count = |sql: &'static str| {
        let fleet = fleet.clone();
        async move { sqlx::query_scalar::<_, i64>(sql).fetch_one(&fleet).await.unwrap() }
    };
    assert_eq!(count("SELECT count(*) FROM cluster_tenants").await, 0, "preflight changes nothing");
    assert_eq!(count("SELECT count(*) FROM shared_migrations").await, 0);
    assert!(silos.made.lock().unwrap().is_empty());

    // The whole migration.
    let report = run(&url, &fleet, &silos, &Options::default(), &quiet).await.unwrap();
    assert!(report.complete(), "{report:#?}");
    assert!(report.customers.iter().all(|c| c.phase == "cut-over" && c.checks.iter().all(|t| t.agrees())));
    let json = serde_json::to_string(&report).unwrap();
    assert!(!json.contains("sk-legacy-mistral"), "the legacy key never reaches the report");

    // The fleet: customers as they were, their members, every billing account.
    let row = sqlx::query(
        "SELECT display_name, vanity_domain, seat_cap, termination_policy FROM cluster_tenants WHERE name = 'acme'",
    )
    .fetch_one(&fleet)
    .await
    .unwrap();
    assert_eq!(row.get::<String, _>("display_name"), "Acme Ünïcødé GmbH");
    assert_eq!(row.get::<Option<String>, _>("vanity_domain").as_deref(), Some("portal.acme.example"));
    assert_eq!(row.get::<Option<i32>, _>("seat_cap"), Some(500));
    assert_eq!(row.get::<String, _>("termination_policy"), "Retain");
    assert_eq!(
        names(&fleet, "SELECT cluster_tenant || ':' || subject || ':' || role || ':' || status FROM org_memberships")
            .await,
        [
            "acme:ana:owner:active",
            "acme:ben:member:active",
            "acme:gus:member:suspended",
            "globex:gia:owner:active",
            "initech:ana:admin:active",
            "initech:ian:owner:active"
        ]
        .map(str::to_owned)
        .into()
    );
    assert_eq!(names(&fleet, "SELECT subject || ':' || coalesce(email, '') FROM billing_accounts").await.len(), 2);
    assert_eq!(count("SELECT count(*) FROM audit_log WHERE action = 'cluster_tenant.migrate'").await, 3);

    // Isolation, row for row: each silo holds exactly its customer's data.
    let acme = silos.pool("acme");
    let globex = silos.pool("globex");
    let initech = silos.pool("initech");
    let mut acme_users: BTreeSet<String> = (1..=200).map(|i| format!("u{i:03}")).collect();
    acme_users.extend(["ana-ws".to_owned(), "ben-ws".to_owned()]);
    assert_eq!(names(&acme, "SELECT name FROM tenants").await, acme_users);
    assert_eq!(
        names(&globex, "SELECT name || ':' || display_name FROM tenants").await,
        ["gia-ws:Gią 株式".to_owned()].into()
    );
    assert_eq!(
        names(&initech, "SELECT name FROM tenants").await,
        ["ian-ws".to_owned()].into(),
        "placed by its only membership"
    );
    assert_eq!(
        names(&acme, "SELECT subject FROM org_memberships").await,
        ["ana", "ben", "gus"].map(str::to_owned).into()
    );
    assert_eq!(
        names(&initech, "SELECT subject || ':' || role FROM org_memberships").await,
        ["ana:admin", "ian:owner"].map(str::to_owned).into()
    );
    let everyone: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM group_members m JOIN groups g ON g.id = m.group_id WHERE g.name = 'everyone'",
    )
    .fetch_one(&acme)
    .await
    .unwrap();
    assert_eq!(everyone, 202);
    assert_eq!(
        names(&globex, "SELECT g.name || ':' || m.tenant FROM group_members m JOIN groups g ON g.id = m.group_id")
            .await,
        ["globex-team:gia-ws".to_owned()].into()
    );
    assert_eq!(
        names(&acme, "SELECT name FROM access_policies").await,
        ["acme-only", "baseline"].map(str::to_owned).into()
    );
    assert_eq!(names(&globex, "SELECT name FROM access_policies").await, ["baseline".to_owned()].into());
    assert_eq!(
        names(&acme, "SELECT payload_id || ':' || subject_type || ':' || access FROM grants").await,
        ["mcp-jira:tenant:deny", "sb-review:group:allow"].map(str::to_owned).into()
    );
    assert_eq!(
        names(&globex, "SELECT payload_id || ':' || subject_id FROM grants").await,
        ["mcp-wiki:gia".to_owned()].into()
    );
    assert_eq!(
        names(&acme, "SELECT level || ':' || coalesce(tenant, '') || ':' || amount || ' ' || currency FROM budgets")
            .await,
        ["silo::1000.00 USD", "user:ben-ws:50.50 EUR"].map(str::to_owned).into()
    );
    assert!(
        names(&globex, "SELECT tenant || ':' || amount FROM budgets WHERE level = 'user'")
            .await
            .contains("gia-ws:25.00")
    );
    assert_eq!(
        names(&acme, "SELECT name || ':' || coalesce(secret_ref, 'sealed') FROM provider_credentials").await,
        ["anthropic:acme-anthropic/api-key", "mistral:sealed", "openai:openai-key"].map(str::to_owned).into()
    );
    assert_eq!(
        names(&globex, "SELECT name FROM provider_credentials").await,
        ["mistral", "openai"].map(str::to_owned).into()
    );
    assert_eq!(names(&acme, "SELECT model FROM model_defaults").await, ["claude".to_owned()].into());
    assert_eq!(names(&globex, "SELECT public_name FROM model_definitions").await, ["gpt-4o".to_owned()].into());
    assert_eq!(names(&acme, "SELECT action FROM audit_log").await, ["tenant.create".to_owned()].into());
    assert!(names(&globex, "SELECT metadata->>'message' FROM audit_log").await.contains("créé"));
    // The legacy key is sealed under the silo's key, and opens to what it was.
    let sealed = opencrane_silo_db::models::credentials(&acme).await.unwrap();
    let mistral = sealed.iter().find(|c| c.name == "mistral").unwrap();
    let secret = opencrane_silo_db::models::credential_secret(&acme, mistral.id).await.unwrap().unwrap();
    let key = silos.credentials_key("acme").unwrap();
    assert_eq!(key.open(&secret, "credential:mistral").unwrap(), b"sk-legacy-mistral-SECRET-4242");
    // Issued tokens keep working: the hash carried over.
    let plain = format!("ocp_{}", "b".repeat(48));
    let digest = <sha2::Sha256 as sha2::Digest>::digest(plain.as_bytes());
    let token = opencrane_silo_db::access_tokens::authenticate(&acme, &digest).await.unwrap().unwrap();
    assert_eq!((token.owner_subject.as_str(), token.role.as_str()), ("ben", "member"));
    assert!(opencrane_silo_db::access_tokens::authenticate(&globex, &digest).await.unwrap().is_none());

    // A second run changes nothing, and the source never changed.
    let fleet_audit = count("SELECT count(*) FROM audit_log").await;
    let again = run(&url, &fleet, &silos, &Options::default(), &quiet).await.unwrap();
    assert!(again.complete());
    assert_eq!(count("SELECT count(*) FROM audit_log").await, fleet_audit, "nothing new in the fleet");
    assert_eq!(names(&acme, "SELECT name FROM tenants").await.len(), 202);
    let audit_rows: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log").fetch_one(&acme).await.unwrap();
    assert_eq!(audit_rows, 1);
    assert_eq!(fingerprint(&url).await, before, "the source is only read");
}

/// A failure in the middle of a customer's copy leaves nothing of it (one transaction); a silo
/// that differs from the source at verification stops that customer only, with the rows that
/// differ; after the cause is gone, the next run resumes each where it stopped.
#[sqlx::test(migrations = false)]
async fn a_failed_copy_or_verification_stops_one_customer_and_the_next_run_resumes(pool: PgPool) {
    let fleet = support::fleet_db(&pool).await;
    let url = source(&pool, FIXTURE).await;
    let silos = TestSilos::new(&pool);
    let quiet = |_| {};
    // Provision only: every silo exists, nothing copied.
    let provisioned = run(&url, &fleet, &silos, &options(Phase::Provision), &quiet).await.unwrap();
    assert!(provisioned.complete());
    assert!(provisioned.customers.iter().all(|c| c.phase == "provisioned"));
    // acme's silo already has a user with ben's e-mail: its copy fails on the 3rd table.
    let acme = silos.pool("acme");
    sqlx::query(
        "INSERT INTO tenants (name, display_name, email, subject) VALUES ('squatter', 'S', 'ben@acme.example', 'x')",
    )
    .execute(&acme)
    .await
    .unwrap();
    let report = run(&url, &fleet, &silos, &options(Phase::Copy), &quiet).await.unwrap();
    assert!(!report.complete());
    let acme_report = &report.customers[0];
    assert_eq!(acme_report.phase, "provisioned");
    assert!(acme_report.problem.as_deref().unwrap().contains("copying tenants"), "{acme_report:?}");
    assert_eq!(report.customers[1].phase, "copied", "the others go on");
    for table in ["org_memberships", "access_policies", "groups", "shared_import"] {
        let n: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {table}")).fetch_one(&acme).await.unwrap();
        assert_eq!(n, 0, "nothing of the failed copy stays in {table}");
    }

    // globex's silo is changed after its copy: verification names the row, it is not cut over.
    sqlx::query("DELETE FROM tenants WHERE name = 'squatter'").execute(&acme).await.unwrap();
    sqlx::query("UPDATE tenants SET display_name = 'Tampered' WHERE name = 'gia-ws'")
        .execute(&silos.pool("globex"))
        .await
        .unwrap();
    let report = run(&url, &fleet, &silos, &Options::default(), &quiet).await.unwrap();
    assert_eq!(report.customers[0].phase, "cut-over", "acme resumed from its copy");
    let globex = &report.customers[1];
    assert_eq!(globex.phase, "copied");
    assert!(globex.problem.as_deref().unwrap().contains("differences in tenants"), "{globex:?}");
    let check = globex.checks.iter().find(|c| c.table == "tenants").unwrap();
    assert!(check.missing[0].contains("Gią 株式") && check.unexpected[0].contains("Tampered"), "{check:?}");
    assert_eq!(report.customers[2].phase, "cut-over");
    let stored: Option<String> =
        sqlx::query_scalar("SELECT problem FROM shared_migrations WHERE cluster_tenant = 'globex'")
            .fetch_one(&fleet)
            .await
            .unwrap();
    assert!(stored.unwrap().contains("differences"));

    // Put right, it verifies and is cut over; no customer was copied twice.
    sqlx::query("UPDATE tenants SET display_name = 'Gią 株式' WHERE name = 'gia-ws'")
        .execute(&silos.pool("globex"))
        .await
        .unwrap();
    let report = run(&url, &fleet, &silos, &Options::default(), &quiet).await.unwrap();
    assert!(report.complete(), "{report:#?}");
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM tenants").fetch_one(&acme).await.unwrap();
    assert_eq!(users, 202);
}

/// A copy that committed in the silo but was not recorded in the fleet (a crash between the two)
/// is found by its marker and not repeated; a silo holding another customer's import refuses.
#[sqlx::test(migrations = false)]
async fn a_copy_committed_before_a_crash_is_not_repeated(pool: PgPool) {
    let fleet = support::fleet_db(&pool).await;
    let url = source(&pool, FIXTURE).await;
    let silos = TestSilos::new(&pool);
    let only = |name: &str, until| Options { customers: vec![name.to_owned()], until, ..Options::default() };
    run(&url, &fleet, &silos, &only("initech", Phase::Provision), &|_| {}).await.unwrap();
    // The copy's transaction commits; the process dies before the fleet records it.
    let snapshot = opencrane_migrate::source::Source::connect(&url).await.unwrap().read().await.unwrap();
    let plan = opencrane_migrate::map::plan(&snapshot, &[]);
    // Placement does not depend on which customers are migrated now (ana's token stays
    // unplaced: she is a member of acme too).
    let alone = opencrane_migrate::map::plan(&snapshot, &["initech".to_owned()]);
    assert_eq!(alone.customers.len(), 1);
    assert_eq!(alone.customer("initech").unwrap().silo, plan.customer("initech").unwrap().silo);
    let initech = silos.pool("initech");
    let copied = opencrane_migrate::silo::copy(
        &initech,
        plan.customer("initech").unwrap(),
        silos.credentials_key("initech"),
        "x",
    )
    .await
    .unwrap();
    assert_eq!(copied, opencrane_migrate::silo::Copied::Now);
    let report = run(&url, &fleet, &silos, &only("initech", Phase::CutOver), &|_| {}).await.unwrap();
    assert!(report.complete(), "{report:#?}");
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM tenants").fetch_one(&initech).await.unwrap();
    assert_eq!(users, 1, "not copied twice");
    // Another customer's rows never go into a database that holds one's import.
    let wrong =
        opencrane_migrate::silo::copy(&initech, plan.customer("globex").unwrap(), silos.credentials_key("x"), "x")
            .await;
    assert!(matches!(wrong, Err(Error::Isolation(_))), "{wrong:?}");
}

/// A database that is not the original's is refused at preflight, naming everything missing;
/// an older version (no fleet tables, no membership status) is read with defaults, reported.
#[sqlx::test(migrations = false)]
async fn the_source_schema_is_checked_and_older_versions_get_reported_defaults(pool: PgPool) {
    let fleet = support::fleet_db(&pool).await;
    let silos = TestSilos::new(&pool);
    let empty = source(&pool, "CREATE TABLE tenants (name text PRIMARY KEY)").await;
    let refused = run(&empty, &fleet, &silos, &options(Phase::Preflight), &|_| {}).await.unwrap_err();
    let text = refused.to_string();
    for missing in
        ["column tenants.display_name", "column tenants.email", "table groups", "table grants", "table audit_log"]
    {
        assert!(text.contains(missing), "{missing} in {text}");
    }
    let older = FIXTURE
        .replace("status \"OrgMemberStatus\" NOT NULL DEFAULT 'active',", "")
        .replace("('m3', 'acme', 'gus', 'member', 'suspended')", "('m3', 'acme', 'gus', 'member')")
        .replace("(id, cluster_tenant, subject, role, status)", "(id, cluster_tenant, subject, role)")
        .replace("'owner', 'active')", "'owner')")
        .replace("'member', 'active')", "'member')")
        .replace("'admin', 'active')", "'admin')");
    let older =
        older.replace("REFERENCES cluster_tenants (name) ON DELETE CASCADE", "") + "\nDROP TABLE cluster_tenants;";
    let url = source(&pool, &older).await;
    let report = run(&url, &fleet, &silos, &options(Phase::Preflight), &|_| {}).await.unwrap();
    assert!(report.defaults.iter().any(|d| d.contains("org_memberships.status is absent")), "{:?}", report.defaults);
    assert!(report.defaults.iter().any(|d| d.contains("table cluster_tenants is absent")), "{:?}", report.defaults);
    assert_eq!(report.customers.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["acme", "globex", "initech"]);
    let unknown =
        run(&url, &fleet, &silos, &Options { customers: vec!["nope".into()], ..options(Phase::Preflight) }, &|_| {})
            .await;
    assert!(unknown.unwrap_err().to_string().contains("--customer: nope is not a customer"));
}

/// The preflight checks the target can take each customer: its vanity domain is free in the
/// fleet, its rows fit its silo database's volume (80% at most), its active members its seat
/// cap (a note). A customer the target cannot take is not created; the others migrate.
#[sqlx::test(migrations = false)]
async fn the_preflight_checks_the_targets_capacity(pool: PgPool) {
    let fleet = support::fleet_db(&pool).await;
    sqlx::query("INSERT INTO cluster_tenants (name, display_name, vanity_domain) VALUES ('other', 'Other', 'portal.acme.example')")
        .execute(&fleet)
        .await
        .unwrap();
    let url =
        source(&pool, &format!("{FIXTURE}\nUPDATE cluster_tenants SET seat_cap = 1 WHERE name = 'initech';")).await;
    let silos = TestSilos::new(&pool);
    let plan = run(&url, &fleet, &silos, &options(Phase::Preflight), &|_| {}).await.unwrap();
    let size = |name: &str| plan.customers.iter().find(|c| c.name == name).unwrap().estimated_bytes;
    assert!(size("acme") > 10 * size("globex").max(size("initech")), "acme has 425 rows, the others about 10");
    let acme = &plan.customers[0];
    assert!(
        acme.problem
            .as_deref()
            .is_some_and(|p| p.contains("portal.acme.example belongs to the fleet's customer other")),
        "{acme:?}"
    );
    assert!(plan.notes.iter().any(|n| n.contains("initech: 2 active members for a seat cap of 1")), "{:?}", plan.notes);

    // Room for the small customers, not for acme: with the vanity domain free, its size stops it.
    sqlx::query("UPDATE cluster_tenants SET vanity_domain = NULL WHERE name = 'other'").execute(&fleet).await.unwrap();
    let storage = 2 * size("globex").max(size("initech"));
    let report = run(&url, &fleet, &silos, &Options { silo_storage: Some(storage), ..Options::default() }, &|_| {})
        .await
        .unwrap();
    let acme = &report.customers[0];
    assert_eq!(acme.phase, "planned");
    assert!(acme.problem.as_deref().is_some_and(|p| p.contains("raise the silo database size")), "{acme:?}");
    let created: Vec<String> =
        sqlx::query_scalar("SELECT name FROM cluster_tenants ORDER BY name").fetch_all(&fleet).await.unwrap();
    assert_eq!(created, ["globex", "initech", "other"], "acme was not created");
    assert!(report.customers[1..].iter().all(|c| c.phase == "cut-over"), "{report:#?}");
}

/// Waits until the page's run `id` has finished (the run goes on in the background).
async fn finished(fleet: &PgPool, id: i64) {
    for _ in 0..600 {
        let done: bool = sqlx::query_scalar("SELECT finished_at IS NOT NULL FROM shared_migration_runs WHERE id = $1")
            .bind(id)
            .fetch_one(fleet)
            .await
            .unwrap();
        if done {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("run {id} did not finish");
}

/// The run id a started run's redirect names.
fn started(reply: &support::Reply) -> i64 {
    assert_eq!(reply.status, axum::http::StatusCode::SEE_OTHER, "{}", reply.text);
    let location = reply.headers["location"].to_str().unwrap();
    location.strip_prefix("/migrations?started=").expect("back to the page").parse().unwrap()
}

/// The `/migrations` page runs the same migration as the CLI, from plain posted forms (no
/// wasm): platform operators only; the source is shown as host:port/database and its password
/// appears nowhere (page, audit); a bad phase comes back under its field; a preflight shows the
/// plan and changes nothing; one customer is taken to cut-over while the others stay planned
/// with a Resume button; a run under way refuses a second one and the page follows it (it
/// reloads itself); a run whose fleet-manager stopped shows as interrupted.
#[sqlx::test(migrations = false)]
async fn the_migrations_page_runs_the_migration_without_wasm(pool: PgPool) {
    use axum::http::{Method, StatusCode};

    use crate::{
        forms::{encode, error_under, form_headers, hidden_fields},
        support::send_as,
    };

    let fleet = support::fleet_db(&pool).await;
    let url = source(&pool, FIXTURE).await;
    let secret = url.split_once("://").and_then(|(_, rest)| rest.split_once('@')).map(|(auth, _)| auth.to_owned());
    let silos = std::sync::Arc::new(TestSilos::new(&pool));
    let runtime = app::service::fleet::migrations::MigrationRuntime::new(&url, silos.clone()).unwrap();
    assert!(!format!("{runtime:?}").contains(&url), "Debug hides the URL");
    let app = support::fleet_signed_in_with(fleet.clone(), |f| f.migration = Some(runtime));
    let operator = support::session_cookie(&fleet, "op", true, false).await;
    let member = support::session_cookie(&fleet, "mia", false, false).await;
    let nav = form_headers(&operator, "same-origin");

    // Not an operator: refused, and the refusal is audited.
    let page = send_as(&app, Method::GET, "/migrations", None, &form_headers(&member, "same-origin")).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    assert!(page.text.contains("Only platform operators may migrate"));

    let page = send_as(&app, Method::GET, "/migrations", None, &nav).await;
    assert_eq!(page.status, StatusCode::OK);
    let label = opencrane_migrate::source::label_of(&url.parse().unwrap());
    assert!(page.text.contains(&label), "the source as host:port/database");
    assert!(page.text.contains("No plan yet"));
    assert!(page.text.contains(r#"href="/migrations""#), "in the navigation");

    // A phase that does not exist comes back under its field.
    let hidden = hidden_fields(&page.text, "migration-run");
    let post = |fields: Vec<(String, String)>| {
        let (app, nav) = (app.clone(), nav.clone());
        async move { send_as(&app, Method::POST, "/migrations", Some(&encode(&fields, &[])), &nav).await }
    };
    let run_form = |until: &str| {
        let mut fields = hidden.clone();
        fields.extend([("until".to_owned(), until.to_owned()), ("customer".to_owned(), String::new())]);
        fields
    };
    let refused = post(run_form("everything")).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
    assert!(error_under(&refused, "migration-until").contains("Choose the phase"));

    // Preflight: the plan on the page, nothing written to the fleet's customers.
    let id = started(&post(run_form("preflight")).await);
    finished(&fleet, id).await;
    let page = send_as(&app, Method::GET, "/migrations", None, &nav).await;
    for name in ["acme", "globex", "initech"] {
        assert!(page.text.contains(&format!(r#"data-customer="{name}" data-phase="planned""#)), "{name} planned");
    }
    assert!(page.text.contains("Rows that cannot be placed (11)"), "{}", page.text);
    assert!(page.text.contains("drifter"));
    assert!(page.text.contains(r#"data-state="finished""#));
    assert_eq!(names(&fleet, "SELECT name FROM cluster_tenants").await, BTreeSet::new(), "a preflight writes nothing");

    // One customer to cut-over, with its row's Resume button (as a browser posts it).
    let resume = hidden_fields(&page.text, "migration-resume-acme");
    assert!(resume.iter().any(|(k, v)| k == "customer" && v == "acme"));
    let id = started(&post(resume).await);
    finished(&fleet, id).await;
    let page = send_as(&app, Method::GET, "/migrations", None, &nav).await;
    assert!(page.text.contains(r#"data-customer="acme" data-phase="cut-over""#), "{}", page.text);
    assert!(page.text.contains(r#"data-customer="globex" data-phase="planned""#));
    assert!(!page.text.contains(r#"id="migration-resume-acme""#), "nothing left to do for acme");
    assert!(page.text.contains(r#"id="migration-resume-globex""#));
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM tenants").fetch_one(&silos.pool("acme")).await.unwrap();
    assert_eq!(users, 202, "acme's silo holds its users");

    // A run under way (another replica holds the lock): a second is refused, the page follows it.
    let mut other = fleet.acquire().await.unwrap().detach();
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(opencrane_fleet_db::shared_migrations::RUN_LOCK)
        .execute(&mut other)
        .await
        .unwrap();
    opencrane_fleet_db::shared_migrations::start_run(&fleet, "copy", &[], "elsewhere").await.unwrap();
    let busy = post(run_form("preflight")).await;
    assert_eq!(busy.status, StatusCode::CONFLICT, "{}", busy.text);
    assert!(busy.text.contains("A migration run is under way"));
    let page = send_as(&app, Method::GET, "/migrations", None, &nav).await;
    assert!(page.text.contains(r#"data-state="running""#));
    assert!(page.text.contains(r#"http-equiv="refresh""#), "the page reloads itself while a run is under way");
    assert!(page.text.contains("disabled"), "the Run button is disabled");
    sqlx::Connection::close(other).await.unwrap();
    let page = send_as(&app, Method::GET, "/migrations", None, &nav).await;
    assert!(page.text.contains(r#"data-state="interrupted""#), "its fleet-manager stopped");

    // The source's password is nowhere: page, audit.
    let audit: Vec<String> =
        sqlx::query_scalar("SELECT metadata::text FROM audit_log WHERE action = 'shared_migration.run'")
            .fetch_all(&fleet)
            .await
            .unwrap();
    assert_eq!(audit.len(), 2, "each started run is audited");
    if let Some(secret) = secret {
        assert!(!page.text.contains(&secret) && !audit.iter().any(|a| a.contains(&secret)));
    }
    assert!(audit.iter().all(|a| a.contains(&label)));
}

/// The delta copy (the write freeze): rows that change in the source after a customer was copied
/// and verified show in its verification and in `changedSinceCopy`; a run with `delta` copies
/// the differing tables (and the tables pointing at them) again, in one transaction, and the
/// customer verifies and cuts over with the new rows and no duplicates. Once nothing differs it
/// copies nothing; a customer already cut over is never touched.
#[sqlx::test(migrations = false)]
async fn a_delta_copy_brings_the_changes_made_after_the_copy(pool: PgPool) {
    let fleet = support::fleet_db(&pool).await;
    let url = source(&pool, FIXTURE).await;
    let silos = TestSilos::new(&pool);
    let quiet = |_| {};
    let report = run(&url, &fleet, &silos, &options(Phase::Verify), &quiet).await.unwrap();
    assert!(report.complete(), "{report:?}");
    let acme = silos.pool("acme");
    let count = |sql: &'static str| {
        let acme = acme.clone();
        async move { sqlx::query_scalar::<_, i64>(sql).fetch_one(&acme).await.unwrap() }
    };
    let audit_before = count("SELECT count(*) FROM audit_log WHERE request_id = 'shared-migration'").await;

    // The original keeps being written to after the copy.
    let writer = PgPoolOptions::new().max_connections(1).connect(&url).await.unwrap();
    sqlx::raw_sql(
        "INSERT INTO tenants (name, display_name, email, cluster_tenant_ref, subject) VALUES ('late-ws', 'Late', 'late@acme.example', 'acme', 'late');
         UPDATE groups SET description = 'Engineering', updated_at = now() WHERE id = 'g-eng';
         INSERT INTO audit_log (\"timestamp\", tenant, action, resource, message) VALUES (now(), 'ana-ws', 'tenant.update', 'tenants/ana-ws', 'late change');",
    )
    .execute(&writer)
    .await
    .unwrap();
    writer.close().await;

    let report = run(&url, &fleet, &silos, &options(Phase::Verify), &quiet).await.unwrap();
    let of = |report: &opencrane_migrate::Report, name: &str| {
        report.customers.iter().find(|c| c.name == name).cloned().unwrap()
    };
    let stopped = of(&report, "acme");
    assert!(stopped.problem.as_deref().is_some_and(|p| p.contains("tenants")), "{stopped:?}");
    for table in ["tenants", "groups", "audit_log"] {
        assert!(stopped.changed_since_copy.iter().any(|c| c.starts_with(table)), "{table}: {stopped:?}");
    }
    assert!(of(&report, "globex").problem.is_none(), "globex's rows did not change");

    let messages = Mutex::new(Vec::new());
    let record = |e: opencrane_migrate::Event| messages.lock().unwrap().push(e.message);
    let delta = Options { customers: vec!["acme".into()], until: Phase::CutOver, delta: true, ..Options::default() };
    let report = run(&url, &fleet, &silos, &delta, &record).await.unwrap();
    assert!(report.complete(), "{report:?}");
    let copied: Vec<String> = messages.lock().unwrap().iter().filter(|m| m.contains("copied again")).cloned().collect();
    assert_eq!(
        copied,
        ["acme: copied again: tenants, groups, group_members, grants, budgets, access_tokens, audit_log"]
    );
    assert!(of(&report, "acme").changed_since_copy.is_empty(), "the watermarks are the delta copy's");
    assert_eq!(count("SELECT count(*) FROM tenants").await, 203);
    assert_eq!(count("SELECT count(*) FROM tenants WHERE name = 'late-ws'").await, 1);
    assert_eq!(count("SELECT count(*) FROM groups WHERE description = 'Engineering'").await, 1);
    assert_eq!(count("SELECT count(*) FROM group_members").await, 204, "replaced, not duplicated");
    assert_eq!(count("SELECT count(*) FROM audit_log WHERE request_id = 'shared-migration'").await, audit_before + 1);

    // Nothing differs any more: nothing is copied; and acme is cut over, so it is left alone.
    messages.lock().unwrap().clear();
    let again = Options { until: Phase::Verify, delta: true, ..Options::default() };
    run(&url, &fleet, &silos, &again, &record).await.unwrap();
    assert!(!messages.lock().unwrap().iter().any(|m| m.contains("copied again")), "{:?}", messages.lock().unwrap());
}

/// A silo of the relayed migration: its own database, its own credentials key, its own fleet
/// credential, and its manager's import step ([`opencrane::silo::import::take_once`]) pulling
/// from the fleet's internal API over HTTP.
struct RelayedSilo {
    pool: PgPool,
    key: SecretBox,
    link: opencrane::silo::sync::FleetLink,
}

/// What the test's stand-in for the provisioner made: per customer, its silo.
type RelayedSilos = std::sync::Arc<tokio::sync::Mutex<BTreeMap<String, std::sync::Arc<RelayedSilo>>>>;

/// Plays the provisioner (every customer the migration creates gets a database of its own, a
/// credentials key and a fleet credential, and turns `ready`) and, while `managers_up`, each
/// silo's manager taking its deliveries.
fn cluster(
    admin: PgPool,
    fleet: PgPool,
    fleet_url: String,
    managers_up: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (RelayedSilos, tokio::task::JoinHandle<()>) {
    let silos = RelayedSilos::default();
    let made = silos.clone();
    let task = tokio::spawn(async move {
        let client = openidconnect::reqwest::Client::new();
        loop {
            let pending: Vec<String> =
                sqlx::query_scalar("SELECT name FROM cluster_tenants WHERE phase <> 'ready' ORDER BY name")
                    .fetch_all(&fleet)
                    .await
                    .unwrap();
            for name in pending {
                let pool = support::silo_db(&admin).await;
                let key = SecretBox::from_base64(&SecretBox::generate_base64().unwrap()).unwrap();
                let key = opencrane_portal::credentials_key::verify(&pool, key, "test").await.unwrap();
                let token = crate::trust::issue(&fleet, &name).await;
                let link = opencrane::silo::sync::FleetLink {
                    url: fleet_url.clone(),
                    token: opencrane::silo::sync::FleetToken::Value(token),
                };
                made.lock().await.insert(name.clone(), std::sync::Arc::new(RelayedSilo { pool, key, link }));
                sqlx::query("UPDATE cluster_tenants SET phase = 'ready' WHERE name = $1")
                    .bind(&name)
                    .execute(&fleet)
                    .await
                    .unwrap();
            }
            if managers_up.load(std::sync::atomic::Ordering::Relaxed) {
                let all: Vec<(String, std::sync::Arc<RelayedSilo>)> =
                    made.lock().await.iter().map(|(n, s)| (n.clone(), s.clone())).collect();
                for (name, silo) in all {
                    // As the manager's loop does: a failed pass (a delivery replaced while it was
                    // being applied: 409 on its report) is tried again at the next pull.
                    let taken =
                        opencrane::silo::import::take_once(&client, &silo.link, &name, &silo.pool, Some(&silo.key))
                            .await;
                    if let Err(e) = taken {
                        eprintln!("{name}: {e:#}");
                    }
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    (silos, task)
}

/// On a cluster the fleet cannot reach a silo's database: each customer's rows go through its
/// own manager, which takes them with its own credential (another customer's answer like a
/// missing one; an operator token takes nothing), seals the legacy key with its own key and
/// reports a digest the fleet verifies; the parcels are gone once reported; a manager that is
/// down leaves the customer waiting, and the next run resumes it; a second run changes nothing.
#[sqlx::test(migrations = false)]
async fn on_a_cluster_each_silo_takes_its_own_rows_through_its_manager(pool: PgPool) {
    let fleet = support::fleet_db(&pool).await;
    let url = source(&pool, FIXTURE).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let fleet_url = format!("http://{}", listener.local_addr().unwrap());
    let internal = support::fleet_internal(fleet.clone());
    tokio::spawn(async move { axum::serve(listener, internal).await.unwrap() });
    let managers_up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (silos, cluster) = cluster(pool.clone(), fleet.clone(), fleet_url.clone(), managers_up.clone());
    let relay = opencrane_migrate::relay::Relay::new(fleet.clone());
    let quiet = |_| {};

    // The managers are not taking deliveries yet: the copy is staged, and the customer waits.
    let short = Options { wait: std::time::Duration::from_secs(5), ..Options::default() };
    let waiting = run(&url, &fleet, &relay, &short, &quiet).await.unwrap();
    assert!(!waiting.complete());
    let acme = waiting.customers.iter().find(|c| c.name == "acme").unwrap();
    assert_eq!(acme.phase, "provisioned", "{acme:?}");
    assert!(acme.problem.as_deref().is_some_and(|p| p.contains("run again to resume")), "{acme:?}");
    let staged: i64 =
        sqlx::query_scalar("SELECT count(*) FROM shared_migration_parcels").fetch_one(&fleet).await.unwrap();
    assert!(staged >= 3, "the copies are staged: {staged} parcels");

    // Only the silo's own credential takes its rows.
    let internal = support::fleet_internal(fleet.clone());
    let held = silos.lock().await.clone();
    let token = |name: &str| match &held[name].link.token {
        opencrane::silo::sync::FleetToken::Value(token) => token.clone(),
        opencrane::silo::sync::FleetToken::File(_) => unreachable!(),
    };
    let ask = |path: String, bearer: String| {
        let internal = internal.clone();
        async move {
            let auth = format!("Bearer {bearer}");
            support::send_with(&internal, axum::http::Method::GET, &path, None, &[("authorization", auth.as_str())])
                .await
        }
    };
    let own = ask("/api/internal/cluster-tenants/acme/import".into(), token("acme")).await;
    assert_eq!(own.status, axum::http::StatusCode::OK);
    let generation = own.json()["generation"].as_str().unwrap().to_owned();
    let parcel = ask(format!("/api/internal/cluster-tenants/acme/import/{generation}/0"), token("acme")).await;
    assert_eq!(parcel.status, axum::http::StatusCode::OK);
    let theirs = ask("/api/internal/cluster-tenants/acme/import".into(), token("globex")).await;
    assert_eq!(theirs.status, axum::http::StatusCode::NOT_FOUND, "another customer's is a missing one");
    let theirs = ask(format!("/api/internal/cluster-tenants/acme/import/{generation}/0"), token("globex")).await;
    assert_eq!(theirs.status, axum::http::StatusCode::NOT_FOUND);
    let operator = ask("/api/internal/cluster-tenants/acme/import".into(), support::TOKEN.to_owned()).await;
    assert_eq!(operator.status, axum::http::StatusCode::FORBIDDEN, "an operator token takes no parcel");

    // The managers come up: the next run resumes and finishes.
    managers_up.store(true, std::sync::atomic::Ordering::Relaxed);
    let report = run(&url, &fleet, &relay, &Options::default(), &quiet).await.unwrap();
    assert!(report.complete(), "{report:#?}");
    assert!(report.customers.iter().all(|c| c.phase == "cut-over" && c.checks.iter().all(|t| t.agrees())));
    let staged: i64 =
        sqlx::query_scalar("SELECT count(*) FROM shared_migration_parcels").fetch_one(&fleet).await.unwrap();
    assert_eq!(staged, 0, "no parcel (nor legacy key) stays in the fleet once reported");
    let leftover: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM shared_migrations WHERE delivery::text LIKE '%sk-legacy%' OR delivered::text LIKE '%sk-legacy%'",
    )
    .fetch_one(&fleet)
    .await
    .unwrap();
    assert_eq!(leftover, 0);

    // Each silo holds exactly its customer's rows; the legacy key opens under acme's own key.
    let held = silos.lock().await.clone();
    let mut acme_users: BTreeSet<String> = (1..=200).map(|i| format!("u{i:03}")).collect();
    acme_users.extend(["ana-ws".to_owned(), "ben-ws".to_owned()]);
    assert_eq!(names(&held["acme"].pool, "SELECT name FROM tenants").await, acme_users);
    assert_eq!(names(&held["globex"].pool, "SELECT name FROM tenants").await, ["gia-ws".to_owned()].into());
    assert_eq!(names(&held["initech"].pool, "SELECT name FROM tenants").await, ["ian-ws".to_owned()].into());
    let acme = &held["acme"];
    let sealed = opencrane_silo_db::models::credentials(&acme.pool).await.unwrap();
    let mistral = sealed.iter().find(|c| c.name == "mistral").unwrap();
    let secret = opencrane_silo_db::models::credential_secret(&acme.pool, mistral.id).await.unwrap().unwrap();
    assert_eq!(acme.key.open(&secret, "credential:mistral").unwrap(), b"sk-legacy-mistral-SECRET-4242");
    assert!(held["globex"].key.open(&secret, "credential:mistral").is_err(), "sealed with acme's key only");

    // A change in a silo after the copy is found by the relayed verification.
    sqlx::query("UPDATE tenants SET display_name = 'changed' WHERE name = 'u001'").execute(&acme.pool).await.unwrap();
    sqlx::query("UPDATE shared_migrations SET phase = 'copied' WHERE cluster_tenant = 'acme'")
        .execute(&fleet)
        .await
        .unwrap();
    let differs = run(&url, &fleet, &relay, &Options { customers: vec!["acme".into()], ..Options::default() }, &quiet)
        .await
        .unwrap();
    let check = differs.customers[0].checks.iter().find(|c| c.table == "tenants").unwrap();
    assert!(!check.agrees());
    assert_eq!(check.missing.len(), 1, "{check:?}");
    assert!(check.missing[0].contains("u001"));
    assert_eq!(check.unexpected.len(), 1, "the silo's own row, by hash only: {check:?}");
    assert!(!check.unexpected[0].contains("changed"));
    assert!(differs.customers[0].problem.as_deref().is_some_and(|p| p.contains("not cut over")));
    cluster.abort();
    fleet.close().await;
}
