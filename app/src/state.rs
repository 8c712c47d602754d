//! Server-side state shared by pages, server functions and REST handlers (compiled with `ssr`
//! only), and how a request's caller is found.

use leptos::config::LeptosOptions;
use opencrane_db::PgPool;

use crate::{
    Role,
    error::AppError,
    model::{fleet::cluster_tenant::ValidationContext, principal::Principal},
};

/// The fleet-manager's settings.
#[derive(Clone, Debug)]
pub struct FleetSettings {
    /// `OPENCRANE_CLUSTER_TENANT_MANAGER_ENABLED`: mount the ClusterTenant area.
    pub cluster_tenants_enabled: bool,
    /// `OPENCRANE_BILLING_ENABLED`: mount the billing area.
    pub billing_enabled: bool,
    /// What ClusterTenant validation needs (base domain, available tiers).
    pub validation: ValidationContext,
    /// The Zitadel identity plane, when `ZITADEL_MGMT_API_URL` is set.
    pub identity: Option<crate::service::fleet::identity::IdentityRuntime>,
    /// The DNS and certificate probes, when the base domain and the ingress address are known.
    pub dns: Option<std::sync::Arc<opencrane_provision::dns_truth::DnsTruth>>,
    /// The platform's certificate issuer on the cluster, when the fleet reaches a Kubernetes API.
    pub platform_dns: Option<std::sync::Arc<opencrane_provision::platform_dns::cluster::PlatformDns>>,
    /// The migration from the original's shared database, when `OPENCRANE_SHARED_SOURCE_URL`
    /// is set.
    pub migration: Option<crate::service::fleet::migrations::MigrationRuntime>,
    /// The customers list's kept pages (see [`crate::service::fleet::cluster_tenants::list`]).
    pub kept_pages: std::sync::Arc<crate::service::kept::Kept<crate::model::fleet::cluster_tenant::ClusterTenantPage>>,
    /// The customers list's rendered rows (see [`crate::pages::fleet::cluster_tenants`]).
    pub kept_rows: std::sync::Arc<crate::service::kept::KeptHtml<crate::pages::fleet::cluster_tenants::RowsShown>>,
}

/// The clustertenant-manager's settings.
#[derive(Clone, Debug)]
pub struct SiloSettings {
    /// The ClusterTenant this silo serves.
    pub cluster_tenant: String,
    /// `PLATFORM_BASE_DOMAIN`, for showing the silo's host.
    pub base_domain: Option<String>,
    /// The portal's secrets and LiteLLM enforcement.
    pub portal: PortalRuntime,
    /// The fleet console's URL (`--fleet-console-url`, else `https://platform.<base>`), for links
    /// to what is managed there (members).
    pub fleet_console: Option<String>,
    /// On a cluster running Cilium: the access policies' domains also narrow the MCP gateway's
    /// egress (`opencrane_portal::egress`); otherwise the gateway alone enforces them.
    pub cilium_egress: bool,
    /// The REST lists' kept answers (see [`crate::service::silo::kept`]).
    pub kept_lists: std::sync::Arc<crate::service::kept::Kept<crate::service::silo::kept::KeptList>>,
}

/// What the silo portal needs beyond its database.
#[derive(Clone, Debug, Default)]
pub struct PortalRuntime {
    /// Seals provider keys and LiteLLM keys (`OPENCRANE_CREDENTIALS_KEY`); without it provider
    /// keys cannot be stored.
    pub secrets: Option<std::sync::Arc<opencrane_portal::seal::SecretBox>>,
    /// The LiteLLM endpoint enforcement runs against (`LITELLM_ENDPOINT`), if any.
    pub litellm: Option<String>,
    /// Ask the background loops (LiteLLM, Tenant resources) for an early pass.
    pub triggers: Vec<opencrane_portal::reconcile::Trigger>,
}

/// Which role this process serves, with its settings.
#[derive(Clone, Debug)]
pub enum RoleSettings {
    /// fleet-manager.
    Fleet(FleetSettings),
    /// clustertenant-manager.
    Silo(SiloSettings),
}

/// Everything a request handler needs, shared behind one `Arc`: axum and Leptos clone the state
/// for every request (each `State` extractor, each context it is provided to), and a deep clone
/// copied Leptos' site settings and the role's settings, strings and all, every time (visible
/// in a profile of the silo's groups list). Reads go through `Deref`; the set-up code's writes
/// through `DerefMut`, which copies the fields first only if a clone is already out.
#[derive(Clone, Debug)]
pub struct AppState(std::sync::Arc<AppStateFields>);

impl From<AppStateFields> for AppState {
    fn from(fields: AppStateFields) -> Self {
        Self(std::sync::Arc::new(fields))
    }
}

impl std::ops::Deref for AppState {
    type Target = AppStateFields;
    fn deref(&self) -> &AppStateFields {
        &self.0
    }
}

impl std::ops::DerefMut for AppState {
    fn deref_mut(&mut self) -> &mut AppStateFields {
        std::sync::Arc::make_mut(&mut self.0)
    }
}

