//! The Leptos UI of both roles, rendered on the server, with only the interactive parts hydrated
//! as WASM islands.
//!
//! [`FleetApp`] and [`SiloApp`] are separate root components sharing one component kit; the
//! server renders the one of its role through [`shell`]. This crate compiles twice: with `ssr`
//! into the server (pages, server functions, the service layer) and with `hydrate` into the
//! browser bundle (islands and the wire types they use). Nothing under `ssr` reaches the browser.

#![recursion_limit = "256"]
#![allow(
    clippy::needless_pass_by_value,
    reason = "Leptos components and server functions take their arguments by value"
)]

pub mod api;
pub mod authz;
#[cfg(feature = "ssr")]
pub mod bundle;
pub mod components;
pub mod error;
pub mod fleet;
pub mod forms;
pub mod islands;
pub mod model;
pub mod pages;
#[cfg(feature = "ssr")]
pub mod service;
pub mod silo;
#[cfg(feature = "ssr")]
pub mod state;

#[cfg(feature = "ssr")]
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use leptos_meta::MetaTags;
use serde::{Deserialize, Serialize};

pub use crate::{fleet::FleetApp, silo::SiloApp};

/// The product version shown in the sidebar.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The two roles of the one binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// fleet-manager: the platform operators' console.
    Fleet,
    /// clustertenant-manager: one customer's silo console.
    Silo,
}

impl Role {
    /// `fleet` or `silo`, as used in routes, logs and `<body data-role>`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fleet => "fleet",
            Self::Silo => "silo",
        }
    }

    /// The server-function prefix of this role.
    pub fn server_fn_prefix(self) -> &'static str {
        match self {
            Self::Fleet => "/api/fleet/",
            Self::Silo => "/api/silo/",
        }
    }
}

/// What the page chrome needs to know about this server (no secrets: it may be rendered into
/// the page).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiContext {
    /// Which role is serving.
    pub role: Role,
    /// `PLATFORM_BASE_DOMAIN`.
    pub base_domain: Option<String>,
    /// The silo's ClusterTenant (silo only).
    pub cluster_tenant: Option<String>,
    /// Whether the ClusterTenant area is mounted (fleet).
    pub cluster_tenants_enabled: bool,
    /// Whether the billing area is mounted (fleet).
    pub billing_enabled: bool,
    /// Validation settings for forms.
    pub validation: model::fleet::cluster_tenant::ValidationContext,
    /// Whether sign-in through the identity provider is configured.
    pub sign_in: bool,
    /// The fleet console's URL (silo only: membership is managed there).
    pub fleet_console: Option<String>,
    /// Whether a shared installation to migrate from is configured (fleet).
    #[serde(default)]
    pub shared_migration: bool,
}

impl UiContext {
    /// The host this console is served on, for the header.
    pub fn host(&self) -> Option<String> {
        let base = self.base_domain.as_deref()?;
        Some(match (&self.role, &self.cluster_tenant) {
            (Role::Silo, Some(ct)) => format!("{ct}.{base}"),
            _ => format!("platform.{base}"),
        })
    }
}

/// The HTML document around either root component; `bundle` names the browser bundle's files
/// (read once from the site, [`bundle::Bundle::read`]).
#[cfg(feature = "ssr")]
pub fn shell(options: LeptosOptions, ui: UiContext, bundle: bundle::Bundle) -> impl IntoView {
    let role = ui.role;
    #[cfg(feature = "ssr")]
    set_content_security_policy();
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <AutoReload options=options.clone() />
                <bundle::BundleScripts bundle pkg=options.site_pkg_dir.to_string() />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <MetaTags />
            </head>
            <body data-role=role.as_str()>
                {match role {
                    Role::Fleet => view! { <FleetApp ui=ui /> }.into_any(),
                    Role::Silo => view! { <SiloApp ui=ui /> }.into_any(),
                }}
            </body>
        </html>
    }
}

/// The page's Content-Security-Policy: scripts only from this origin or carrying this response's
/// nonce (the island loader), WebAssembly allowed to compile, nothing inline or evaluated, no
/// plugins, no framing.
#[cfg(feature = "ssr")]
fn set_content_security_policy() {
    let Some(options) = use_context::<leptos_axum::ResponseOptions>() else { return };
    let nonce = leptos::nonce::use_nonce().map(|n| n.to_string()).unwrap_or_default();
    let policy = format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    );
    if let Ok(value) = http::HeaderValue::from_str(&policy) {
        options.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
    }
}

/// The signed-in principal of the request being rendered (server side; `None` in the browser,
/// where non-island components never run).
pub fn current_principal() -> Option<model::principal::Principal> {
    #[cfg(feature = "ssr")]
    {
        use_context::<http::request::Parts>().and_then(|p| p.extensions.get::<model::principal::Principal>().cloned())
    }
    #[cfg(not(feature = "ssr"))]
    {
        None
    }
}
