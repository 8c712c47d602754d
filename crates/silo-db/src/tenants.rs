//! Users (tenants): the portal's record of each person using the silo's assistants.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::PgExecutor;

/// A user record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantRow {
    /// DNS-label name.
    pub name: String,
    /// Shown name.
    pub display_name: String,
    /// E-mail address.
    pub email: String,
    /// Identity-provider subject.
    pub subject: String,
    /// Team label.
    pub team: Option<String>,
    /// The AccessPolicy named for the user.
    pub policy_ref: Option<String>,
    /// CPU request of the user's runtime.
    pub cpu: Option<String>,
    /// Memory request of the user's runtime.
    pub memory: Option<String>,
    /// Suspended users cannot use their key.
    pub suspended: bool,
    /// The runtime's reported phase (Kubernetes), if any.
    pub phase: Option<String>,
    /// `admin`, `sign-in` or `resource`.
    pub origin: String,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// The writable fields of a user.
#[derive(Clone, Debug)]
pub struct TenantFields<'a> {
    /// Shown name.
    pub display_name: &'a str,
    /// E-mail address.
    pub email: &'a str,
    /// Identity-provider subject.
    pub subject: &'a str,
    /// Team label.
    pub team: Option<&'a str>,
    /// AccessPolicy name.
    pub policy_ref: Option<&'a str>,
    /// CPU request.
    pub cpu: Option<&'a str>,
    /// Memory request.
    pub memory: Option<&'a str>,
}

/// List filters; `None` matches everything.
#[derive(Clone, Debug, Default)]
pub struct TenantFilter<'a> {
    /// Case-insensitive substring of name, display name or e-mail.
    pub search: Option<&'a str>,
    /// Exact team.
    pub team: Option<&'a str>,
    /// Suspended or not.
    pub suspended: Option<bool>,
    /// Exact phase (`none` matches users without one).
    pub phase: Option<&'a str>,
    /// At most this many rows (`None`: all of them).
    pub limit: Option<i64>,
    /// Rows to skip first.
    pub offset: i64,
}

impl TenantFilter<'_> {
    /// The search as a literal ILIKE pattern (`%` and `_` in it match themselves).
    fn pattern(&self) -> Option<String> {
        self.search.map(|s| format!("%{}%", s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")))
    }
}

/// Users matching `filter`, by name.
pub async fn list(db: impl PgExecutor<'_>, filter: &TenantFilter<'_>) -> Result<Vec<TenantRow>> {
    let pattern = filter.pattern();
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        TenantRow,
        r#"SELECT name, display_name, email, subject, team, policy_ref, cpu, memory, suspended, phase, origin,
                  created_at, updated_at
           FROM tenants
           WHERE ($1::text IS NULL OR name ILIKE $1 OR display_name ILIKE $1 OR email ILIKE $1)
             AND ($2::text IS NULL OR team = $2)
             AND ($3::boolean IS NULL OR suspended = $3)
             AND ($4::text IS NULL OR coalesce(phase, 'none') = $4)
           ORDER BY name
           LIMIT $5 OFFSET $6"#,
        pattern,
        filter.team,
        filter.suspended,
        filter.phase,
        filter.limit,
        filter.offset,
    )
    .fetch_all(db)
    .await?)
}

/// How many users match `filter` (its limit and offset aside).
pub async fn count(db: impl PgExecutor<'_>, filter: &TenantFilter<'_>) -> Result<i64> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM tenants
           WHERE ($1::text IS NULL OR name ILIKE $1 OR display_name ILIKE $1 OR email ILIKE $1)
             AND ($2::text IS NULL OR team = $2)
             AND ($3::boolean IS NULL OR suspended = $3)
             AND ($4::text IS NULL OR coalesce(phase, 'none') = $4)"#,
        filter.pattern(),
        filter.team,
        filter.suspended,
        filter.phase,
    )
    .fetch_one(db)
    .await?)
}

/// The teams users are in, sorted.
pub async fn teams(db: impl PgExecutor<'_>) -> Result<Vec<String>> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(r#"SELECT DISTINCT team AS "team!" FROM tenants WHERE team IS NOT NULL ORDER BY 1"#)
        .fetch_all(db)
        .await?)
}

