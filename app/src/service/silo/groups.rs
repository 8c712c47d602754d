//! Groups: scoped sets of users (org, department, team, project, personal). Groups named in the
//! identity provider's groups claim are mirrored at sign-in and marked `idp`.

use opencrane_db::Error as DbError;
use opencrane_silo_db::{
    groups::{self, GroupRow},
    tenants::{self, TenantFilter},
};
use serde_json::json;
use uuid::Uuid;

use super::{admin_read, admin_write, conflict, finish, not_found};
use crate::{
    error::{AppError, FieldErrors},
    model::silo::{GROUP_SCOPES, GroupRequest, GroupView},
    service::{OrFail as _, db_failure},
    state::{AppState, Caller},
};

fn group_not_found(id: &str) -> AppError {
    not_found("GROUP_NOT_FOUND", format!("No group with id “{id}” exists in this silo."))
}

/// Parses a group id; anything that is not one answers like a missing group.
pub(crate) fn parse_id(id: &str) -> Result<Uuid, AppError> {
    Uuid::parse_str(id.trim()).map_err(|_| group_not_found(id))
}

fn view(row: GroupRow) -> GroupView {
    GroupView {
        id: row.id.to_string(),
        name: row.name,
        scope: row.scope,
        description: row.description,
        source: row.source,
        members: row.members,
    }
}

/// Every group with its members: one statement whatever the number of groups.
pub async fn list(state: &AppState, caller: &Caller) -> Result<Vec<GroupView>, AppError> {
    admin_read(state, caller)?;
    Ok(groups::list(&state.pool).await.or_fail(caller)?.into_iter().map(view).collect())
}

/// One group.
pub async fn get(state: &AppState, caller: &Caller, id: &str) -> Result<GroupView, AppError> {
    admin_read(state, caller)?;
    let uuid = parse_id(id)?;
    let row = groups::get(&state.pool, uuid).await.or_fail(caller)?.ok_or_else(|| group_not_found(id))?;
    Ok(view(row))
}

struct Valid {
    name: String,
    scope: String,
    description: String,
    members: Vec<String>,
}

async fn validate(state: &AppState, caller: &Caller, req: &GroupRequest) -> Result<Valid, AppError> {
    let mut errors = FieldErrors::new();
    let name = req.name.trim().to_owned();
    let name_ok = !name.is_empty()
        && name.len() <= 80
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | ':' | '.' | '_'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if name.is_empty() {
        errors.add("name", "Name is required.");
    } else if !name_ok {
        errors.add("name", "Use lowercase letters, digits and - : . _ (starting and ending with a letter or digit), up to 80 characters.");
    }
    let scope = req.scope.trim().to_owned();
    if !GROUP_SCOPES.contains(&scope.as_str()) {
        errors.add("scope", format!("Choose one of {}.", GROUP_SCOPES.join(", ")));
    }
    let description = req.description.trim().to_owned();
    if description.chars().count() > 500 {
        errors.add("description", "At most 500 characters.");
    }
    let mut members: Vec<String> = req.members.iter().map(|m| m.trim().to_owned()).filter(|m| !m.is_empty()).collect();
    members.sort();
    members.dedup();
    if !members.is_empty() {
        let known = tenants::list(&state.pool, &TenantFilter::default()).await.or_fail(caller)?;
        let unknown: Vec<&str> =
            members.iter().filter(|m| !known.iter().any(|t| t.name == **m)).map(String::as_str).collect();
        if !unknown.is_empty() {
            errors.add(
                "members",
                format!("No user named {}.", unknown.iter().map(|u| format!("“{u}”")).collect::<Vec<_>>().join(", ")),
            );
        }
    }
    errors.into_result(Valid { name, scope, description, members }).map_err(|fields| AppError::Validation { fields })
}

fn write_failure(caller: &Caller, err: DbError) -> AppError {
    match &err {
        DbError::UniqueViolation { constraint } if constraint == "groups_scope_name_key" => {
            conflict("GROUP_EXISTS", "name", "A group with this name exists in this scope.".into())
        }
        DbError::ForeignKeyViolation { .. } => {
            AppError::field("members", "A member was deleted meanwhile; reload and try again.")
        }
        _ => db_failure(caller, err),
    }
}

/// Creates a group with its members.
pub async fn create(state: &AppState, caller: &Caller, req: GroupRequest) -> Result<GroupView, AppError> {
    let silo = admin_write(state, caller, "group.create", req.name.trim()).await?;
    let v = validate(state, caller, &req).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let id = groups::insert(&mut *tx, &v.name, &v.scope, &v.description, "local")
        .await
        .map_err(|e| write_failure(caller, e))?;
    groups::set_members(&mut *tx, id, &v.members).await.map_err(|e| write_failure(caller, e))?;
    finish(tx, silo, caller, "group.create", &v.name, json!({ "id": id, "scope": v.scope, "members": v.members }))
        .await?;
    get(state, caller, &id.to_string()).await
}

/// Changes a group and replaces its members.
pub async fn update(state: &AppState, caller: &Caller, id: &str, req: GroupRequest) -> Result<GroupView, AppError> {
    let silo = admin_write(state, caller, "group.update", id).await?;
    let uuid = parse_id(id)?;
    let v = validate(state, caller, &req).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = audit_record(&mut tx, caller, uuid).await?.ok_or_else(|| group_not_found(id))?;
    groups::update(&mut *tx, uuid, &v.name, &v.scope, &v.description).await.map_err(|e| write_failure(caller, e))?;
    groups::set_members(&mut *tx, uuid, &v.members).await.map_err(|e| write_failure(caller, e))?;
    let meta = json!({ "id": uuid, "scope": v.scope, "members": v.members, "before": before });
    finish(tx, silo, caller, "group.update", &v.name, meta).await?;
    get(state, caller, id).await
}

/// Deletes a group; its grants, limit and default model go with it.
pub async fn delete(state: &AppState, caller: &Caller, id: &str) -> Result<(), AppError> {
    let silo = admin_write(state, caller, "group.delete", id).await?;
    let uuid = parse_id(id)?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let row = groups::get(&mut *tx, uuid).await.or_fail(caller)?.ok_or_else(|| group_not_found(id))?;
    let before = audit_record(&mut tx, caller, uuid).await?;
    groups::delete(&mut *tx, uuid).await.or_fail(caller)?;
    finish(tx, silo, caller, "group.delete", &row.name, json!({ "id": uuid, "before": before })).await?;
    Ok(())
}

/// What the audit log keeps of a group (with its members) as it was before a change or deletion.
async fn audit_record(
    tx: &mut sqlx::PgConnection,
    caller: &Caller,
    id: uuid::Uuid,
) -> Result<Option<serde_json::Value>, AppError> {
    let Some(row) = groups::get(&mut *tx, id).await.or_fail(caller)? else { return Ok(None) };
    Ok(Some(json!({ "name": row.name, "scope": row.scope, "description": row.description, "members": row.members })))
}
