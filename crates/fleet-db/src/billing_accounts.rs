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
    /// When the account was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// Creates the account of `subject`, or updates its email and display name. The flag says
/// whether it was created by this call.
pub async fn upsert(
    db: impl PgExecutor<'_>,
    subject: &str,
    email: Option<&str>,
    display_name: Option<&str>,
) -> Result<(BillingAccountRow, bool)> {
    // `xmax = 0` holds only for a freshly inserted row version.
    // language=PostgreSQL
    let r = sqlx::query!(
        r#"INSERT INTO billing_accounts (subject, email, display_name) VALUES ($1, lower($2), $3)
           ON CONFLICT (subject) DO UPDATE
             SET email = COALESCE(EXCLUDED.email, billing_accounts.email),
                 display_name = COALESCE(EXCLUDED.display_name, billing_accounts.display_name),
                 updated_at = now()
           RETURNING id, subject, email, display_name, created_at, updated_at, (xmax = 0) AS "created!""#,
        subject,
        email,
        display_name,
    )
    .fetch_one(db)
    .await?;
    Ok((
        BillingAccountRow {
            id: r.id,
            subject: r.subject,
            email: r.email,
            display_name: r.display_name,
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
        "SELECT id, subject, email, display_name, created_at, updated_at FROM billing_accounts WHERE subject = $1",
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
}

/// Every customer with its billing account, by name (one statement).
pub async fn customer_accounts(db: impl PgExecutor<'_>) -> Result<Vec<CustomerAccount>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        CustomerAccount,
        r#"SELECT c.name AS cluster_tenant, c.display_name, c.phase,
                  a.id AS "account_id?", a.display_name AS account_name, a.email AS account_email
           FROM cluster_tenants c
           LEFT JOIN LATERAL (
               SELECT b.id, b.display_name, b.email FROM org_memberships m
               JOIN billing_accounts b ON b.subject = m.subject
               WHERE m.cluster_tenant = c.name AND m.role = 'owner'
               ORDER BY m.created_at, m.subject LIMIT 1) a ON true
           ORDER BY c.name"#
    )
    .fetch_all(db)
    .await?)
}
