//! Who is making a request, as the pages, the service layer and the authorisation decision see it.

use serde::{Deserialize, Serialize};

/// How the caller proved who they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PrincipalKind {
    /// The explicit development identity (dev mode on loopback only).
    Development,
    /// A bearer token (machine caller, or an `ocp_` token acting for a member).
    Token,
    /// A person signed in through the identity provider.
    User,
}

/// A role in a ClusterTenant (OrgMembership).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OrgRole {
    /// Full control, including deletion.
    Owner,
    /// Manages the organisation's settings and members.
    Admin,
    /// Uses the organisation's silo.
    Member,
}

impl OrgRole {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Owner => "owner",
            Self::Admin => "admin",
            Self::Member => "member",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Owner, Self::Admin, Self::Member].into_iter().find(|r| r.as_str() == s)
    }

    /// Owners and admins manage an organisation.
    pub fn manages(self) -> bool {
        matches!(self, Self::Owner | Self::Admin)
    }
}

/// One membership of the caller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Membership {
    /// The ClusterTenant.
    pub cluster_tenant: String,
    /// The role there.
    pub role: OrgRole,
    /// Suspended memberships grant nothing (the original's gates ignored status).
    pub active: bool,
}

/// The authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Principal {
    /// How they authenticated.
    pub kind: PrincipalKind,
    /// IdP subject (tokens: the subject they act for, or `token:<name>` for service tokens).
    pub subject: String,
    /// Verified email, when known.
    pub email: Option<String>,
    /// Name to show in the header.
    pub display_name: String,
    /// Platform operators may do everything on the fleet and read any silo.
    pub is_platform_operator: bool,
    /// Groups and roles from the identity provider.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Memberships in ClusterTenants (on a silo: at most the silo's own).
    #[serde(default)]
    pub memberships: Vec<Membership>,
    /// The customer whose silo this service caller is (it presented that silo's credential on the
    /// fleet's internal API); such a caller may read that customer's silo facts and nothing else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silo: Option<String>,
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
            groups: Vec::new(),
            memberships: Vec::new(),
            silo: None,
        }
    }

    /// A service caller holding the role's static API token (`OPENCRANE_API_TOKEN`, or the dev
    /// token): it holds the operator role, so it passes role checks (the original's bearer did not).
    pub fn api_token(name: &str) -> Self {
        Self {
            kind: PrincipalKind::Token,
            subject: format!("token:{name}"),
            email: None,
            display_name: format!("API token {name}"),
            is_platform_operator: true,
            groups: Vec::new(),
            memberships: Vec::new(),
            silo: None,
        }
    }

    /// The silo of `cluster_tenant`, calling the fleet's internal API with its own credential:
    /// no operator, no member of anything.
    pub fn silo(cluster_tenant: &str) -> Self {
        Self {
            kind: PrincipalKind::Token,
            subject: format!("silo:{cluster_tenant}"),
            email: None,
            display_name: format!("silo of {cluster_tenant}"),
            is_platform_operator: false,
            groups: Vec::new(),
            memberships: Vec::new(),
            silo: Some(cluster_tenant.to_owned()),
        }
    }

    /// Whether a person (not a machine) is behind the request: only people own things.
    pub fn is_person(&self) -> bool {
        !matches!(self.kind, PrincipalKind::Token)
    }

    /// The caller's active role in `cluster_tenant`, if any.
    pub fn role_in(&self, cluster_tenant: &str) -> Option<OrgRole> {
        self.memberships.iter().find(|m| m.active && m.cluster_tenant == cluster_tenant).map(|m| m.role)
    }

    /// Whether the caller is an active owner or admin of `cluster_tenant`.
    pub fn manages(&self, cluster_tenant: &str) -> bool {
        self.role_in(cluster_tenant).is_some_and(OrgRole::manages)
    }

    /// ClusterTenants the caller manages.
    pub fn managed(&self) -> Vec<String> {
        self.memberships.iter().filter(|m| m.active && m.role.manages()).map(|m| m.cluster_tenant.clone()).collect()
    }

    /// The role shown in the header and recorded in the audit log.
    pub fn role_label(&self) -> &'static str {
        match self.kind {
            PrincipalKind::Development => "dev operator",
            PrincipalKind::Token if self.is_platform_operator => "service token",
            _ if self.is_platform_operator => "operator",
            _ => match self.memberships.iter().filter(|m| m.active).map(|m| m.role).min() {
                Some(OrgRole::Owner) => "owner",
                Some(OrgRole::Admin) => "admin",
                Some(OrgRole::Member) => "member",
                None => "signed in",
            },
        }
    }
}
