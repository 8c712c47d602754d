//! tower-sessions' store on the role's own Postgres (`tower_sessions.session`, created by our
//! migrations). Our own small adapter rather than `tower-sessions-sqlx-store`: that crate turns
//! on sqlx's `time` feature, which changes the Rust type every checked query maps `timestamptz`
//! to across the workspace.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use opencrane_common_db::sessions::{self as db, RecordRow};
use opencrane_db::PgPool;
use tower_sessions::{
    SessionStore,
    cookie::time::OffsetDateTime,
    session::{Id, Record},
    session_store::{Error, Result},
};

/// The Postgres session store.
#[derive(Clone, Debug)]
pub struct PgSessionStore {
    pool: PgPool,
}

impl PgSessionStore {
    /// A store on `pool`.
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

fn to_chrono(at: OffsetDateTime) -> DateTime<Utc> {
    DateTime::from_timestamp(at.unix_timestamp(), at.nanosecond()).unwrap_or_default()
}

fn to_time(at: DateTime<Utc>) -> Result<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp(at.timestamp()).map_err(|e| Error::Decode(e.to_string()))
}

fn encode(record: &Record) -> Result<RecordRow> {
    Ok(RecordRow {
        id: record.id.to_string(),
        data: serde_json::to_vec(&record.data).map_err(|e| Error::Encode(e.to_string()))?,
        expiry_date: to_chrono(record.expiry_date),
    })
}

fn backend(err: &opencrane_db::Error) -> Error {
    Error::Backend(err.to_string())
}

#[async_trait]
impl SessionStore for PgSessionStore {
    async fn create(&self, record: &mut Record) -> Result<()> {
        // A fresh id until one is free (collisions of 128-bit ids are theoretical, but handled).
        loop {
            if db::insert_record(&self.pool, &encode(record)?).await.map_err(|e| backend(&e))? {
                return Ok(());
            }
            record.id = Id::default();
        }
    }

    /// Updates the record only: a session ended while a request held it stays ended (an upsert
    /// here would bring it back, outside the sessions index).
    async fn save(&self, record: &Record) -> Result<()> {
        let saved = db::save_record(&self.pool, &encode(record)?).await.map_err(|e| backend(&e))?;
        if !saved {
            tracing::debug!("a session ended while a request held it; not saved");
        }
        Ok(())
    }

    async fn load(&self, id: &Id) -> Result<Option<Record>> {
        let Some(row) = db::load_record(&self.pool, &id.to_string()).await.map_err(|e| backend(&e))? else {
            return Ok(None);
        };
        Ok(Some(Record {
            id: *id,
            data: serde_json::from_slice(&row.data).map_err(|e| Error::Decode(e.to_string()))?,
            expiry_date: to_time(row.expiry_date)?,
        }))
    }

    async fn delete(&self, id: &Id) -> Result<()> {
        db::delete_record(&self.pool, &id.to_string()).await.map_err(|e| backend(&e))
    }
}
