//! The `dns_checks` table: per customer and host, what DNS answered and which certificate the
//! host served at the last probe. Written by the probes only; pages read it.

use chrono::{DateTime, Utc};
use opencrane_db::Error as DbError;
use sqlx::PgExecutor;

/// One host's last check.
#[derive(Clone, Debug, PartialEq)]
pub struct DnsCheckRow {
    /// The ClusterTenant.
    pub cluster_tenant: String,
    /// The host.
    pub host: String,
    /// `canonical` or `vanity`.
    pub kind: String,
    /// `resolves`, `missing`, `wrongAddress` or `unreachable`.
    pub record_state: String,
    /// The record check as JSON.
    pub record: serde_json::Value,
    /// `valid`, `expiring`, `expired`, `wrongName` or `unreachable`; `None`: not checked.
    pub cert_health: Option<String>,
    /// The served certificate (or `{error}`) as JSON.
    pub certificate: Option<serde_json::Value>,
    /// When.
    pub checked_at: DateTime<Utc>,
}

/// Stores the checks of `cluster_tenant`, replacing its earlier ones (a host no longer wanted goes).
pub async fn replace(conn: &mut sqlx::PgConnection, cluster_tenant: &str, rows: &[DnsCheckRow]) -> Result<(), DbError> {
    let hosts: Vec<String> = rows.iter().map(|r| r.host.clone()).collect();
    // language=PostgreSQL
    sqlx::query!("DELETE FROM dns_checks WHERE cluster_tenant = $1 AND NOT (host = ANY($2))", cluster_tenant, &hosts)
        .execute(&mut *conn)
        .await?;
    for row in rows {
        // language=PostgreSQL
        sqlx::query!(
            r#"INSERT INTO dns_checks (cluster_tenant, host, kind, record_state, record, cert_health, certificate, checked_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
               ON CONFLICT (cluster_tenant, host) DO UPDATE SET
                 kind = EXCLUDED.kind, record_state = EXCLUDED.record_state, record = EXCLUDED.record,
                 cert_health = EXCLUDED.cert_health, certificate = EXCLUDED.certificate, checked_at = EXCLUDED.checked_at"#,
            cluster_tenant,
            row.host,
            row.kind,
            row.record_state,
            row.record,
            row.cert_health,
            row.certificate,
            row.checked_at,
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The checks of one customer, canonical host first.
pub async fn of(db: impl PgExecutor<'_>, cluster_tenant: &str) -> Result<Vec<DnsCheckRow>, DbError> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        DnsCheckRow,
        r#"SELECT cluster_tenant, host, kind, record_state, record, cert_health, certificate, checked_at
           FROM dns_checks WHERE cluster_tenant = $1 ORDER BY kind, host"#,
        cluster_tenant,
    )
    .fetch_all(db)
    .await?)
}

/// Every check, by customer then host.
pub async fn all(db: impl PgExecutor<'_>) -> Result<Vec<DnsCheckRow>, DbError> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        DnsCheckRow,
        r#"SELECT cluster_tenant, host, kind, record_state, record, cert_health, certificate, checked_at
           FROM dns_checks ORDER BY cluster_tenant, kind, host"#,
    )
    .fetch_all(db)
    .await?)
}
