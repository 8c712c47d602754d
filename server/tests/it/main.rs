//! HTTP-level tests of both roles: the real router (pages, server functions, REST API, layers)
//! driven in-process with `tower::ServiceExt::oneshot`, against a fresh database per test on the
//! harness's PostgreSQL. One test binary for the crate, modules per concern.

mod cluster_tenants_api;
mod isolation;
mod pages;
mod platform;
mod support;
