//! Wire types of a customer's members on the fleet (its OrgMemberships): one member, the
//! add-or-change body of the reference's `POST /cluster-tenants/{name}/members {subject, role}`
//! (or `{email, role}`: an invitation), a pending invitation, and the internal admission a silo
//! asks for at a person's sign-in (`POST /api/internal/cluster-tenants/{name}/members/adopt`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A member of a customer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
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
    /// When they last signed in to the customer's silo (`null`: not yet, or not reported).
    pub last_sign_in_at: Option<DateTime<Utc>>,
}

/// Add a member (taking a seat) or change a member's role.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberRequest {
    /// The person's IdP subject.
    #[serde(default)]
    pub subject: String,
    /// Instead of a subject: the person's e-mail address, which invites them (pending, no seat,
    /// until their first sign-in through the customer's organisation with that address verified).
    #[serde(default)]
    pub email: Option<String>,
    /// `owner`, `admin` or `member` (the reference's `Owner|Admin|Member` too); default `member`.
    #[serde(default)]
    pub role: Option<String>,
}

/// A pending invitation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct InvitationView {
    /// The invited address.
    pub email: String,
    /// The role they get at their first sign-in.
    pub role: String,
    /// Always `invited`.
    pub status: String,
    /// Who invited them.
    pub invited_by: String,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// What an add by e-mail did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct InvitationChange {
    /// The invitation now.
    #[serde(flatten)]
    pub invitation: InvitationView,
    /// Whether it was created (else its role changed).
    pub created: bool,
}

/// What a silo asks the fleet when a person signs in to it through the customer's organisation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmitRequest {
    /// The person's subject.
    #[serde(default)]
    pub subject: String,
    /// Their e-mail address, if the token had one.
    #[serde(default)]
    pub email: Option<String>,
    /// Whether the provider verified that address (only a verified address accepts an invitation).
    #[serde(default)]
    pub email_verified: bool,
}

/// The fleet's answer: the person's membership now, and how they were admitted (`member`: already
/// one; `invited`: their invitation accepted; `adopted`: made a `member` at this first sign-in).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Admitted {
    /// The subject.
    pub subject: String,
    /// Their role.
    pub role: String,
    /// `active`.
    pub status: String,
    /// `member`, `invited` or `adopted`.
    pub admission: String,
}

/// What an add or change did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
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
