//! The one authorisation decision point: `authorize(principal, action)`.
//!
//! Every server function and every REST handler asks it before doing anything, and the pages ask
//! it to decide what to show. It is pure (no I/O): whatever it needs to know about the caller is
//! in the [`Principal`]. Today the platform operator may do everything and anyone signed in may
//! manage their own billing account; org-scoped roles from OrgMembership join when sign-in does.

use crate::{error::AppError, model::principal::Principal};

/// Something a caller wants to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action<'a> {
    /// List every ClusterTenant.
    ListClusterTenants,
    /// Read one ClusterTenant.
    ReadClusterTenant(&'a str),
    /// Create a ClusterTenant.
    CreateClusterTenant,
    /// Change one ClusterTenant's desired state.
    UpdateClusterTenant(&'a str),
    /// Delete one ClusterTenant.
    DeleteClusterTenant(&'a str),
    /// Read or create one's own billing account.
    ManageOwnBillingAccount,
    /// Read the silo's administration pages.
    ReadSilo,
}

/// Allows or refuses `action` for `principal` (`None` = anonymous).
pub fn authorize<'p>(principal: Option<&'p Principal>, action: Action<'_>) -> Result<&'p Principal, AppError> {
    let principal = principal.ok_or(AppError::Unauthorized)?;
    let allowed = match action {
        Action::ManageOwnBillingAccount => principal.is_person(),
        Action::ListClusterTenants
        | Action::ReadClusterTenant(_)
        | Action::CreateClusterTenant
        | Action::UpdateClusterTenant(_)
        | Action::DeleteClusterTenant(_)
        | Action::ReadSilo => principal.is_platform_operator,
    };
    if allowed {
        Ok(principal)
    } else if matches!(action, Action::ManageOwnBillingAccount) {
        Err(AppError::Forbidden {
            code: "FORBIDDEN_NOT_A_PERSON".into(),
            message: "Billing accounts belong to people; API tokens cannot hold one.".into(),
        })
    } else {
        Err(AppError::Forbidden {
            code: "FORBIDDEN_NOT_PLATFORM_OPERATOR".into(),
            message: "Only platform operators may do this.".into(),
        })
    }
}

/// Whether `principal` may do `action` (for deciding what the UI shows).
pub fn can(principal: Option<&Principal>, action: Action<'_>) -> bool {
    authorize(principal, action).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::principal::PrincipalKind;

    fn member() -> Principal {
        Principal {
            kind: PrincipalKind::User,
            subject: "sub-1".into(),
            email: Some("m@example.com".into()),
            display_name: "M".into(),
            is_platform_operator: false,
        }
    }

    #[test]
    fn anonymous_callers_are_unauthorised() {
        assert_eq!(authorize(None, Action::ListClusterTenants), Err(AppError::Unauthorized));
        assert_eq!(authorize(None, Action::ManageOwnBillingAccount), Err(AppError::Unauthorized));
    }

    #[test]
    fn operators_may_manage_cluster_tenants_and_members_may_not() {
        let dev = Principal::development();
        let m = member();
        for action in [
            Action::ListClusterTenants,
            Action::ReadClusterTenant("acme"),
            Action::CreateClusterTenant,
            Action::UpdateClusterTenant("acme"),
            Action::DeleteClusterTenant("acme"),
            Action::ReadSilo,
        ] {
            assert!(can(Some(&dev), action), "{action:?}");
            let refused = authorize(Some(&m), action).unwrap_err();
            assert_eq!(refused.code(), "FORBIDDEN_NOT_PLATFORM_OPERATOR");
            assert_eq!(refused.status(), 403);
        }
    }

    #[test]
    fn billing_accounts_are_for_people_only() {
        assert!(can(Some(&member()), Action::ManageOwnBillingAccount));
        let token = Principal::api_token("ci");
        assert_eq!(authorize(Some(&token), Action::ManageOwnBillingAccount).unwrap_err().status(), 403);
        assert!(can(Some(&token), Action::CreateClusterTenant), "the operator token passes role gates");
    }
}
