//! Probes of what the world actually sees, each a thin I/O step around a pure judgement:
//! [`readyz`] (a silo manager answers), [`dns`] (a customer's host resolves to the ingress address
//! at the zone's authoritative nameservers) and [`tls`] (the certificate the host serves).

#[cfg(feature = "bind-harness")]
pub mod bind;
pub mod dns;
mod readyz;
pub mod tls;

pub use readyz::readyz;
