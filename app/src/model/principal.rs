//! Who is making a request, as the pages and the API see it.

use serde::{Deserialize, Serialize};

/// How the caller proved who they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PrincipalKind {
    /// The explicit development identity (dev mode on loopback only).
    Development,
    /// A bearer token (machine caller).
    Token,
    /// A person signed in through the identity provider.
    User,
}

/// The authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Principal {
    /// How they authenticated.
    pub kind: PrincipalKind,
    /// IdP subject (or a synthetic one for tokens and the dev identity).
    pub subject: String,
    /// Verified email, when known.
    pub email: Option<String>,
    /// Name to show in the header.
    pub display_name: String,
    /// Platform operators may do everything on the fleet.
    pub is_platform_operator: bool,
}

impl Principal {
    /// The subject of the development identity (the reference's `dev-local-subject`).
    pub const DEV_SUBJECT: &'static str = "dev-local-subject";

    /// The explicit development identity: a platform operator that exists only in dev mode
    /// when the server is bound to loopback.
    pub fn development() -> Self {
        Self {
            kind: PrincipalKind::Development,
            subject: Self::DEV_SUBJECT.into(),
            email: Some("dev@localhost".into()),
            display_name: "Developer".into(),
            is_platform_operator: true,
        }
    }

    /// A caller holding the role's API token (`OPENCRANE_API_TOKEN`, or the dev token).
    pub fn api_token(name: &str) -> Self {
        Self {
            kind: PrincipalKind::Token,
            subject: format!("token:{name}"),
            email: None,
            display_name: format!("API token {name}"),
            is_platform_operator: true,
        }
    }

    /// Whether a person (not a machine) is behind the request: only people can own things.
    pub fn is_person(&self) -> bool {
        !matches!(self.kind, PrincipalKind::Token)
    }

    /// The role label shown in the header.
    pub fn role_label(&self) -> &'static str {
        match (self.kind, self.is_platform_operator) {
            (PrincipalKind::Development, _) => "Dev operator",
            (PrincipalKind::Token, _) => "API token",
            (PrincipalKind::User, true) => "Operator",
            (PrincipalKind::User, false) => "Member",
        }
    }
}
