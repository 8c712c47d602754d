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
//! - [`verify`] compares both sides per table (counts and an order-independent checksum) — pure;
//! - [`run`] drives the phases (preflight → provision → copy → verify → cut over), each
//!   idempotent, so a run after a crash at any point resumes without duplicates.
//!
//! Where a silo's database is and which key seals its secrets is the caller's to say
//! ([`Silos`]): `opencrane migrate-shared` knows the dev environment's.

pub mod fleet;
pub mod map;
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

/// Where each customer's silo database is, and the key its secrets are sealed with.
#[async_trait::async_trait]
pub trait Silos: Send + Sync {
    /// The customer's silo database (as a role that may write it), once its database is
    /// provisioned and migrated; `None` while it is not yet.
    async fn database(&self, customer: &str) -> Result<Option<sqlx::PgPool>, Error>;

    /// The silo's credentials key (a new box each call), when known here.
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
