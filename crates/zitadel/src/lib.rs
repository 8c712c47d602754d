//! The fleet's link to Zitadel, thin on purpose: the fleet decides *what* an organisation needs
//! (`opencrane-provision`'s identity step, the rotation service); this crate only says it to
//! Zitadel.
//!
//! - [`key`]: a service-account key (parse, check, sign the JWT-bearer assertion);
//! - [`client`]: the token exchange and its cache, the request path (org header, timeouts,
//!   retries of idempotent calls), typed [`Error`]s that name the call;
//! - [`calls`]: one function per Management/Admin API call the fleet makes;
//! - `fake` (feature `fake`): a fake Zitadel on loopback for tests, built from the documented
//!   shapes, with fault injection and request counts.

pub mod calls;
pub mod client;
#[cfg(feature = "fake")]
pub mod fake;
pub mod key;

pub use calls::{
    App, CreatedApp, GrantChange, Instance, LoginApp, MachineKey, Member, Org, OrgUser, Project, Role, UserGrant,
};
pub use client::{Client, Error, Exchange, Timeouts};
pub use key::{KeyError, ServiceAccountKey, Signer};
