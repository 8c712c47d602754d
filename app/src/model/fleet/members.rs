//! Wire types of a customer's members on the fleet (its OrgMemberships): one member, and the
//! add-or-change body of the reference's `POST /cluster-tenants/{name}/members {subject, role}`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A member of a customer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    /// The person's IdP subject.
    pub subject: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    /// `active` (holds a seat) or `suspended`.
    pub status: String,
    /// When the membership was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// Add a member (taking a seat) or change a member's role.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberRequest {
    /// The person's IdP subject.
    #[serde(default)]
    pub subject: String,
    /// `owner`, `admin` or `member` (the reference's `Owner|Admin|Member` too); default `member`.
    #[serde(default)]
    pub role: Option<String>,
}

/// What an add or change did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberChange {
    /// The member now.
    #[serde(flatten)]
    pub member: MemberView,
    /// Whether the membership was created (else its role changed).
    pub created: bool,
    /// Whether the identity provider got the grant (false until the identity plane is configured).
    pub zitadel_seated: bool,
}
