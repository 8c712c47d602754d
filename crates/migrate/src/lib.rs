//! Moving an installation of the original's shared database (one PostgreSQL for every customer)
//! onto this project's fleet registry and one database per silo: a guided, verifiable,
//! resumable migration that never changes the source.
//!
//! - [`source`] reads the original's schema through a read-only connection, whichever version
//!   it is, and refuses a database that is not the original's — thin I/O;
//! - [`map`] turns what it read into a [`map::Plan`]: per customer its fleet record,
//!   memberships and silo rows; what cannot be placed and which defaults were used — pure;
//! - [`fleet`] makes each customer exist in the fleet (so the provisioner gives it a silo) and
//!   keeps the migration's phase per customer — thin I/O;
//! - [`silo`] copies a customer's rows into its own silo database in one transaction and reads
//!   them back — thin I/O;
//! - [`relay`] carries the copy and the read-back through each silo's own manager where the
//!   fleet cannot reach the silos' databases (a cluster): staged parcels the silo pulls with its
//!   own credential, and the digest it reports back — thin I/O on both sides;
//! - [`verify`] compares both sides per table (counts and an order-independent checksum) — pure;
//! - [`run`] drives the phases (preflight → provision → copy → verify → cut over), each
//!   idempotent, so a run after a crash at any point resumes without duplicates.
//!
//! Where a silo's database is and which key seals its secrets is the caller's to say
//! ([`Silos`]): `opencrane migrate-shared` knows the dev environment's.

pub mod fleet;
pub mod map;
pub mod relay;
pub mod run;
pub mod silo;
pub mod source;
pub mod verify;

pub use run::{Event, Options, Phase, Report};

/// Why the migration (or one customer's) stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source could not be read.
    #[error("{0}")]
    Source(String),
    /// The source is not the original's schema.
    #[error("{database} is not the original's shared database; missing: {}", missing.join(", "))]
    NotTheOriginal {
        /// The source's label.
        database: String,
        /// What is missing (`table t`, `column t.c`).
        missing: Vec<String>,
    },
    /// The fleet database refused or failed.
    #[error("{0}")]
    Fleet(String),
    /// A silo database refused or failed.
    #[error("{0}")]
    Silo(String),
    /// A write would have mixed customers' data; nothing was written.
    #[error("{0}")]
    Isolation(String),
}

/// How the migration reaches a customer's silo.
#[derive(Clone, Debug)]
pub enum Reach {
    /// Its database, directly (as a role that may write it).
    Database(sqlx::PgPool),
    /// Through its own manager ([`relay`]): the silo's database stays closed to the fleet.
    Relay,
}

/// Where each customer's silo is, and the key its secrets are sealed with.
#[async_trait::async_trait]
pub trait Silos: Send + Sync {
    /// How to reach the customer's silo, once its database is provisioned and migrated (or, for
    /// [`Reach::Relay`], its manager is up); `None` while it is not yet.
    async fn reach(&self, customer: &str) -> Result<Option<Reach>, Error>;

    /// The silo's credentials key (a new box each call), when known here (a relayed silo seals
    /// with its own).
    fn credentials_key(&self, customer: &str) -> Option<opencrane_portal::seal::SecretBox>;
}

/// An error and its sources, on one line (the driver's text says what the database refused).
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut next = error.source();
    while let Some(e) = next {
        out.push_str(": ");
        out.push_str(&e.to_string());
        next = e.source();
    }
    out
}
