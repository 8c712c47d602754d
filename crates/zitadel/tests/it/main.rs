//! The Zitadel client against the fake, and the fake's conformance to Zitadel's documented
//! behaviour (one binary: `client` exercises every call, `fake` pins each behaviour the fleet
//! relies on with raw HTTP).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a failed step fails the test")]

mod client;
mod fake;
