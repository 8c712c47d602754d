//! HTTP-level tests of both roles: the real router (pages, server functions, REST API, layers)
//! driven in-process with `tower::ServiceExt::oneshot`, against a fresh database per test on the
//! harness's PostgreSQL. One test binary for the crate, modules per concern.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed step fails the test")]

mod adoption;
mod cluster_tenants_api;
mod compat;
mod credentials_key;
mod deploy_cli;
mod dns;
mod forms;
mod identity;
mod isolation;
mod matrix;
mod members;
mod metrics;
mod migrate_shared;
mod offboarding;
mod oidc;
mod pages;
mod platform;
mod portal;
mod provisioning;
mod support;
mod trust;
mod usage;
mod vocabulary;
mod zitadel;
