//! The one authorisation decision point: `authorize(principal, action)`.
//!
//! Every server function and every REST handler asks it (through the service layer) before doing
//! anything, and the pages ask it to decide what to show. It is pure: whatever it needs to know
//! about the caller is in the [`Principal`] (including memberships, loaded at authentication).
//!
//! Object-level refusals on a ClusterTenant the caller has nothing to do with answer exactly like
//! a ClusterTenant that does not exist, so that ids cannot be probed.

use crate::{
    error::AppError,
    model::principal::{OrgRole, Principal},
};

/// Something a caller wants to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action<'a> {
    /// List ClusterTenants (operators see all; others only those they manage).
    ListClusterTenants,
    /// Read one ClusterTenant.
    ReadClusterTenant(&'a str),
    /// Create a ClusterTenant; people other than operators need a billing account.
    CreateClusterTenant {
        /// Whether the caller has a billing account.
        has_billing_account: bool,
    },
    /// Change one ClusterTenant's desired state.
    UpdateClusterTenant(&'a str),
    /// Delete one ClusterTenant (owners only, or operators).
    DeleteClusterTenant(&'a str),
    /// Read or create one's own billing account.
    ManageOwnBillingAccount,
    /// Define plans and put customers on them (platform operators only).
    ManageBilling,
    /// Read one customer's billing (usage, plan, statements): operators, and the customer's
    /// owners and admins, read-only.
    ReadBilling(&'a str),
    /// Read the fleet's audit log.
    ReadFleetAudit,
    /// See and end one's own sessions.
    ManageOwnSessions,
    /// Use a silo's console (any active member).
    ViewSilo(&'a str),
    /// Administer a silo: members, audit, other people's sessions, access tokens.
    AdministerSilo(&'a str),
}

/// The answer for a ClusterTenant that does not exist — and for one the caller may not know of.
pub fn cluster_tenant_not_found(name: &str) -> AppError {
    AppError::NotFound {
        code: "CLUSTER_TENANT_NOT_FOUND".into(),
        message: format!("No customer named “{name}” exists."),
    }
}

fn forbidden(code: &str, message: &str) -> AppError {
    AppError::Forbidden { code: code.into(), message: message.into() }
}

/// Allows or refuses `action` for `principal` (`None` = anonymous).
pub fn authorize<'p>(principal: Option<&'p Principal>, action: Action<'_>) -> Result<&'p Principal, AppError> {
    let p = principal.ok_or(AppError::Unauthorized)?;
    if p.is_platform_operator {
        return match action {
            // Operators act on the platform; a billing account is a person's thing.
            Action::ManageOwnBillingAccount | Action::ManageOwnSessions if !p.is_person() => {
                Err(forbidden("FORBIDDEN_NOT_A_PERSON", "This belongs to people; API tokens cannot have one."))
            }
            _ => Ok(p),
        };
    }
    let on_cluster_tenant = |ct: &str, needs: fn(OrgRole) -> bool, denial: &str| match p.role_in(ct) {
        None => Err(cluster_tenant_not_found(ct)),
        Some(role) if needs(role) => Ok(p),
        Some(_) => Err(forbidden("FORBIDDEN_ORG_SCOPE", denial)),
    };
    match action {
        Action::ListClusterTenants => Ok(p),
        Action::ReadClusterTenant(ct) | Action::UpdateClusterTenant(ct) | Action::ReadBilling(ct) => {
            on_cluster_tenant(ct, OrgRole::manages, "Only the customer's owners and admins may do this.")
        }
        Action::DeleteClusterTenant(ct) => {
            on_cluster_tenant(ct, |r| r == OrgRole::Owner, "Only the customer's owners may delete it.")
        }
        Action::CreateClusterTenant { has_billing_account } => {
            if !p.is_person() {
                Err(forbidden("FORBIDDEN_NOT_PLATFORM_OPERATOR", "Only platform operators may do this."))
            } else if has_billing_account {
                Ok(p)
            } else {
                Err(forbidden("BILLING_ACCOUNT_REQUIRED", "Create a billing account first (Billing in the sidebar)."))
            }
        }
        Action::ManageOwnBillingAccount | Action::ManageOwnSessions => {
            if p.is_person() {
                Ok(p)
            } else {
                Err(forbidden("FORBIDDEN_NOT_A_PERSON", "This belongs to people; API tokens cannot have one."))
            }
        }
        Action::ReadFleetAudit | Action::ManageBilling => {
            Err(forbidden("FORBIDDEN_NOT_PLATFORM_OPERATOR", "Only platform operators may do this."))
        }
        Action::ViewSilo(ct) => match p.role_in(ct) {
            Some(_) => Ok(p),
            None => Err(forbidden("FORBIDDEN_ORG_SCOPE", "You are not a member of this organisation.")),
        },
        Action::AdministerSilo(ct) => match p.role_in(ct) {
            Some(role) if role.manages() => Ok(p),
            Some(_) => Err(forbidden("FORBIDDEN_ORG_SCOPE", "Only the organisation's owners and admins may do this.")),
            None => Err(forbidden("FORBIDDEN_ORG_SCOPE", "You are not a member of this organisation.")),
        },
    }
}

/// Whether `principal` may do `action` (for deciding what the UI shows).
pub fn can(principal: Option<&Principal>, action: Action<'_>) -> bool {
    authorize(principal, action).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::principal::{Membership, PrincipalKind};

    fn person(memberships: &[(&str, OrgRole, bool)]) -> Principal {
        Principal {
            kind: PrincipalKind::User,
            subject: "sub-1".into(),
            email: Some("m@example.com".into()),
            display_name: "M".into(),
            is_platform_operator: false,
            groups: Vec::new(),
            memberships: memberships
                .iter()
                .map(|(ct, role, active)| Membership { cluster_tenant: (*ct).into(), role: *role, active: *active })
                .collect(),
            silo: None,
        }
    }

    #[test]
    fn anonymous_callers_are_unauthorised() {
        assert_eq!(authorize(None, Action::ListClusterTenants), Err(AppError::Unauthorized));
        assert_eq!(authorize(None, Action::ViewSilo("acme")), Err(AppError::Unauthorized));
    }

    #[test]
    fn operators_may_do_everything_on_the_platform() {
        let dev = Principal::development();
        for action in [
            Action::ListClusterTenants,
            Action::ReadClusterTenant("acme"),
            Action::CreateClusterTenant { has_billing_account: false },
            Action::DeleteClusterTenant("acme"),
            Action::ReadFleetAudit,
            Action::AdministerSilo("acme"),
        ] {
            assert!(can(Some(&dev), action), "{action:?}");
        }
    }

    #[test]
    fn another_organisation_looks_exactly_like_a_missing_one() {
        let owner_of_a = person(&[("a", OrgRole::Owner, true)]);
        let other = authorize(Some(&owner_of_a), Action::ReadClusterTenant("b")).unwrap_err();
        assert_eq!(other, cluster_tenant_not_found("b"));
        assert_eq!(
            authorize(Some(&owner_of_a), Action::DeleteClusterTenant("b")).unwrap_err(),
            cluster_tenant_not_found("b")
        );
        assert!(can(Some(&owner_of_a), Action::DeleteClusterTenant("a")));
    }

    #[test]
    fn roles_and_status_decide_within_an_organisation() {
        let admin = person(&[("a", OrgRole::Admin, true)]);
        assert!(can(Some(&admin), Action::UpdateClusterTenant("a")));
        assert_eq!(
            authorize(Some(&admin), Action::DeleteClusterTenant("a")).unwrap_err().code(),
            "FORBIDDEN_ORG_SCOPE"
        );
        let member = person(&[("a", OrgRole::Member, true)]);
        assert_eq!(authorize(Some(&member), Action::ReadClusterTenant("a")).unwrap_err().status(), 403);
        assert!(can(Some(&member), Action::ViewSilo("a")));
        assert!(!can(Some(&member), Action::AdministerSilo("a")));
        // A suspended owner holds nothing (the original's gate ignored status).
        let suspended = person(&[("a", OrgRole::Owner, false)]);
        assert_eq!(
            authorize(Some(&suspended), Action::ReadClusterTenant("a")).unwrap_err(),
            cluster_tenant_not_found("a")
        );
        assert!(!can(Some(&suspended), Action::ViewSilo("a")));
    }

    #[test]
    fn creating_needs_a_billing_account_and_a_person() {
        let p = person(&[]);
        assert_eq!(
            authorize(Some(&p), Action::CreateClusterTenant { has_billing_account: false }).unwrap_err().code(),
            "BILLING_ACCOUNT_REQUIRED"
        );
        assert!(can(Some(&p), Action::CreateClusterTenant { has_billing_account: true }));
        assert!(!can(Some(&p), Action::ReadFleetAudit));
        let token = Principal::api_token("ci");
        assert!(can(Some(&token), Action::CreateClusterTenant { has_billing_account: false }));
        assert_eq!(authorize(Some(&token), Action::ManageOwnBillingAccount).unwrap_err().status(), 403);
    }
}
