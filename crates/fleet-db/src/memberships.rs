//! The `org_memberships` table and its invariant: every ClusterTenant keeps at least one
//! **active Owner**.
//!
//! Several Owners are allowed (the original's schema comments promised "one owner" while its code
//! allowed many, and the silo's one-owner index then broke the projection). Every change that
//! could remove the last active Owner — a demotion, a suspension, a removal — locks the
//! ClusterTenant row first, so two concurrent changes cannot each see "another owner remains".
//! The seat cap is kept the same way: every change that makes a membership active (a new member, a
//! reactivation) counts the active members under that lock, so concurrent adds never exceed it.

use chrono::{DateTime, Utc};
use opencrane_db::Error as DbError;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use crate::{cluster_tenants, invitations};

/// A membership as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct MembershipRow {
    /// Row id.
    pub id: Uuid,
    /// The ClusterTenant's name.
    pub cluster_tenant: String,
    /// The member's IdP subject.
    pub subject: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    /// `active` or `suspended`.
    pub status: String,
    /// When the membership was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// When the member last signed in to the silo (as the silo reported it).
    pub last_sign_in_at: Option<DateTime<Utc>>,
}

/// Why a membership change was refused.
#[derive(Debug, thiserror::Error)]
pub enum MembershipError {
    /// The change would leave the ClusterTenant without an active Owner.
    #[error("a ClusterTenant must keep at least one active owner")]
    LastOwner,
    /// No such ClusterTenant or membership.
    #[error("not found")]
    NotFound,
    /// Every seat is taken by an active member.
    #[error("all {cap} seats are taken")]
    SeatCapExceeded {
        /// The ClusterTenant's seat cap.
        cap: i32,
    },
    /// The person's membership is suspended (adoption at sign-in never reactivates it).
    #[error("the membership is suspended")]
    Suspended,
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<sqlx::Error> for MembershipError {
    fn from(err: sqlx::Error) -> Self {
        Self::Db(err.into())
    }
}

/// Lists the memberships of one ClusterTenant, owners first.
pub async fn list(db: impl PgExecutor<'_>, cluster_tenant: &str) -> Result<Vec<MembershipRow>, DbError> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MembershipRow,
        r#"SELECT id, cluster_tenant, subject, role, status, created_at, updated_at, last_sign_in_at
           FROM org_memberships WHERE cluster_tenant = $1
           ORDER BY CASE role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, subject"#,
        cluster_tenant,
    )
    .fetch_all(db)
    .await?)
}

/// One membership, if `subject` is a member of `cluster_tenant`.
pub async fn find(
    conn: &mut PgConnection,
    cluster_tenant: &str,
    subject: &str,
) -> Result<Option<MembershipRow>, DbError> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MembershipRow,
        r#"SELECT id, cluster_tenant, subject, role, status, created_at, updated_at, last_sign_in_at
           FROM org_memberships WHERE cluster_tenant = $1 AND subject = $2"#,
        cluster_tenant,
        subject,
    )
    .fetch_optional(&mut *conn)
    .await?)
}

/// Refuses a change that takes away `current`'s active ownership when nobody else has it.
async fn guard_last_owner(conn: &mut PgConnection, current: &MembershipRow) -> Result<(), MembershipError> {
    if current.role != "owner" || current.status != "active" {
        return Ok(());
    }
    // language=PostgreSQL
    let others = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM org_memberships
           WHERE cluster_tenant = $1 AND role = 'owner' AND status = 'active' AND subject <> $2"#,
        current.cluster_tenant,
        current.subject,
    )
    .fetch_one(&mut *conn)
    .await?;
    if others == 0 { Err(MembershipError::LastOwner) } else { Ok(()) }
}

