//! Wire types of the silo's groups (local or mirrored from the identity provider).

use serde::{Deserialize, Serialize};

/// A group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GroupView {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// `org`, `department`, `team`, `project`, `personal`.
    pub scope: String,
    /// What it is for.
    pub description: String,
    /// `local` or `idp`.
    pub source: String,
    /// Member user names.
    pub members: Vec<String>,
}

/// Create or change a group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GroupRequest {
    /// Name.
    #[serde(default)]
    pub name: String,
    /// Scope.
    #[serde(default)]
    pub scope: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Member user names.
    #[serde(default)]
    pub members: Vec<String>,
}

/// The group scopes.
pub const GROUP_SCOPES: [&str; 5] = ["org", "department", "team", "project", "personal"];
