//! Database plumbing shared by both roles.
//!
//! Owns the connection-pool settings, the two embedded migration sets (`migrations/fleet` for the
//! fleet registry, `migrations/silo` for each silo's own database), and the classification of
//! driver errors into what callers can act on (not found, unique/check/foreign-key violation,
//! database unavailable). Queries live in `opencrane-fleet-db` and `opencrane-silo-db`, one crate
//! per schema, so each is checked at compile time against exactly its own schema.

use std::time::Duration;

use sqlx::{
    Executor,
    migrate::{MigrateError, Migrator},
    postgres::{PgConnectOptions, PgPoolOptions},
};
pub use sqlx::{PgPool, Postgres, Transaction};

/// The fleet registry schema, embedded in the binary.
///
/// `ignore_missing` lets an older binary start against a database that a newer one has already
/// migrated, which a rolling upgrade needs.
pub static FLEET_MIGRATOR: Migrator = Migrator { ignore_missing: true, ..sqlx::migrate!("../../migrations/fleet") };

/// The silo schema, embedded in the binary.
pub static SILO_MIGRATOR: Migrator = Migrator { ignore_missing: true, ..sqlx::migrate!("../../migrations/silo") };

/// Which of the two schemas a database holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    /// The fleet registry (ClusterTenants, memberships, billing accounts).
    Fleet,
    /// One silo's database.
    Silo,
}

impl Schema {
    /// The embedded migrations of this schema.
    pub fn migrator(self) -> &'static Migrator {
        match self {
            Self::Fleet => &FLEET_MIGRATOR,
            Self::Silo => &SILO_MIGRATOR,
        }
    }

    /// `fleet` or `silo`, as used in logs and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fleet => "fleet",
            Self::Silo => "silo",
        }
    }
}

/// An error from a query, classified so callers can map it without looking at driver types.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The row asked for does not exist.
    #[error("row not found")]
    NotFound,
    /// A unique constraint or primary key rejected the write.
    #[error("unique constraint `{constraint}` violated")]
    UniqueViolation {
        /// The constraint or index name, e.g. `cluster_tenants_pkey`.
        constraint: String,
    },
    /// A CHECK constraint rejected the write.
    #[error("check constraint `{constraint}` violated")]
    CheckViolation {
        /// The constraint name.
        constraint: String,
    },
    /// A foreign key rejected the write.
    #[error("foreign key `{constraint}` violated")]
    ForeignKeyViolation {
        /// The constraint name.
        constraint: String,
    },
    /// No connection could be obtained in time, or the connection broke.
    #[error("database unavailable")]
    Unavailable(#[source] sqlx::Error),
    /// Anything else: a bug or an unexpected database state.
    #[error("database error")]
    Other(#[source] sqlx::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Whether `err` means the database could not be reached (as opposed to a query being wrong).
pub fn is_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        // admin_shutdown, crash_shutdown, cannot_connect_now
        sqlx::Error::Database(db) => matches!(db.code().as_deref(), Some("57P01" | "57P02" | "57P03")),
        _ => false,
    }
}

impl From<sqlx::Error> for Error {
    fn from(err: sqlx::Error) -> Self {
        if is_unavailable(&err) {
            return Self::Unavailable(err);
        }
        match &err {
            sqlx::Error::RowNotFound => Self::NotFound,
            sqlx::Error::Database(db) => {
                let constraint = db.constraint().unwrap_or_default().to_owned();
                match db.code().as_deref() {
                    Some("23505") => Self::UniqueViolation { constraint },
                    Some("23514") => Self::CheckViolation { constraint },
                    Some("23503") => Self::ForeignKeyViolation { constraint },
                    _ => Self::Other(err),
                }
            }
            _ => Self::Other(err),
        }
    }
}

/// How to size and time out a pool.
#[derive(Clone, Debug)]
pub struct PoolSettings {
    /// Upper bound on open connections.
    pub max_connections: u32,
    /// How long a request waits for a connection before failing fast with "unavailable".
    pub acquire_timeout: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self { max_connections: 10, acquire_timeout: Duration::from_secs(5) }
    }
}

/// A pooled connection idle for less than this is handed out without a ping first.
///
/// sqlx pings every connection it hands out by default: a round trip before each query, which
/// doubled a one-statement request's database time. A connection that answered a moment ago is
/// almost surely alive (HikariCP skips the check within 500 ms for the same reason); if it died
/// in between — the database restarted — that one request fails with 503 and sqlx drops the
/// connection, exactly as if the database had gone away mid-request.
pub const PING_AFTER_IDLE: Duration = Duration::from_secs(5);

