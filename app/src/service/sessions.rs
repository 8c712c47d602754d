//! Signed-in sessions: everyone sees and ends their own; a silo's owners and admins see and end
//! their members'. Sessions are identified to the browser by a handle (a hash of the id), never
//! by the id itself, which is the cookie's secret.

use opencrane_common_db::sessions::{self as db, SessionRow};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{authorize_mutation, record};
use crate::{
    Role,
    authz::{Action, authorize},
    error::AppError,
    model::session::{RevokeSessions, SessionView},
    service::OrFail as _,
    state::{AppState, Caller},
};

/// The public handle of a session id.
pub fn handle(session_id: &str) -> String {
    let digest = Sha256::digest(session_id.as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn view(row: SessionRow, current: Option<&str>) -> SessionView {
    SessionView {
        handle: handle(&row.session_id),
        current: current == Some(row.session_id.as_str()),
        subject: row.subject,
        email: row.email,
        display_name: row.display_name,
        user_agent: row.user_agent,
        ip: row.ip,
        created_at: row.created_at,
        last_seen_at: row.last_seen_at,
        expires_at: row.expires_at,
    }
}

/// The subjects whose sessions the caller may see: their own, plus (silo admins) every member's.
async fn visible_subjects(state: &AppState, caller: &Caller) -> Result<Vec<String>, AppError> {
    let principal = authorize(caller.principal.as_ref(), Action::ManageOwnSessions)?;
    let mut subjects = vec![principal.subject.clone()];
    if state.role() == Role::Silo
        && crate::authz::can(Some(principal), Action::AdministerSilo(&state.silo()?.cluster_tenant))
    {
        let members = opencrane_silo_db::memberships::list(&state.pool).await.or_fail(caller)?;
        subjects.extend(members.into_iter().map(|m| m.subject));
    }
    subjects.sort();
    subjects.dedup();
    Ok(subjects)
}

/// The sessions the caller may see, most recently active first.
pub async fn list(state: &AppState, caller: &Caller) -> Result<Vec<SessionView>, AppError> {
    let subjects = visible_subjects(state, caller).await?;
    let rows = db::list_for(&state.pool, &subjects).await.or_fail(caller)?;
    Ok(rows.into_iter().map(|r| view(r, caller.session_id.as_deref())).collect())
}

/// Ends sessions; returns how many ended.
pub async fn revoke(state: &AppState, caller: &Caller, what: RevokeSessions) -> Result<i64, AppError> {
    let principal = authorize_mutation(state, caller, Action::ManageOwnSessions, "session.revoke", "sessions").await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let ended: Vec<String> = match &what {
        RevokeSessions::One { handle: wanted } => {
            let subjects = visible_subjects(state, caller).await?;
            let rows = db::list_for(&state.pool, &subjects).await.or_fail(caller)?;
            let Some(row) = rows.into_iter().find(|r| &handle(&r.session_id) == wanted) else {
                return Err(AppError::NotFound {
                    code: "SESSION_NOT_FOUND".into(),
                    message: "No such session.".into(),
                });
            };
            db::delete(&mut *tx, &row.session_id).await.or_fail(caller)?;
            vec![row.session_id]
        }
        RevokeSessions::MyOthers => {
            db::delete_for_subject(&mut *tx, &principal.subject, caller.session_id.as_deref()).await.or_fail(caller)?
        }
        RevokeSessions::AllOf { subject } => {
            if subject != &principal.subject {
                let ct = &state.silo()?.cluster_tenant;
                authorize_mutation(state, caller, Action::AdministerSilo(ct), "session.revoke", subject).await?;
                let member =
                    opencrane_silo_db::memberships::for_subject(&state.pool, ct, subject).await.or_fail(caller)?;
                if member.is_none() {
                    return Err(AppError::NotFound {
                        code: "MEMBER_NOT_FOUND".into(),
                        message: "No such member.".into(),
                    });
                }
            }
            db::delete_for_subject(&mut *tx, subject, None).await.or_fail(caller)?
        }
    };
    let count = i64::try_from(ended.len()).unwrap_or(i64::MAX);
    let target = match &what {
        RevokeSessions::AllOf { subject } => subject.clone(),
        _ => principal.subject.clone(),
    };
    record(&mut *tx, caller, "session.revoke", &target, "success", json!({ "ended": count, "scope": what })).await?;
    tx.commit().await.or_fail(caller)?;
    Ok(count)
}
