//! Wire types of a user's effective access: models with the deciding grant, the governing policy,
//! the domain check and the limits that bind.

use serde::{Deserialize, Serialize};

use super::*;

/// One model on the effective-access view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ModelAccess {
    /// Public name.
    pub model: String,
    /// Allowed.
    pub allowed: bool,
    /// Why.
    pub why: String,
    /// Grants that applied but lost.
    pub overridden: Vec<String>,
}

/// The policy that governs a user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PolicyAccess {
    /// Policy.
    pub policy: PolicyView,
    /// "named on the user", "selected by team=eng".
    pub how: String,
}

/// Everything that applies to one user, with reasons.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct EffectiveAccess {
    /// The user.
    pub user: UserView,
    /// Every model and why.
    pub models: Vec<ModelAccess>,
    /// The governing policy.
    pub policy: Option<PolicyAccess>,
    /// Every limit, the one that binds first first.
    pub limits: Vec<LimitView>,
    /// The route of a request naming no model.
    pub default_route: RouteTest,
    /// Why the key is blocked, if it is (as the enforcement computes it).
    pub block_reasons: Vec<String>,
    /// Access when no grant applies.
    pub default_model_access: String,
    /// The user's live sign-in sessions in this silo.
    pub active_sessions: usize,
}

/// Checking a domain against a user's policy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DomainCheck {
    /// Reachable.
    pub allowed: bool,
    /// For people.
    pub explanation: String,
}