/// Opens a pool lazily: the process starts even when the database is down, and `/readyz`
/// reports it until it comes back.
///
/// Its sessions plan every statement for its parameters (`plan_cache_mode = force_custom_plan`).
/// Our list queries take optional filters and keyset cursors as `$n IS NULL OR …`; after five runs
/// of a prepared statement Postgres may switch it to one generic plan for all parameters, which
/// can use no index for the cursor or the filter. Measured on the customers list: after a minute
/// of jumps to page 150 (expensive custom plans make the generic one look cheap), reaching page
/// 150 by Next fell from 502 to 56 requests/s on those connections. Planning these statements
/// costs a fraction of a millisecond.
pub fn connect_lazy(url: &str, settings: &PoolSettings) -> Result<PgPool, sqlx::Error> {
    let options: PgConnectOptions = url.parse()?;
    Ok(PgPoolOptions::new()
        .max_connections(settings.max_connections)
        .acquire_timeout(settings.acquire_timeout)
        // A `SET` rather than a startup parameter, which connection poolers such as PgBouncer refuse.
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute("SET plan_cache_mode = force_custom_plan").await?;
                Ok(())
            })
        })
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_AFTER_IDLE {
                    sqlx::Connection::ping(conn).await?;
                }
                Ok(true)
            })
        })
        .connect_lazy_with(options))
}

/// Closes idle connections until at most `keep` are left; answers how many it closed.
///
/// sqlx hands out its idle connections first in, first out, so even a trickle of requests (a
/// readiness probe every few seconds) touches every connection in turn and its `idle_timeout`
/// never fires: a pool a burst grew to ten stays at ten, each holding its buffers and statement
/// cache here and a backend process in Postgres. Connections in use are never touched; a request
/// that needs more than `keep` afterwards opens them again.
pub async fn close_idle(pool: &PgPool, keep: usize) -> usize {
    let mut closed = 0;
    while pool.num_idle() > keep {
        let Some(conn) = pool.try_acquire() else { break };
        // The connection is gone from the pool either way; a failed goodbye changes nothing.
        let _ = conn.close().await;
        closed += 1;
    }
    closed
}

/// Applies the embedded migrations of `schema`.
///
/// Runs under Postgres' advisory lock (sqlx's default), so replicas starting together apply them
/// once. An applied migration whose file was edited afterwards stops start-up with a message that
/// names its version.
pub async fn migrate(pool: &PgPool, schema: Schema) -> Result<(), MigrateError> {
    schema.migrator().run(pool).await
}

/// `SELECT 1` with a short deadline; `true` when the database answers.
pub async fn ping(pool: &PgPool) -> bool {
    let query = pool.execute("SELECT 1");
    matches!(tokio::time::timeout(Duration::from_secs(2), query).await, Ok(Ok(_)))
}

/// Creates `database` (owned by the connecting role) unless it exists. `admin_url` must point at
/// another database of the same server, such as `postgres`.
pub async fn ensure_database(admin_url: &str, database: &str) -> Result<(), sqlx::Error> {
    let pool = PgPoolOptions::new().max_connections(1).connect(admin_url).await?;
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(database)
        .fetch_one(&pool)
        .await?;
    if !exists {
        // Identifiers cannot be bound; quote it the way Postgres' quote_ident does.
        let quoted = format!("\"{}\"", database.replace('"', "\"\""));
        pool.execute(format!("CREATE DATABASE {quoted}").as_str()).await?;
    }
    pool.close().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_schemas_embed_their_migrations() {
        assert!(!FLEET_MIGRATOR.migrations.is_empty());
        assert!(!SILO_MIGRATOR.migrations.is_empty());
        assert!(FLEET_MIGRATOR.locking, "migrations must run under the advisory lock");
        assert!(SILO_MIGRATOR.locking);
        let fleet_sql: String = FLEET_MIGRATOR.migrations.iter().map(|m| m.sql.as_ref()).collect();
        assert!(fleet_sql.contains("CREATE TABLE cluster_tenants"));
        let silo_sql: String = SILO_MIGRATOR.migrations.iter().map(|m| m.sql.as_ref()).collect();
        assert!(!silo_sql.contains("cluster_tenants ("), "the silo schema must not hold the fleet registry");
    }
}