/// Adds `subject` with `role`, or changes the role of an existing membership.
/// Run inside a transaction: the ClusterTenant row stays locked until it ends.
pub async fn upsert(
    conn: &mut PgConnection,
    cluster_tenant: &str,
    subject: &str,
    role: &str,
) -> Result<MembershipRow, MembershipError> {
    lock_cluster_tenant(conn, cluster_tenant).await?;
    if let Some(current) = find(conn, cluster_tenant, subject).await?
        && role != "owner"
    {
        guard_last_owner(conn, &current).await?;
    }
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MembershipRow,
        r#"INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ($1, $2, $3)
           ON CONFLICT (cluster_tenant, subject)
           DO UPDATE SET role = EXCLUDED.role, updated_at = now()
           RETURNING id, cluster_tenant, subject, role, status, created_at, updated_at, last_sign_in_at"#,
        cluster_tenant,
        subject,
        role,
    )
    .fetch_one(&mut *conn)
    .await?)
}

/// Refuses another active member when every seat of the (locked) ClusterTenant is taken.
async fn guard_seat(conn: &mut PgConnection, cluster_tenant: &str) -> Result<(), MembershipError> {
    // language=PostgreSQL
    let cap = sqlx::query_scalar!("SELECT seat_cap FROM cluster_tenants WHERE name = $1", cluster_tenant)
        .fetch_one(&mut *conn)
        .await?;
    let Some(cap) = cap else { return Ok(()) };
    // language=PostgreSQL
    let active = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM org_memberships WHERE cluster_tenant = $1 AND status = 'active'"#,
        cluster_tenant,
    )
    .fetch_one(&mut *conn)
    .await?;
    if active >= i64::from(cap) { Err(MembershipError::SeatCapExceeded { cap }) } else { Ok(()) }
}

/// Adds `subject` as an active member with `role` when a seat is free, or changes the role of an
/// existing membership (no seat taken; the last active Owner keeps the role). Returns the row and
/// whether it was created. Run inside a transaction: the ClusterTenant row stays locked.
pub async fn add_or_change(
    conn: &mut PgConnection,
    cluster_tenant: &str,
    subject: &str,
    role: &str,
) -> Result<(MembershipRow, bool), MembershipError> {
    lock_cluster_tenant(conn, cluster_tenant).await?;
    let created = match find(conn, cluster_tenant, subject).await? {
        Some(current) if role != "owner" => {
            guard_last_owner(conn, &current).await?;
            false
        }
        Some(_) => false,
        None => {
            guard_seat(conn, cluster_tenant).await?;
            true
        }
    };
    let row = upsert(conn, cluster_tenant, subject, role).await?;
    Ok((row, created))
}

/// Reactivates a suspended membership when a seat is free (already active: unchanged). Run
/// inside a transaction.
pub async fn reactivate(
    conn: &mut PgConnection,
    cluster_tenant: &str,
    subject: &str,
) -> Result<MembershipRow, MembershipError> {
    lock_cluster_tenant(conn, cluster_tenant).await?;
    let current = find(conn, cluster_tenant, subject).await?.ok_or(MembershipError::NotFound)?;
    if current.status == "active" {
        return Ok(current);
    }
    guard_seat(conn, cluster_tenant).await?;
    set_status(conn, cluster_tenant, subject, "active").await
}

/// How a person's sign-in through the customer's organisation was admitted ([`admit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Already an active member: the sign-in recorded (the role raised by an invitation, if any).
    Member,
    /// Their invitation was accepted: a membership with its role, taking a seat.
    Invited,
    /// Adopted as a new `member`, taking a seat.
    Adopted,
}

/// A role's rank: the smaller, the more rights.
fn rank(role: &str) -> u8 {
    match role {
        "owner" => 0,
        "admin" => 1,
        _ => 2,
    }
}

