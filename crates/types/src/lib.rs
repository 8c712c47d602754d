//! The customer vocabulary of OpenCrane, defined once.
//!
//! - [`cluster_tenant`]: how a customer (a *ClusterTenant*) is isolated and placed, its namespace
//!   [`Quota`], what happens to its data on deletion, its lifecycle [`Phase`], and the phase of
//!   a silo user's workspace ([`TenantPhase`]);
//! - [`provisioning`]: the steps of the silo pipeline ([`StepId`], in run and teardown order) and
//!   the state of each ([`StepState`]);
//! - [`platform_dns`]: the platform certificate issuer's summary (wire shape of `/platform/dns`);
//! - [`rules`]: the field rules every validator uses (Kubernetes quantities, customer and user
//!   names, domains, label values, versions, display text).
//!
//! `std` + serde only: the hydrated form island, the server's validation, the CRD types and the
//! provisioner all use these items, so they cannot disagree. With the `schemars` feature (the CRD
//! crate's) the enums also describe themselves as JSON Schema.
//!
//! Glossary: a *customer* is a ClusterTenant (fleet database, REST, CRD); a silo *user* is a
//! `Tenant` (silo database, REST, CRD); a *member* is an OrgMembership.

pub mod cluster_tenant;
pub mod platform_dns;
pub mod provisioning;
pub mod rules;

pub use cluster_tenant::{ComputeMode, IsolationTier, Phase, Quota, TenantPhase, TerminationPolicy};
pub use provisioning::{StepId, StepState};

/// Implements `as_str`, `parse` and `ALL` for a fieldless enum from one table of
/// `Variant => "spelling"`, so the wire spelling and its parser cannot drift apart.
macro_rules! spelled {
    ($ty:ident { $($variant:ident => $spelling:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: [Self; [$($spelling),+].len()] = [$(Self::$variant),+];

            /// The stored and wire spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $spelling),+
                }
            }

            /// Parses the stored and wire spelling (`None` for anything else).
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($spelling => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use spelled;
