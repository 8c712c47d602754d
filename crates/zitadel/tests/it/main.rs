//! The Zitadel client against the fake, and the fake's conformance to Zitadel's documented
//! behaviour (one binary: `client` exercises every call, `fake` pins each behaviour the fleet
//! relies on with raw HTTP).

mod client;
mod fake;