/// What [`AppState`] holds.
#[derive(Clone, Debug)]
pub struct AppStateFields {
    /// Leptos' site settings.
    pub leptos_options: LeptosOptions,
    /// The role's own database.
    pub pool: PgPool,
    /// The role and its settings.
    pub role: RoleSettings,
    /// Whether sign-in through the identity provider is configured (else only tokens and, in
    /// dev mode, the development identity authenticate).
    pub sign_in: bool,
    /// A readiness condition besides the database (the fleet's resource watch), if any.
    pub health: Option<HealthCheck>,
}

/// A readiness check: `None` when healthy, else what is wrong.
#[derive(Clone)]
pub struct HealthCheck(pub std::sync::Arc<dyn Fn() -> Option<String> + Send + Sync>);

impl std::fmt::Debug for HealthCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HealthCheck")
    }
}

impl axum::extract::FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos_options.clone()
    }
}

impl AppState {
    /// The role.
    pub fn role(&self) -> Role {
        match self.role {
            RoleSettings::Fleet(_) => Role::Fleet,
            RoleSettings::Silo(_) => Role::Silo,
        }
    }

    /// The fleet settings, or 404 when this process is a silo (a server function of the other
    /// role must look as absent as its route).
    pub fn fleet(&self) -> Result<&FleetSettings, AppError> {
        match &self.role {
            RoleSettings::Fleet(f) => Ok(f),
            RoleSettings::Silo(_) => Err(not_found()),
        }
    }

    /// Drops the role's kept answers (see [`crate::service::kept`]); the next requests read
    /// afresh.
    pub fn forget_kept_answers(&self) {
        match &self.role {
            RoleSettings::Fleet(f) => {
                f.kept_pages.forget();
                f.kept_rows.forget();
            }
            RoleSettings::Silo(s) => s.kept_lists.forget(),
        }
    }

    /// The silo settings, or 404 on the fleet.
    pub fn silo(&self) -> Result<&SiloSettings, AppError> {
        match &self.role {
            RoleSettings::Silo(s) => Ok(s),
            RoleSettings::Fleet(_) => Err(not_found()),
        }
    }
}

fn not_found() -> AppError {
    AppError::NotFound { code: "NOT_FOUND".into(), message: "Not found.".into() }
}

/// The header carrying the request id (set by the server's request-id layer).
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The id of the browser session a request came with (set by the authentication middleware).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurrentSession(pub String);

/// Who is calling, and under which request id; every service function takes one.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The authenticated principal, if any.
    pub principal: Option<Principal>,
    /// Correlates logs, audit entries and error responses.
    pub request_id: String,
    /// The browser session, when the caller signed in through the identity provider.
    pub session_id: Option<String>,
}

impl Caller {
    /// Reads the caller from request parts: the principal and session that the authentication
    /// middleware put into the extensions, and the request id header.
    pub fn from_parts(parts: &http::request::Parts) -> Self {
        Self {
            principal: parts.extensions.get::<Principal>().cloned(),
            request_id: parts.headers.get(REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("-").to_owned(),
            session_id: parts.extensions.get::<CurrentSession>().map(|s| s.0.clone()),
        }
    }

    /// Who the audit log names.
    pub fn actor(&self) -> &str {
        self.principal.as_ref().map_or("anonymous", |p| p.subject.as_str())
    }

    /// The role the audit log records.
    pub fn actor_role(&self) -> &'static str {
        self.principal.as_ref().map_or("anonymous", Principal::role_label)
    }
}

/// The state and caller of the current server function or page render.
pub fn request_context() -> Result<(AppState, Caller), AppError> {
    request_parts().map(|(state, parts)| (state, Caller::from_parts(&parts)))
}

/// The state and the request of the current server function or page render.
pub fn request_parts() -> Result<(AppState, http::request::Parts), AppError> {
    let state = leptos::prelude::use_context::<AppState>();
    let parts = leptos::prelude::use_context::<http::request::Parts>();
    match (state, parts) {
        (Some(state), Some(parts)) => Ok((state, parts)),
        _ => {
            tracing::error!("server function called without AppState or request parts in context");
            Err(AppError::Internal { request_id: "-".into() })
        }
    }
}

impl AppState {
    /// What the page chrome shows about this server.
    pub fn ui_context(&self) -> crate::UiContext {
        match &self.role {
            RoleSettings::Fleet(f) => crate::UiContext {
                role: Role::Fleet,
                base_domain: f.validation.base_domain.clone(),
                cluster_tenant: None,
                cluster_tenants_enabled: f.cluster_tenants_enabled,
                billing_enabled: f.billing_enabled,
                validation: f.validation.clone(),
                sign_in: self.sign_in,
                fleet_console: None,
                shared_migration: f.migration.is_some(),
            },
            RoleSettings::Silo(s) => crate::UiContext {
                role: Role::Silo,
                base_domain: s.base_domain.clone(),
                cluster_tenant: Some(s.cluster_tenant.clone()),
                cluster_tenants_enabled: false,
                billing_enabled: false,
                validation: ValidationContext::default(),
                sign_in: self.sign_in,
                fleet_console: s.fleet_console.clone(),
                shared_migration: false,
            },
        }
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut http::request::Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::from_parts(parts))
    }
}
