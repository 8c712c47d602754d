//! The portal's integration tests: the LiteLLM reconciler against a real silo database and the
//! fake LiteLLM, and the Tenant/AccessPolicy runtime against the fake API server. One test
//! binary for the crate (less link time), a module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed step fails the test")]

mod litellm;
mod runtime;
