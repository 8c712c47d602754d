//! Session and access-token wire types.

use serde::{Deserialize, Serialize};

/// A signed-in session, as the Sessions page lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    /// Opaque handle for revoking it (a hash of the id, never the cookie value itself).
    pub handle: String,
    /// Whose session.
    pub subject: String,
    /// Their email.
    pub email: Option<String>,
    /// Their name.
    pub display_name: String,
    /// Browser (User-Agent).
    pub user_agent: String,
    /// Client address at sign-in.
    pub ip: String,
    /// Sign-in time.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Last activity.
    pub last_seen_at: chrono::DateTime<chrono::Utc>,
    /// Latest end.
    pub expires_at: chrono::DateTime<chrono::Utc>,
    /// Whether this is the session making the request.
    pub current: bool,
}

/// What to end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", tag = "scope")]
pub enum RevokeSessions {
    /// One session, by handle.
    One {
        /// The session's handle.
        handle: String,
    },
    /// Every session of mine except the current one.
    MyOthers,
    /// Every session of a member (admins).
    AllOf {
        /// The member's subject.
        subject: String,
    },
}

/// An access token as listed (never its secret).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AccessTokenView {
    /// Token id.
    pub id: String,
    /// What it is for.
    pub name: String,
    /// The member it acts for.
    pub owner_subject: String,
    /// `admin` or `member`.
    pub role: String,
    /// The first characters of the secret.
    pub prefix: String,
    /// Creation time.
    #[cfg_attr(not(feature = "ssr"), serde(deserialize_with = "crate::model::time::rfc3339"))]
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Expiry (date and time), if any.
    #[cfg_attr(not(feature = "ssr"), serde(default, deserialize_with = "crate::model::time::rfc3339_opt"))]
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Last use.
    #[cfg_attr(not(feature = "ssr"), serde(default, deserialize_with = "crate::model::time::rfc3339_opt"))]
    pub last_used_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Revocation time.
    #[cfg_attr(not(feature = "ssr"), serde(default, deserialize_with = "crate::model::time::rfc3339_opt"))]
    pub revoked_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// `POST` body to create a token.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewAccessTokenRequest {
    /// What it is for (1–80 characters).
    #[serde(default)]
    pub name: String,
    /// `admin` or `member`; never more than the creator's own role.
    #[serde(default)]
    pub role: String,
    /// Days until it expires; `None` = never (1–3650).
    #[serde(default)]
    pub expires_in_days: Option<i64>,
}

/// The one response that carries a token's secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreatedAccessToken {
    /// The stored token.
    pub token: AccessTokenView,
    /// The secret (`ocp_` + 48 hex digits), shown once.
    pub plain_text_token: String,
}
