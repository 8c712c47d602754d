//! Groups and their members. Groups from the identity provider's groups claim are mirrored at
//! sign-in (`source = idp`); the others are the admins' own.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

/// A group with its members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRow {
    /// Group id.
    pub id: Uuid,
    /// Name, unique within its scope.
    pub name: String,
    /// `org`, `department`, `team`, `project`, `personal`.
    pub scope: String,
    /// What it is for.
    pub description: String,
    /// `local` or `idp`.
    pub source: String,
    /// Its members' user names, in order.
    pub members: Vec<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// A group's id and name (what pickers and target lookups need).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupName {
    /// Group id.
    pub id: Uuid,
    /// Name, unique within its scope.
    pub name: String,
}

/// One membership, with the group's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MembershipRow {
    /// Group id.
    pub group_id: Uuid,
    /// Group name.
    pub group_name: String,
    /// Member tenant.
    pub tenant: String,
}

/// Every group with its members, by scope and name: one statement whatever the number of
/// groups (each group's members aggregated where they are stored).
pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<GroupRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        GroupRow,
        r#"SELECT g.id, g.name, g.scope, g.description, g.source, g.created_at, g.updated_at,
                  array(SELECT m.tenant FROM group_members m WHERE m.group_id = g.id ORDER BY m.tenant) AS "members!"
           FROM groups g ORDER BY g.scope, g.name"#
    )
    .fetch_all(db)
    .await?)
}

/// Every group's id and name, by scope and name.
pub async fn names(db: impl PgExecutor<'_>) -> Result<Vec<GroupName>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(GroupName, "SELECT id, name FROM groups ORDER BY scope, name").fetch_all(db).await?)
}

/// One group with its members.
pub async fn get(db: impl PgExecutor<'_>, id: Uuid) -> Result<Option<GroupRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        GroupRow,
        r#"SELECT g.id, g.name, g.scope, g.description, g.source, g.created_at, g.updated_at,
                  array(SELECT m.tenant FROM group_members m WHERE m.group_id = g.id ORDER BY m.tenant) AS "members!"
           FROM groups g WHERE g.id = $1"#,
        id,
    )
    .fetch_optional(db)
    .await?)
}

/// Creates a group.
pub async fn insert(db: impl PgExecutor<'_>, name: &str, scope: &str, description: &str, source: &str) -> Result<Uuid> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        "INSERT INTO groups (name, scope, description, source) VALUES ($1, $2, $3, $4) RETURNING id",
        name,
        scope,
        description,
        source,
    )
    .fetch_one(db)
    .await?)
}

/// Renames or re-describes a group; false when there is no such group.
pub async fn update(db: impl PgExecutor<'_>, id: Uuid, name: &str, scope: &str, description: &str) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "UPDATE groups SET name = $2, scope = $3, description = $4, updated_at = now() WHERE id = $1",
        id,
        name,
        scope,
        description,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Deletes a group (its grants, limit and default go with it).
pub async fn delete(db: impl PgExecutor<'_>, id: Uuid) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM groups WHERE id = $1", id).execute(db).await?;
    Ok(done.rows_affected() == 1)
}

/// Makes `tenants` the members of a group, in one statement (unknown tenants fail with a
/// foreign-key violation and change nothing).
pub async fn set_members(db: impl PgExecutor<'_>, id: Uuid, tenants: &[String]) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"WITH gone AS (DELETE FROM group_members WHERE group_id = $1 AND NOT (tenant = ANY($2)))
           INSERT INTO group_members (group_id, tenant) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING"#,
        id,
        tenants,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// The memberships of the users named in `only`, or of everyone (for evaluating many users at
/// once).
pub async fn memberships(db: impl PgExecutor<'_>, only: Option<&[String]>) -> Result<Vec<MembershipRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MembershipRow,
        r#"SELECT m.group_id, g.name AS group_name, m.tenant
           FROM group_members m JOIN groups g ON g.id = m.group_id
           WHERE $1::text[] IS NULL OR m.tenant = ANY($1)
           ORDER BY m.tenant, g.name"#,
        only,
    )
    .fetch_all(db)
    .await?)
}

/// The groups of one user, by name.
pub async fn memberships_of(db: impl PgExecutor<'_>, tenant: &str) -> Result<Vec<MembershipRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        MembershipRow,
        r#"SELECT m.group_id, g.name AS group_name, m.tenant
           FROM group_members m JOIN groups g ON g.id = m.group_id
           WHERE m.tenant = $1 ORDER BY g.name"#,
        tenant,
    )
    .fetch_all(db)
    .await?)
}

/// Mirrors the identity provider's groups claim for one user: they become a member of exactly the
/// `idp` groups named (created as `team` groups when new); admin-made groups are left alone.
/// Returns the number of memberships added plus removed.
pub async fn mirror_idp_groups(db: &mut PgConnection, tenant: &str, names: &[String]) -> Result<u64> {
    // language=PostgreSQL
    sqlx::query!(
        "INSERT INTO groups (name, scope, source) SELECT unnest($1::text[]), 'team', 'idp' ON CONFLICT (scope, name) DO NOTHING",
        names,
    )
    .execute(&mut *db)
    .await?;
    // language=PostgreSQL
    let removed = sqlx::query!(
        r#"DELETE FROM group_members m USING groups g
           WHERE m.group_id = g.id AND m.tenant = $1 AND g.source = 'idp' AND NOT (g.name = ANY($2))"#,
        tenant,
        names,
    )
    .execute(&mut *db)
    .await?
    .rows_affected();
    // language=PostgreSQL
    let added = sqlx::query!(
        r#"INSERT INTO group_members (group_id, tenant)
           SELECT id, $1 FROM groups WHERE source = 'idp' AND scope = 'team' AND name = ANY($2)
           ON CONFLICT DO NOTHING"#,
        tenant,
        names,
    )
    .execute(&mut *db)
    .await?
    .rows_affected();
    Ok(added + removed)
}
