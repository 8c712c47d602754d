//! Access policies: tenant selector, allowed and denied domains, egress rules.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use serde_json::Value;
use sqlx::PgExecutor;

/// A policy as stored (selector and egress as JSON, shaped by the service layer).
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyRow {
    /// DNS-label name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// matchLabels object.
    pub tenant_selector: Value,
    /// Allowed domain patterns.
    pub allowed_domains: Vec<String>,
    /// Denied domain patterns.
    pub denied_domains: Vec<String>,
    /// `[{cidr, ports}]`.
    pub egress_rules: Value,
    /// Users naming this policy.
    pub used_by: Vec<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Kubernetes mode: how its AccessPolicy resource differed on the last pass.
    pub resource_drift: Option<String>,
}

/// The writable fields.
#[derive(Clone, Debug)]
pub struct PolicyFields<'a> {
    /// What it is for.
    pub description: &'a str,
    /// matchLabels object.
    pub tenant_selector: &'a Value,
    /// Allowed domain patterns.
    pub allowed_domains: &'a [String],
    /// Denied domain patterns.
    pub denied_domains: &'a [String],
    /// Egress rules.
    pub egress_rules: &'a Value,
}

/// Every policy, by name.
pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<PolicyRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        PolicyRow,
        r#"SELECT p.name, p.description, p.tenant_selector, p.allowed_domains, p.denied_domains, p.egress_rules,
                  p.created_at, p.updated_at, p.resource_drift,
                  ARRAY(SELECT t.name FROM tenants t WHERE t.policy_ref = p.name ORDER BY t.name) AS "used_by!"
           FROM access_policies p ORDER BY p.name"#
    )
    .fetch_all(db)
    .await?)
}

/// One policy.
pub async fn get(db: impl PgExecutor<'_>, name: &str) -> Result<Option<PolicyRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        PolicyRow,
        r#"SELECT p.name, p.description, p.tenant_selector, p.allowed_domains, p.denied_domains, p.egress_rules,
                  p.created_at, p.updated_at, p.resource_drift,
                  ARRAY(SELECT t.name FROM tenants t WHERE t.policy_ref = p.name ORDER BY t.name) AS "used_by!"
           FROM access_policies p WHERE p.name = $1"#,
        name,
    )
    .fetch_optional(db)
    .await?)
}

/// Creates a policy.
pub async fn insert(db: impl PgExecutor<'_>, name: &str, f: &PolicyFields<'_>) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"INSERT INTO access_policies (name, description, tenant_selector, allowed_domains, denied_domains, egress_rules)
           VALUES ($1, $2, $3, $4, $5, $6)"#,
        name,
        f.description,
        f.tenant_selector,
        f.allowed_domains,
        f.denied_domains,
        f.egress_rules,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Changes a policy; false when there is none.
pub async fn update(db: impl PgExecutor<'_>, name: &str, f: &PolicyFields<'_>) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        r#"UPDATE access_policies SET description = $2, tenant_selector = $3, allowed_domains = $4,
                  denied_domains = $5, egress_rules = $6, updated_at = now()
           WHERE name = $1"#,
        name,
        f.description,
        f.tenant_selector,
        f.allowed_domains,
        f.denied_domains,
        f.egress_rules,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Deletes a policy; a policy still named by a user fails with a foreign-key violation.
pub async fn delete(db: impl PgExecutor<'_>, name: &str) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM access_policies WHERE name = $1", name).execute(db).await?;
    Ok(done.rows_affected() == 1)
}

/// Records how `name`'s AccessPolicy resource differed from its row on the last pass (`None`:
/// they agreed).
pub async fn set_resource_drift(db: impl PgExecutor<'_>, name: &str, drift: Option<&str>) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE access_policies SET resource_drift = $2 WHERE name = $1 AND resource_drift IS DISTINCT FROM $2",
        name,
        drift
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Policies whose resource differed from their row on the last pass: (name, how).
pub async fn resource_drift(db: impl PgExecutor<'_>) -> Result<Vec<(String, String)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"SELECT name, resource_drift AS "drift!" FROM access_policies WHERE resource_drift IS NOT NULL ORDER BY name"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.name, r.drift)).collect())
}
