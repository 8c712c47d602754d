//! The local backend against the harness's real PostgreSQL: each silo gets its own database and
//! role, migrated with the silo schema; one silo's role cannot open another's database (goal:
//! no database is shared between silos); `Delete` drops the database and `Retain` keeps it.
//!
//! The silo host here is a stand-in for the dev process (a loopback listener answering 200), so
//! the readiness step probes a real socket; `opencrane dev` itself is driven by the browser tests.

use crate::support;
use std::{collections::HashMap, sync::Mutex};

use opencrane_fleet_db::{cluster_tenants, provisioning};
use opencrane_provision::{
    local::{LocalBackend, LocalServer, SiloHost, SiloLaunch, database_of},
    reconcile::{Outcome, reconcile},
};
use sqlx::{Connection as _, PgConnection, PgPool};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Serves `200 OK` to every request, one listener per silo.
#[derive(Default)]
struct AnsweringHost {
    urls: Mutex<HashMap<String, (String, String)>>,
}

#[async_trait::async_trait]
impl SiloHost for AnsweringHost {
    async fn start(&self, launch: &SiloLaunch) -> Result<String, String> {
        if let Some((url, _)) = self.urls.lock().unwrap().get(&launch.name) {
            return Ok(url.clone());
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
        let url = format!("http://{}", listener.local_addr().map_err(|e| e.to_string())?);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut buf = [0u8; 1024];
                let _ = socket.read(&mut buf).await;
                let _ = socket.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
            }
        });
        self.urls.lock().unwrap().insert(launch.name.clone(), (url.clone(), launch.database_url.clone()));
        Ok(url)
    }

    async fn stop(&self, name: &str) -> bool {
        self.urls.lock().unwrap().remove(name).is_some()
    }

    fn url(&self, name: &str) -> Option<String> {
        self.urls.lock().unwrap().get(name).map(|(url, _)| url.clone())
    }
}

impl AnsweringHost {
    fn database_url(&self, name: &str) -> String {
        self.urls.lock().unwrap()[name].1.clone()
    }
}

/// The harness's server, as its superuser (from `DATABASE_URL`).
fn server() -> LocalServer {
    let url = std::env::var("DATABASE_URL").expect("DATABASE_URL (run through `cargo xtask test`)");
    let rest = url.strip_prefix("postgres://").expect("a postgres:// URL");
    let (credentials, rest) = rest.split_once('@').expect("user:password@host");
    let (user, password) = credentials.split_once(':').expect("user:password");
    let authority = rest.split('/').next().unwrap_or_default();
    let (host, port) = authority.rsplit_once(':').expect("host:port");
    LocalServer {
        host: host.into(),
        port: port.parse().expect("port"),
        superuser: user.into(),
        password: password.into(),
    }
}

async fn seed(pool: &PgPool, name: &str, policy: &str) {
    let quota = serde_json::json!({});
    support::seed(pool, name, &support::desired(name, &quota, policy)).await;
}

async fn database_exists(server: &LocalServer, name: &str) -> bool {
    let mut admin = PgConnection::connect(&server.admin_url("postgres")).await.unwrap();
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(database_of(name))
        .fetch_one(&mut admin)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn each_silo_gets_a_database_no_other_silo_can_open(pool: PgPool) {
    let server = server();
    let backend = LocalBackend::new(server.clone(), AnsweringHost::default()).unwrap();
    // Unique per run: databases and roles are server-wide.
    let suffix = opencrane_localpg::random_hex(4).unwrap();
    let (a, b) = (format!("iso-a{suffix}"), format!("iso-b{suffix}"));
    seed(&pool, &a, "Delete").await;
    seed(&pool, &b, "Retain").await;
    for name in [&a, &b] {
        assert_eq!(reconcile(&pool, &backend, name).await.unwrap(), Outcome::Converged, "{name}");
        let row = cluster_tenants::get(&pool, name).await.unwrap();
        assert_eq!(row.phase, "ready");
        assert!(row.silo_url.unwrap().starts_with("http://127.0.0.1:"));
    }
    let a_url = backend.host().database_url(&a);
    let b_url = backend.host().database_url(&b);

    // Each role works in its own database, which holds the silo schema.
    let mut own = PgConnection::connect(&a_url).await.unwrap();
    let tables: i64 =
        sqlx::query_scalar("SELECT count(*) FROM information_schema.tables WHERE table_name = 'org_memberships'")
            .fetch_one(&mut own)
            .await
            .unwrap();
    assert_eq!(tables, 1, "the silo schema is applied");
    own.close().await.unwrap();

    // A's role, pointed at B's database, is refused by PostgreSQL itself.
    let (credentials, _own_db) = a_url.rsplit_once('/').unwrap();
    let crossed = format!("{credentials}/{}", database_of(&b));
    assert_ne!(crossed, a_url);
    let err = PgConnection::connect(&crossed).await.expect_err("silo A's role opened silo B's database");
    let code = err.as_database_error().and_then(|e| e.code().map(|c| c.into_owned()));
    assert_eq!(code.as_deref(), Some("42501"), "insufficient privilege, got {err}");
    assert!(PgConnection::connect(&b_url).await.is_ok(), "B's own role still connects");

    // Delete drops A's database; Retain keeps B's (and reports it).
    for name in [&a, &b] {
        provisioning::request_deletion(&pool, name).await.unwrap();
        assert_eq!(reconcile(&pool, &backend, name).await.unwrap(), Outcome::Deleted, "{name}");
    }
    assert!(!database_exists(&server, &a).await, "terminationPolicy Delete drops the database");
    assert!(database_exists(&server, &b).await, "terminationPolicy Retain keeps the database");
    assert!(backend.host().url(&a).is_none() && backend.host().url(&b).is_none(), "both silos stopped");

    // Clean up the retained database (the test server is shared).
    let mut admin = PgConnection::connect(&server.admin_url("postgres")).await.unwrap();
    let db = database_of(&b);
    sqlx::query(&format!("DROP DATABASE \"{db}\" WITH (FORCE)")).execute(&mut admin).await.unwrap();
    sqlx::query(&format!("DROP ROLE \"{db}\"")).execute(&mut admin).await.unwrap();
}
