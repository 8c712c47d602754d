//! Silo-wide settings: the time zone budget periods follow, the spend currency, and model access
//! when no grant applies.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::PgExecutor;

/// The settings row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsRow {
    /// IANA time zone.
    pub time_zone: String,
    /// ISO 4217 code LiteLLM reports spend in.
    pub currency: String,
    /// `allow` or `deny`.
    pub default_model_access: String,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// The settings.
pub async fn get(db: impl PgExecutor<'_>) -> Result<SettingsRow> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        SettingsRow,
        r#"SELECT time_zone, currency AS "currency!", default_model_access, updated_at FROM silo_settings"#
    )
    .fetch_one(db)
    .await?)
}

/// Changes the settings.
pub async fn update(
    db: impl PgExecutor<'_>,
    time_zone: &str,
    currency: &str,
    default_model_access: &str,
) -> Result<SettingsRow> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        SettingsRow,
        r#"UPDATE silo_settings SET time_zone = $1, currency = $2, default_model_access = $3, updated_at = now()
           RETURNING time_zone, currency AS "currency!", default_model_access, updated_at"#,
        time_zone,
        currency,
        default_model_access,
    )
    .fetch_one(db)
    .await?)
}
