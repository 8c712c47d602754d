//! The `org_invitations` table: a customer's people invited by e-mail address before anyone knows
//! their subject. An invitation holds no seat; it becomes a membership (taking a seat, under the
//! customer's row lock) at that person's first sign-in through the customer's organisation with
//! that address verified (`memberships::admit`), and is removed then.

use chrono::{DateTime, Utc};
use opencrane_db::Error as DbError;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

/// An invitation as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvitationRow {
    /// Row id.
    pub id: Uuid,
    /// The ClusterTenant's name.
    pub cluster_tenant: String,
    /// The invited address (lower case).
    pub email: String,
    /// The role the person gets: `owner`, `admin` or `member`.
    pub role: String,
    /// Who invited them (a subject, or an API token's name).
    pub invited_by: String,
    /// When the invitation was made.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// The pending invitations of one ClusterTenant, oldest first.
pub async fn list(db: impl PgExecutor<'_>, cluster_tenant: &str) -> Result<Vec<InvitationRow>, DbError> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        InvitationRow,
        r#"SELECT id, cluster_tenant, email, role, invited_by, created_at, updated_at
           FROM org_invitations WHERE cluster_tenant = $1 ORDER BY created_at, email"#,
        cluster_tenant,
    )
    .fetch_all(db)
    .await?)
}

/// Invites `email` with `role`, or changes the role of a pending invitation; returns the row and
/// whether it was created.
pub async fn put(
    db: impl PgExecutor<'_>,
    cluster_tenant: &str,
    email: &str,
    role: &str,
    invited_by: &str,
) -> Result<(InvitationRow, bool), DbError> {
    // language=PostgreSQL
    let row = sqlx::query!(
        r#"INSERT INTO org_invitations (cluster_tenant, email, role, invited_by) VALUES ($1, lower($2), $3, $4)
           ON CONFLICT (cluster_tenant, email)
           DO UPDATE SET role = EXCLUDED.role, invited_by = EXCLUDED.invited_by, updated_at = now()
           RETURNING id, cluster_tenant, email, role, invited_by, created_at, updated_at, (xmax = 0) AS "created!""#,
        cluster_tenant,
        email,
        role,
        invited_by,
    )
    .fetch_one(db)
    .await?;
    let created = row.created;
    let row = InvitationRow {
        id: row.id,
        cluster_tenant: row.cluster_tenant,
        email: row.email,
        role: row.role,
        invited_by: row.invited_by,
        created_at: row.created_at,
        updated_at: row.updated_at,
    };
    Ok((row, created))
}

/// Withdraws the invitation of `email`; whether there was one.
pub async fn cancel(db: impl PgExecutor<'_>, cluster_tenant: &str, email: &str) -> Result<bool, DbError> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "DELETE FROM org_invitations WHERE cluster_tenant = $1 AND email = lower($2)",
        cluster_tenant,
        email
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// Takes (removes and returns) the invitation of `email`, when it is being accepted. Run inside
/// the transaction that creates the membership, so a refusal keeps it.
pub async fn take(
    conn: &mut PgConnection,
    cluster_tenant: &str,
    email: &str,
) -> Result<Option<InvitationRow>, DbError> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        InvitationRow,
        r#"DELETE FROM org_invitations WHERE cluster_tenant = $1 AND email = lower($2)
           RETURNING id, cluster_tenant, email, role, invited_by, created_at, updated_at"#,
        cluster_tenant,
        email,
    )
    .fetch_optional(&mut *conn)
    .await?)
}