/// One user.
pub async fn get(db: impl PgExecutor<'_>, name: &str) -> Result<Option<TenantRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        TenantRow,
        r#"SELECT name, display_name, email, subject, team, policy_ref, cpu, memory, suspended, phase, origin,
                  created_at, updated_at
           FROM tenants WHERE name = $1"#,
        name,
    )
    .fetch_optional(db)
    .await?)
}

/// The user of a person.
pub async fn by_subject(db: impl PgExecutor<'_>, subject: &str) -> Result<Option<TenantRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        TenantRow,
        r#"SELECT name, display_name, email, subject, team, policy_ref, cpu, memory, suspended, phase, origin,
                  created_at, updated_at
           FROM tenants WHERE subject = $1"#,
        subject,
    )
    .fetch_optional(db)
    .await?)
}

/// Creates a user.
pub async fn insert(db: impl PgExecutor<'_>, name: &str, fields: &TenantFields<'_>, origin: &str) -> Result<TenantRow> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        TenantRow,
        r#"INSERT INTO tenants (name, display_name, email, subject, team, policy_ref, cpu, memory, origin)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           RETURNING name, display_name, email, subject, team, policy_ref, cpu, memory, suspended, phase, origin,
                     created_at, updated_at"#,
        name,
        fields.display_name,
        fields.email,
        fields.subject,
        fields.team,
        fields.policy_ref,
        fields.cpu,
        fields.memory,
        origin,
    )
    .fetch_one(db)
    .await?)
}

/// Changes a user's fields; `None` when there is no such user.
pub async fn update(db: impl PgExecutor<'_>, name: &str, fields: &TenantFields<'_>) -> Result<Option<TenantRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        TenantRow,
        r#"UPDATE tenants SET display_name = $2, email = $3, subject = $4, team = $5, policy_ref = $6, cpu = $7,
                  memory = $8, updated_at = now()
           WHERE name = $1
           RETURNING name, display_name, email, subject, team, policy_ref, cpu, memory, suspended, phase, origin,
                     created_at, updated_at"#,
        name,
        fields.display_name,
        fields.email,
        fields.subject,
        fields.team,
        fields.policy_ref,
        fields.cpu,
        fields.memory,
    )
    .fetch_optional(db)
    .await?)
}

/// Suspends or resumes a user.
pub async fn set_suspended(db: impl PgExecutor<'_>, name: &str, suspended: bool) -> Result<Option<TenantRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        TenantRow,
        r#"UPDATE tenants SET suspended = $2, updated_at = now() WHERE name = $1
           RETURNING name, display_name, email, subject, team, policy_ref, cpu, memory, suspended, phase, origin,
                     created_at, updated_at"#,
        name,
        suspended,
    )
    .fetch_optional(db)
    .await?)
}

/// Records the phase the runtime reports (Kubernetes mode).
pub async fn set_phase(db: impl PgExecutor<'_>, name: &str, phase: Option<&str>) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("UPDATE tenants SET phase = $2 WHERE name = $1 AND phase IS DISTINCT FROM $2", name, phase)
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Deletes a user (their memberships, limits, defaults and key record go with them; their spend
/// history stays, unattributed).
pub async fn delete(db: impl PgExecutor<'_>, name: &str) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM tenants WHERE name = $1", name).execute(db).await?;
    Ok(done.rows_affected() == 1)
}

/// Records what the user's Tenant resource reports (its phase) and how it had differed from
/// this row (`None`: in step).
pub async fn set_runtime(db: impl PgExecutor<'_>, name: &str, phase: Option<&str>, drift: Option<&str>) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "UPDATE tenants SET phase = $2, resource_drift = $3, resource_seen_at = now() WHERE name = $1",
        name,
        phase,
        drift,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Users whose Tenant resource differed from their row on the last pass: (name, how).
pub async fn resource_drift(db: impl PgExecutor<'_>) -> Result<Vec<(String, String)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"SELECT name, resource_drift AS "drift!" FROM tenants WHERE resource_drift IS NOT NULL ORDER BY name"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.name, r.drift)).collect())
}
