//! The `user_sessions` index: one row per signed-in browser session, so people can see and end
//! their sessions and admins can end a member's. The session data itself (the signed-in user)
//! lives in tower-sessions' table (`tower_sessions.session`, created by our migrations) under
//! the same id; ending a session deletes both.

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

/// The live sessions of the given subjects (unexpired, with a session record that has not idled
/// out), most recently active first.
pub async fn list_for(db: impl PgExecutor<'_>, subjects: &[String]) -> Result<Vec<SessionRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        SessionRow,
        r#"SELECT u.session_id, u.subject, u.email, u.display_name, u.user_agent, u.ip, u.created_at,
                  u.last_seen_at, u.expires_at
           FROM user_sessions u JOIN tower_sessions.session s ON s.id = u.session_id
           WHERE u.subject = ANY($1) AND u.expires_at > now() AND s.expiry_date > now()
           ORDER BY u.last_seen_at DESC"#,
        subjects,
    )
    .fetch_all(db)
    .await?)
}

/// Ends one session: its index row and its session record, in one statement, so the session is
/// anonymous on its next request. `true` when it existed.
pub async fn delete(db: impl PgExecutor<'_>, session_id: &str) -> Result<bool> {
    // language=PostgreSQL
    let ended = sqlx::query_scalar!(
        r#"WITH record AS (DELETE FROM tower_sessions.session WHERE id = $1),
                entry AS (DELETE FROM user_sessions WHERE session_id = $1 RETURNING session_id)
           SELECT count(*) AS "n!" FROM entry"#,
        session_id,
    )
    .fetch_one(db)
    .await?;
    Ok(ended > 0)
}

/// Ends every session of `subject` except `keep`; returns the ids ended.
pub async fn delete_for_subject(db: impl PgExecutor<'_>, subject: &str, keep: Option<&str>) -> Result<Vec<String>> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"WITH entry AS (
               DELETE FROM user_sessions WHERE subject = $1 AND ($2::text IS NULL OR session_id <> $2)
               RETURNING session_id),
           record AS (DELETE FROM tower_sessions.session WHERE id IN (SELECT session_id FROM entry))
           SELECT session_id AS "session_id!" FROM entry"#,
        subject,
        keep,
    )
    .fetch_all(db)
    .await?)
}

/// How many sessions are live (index row not past its absolute expiry, record not past its idle
/// expiry): the `opencrane_sessions_active` gauge.
pub async fn count_active(db: impl PgExecutor<'_>) -> Result<i64> {
    // language=PostgreSQL
    let n = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM user_sessions u JOIN tower_sessions.session s ON s.id = u.session_id
           WHERE u.expires_at > now() AND s.expiry_date > now()"#,
    )
    .fetch_one(db)
    .await?;
    Ok(n)
}

/// Sweeps expired sessions: records past their idle expiry, index rows past their absolute expiry
/// or without a live record, and the records of those rows. Returns how many sessions went.
pub async fn delete_expired(db: impl PgExecutor<'_>) -> Result<u64> {
    // language=PostgreSQL
    let swept = sqlx::query_scalar!(
        r#"WITH idle AS (DELETE FROM tower_sessions.session WHERE expiry_date <= now() RETURNING id),
                entry AS (
                    DELETE FROM user_sessions u
                    WHERE u.expires_at <= now()
                       OR u.session_id IN (SELECT id FROM idle)
                       OR NOT EXISTS (SELECT 1 FROM tower_sessions.session s WHERE s.id = u.session_id)
                    RETURNING u.session_id),
                stale AS (DELETE FROM tower_sessions.session WHERE id IN (SELECT session_id FROM entry))
           SELECT count(*) AS "n!" FROM entry"#,
    )
    .fetch_one(db)
    .await?;
    Ok(u64::try_from(swept).unwrap_or(0))
}

/// A stored session record (tower-sessions' `Record`, serialised).
#[derive(Clone, Debug, PartialEq)]
pub struct RecordRow {
    /// Session id.
    pub id: String,
    /// Serialised data.
    pub data: Vec<u8>,
    /// Idle expiry.
    pub expiry_date: DateTime<Utc>,
}

/// Inserts a new record unless the id is taken; `false` on a collision.
pub async fn insert_record(db: impl PgExecutor<'_>, record: &RecordRow) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "INSERT INTO tower_sessions.session (id, data, expiry_date) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
        record.id,
        record.data,
        record.expiry_date,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Writes an existing record; `false` when there is none (the session was ended — signed out,
/// revoked, swept — while a request holding it was in flight: it stays ended, never re-created).
pub async fn save_record(db: impl PgExecutor<'_>, record: &RecordRow) -> Result<bool> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "UPDATE tower_sessions.session SET data = $2, expiry_date = $3 WHERE id = $1",
        record.id,
        record.data,
        record.expiry_date,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// An unexpired record that is in the sessions index (a record without its index row is not a
/// session anybody can see or end, so it is not one at all).
pub async fn load_record(db: impl PgExecutor<'_>, id: &str) -> Result<Option<RecordRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        RecordRow,
        "SELECT s.id, s.data, s.expiry_date FROM tower_sessions.session s
         JOIN user_sessions u ON u.session_id = s.id
         WHERE s.id = $1 AND s.expiry_date > now() AND u.expires_at > now()",
        id,
    )
    .fetch_optional(db)
    .await?)
}

/// Deletes a record (the index row, if any, goes with the next sweep or [`delete`]).
pub async fn delete_record(db: impl PgExecutor<'_>, id: &str) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!("DELETE FROM tower_sessions.session WHERE id = $1", id).execute(db).await?;
    Ok(())
}
