//! Browser end-to-end tests: the real `opencrane dev` (its own PostgreSQL, both roles) driven
//! through headless Chromium, and for sign-in a real OpenID Provider (`oidc-provider`) on
//! loopback. One test binary; a module per concern.

mod accessibility;
mod billing;
mod console;
mod dns;
mod enhancement;
mod identity;
mod migration;
mod portal;
mod provisioning;
mod sign_in;
