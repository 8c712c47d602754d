//! The local backend, for `opencrane dev`: the same pipeline with no cluster. A silo gets its own
//! database on the local PostgreSQL, owned by its own login role, with `CONNECT` revoked from
//! everyone else (so silo A's role cannot even open silo B's database), migrated with the silo
//! schema; and its own clustertenant-manager, served by the dev process on a port of its own (the
//! [`SiloHost`] starts and stops it). The Kubernetes-only steps report why they do not apply.
//!
//! Role passwords are random, set on the first converge after each start and kept in memory only:
//! nothing secret is written to disk.

use std::{collections::HashMap, time::Duration};

use opencrane_db::{PgPool, PoolSettings, Schema};
use sqlx::{Executor as _, postgres::PgPoolOptions};
use tokio::sync::Mutex;

use crate::{
    StepId,
    reconcile::{Backend, StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

/// How to reach the local PostgreSQL as its superuser.
#[derive(Clone, Debug)]
pub struct LocalServer {
    /// Host (loopback).
    pub host: String,
    /// Port.
    pub port: u16,
    /// Superuser name.
    pub superuser: String,
    /// Superuser password.
    pub password: String,
}

impl LocalServer {
    fn url(&self, user: &str, password: &str, database: &str) -> String {
        format!("postgres://{user}:{password}@{}:{}/{database}", self.host, self.port)
    }

    /// The superuser's URL for `database`.
    pub fn admin_url(&self, database: &str) -> String {
        self.url(&self.superuser, &self.password, database)
    }
}

/// What the host needs to serve one silo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiloLaunch {
    /// The ClusterTenant.
    pub name: String,
    /// Its database, as its own role.
    pub database_url: String,
    /// Its own credential for the fleet's internal API (see [`crate::credential`]).
    pub fleet_credential: opencrane_deploy::Secret,
}

/// Runs clustertenant-managers inside the dev process.
#[async_trait::async_trait]
pub trait SiloHost: Send + Sync {
    /// Serves the silo (or keeps serving it) and returns its base URL.
    async fn start(&self, launch: &SiloLaunch) -> Result<String, String>;
    /// Stops serving the silo; returns whether it was running.
    async fn stop(&self, name: &str) -> bool;
    /// The base URL of a running silo.
    fn url(&self, name: &str) -> Option<String>;
}

/// The local backend.
pub struct LocalBackend<H> {
    server: LocalServer,
    host: H,
    admin: PgPool,
    /// Database URLs (with the role's current password) of the silos converged since start.
    credentials: Mutex<HashMap<String, String>>,
    /// The silo credentials installed since start (kept in memory only: after a restart of the
    /// dev process the reconciler mints new ones).
    fleet_credentials: Mutex<HashMap<String, opencrane_deploy::Secret>>,
}

/// The database and role name of a silo (`ocsilo_<name>`, '-' → '_'; at most 60 characters).
pub fn database_of(name: &str) -> String {
    format!("ocsilo_{}", name.replace('-', "_"))
}

fn quote_ident(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

fn db_failure(what: &str, err: &sqlx::Error) -> StepFailure {
    StepFailure::new(
        "DatabaseError",
        format!("{what} failed: {err}."),
        "Check that the dev PostgreSQL is running (see the dev process's log), then Retry.",
    )
}

impl<H: SiloHost> LocalBackend<H> {
    /// A backend on `server`, serving silos through `host`.
    pub fn new(server: LocalServer, host: H) -> Result<Self, sqlx::Error> {
        let settings = PoolSettings { max_connections: 2, ..PoolSettings::default() };
        let admin = opencrane_db::connect_lazy(&server.admin_url("postgres"), &settings)?;
        Ok(Self {
            server,
            host,
            admin,
            credentials: Mutex::new(HashMap::new()),
            fleet_credentials: Mutex::new(HashMap::new()),
        })
    }

    /// The silo host.
    pub fn host(&self) -> &H {
        &self.host
    }

    async fn converge_database(&self, name: &str) -> Result<StepSuccess, StepFailure> {
        let db = database_of(name);
        let ident = quote_ident(&db);
        let mut credentials = self.credentials.lock().await;
        let role_exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)")
            .bind(&db)
            .fetch_one(&self.admin)
            .await
            .map_err(|e| db_failure("Looking up the silo's role", &e))?;
        if !role_exists || !credentials.contains_key(name) {
            let password = opencrane_localpg::random_hex(16)
                .map_err(|e| StepFailure::new("NoRandomness", e.to_string(), "Check /dev/urandom, then Retry."))?;
            let verb = if role_exists { "ALTER" } else { "CREATE" };
            // Identifiers and the password (hex digits only) cannot be bound in DDL.
            let sql = format!("{verb} ROLE {ident} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '{password}'");
            self.admin.execute(sql.as_str()).await.map_err(|e| db_failure("Creating the silo's role", &e))?;
            credentials.insert(name.to_owned(), self.server.url(&db, &password, &db));
        }
        let db_exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(&db)
            .fetch_one(&self.admin)
            .await
            .map_err(|e| db_failure("Looking up the silo's database", &e))?;
        if !db_exists {
            let sql = format!("CREATE DATABASE {ident} OWNER {ident}");
            self.admin.execute(sql.as_str()).await.map_err(|e| db_failure("Creating the silo's database", &e))?;
        }
        let sql = format!("REVOKE ALL ON DATABASE {ident} FROM PUBLIC");
        self.admin.execute(sql.as_str()).await.map_err(|e| db_failure("Closing the database to other roles", &e))?;
        let url = credentials.get(name).cloned().unwrap_or_default();
        drop(credentials);
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .connect(&url)
            .await
            .map_err(|e| db_failure("Connecting as the silo's role", &e))?;
        let migrated = opencrane_db::migrate(&pool, Schema::Silo).await;
        pool.close().await;
        migrated.map_err(|e| {
            StepFailure::new(
                "MigrationFailed",
                format!("Applying the silo schema failed: {e}."),
                "Fix the migration (see the log), then Retry.",
            )
        })?;
        Ok(StepSuccess::done(
            "Provisioned",
            format!(
                "Database {db} on the local PostgreSQL, owned by its own role {db}; no other role may connect. \
                 Silo schema applied."
            ),
        ))
    }

    async fn converge_release(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        if desired.suspended {
            let was_running = self.host.stop(&desired.name).await;
            let how = if was_running { "stopped" } else { "not running" };
            return Ok(StepSuccess::done(
                "ScaledToZero",
                format!("Suspended: the clustertenant-manager is {how}, so nobody can sign in."),
            ));
        }
        let database_url = self.credentials.lock().await.get(&desired.name).cloned().ok_or_else(|| {
            StepFailure::new("NoDatabase", "The silo's database credentials are not known yet.", "Retry all steps.")
        })?;
        let fleet_credential = {
            let mut held = self.fleet_credentials.lock().await;
            if let Some(fresh) = &desired.silo_credential {
                held.insert(desired.name.clone(), fresh.clone());
            }
            held.get(&desired.name).cloned().ok_or_else(|| {
                StepFailure::new("NoCredential", "The silo's fleet credential is not known.", "Retry the step.")
            })?
        };
        let launch = SiloLaunch { name: desired.name.clone(), database_url, fleet_credential };
        let url = self.host.start(&launch).await.map_err(|e| {
            StepFailure::new(
                "StartFailed",
                format!("The clustertenant-manager did not start: {e}."),
                "Free a port or fix the error in the dev process's log, then Retry.",
            )
        })?;
        Ok(StepSuccess::done("Serving", format!("clustertenant-manager serving at {url} (in the dev process).")))
    }

    async fn converge_readiness(&self, desired: &Desired) -> Result<StepSuccess, StepFailure> {
        if desired.suspended {
            return Ok(StepSuccess::skipped("Suspended", "Not checked while suspended."));
        }
        let url = self.host.url(&desired.name).ok_or_else(|| {
            StepFailure::new("NotServing", "The clustertenant-manager is not running.", "Retry all steps.")
        })?;
        // Look for a few seconds; a silo still starting is waited for (not a failure), and the
        // reconciler turns a wait that never ends into a failure.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        let mut last = String::new();
        while tokio::time::Instant::now() < deadline {
            match crate::probe::readyz(&url).await {
                Ok(200) => return Ok(StepSuccess::done("Ready", format!("{url}/readyz answers 200."))),
                Ok(status) => last = format!("{url}/readyz answered {status}"),
                Err(err) => last = format!("{url}/readyz: {err}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(StepSuccess::waiting("Starting", format!("{last}; looking again shortly.")))
    }

    async fn drop_database(&self, name: &str) -> Result<Teardown, StepFailure> {
        let db = database_of(name);
        let ident = quote_ident(&db);
        for sql in [format!("DROP DATABASE IF EXISTS {ident} WITH (FORCE)"), format!("DROP ROLE IF EXISTS {ident}")] {
            self.admin.execute(sql.as_str()).await.map_err(|e| db_failure("Dropping the silo's database", &e))?;
        }
        self.credentials.lock().await.remove(name);
        Ok(Teardown::Removed(format!("Database {db} and its role dropped (terminationPolicy Delete).")))
    }
}

const NO_CLUSTER: &str = "Local backend (opencrane dev): no Kubernetes cluster,";

#[async_trait::async_trait]
impl<H: SiloHost> Backend for LocalBackend<H> {
    fn name(&self) -> &'static str {
        "local"
    }

    async fn converge(&self, step: StepId, desired: &Desired, _done_before: bool) -> Result<StepSuccess, StepFailure> {
        match step {
            StepId::Namespace => Ok(StepSuccess::skipped(
                "NotApplicable",
                format!("{NO_CLUSTER} so no namespace; the silo's own database and server are its boundary."),
            )),
            StepId::Quota => Ok(StepSuccess::skipped(
                "NotApplicable",
                match desired.quota {
                    Some(_) => format!("{NO_CLUSTER} so the declared quota is recorded but not enforced."),
                    None => "No quota declared.".to_owned(),
                },
            )),
            StepId::NetworkPolicy => Ok(StepSuccess::skipped(
                "NotApplicable",
                format!("{NO_CLUSTER} so no NetworkPolicies; everything listens on loopback only."),
            )),
            StepId::Database => self.converge_database(&desired.name).await,
            StepId::Dns => Ok(StepSuccess::skipped(
                "NotApplicable",
                format!("{NO_CLUSTER} so no DNS record or certificate; the silo has a loopback port."),
            )),
            StepId::Release => self.converge_release(desired).await,
            StepId::Readiness => self.converge_readiness(desired).await,
            StepId::Identity => Ok(crate::reconcile::not_a_backend_step()),
        }
    }

    async fn teardown(&self, step: StepId, name: &str, delete_database: bool) -> Result<Teardown, StepFailure> {
        match step {
            StepId::Release => {
                let was_running = self.host.stop(name).await;
                Ok(Teardown::Removed(
                    if was_running {
                        "clustertenant-manager stopped."
                    } else {
                        "clustertenant-manager was not running."
                    }
                    .into(),
                ))
            }
            StepId::Database if delete_database => self.drop_database(name).await,
            StepId::Database => {
                let db = database_of(name);
                Ok(Teardown::Retained(format!(
                    "Database {db} and its role are kept on the local PostgreSQL (terminationPolicy Retain); \
                     a new customer with the same name re-attaches them."
                )))
            }
            StepId::Readiness | StepId::Identity => Ok(Teardown::Removed("Nothing to remove.".into())),
            StepId::Namespace | StepId::Quota | StepId::NetworkPolicy | StepId::Dns => {
                Ok(Teardown::Removed("Nothing was created for this step locally.".into()))
            }
        }
    }

    async fn holds_credential(&self, name: &str, fingerprint: &str) -> Result<bool, StepFailure> {
        let held = self.fleet_credentials.lock().await;
        Ok(held.get(name).is_some_and(|c| crate::credential::fingerprint(c.expose()) == fingerprint))
    }

    fn silo_url(&self, desired: &Desired) -> Option<String> {
        self.host.url(&desired.name)
    }

    fn bound_to(&self, desired: &Desired) -> String {
        format!("local:{}", database_of(&desired.name))
    }
}
