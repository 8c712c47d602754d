//! The `user_sessions` index: one row per signed-in browser session, so people can see and end
//! their sessions and admins can end a member's. The session data itself (the signed-in user)
//! lives in tower-sessions' table under the same id; ending a session deletes both.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::PgExecutor;

/// A session as listed.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionRow {
    /// The tower-sessions id (also the cookie's value).
    pub session_id: String,
    /// Who is signed in.
    pub subject: String,
    /// Their email.
    pub email: Option<String>,
    /// Their name.
    pub display_name: String,
    /// The browser's User-Agent at sign-in.
    pub user_agent: String,
    /// The client address at sign-in.
    pub ip: String,
    /// Sign-in time.
    pub created_at: DateTime<Utc>,
    /// Last request seen (updated at most once a minute).
    pub last_seen_at: DateTime<Utc>,
    /// When the session ends at the latest.
    pub expires_at: DateTime<Utc>,
}

/// Records a new session.
pub async fn insert(db: impl PgExecutor<'_>, row: &SessionRow) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        r#"INSERT INTO user_sessions
             (session_id, subject, email, display_name, user_agent, ip, created_at, last_seen_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (session_id) DO NOTHING"#,
        row.session_id,
        row.subject,
        row.email,
        row.display_name,
        row.user_agent,
        row.ip,
        row.created_at,
        row.last_seen_at,
        row.expires_at,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Marks a session as seen now.
pub async fn touch(db: impl PgExecutor<'_>, session_id: &str, at: DateTime<Utc>) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!("UPDATE user_sessions SET last_seen_at = $2 WHERE session_id = $1", session_id, at)
        .execute(db)
        .await?;
    Ok(())
}

/// One session, if still recorded.
pub async fn get(db: impl PgExecutor<'_>, session_id: &str) -> Result<Option<SessionRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        SessionRow,
        r#"SELECT session_id, subject, email, display_name, user_agent, ip, created_at, last_seen_at, expires_at
           FROM user_sessions WHERE session_id = $1"#,
        session_id,
    )
    .fetch_optional(db)
    .await?)
}

/// The live sessions of the given subjects, most recently active first.
pub async fn list_for(db: impl PgExecutor<'_>, subjects: &[String]) -> Result<Vec<SessionRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        SessionRow,
        r#"SELECT session_id, subject, email, display_name, user_agent, ip, created_at, last_seen_at, expires_at
           FROM user_sessions WHERE subject = ANY($1) AND expires_at > now()
           ORDER BY last_seen_at DESC"#,
        subjects,
    )
    .fetch_all(db)
    .await?)
}

/// Forgets one session; `true` when it existed.
pub async fn delete(db: impl PgExecutor<'_>, session_id: &str) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM user_sessions WHERE session_id = $1", session_id).execute(db).await?;
    Ok(done.rows_affected() > 0)
}

/// Forgets every session of `subject` except `keep`; returns the ids removed (whose session
/// records must be deleted too).
pub async fn delete_for_subject(db: impl PgExecutor<'_>, subject: &str, keep: Option<&str>) -> Result<Vec<String>> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"DELETE FROM user_sessions WHERE subject = $1 AND ($2::text IS NULL OR session_id <> $2)
           RETURNING session_id"#,
        subject,
        keep,
    )
    .fetch_all(db)
    .await?)
}

/// Removes rows of sessions that have expired; returns how many.
pub async fn delete_expired(db: impl PgExecutor<'_>) -> Result<u64> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM user_sessions WHERE expires_at <= now()").execute(db).await?;
    Ok(done.rows_affected())
}
