//! The data generation (`migrations/*/…_data_generation.sql`, the same table in both schemas): a
//! value that changes in the same commit as any change to what the kept answers read (the silo's
//! users, groups and policies lists; the fleet's customers list). What is read after a
//! generation is at least as new as that generation, so an answer kept beside the generation
//! read before it is current while the generation is the same.

use opencrane_db::Result;
use sqlx::PgExecutor;
use uuid::Uuid;

/// The current generation (`None` if its row is gone: then nothing may be answered from a kept
/// answer).
pub async fn current(db: impl PgExecutor<'_>) -> Result<Option<Uuid>> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!("SELECT generation FROM data_generation").fetch_optional(db).await?)
}