/// Admits `subject`, signing in to the customer's silo: records the sign-in of an active member;
/// makes a newcomer a member — with the role of the invitation of `verified_email` when there is
/// one, else `member` — only when a seat is free. A suspended member stays suspended
/// ([`MembershipError::Suspended`]); a role is never lowered. Run inside a transaction (the
/// ClusterTenant row stays locked; on an error roll back, which keeps the invitation).
pub async fn admit(
    conn: &mut PgConnection,
    cluster_tenant: &str,
    subject: &str,
    verified_email: Option<&str>,
) -> Result<(MembershipRow, Admission), MembershipError> {
    lock_cluster_tenant(conn, cluster_tenant).await?;
    let invitation = match verified_email {
        Some(email) => invitations::take(conn, cluster_tenant, email).await?,
        None => None,
    };
    let (role, admission) = match find(conn, cluster_tenant, subject).await? {
        Some(current) if current.status != "active" => return Err(MembershipError::Suspended),
        Some(current) => {
            let role = match &invitation {
                Some(invited) if rank(&invited.role) < rank(&current.role) => invited.role.clone(),
                _ => current.role,
            };
            (role, Admission::Member)
        }
        None => {
            guard_seat(conn, cluster_tenant).await?;
            match invitation {
                Some(invited) => (invited.role, Admission::Invited),
                None => ("member".to_owned(), Admission::Adopted),
            }
        }
    };
    // language=PostgreSQL
    let row = sqlx::query_as!(
        MembershipRow,
        r#"INSERT INTO org_memberships (cluster_tenant, subject, role, last_sign_in_at) VALUES ($1, $2, $3, now())
           ON CONFLICT (cluster_tenant, subject)
           DO UPDATE SET role = EXCLUDED.role, last_sign_in_at = now(),
                         updated_at = CASE WHEN org_memberships.role = EXCLUDED.role
                                           THEN org_memberships.updated_at ELSE now() END
           RETURNING id, cluster_tenant, subject, role, status, created_at, updated_at, last_sign_in_at"#,
        cluster_tenant,
        subject,
        role,
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok((row, admission))
}

/// Suspends or reactivates a membership. Run inside a transaction.
pub async fn set_status(
    conn: &mut PgConnection,
    cluster_tenant: &str,
    subject: &str,
    status: &str,
) -> Result<MembershipRow, MembershipError> {
    lock_cluster_tenant(conn, cluster_tenant).await?;
    let current = find(conn, cluster_tenant, subject).await?.ok_or(MembershipError::NotFound)?;
    if status != "active" {
        guard_last_owner(conn, &current).await?;
    }
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MembershipRow,
        r#"UPDATE org_memberships SET status = $3, updated_at = now()
           WHERE cluster_tenant = $1 AND subject = $2
           RETURNING id, cluster_tenant, subject, role, status, created_at, updated_at, last_sign_in_at"#,
        cluster_tenant,
        subject,
        status,
    )
    .fetch_one(&mut *conn)
    .await?)
}

/// Removes a membership. Run inside a transaction.
pub async fn remove(conn: &mut PgConnection, cluster_tenant: &str, subject: &str) -> Result<(), MembershipError> {
    lock_cluster_tenant(conn, cluster_tenant).await?;
    let current = find(conn, cluster_tenant, subject).await?.ok_or(MembershipError::NotFound)?;
    guard_last_owner(conn, &current).await?;
    // language=PostgreSQL
    sqlx::query!("DELETE FROM org_memberships WHERE id = $1", current.id).execute(&mut *conn).await?;
    Ok(())
}

async fn lock_cluster_tenant(conn: &mut PgConnection, cluster_tenant: &str) -> Result<(), MembershipError> {
    cluster_tenants::lock(&mut *conn, cluster_tenant).await.map_err(|e| match e {
        DbError::NotFound => MembershipError::NotFound,
        other => MembershipError::Db(other),
    })
}

/// Every membership of `subject`, across ClusterTenants (for building the caller's principal).
pub async fn for_subject(db: impl PgExecutor<'_>, subject: &str) -> Result<Vec<MembershipRow>, DbError> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MembershipRow,
        r#"SELECT id, cluster_tenant, subject, role, status, created_at, updated_at, last_sign_in_at
           FROM org_memberships WHERE subject = $1 ORDER BY cluster_tenant"#,
        subject,
    )
    .fetch_all(db)
    .await?)
}
