//! The OrgMembership read-model: the silo's copy of who belongs to its ClusterTenant, as the
//! fleet last reported it. Only the projection writes it; pages and permission checks read it.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::PgExecutor;

/// A projected membership.
#[derive(Clone, Debug, PartialEq)]
pub struct MembershipRow {
    /// The member's IdP subject.
    pub subject: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    /// `active`, `suspended`, or `removed` (the fleet no longer lists them; kept so their key
    /// stays blocked). Only `active` grants anything.
    pub status: String,
    /// When the projection last changed this row.
    pub updated_at: DateTime<Utc>,
}

/// All projected memberships, owners first.
pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<MembershipRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MembershipRow,
        r#"SELECT subject, role, status, updated_at FROM org_memberships
           ORDER BY CASE role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, subject"#,
    )
    .fetch_all(db)
    .await?)
}

/// Inserts or updates one projected membership.
pub async fn upsert(
    db: impl PgExecutor<'_>,
    cluster_tenant: &str,
    subject: &str,
    role: &str,
    status: &str,
) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"INSERT INTO org_memberships (cluster_tenant, subject, role, status) VALUES ($1, $2, $3, $4)
           ON CONFLICT (cluster_tenant, subject)
           DO UPDATE SET role = EXCLUDED.role, status = EXCLUDED.status, updated_at = now()
           WHERE org_memberships.role IS DISTINCT FROM EXCLUDED.role
              OR org_memberships.status IS DISTINCT FROM EXCLUDED.status"#,
        cluster_tenant,
        subject,
        role,
        status,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The projected membership of `subject` in `cluster_tenant` (the silo's own), if any. The
/// read-model never holds other ClusterTenants' rows; the filter keeps it that way for readers.
pub async fn for_subject(
    db: impl PgExecutor<'_>,
    cluster_tenant: &str,
    subject: &str,
) -> Result<Option<MembershipRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MembershipRow,
        "SELECT subject, role, status, updated_at FROM org_memberships WHERE cluster_tenant = $1 AND subject = $2",
        cluster_tenant,
        subject,
    )
    .fetch_optional(db)
    .await?)
}

/// Marks every projected membership of `cluster_tenant` whose subject is not in `keep` (the
/// fleet dropped them) as `removed`, and deletes any row of another ClusterTenant (the read-model
/// holds only its own). Returns the subjects newly marked.
pub async fn mark_removed(db: &mut sqlx::PgConnection, cluster_tenant: &str, keep: &[String]) -> Result<Vec<String>> {
    // language=PostgreSQL
    sqlx::query!("DELETE FROM org_memberships WHERE cluster_tenant <> $1", cluster_tenant).execute(&mut *db).await?;
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"UPDATE org_memberships SET status = 'removed', updated_at = now()
           WHERE NOT (subject = ANY($1)) AND status <> 'removed'
           RETURNING subject"#,
        keep,
    )
    .fetch_all(&mut *db)
    .await?)
}

/// The subjects whose membership grants nothing (`suspended` or `removed`): their sessions must
/// not survive.
pub async fn without_access(db: impl PgExecutor<'_>) -> Result<Vec<String>> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!("SELECT subject FROM org_memberships WHERE status <> 'active' ORDER BY subject")
        .fetch_all(db)
        .await?)
}
