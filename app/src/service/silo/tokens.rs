//! Silo access tokens (`ocp_…`): created by the silo's owners and admins, shown once, stored as a
//! SHA-256 hash, acting with a role no higher than their creator's.

use chrono::{Duration, Utc};
use opencrane_silo_db::access_tokens::{self as db, AccessTokenRow, NewAccessToken};
use rand::RngCore;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::service::{OrFail as _, authorize_mutation, record};
use crate::{
    authz::{Action, authorize},
    error::{AppError, FieldErrors},
    model::{
        principal::OrgRole,
        session::{AccessTokenView, CreatedAccessToken, NewAccessTokenRequest},
    },
    state::{AppState, Caller},
};

/// The token prefix (so secret scanners and people can recognise one).
pub const PREFIX: &str = "ocp_";

/// SHA-256 of a presented token.
pub fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

fn view(row: AccessTokenRow) -> AccessTokenView {
    AccessTokenView {
        id: row.id.to_string(),
        name: row.name,
        owner_subject: row.owner_subject,
        role: row.role,
        prefix: row.prefix,
        created_at: row.created_at,
        expires_at: row.expires_at,
        last_used_at: row.last_used_at,
        revoked_at: row.revoked_at,
    }
}

/// Every token of the silo, newest first.
pub async fn list(state: &AppState, caller: &Caller) -> Result<Vec<AccessTokenView>, AppError> {
    authorize(caller.principal.as_ref(), Action::AdministerSilo(&state.silo()?.cluster_tenant))?;
    let rows = db::list(&state.pool).await.or_fail(caller)?;
    Ok(rows.into_iter().map(view).collect())
}

/// Creates a token for the caller; the secret is in the answer and nowhere else.
pub async fn create(
    state: &AppState,
    caller: &Caller,
    req: NewAccessTokenRequest,
) -> Result<CreatedAccessToken, AppError> {
    let ct = state.silo()?.cluster_tenant.clone();
    let principal =
        authorize_mutation(state, caller, Action::AdministerSilo(&ct), "access_token.create", req.name.trim()).await?;
    if !principal.is_person() {
        return Err(AppError::Forbidden {
            code: "FORBIDDEN_NOT_A_PERSON".into(),
            message: "Tokens are created by people, for themselves.".into(),
        });
    }
    let mut errors = FieldErrors::new();
    let name = req.name.trim().to_owned();
    errors.check("name", crate::model::rules::display_text("Name", &name, 80));
    let role = OrgRole::parse(req.role.trim()).filter(|r| *r != OrgRole::Owner);
    match role {
        None => errors.add("role", "Choose admin or member."),
        // Operators are not members; they may issue either role.
        Some(r) if !principal.is_platform_operator && principal.role_in(&ct).is_none_or(|mine| r < mine) => {
            errors.add("role", "A token cannot have more rights than you.")
        }
        Some(_) => {}
    }
    if let Some(days) = req.expires_in_days
        && !(1..=3650).contains(&days)
    {
        errors.add("expiresInDays", "Choose 1 to 3650 days, or no expiry.");
    }
    let role = errors.into_result(role).map_err(|fields| AppError::Validation { fields })?.unwrap_or(OrgRole::Member);

    let mut secret = [0u8; 24];
    rand::rng().fill_bytes(&mut secret);
    let plain: String = std::iter::once(PREFIX.to_owned()).chain(secret.iter().map(|b| format!("{b:02x}"))).collect();
    let digest = hash(&plain);
    let new = NewAccessToken {
        name: &name,
        owner_subject: &principal.subject,
        role: role.as_str(),
        token_hash: &digest,
        prefix: &plain[..PREFIX.len() + 6],
        expires_at: req.expires_in_days.map(|d| Utc::now() + Duration::days(d)),
    };
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let row = db::insert(&mut *tx, &new).await.or_fail(caller)?;
    // Metadata only: the secret never reaches the log.
    let meta = json!({ "id": row.id, "role": row.role, "expiresAt": row.expires_at });
    record(&mut *tx, caller, "access_token.create", &name, "success", meta).await?;
    tx.commit().await.or_fail(caller)?;
    Ok(CreatedAccessToken { token: view(row), plain_text_token: plain })
}

/// Revokes a token.
pub async fn revoke(state: &AppState, caller: &Caller, id: &str) -> Result<AccessTokenView, AppError> {
    let ct = state.silo()?.cluster_tenant.clone();
    authorize_mutation(state, caller, Action::AdministerSilo(&ct), "access_token.revoke", id).await?;
    let not_found = || AppError::NotFound { code: "TOKEN_NOT_FOUND".into(), message: "No such token.".into() };
    let id = uuid::Uuid::parse_str(id).map_err(|_| not_found())?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let row = db::revoke(&mut *tx, id).await.or_fail(caller)?.ok_or_else(not_found)?;
    record(&mut *tx, caller, "access_token.revoke", &row.name, "success", json!({ "id": row.id })).await?;
    tx.commit().await.or_fail(caller)?;
    Ok(view(row))
}
