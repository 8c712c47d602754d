//! The `billing_accounts` table: one account per IdP subject. For now its only job is to gate
//! who may create a ClusterTenant without being a platform operator.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::PgExecutor;
use uuid::Uuid;

/// A billing account as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct BillingAccountRow {
    /// Row id.
    pub id: Uuid,
    /// The owner's IdP subject.
    pub subject: String,
    /// Lower-cased email of the owner.
    pub email: Option<String>,
    /// Optional display name.
    pub display_name: Option<String>,
    /// The IANA time zone its customers are billed in.
    pub time_zone: String,
    /// When the account was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// Creates the account of `subject`, or updates its email, display name and time zone (each
/// kept when `None`). The flag says whether it was created by this call.
pub async fn upsert(
    db: impl PgExecutor<'_>,
    subject: &str,
    email: Option<&str>,
    display_name: Option<&str>,
    time_zone: Option<&str>,
) -> Result<(BillingAccountRow, bool)> {
    // `xmax = 0` holds only for a freshly inserted row version.
    // language=PostgreSQL
    let r = sqlx::query!(
        r#"INSERT INTO billing_accounts (subject, email, display_name, time_zone)
           VALUES ($1, lower($2), $3, COALESCE($4, 'UTC'))
           ON CONFLICT (subject) DO UPDATE
             SET email = COALESCE(EXCLUDED.email, billing_accounts.email),
                 display_name = COALESCE(EXCLUDED.display_name, billing_accounts.display_name),
                 time_zone = COALESCE($4, billing_accounts.time_zone),
                 updated_at = now()
           RETURNING id, subject, email, display_name, time_zone, created_at, updated_at, (xmax = 0) AS "created!""#,
        subject,
        email,
        display_name,
        time_zone,
    )
    .fetch_one(db)
    .await?;
    Ok((
        BillingAccountRow {
            id: r.id,
            subject: r.subject,
            email: r.email,
            display_name: r.display_name,
            time_zone: r.time_zone,
            created_at: r.created_at,
            updated_at: r.updated_at,
        },
        r.created,
    ))
}

/// The account of `subject`, if any.
pub async fn find_by_subject(db: impl PgExecutor<'_>, subject: &str) -> Result<Option<BillingAccountRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        BillingAccountRow,
        "SELECT id, subject, email, display_name, time_zone, created_at, updated_at FROM billing_accounts
         WHERE subject = $1",
        subject,
    )
    .fetch_optional(db)
    .await?)
}

/// A customer with the billing account that pays for it: the account of its first owner that
/// has one (the person who created the customer, unless ownership moved).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomerAccount {
    /// The customer.
    pub cluster_tenant: String,
    /// Its display name.
    pub display_name: String,
    /// Its phase.
    pub phase: String,
    /// The account's id.
    pub account_id: Option<Uuid>,
    /// The account's display name.
    pub account_name: Option<String>,
    /// The account's e-mail.
    pub account_email: Option<String>,
    /// The time zone it is billed in (UTC without an account).
    pub time_zone: String,
}

/// Every customer with its billing account, by name (one statement: a hash join of the owners
/// who have an account, not a lookup per customer).
pub async fn customer_accounts(db: impl PgExecutor<'_>) -> Result<Vec<CustomerAccount>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        CustomerAccount,
        r#"SELECT c.name AS cluster_tenant, c.display_name, c.phase,
                  a.id AS "account_id?", a.display_name AS account_name, a.email AS account_email,
                  COALESCE(a.time_zone, 'UTC') AS "time_zone!"
           FROM cluster_tenants c
           LEFT JOIN (
               SELECT DISTINCT ON (m.cluster_tenant) m.cluster_tenant, b.id, b.display_name, b.email, b.time_zone
               FROM org_memberships m JOIN billing_accounts b ON b.subject = m.subject
               WHERE m.role = 'owner'
               ORDER BY m.cluster_tenant, m.created_at, m.subject) a ON a.cluster_tenant = c.name
           ORDER BY c.name"#
    )
    .fetch_all(db)
    .await?)
}

/// The time zone `cluster_tenant` is billed in: its billing account's (the first owner's that
/// has one), else UTC (no account, or the customer is gone).
pub async fn time_zone_of(db: impl PgExecutor<'_>, cluster_tenant: &str) -> Result<String> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"SELECT COALESCE((
               SELECT b.time_zone FROM org_memberships m JOIN billing_accounts b ON b.subject = m.subject
               WHERE m.cluster_tenant = $1 AND m.role = 'owner' ORDER BY m.created_at, m.subject LIMIT 1),
           'UTC') AS "time_zone!""#,
        cluster_tenant
    )
    .fetch_one(db)
    .await?)
}
