//! Wire types of model routing: provider credentials (never their secrets), deployments,
//! fallback chains, default models and the test-route tool.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::*;

/// A provider credential (never its secret).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CredentialView {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Provider.
    pub provider: String,
    /// API base.
    pub api_base: Option<String>,
    /// Last four characters.
    pub hint: String,
    /// Deployments using it.
    pub used_by: i64,
    /// Last change (rotation).
    pub updated_at: DateTime<Utc>,
    /// The Kubernetes Secret holding the key (`name` or `name/key` in the silo's namespace),
    /// for a credential whose key is not stored here.
    #[serde(default)]
    pub secret_ref: Option<String>,
    /// Why that Secret could not be read on the last pass (`null`: it was, or not tried yet).
    #[serde(default)]
    pub secret_status: Option<String>,
    /// When a pass last read (or tried to read) it.
    #[serde(default)]
    pub secret_checked_at: Option<DateTime<Utc>>,
}

/// Add a credential, or rotate one (`name` and `provider` are then ignored).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CredentialRequest {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Provider.
    #[serde(default)]
    pub provider: String,
    /// The provider API key (write-only), sealed in the silo's database.
    #[serde(default)]
    pub api_key: String,
    /// Instead of a key: a Secret of the silo's namespace that holds it (`name`, key `api-key`, or
    /// `name/key`), read when LiteLLM is converged and never stored here (the original's
    /// `secretRef`).
    #[serde(default)]
    pub secret_ref: Option<String>,
    /// API base.
    #[serde(default)]
    pub api_base: Option<String>,
}

/// The providers credentials may be for.
pub const PROVIDERS: [&str; 6] = ["openai", "anthropic", "azure", "gemini", "mistral", "openai-compatible"];

/// A deployment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeploymentView {
    /// Id.
    pub id: String,
    /// Public name.
    pub public_name: String,
    /// Upstream model.
    pub upstream_model: String,
    /// API base.
    pub api_base: Option<String>,
    /// Credential name.
    pub credential: Option<String>,
    /// Weight.
    pub weight: i32,
    /// Share of its public name's traffic.
    pub share_percent: u32,
}

/// Add a deployment (the reference's `POST /models`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeploymentRequest {
    /// Public name.
    #[serde(default, alias = "publicModelName")]
    pub public_name: String,
    /// Upstream model.
    #[serde(default)]
    pub upstream_model: String,
    /// API base.
    #[serde(default)]
    pub api_base: Option<String>,
    /// Credential name or id.
    #[serde(default)]
    pub credential: Option<String>,
    /// Weight (1 when absent).
    #[serde(default)]
    pub weight: Option<i32>,
}

/// Set a fallback chain.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FallbackRequest {
    /// Public name.
    #[serde(default)]
    pub public_name: String,
    /// Fallbacks, in order (empty removes the chain).
    #[serde(default)]
    pub chain: Vec<String>,
}

/// A default model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DefaultView {
    /// Id.
    pub id: String,
    /// `silo`, `group`, `user`.
    pub scope: String,
    /// For people.
    pub target: String,
    /// Public name.
    pub model: String,
}

/// Set a default model (the reference's `PUT /model-routing/defaults`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DefaultRequest {
    /// `silo`, `group`, `user`.
    #[serde(default)]
    pub scope: String,
    /// Group name or id, or user name.
    #[serde(default)]
    pub target: Option<String>,
    /// Public name.
    #[serde(default, alias = "defaultModel")]
    pub model: String,
}

/// The models page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ModelsOverview {
    /// Credentials.
    pub credentials: Vec<CredentialView>,
    /// Deployments.
    pub deployments: Vec<DeploymentView>,
    /// (public name, chain).
    pub fallbacks: Vec<(String, Vec<String>)>,
    /// Defaults.
    pub defaults: Vec<DefaultView>,
    /// Public names.
    pub public_names: Vec<String>,
    /// Users, for the test-route tool and defaults.
    pub users: Vec<String>,
    /// Groups (id, name), for defaults.
    pub groups: Vec<(String, String)>,
    /// Whether credentials can be stored (a credentials key is configured).
    pub credentials_enabled: bool,
    /// Enforcement.
    pub enforcement: SyncView,
}

/// Ask the test-route tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RouteTestRequest {
    /// User.
    #[serde(default)]
    pub user: String,
    /// Requested public name (none: the defaults decide).
    #[serde(default)]
    pub model: Option<String>,
}

/// The answer of the test-route tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RouteTest {
    /// Whether a route exists.
    pub ok: bool,
    /// The public model that would serve.
    pub model: Option<String>,
    /// What picked it.
    pub chosen_by: Option<String>,
    /// Why the user may use it.
    pub access: Option<String>,
    /// (upstream model, percent of traffic).
    pub deployments: Vec<(String, u32)>,
    /// Fallback chain.
    pub fallbacks: Vec<String>,
    /// Candidates passed over.
    pub skipped: Vec<String>,
    /// Why there is no route.
    pub error: Option<String>,
    /// No model was asked for and none is set as a default (silo, group or user): the normal
    /// state of a silo without defaults, shown as a hint rather than an error.
    #[serde(default)]
    pub no_default: bool,
}
