//! The provisioner's integration tests: the reconciler over a scripted backend, the local
//! backend against the harness's PostgreSQL, the Kubernetes backend, the lease and the platform issuer
//! against the fake API server. One test binary for the crate (less link time), a module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed step fails the test")]

mod identity;
mod kubernetes;
mod lease;
mod local;
mod platform_dns;
mod probe;
mod reconcile;
mod support;
