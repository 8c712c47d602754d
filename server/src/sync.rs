//! The silo's membership read-model, pulled from the fleet: on start and every minute the
//! clustertenant-manager asks `GET <fleet>/api/internal/cluster-tenants/<own name>/members`
//! (bearer `OPENCRANE_API_TOKEN`) and makes its own `org_memberships` equal to the answer, in one
//! transaction. The fleet answers for the named ClusterTenant only, so a silo never receives
//! another customer's rows. When the fleet is unreachable or answers anything but 200, the local
//! rows are left as they are (the last known good state).

use std::time::Duration;

use anyhow::{Context as _, bail};
use opencrane_db::PgPool;
use serde::Deserialize;
use tokio::sync::watch;

/// How often the read-model is refreshed.
pub const INTERVAL: Duration = Duration::from_secs(60);

/// One membership as the fleet's internal endpoint returns it.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MemberWire {
    /// IdP subject.
    pub subject: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    /// `active` or `suspended`.
    pub status: String,
}

/// Where the silo pulls from.
#[derive(Clone, Debug)]
pub struct FleetLink {
    /// The fleet's internal base URL.
    pub url: String,
    /// The bearer token.
    pub token: String,
}

/// Pulls once; returns how many members the silo now has.
pub async fn pull_once(
    client: &openidconnect::reqwest::Client,
    link: &FleetLink,
    cluster_tenant: &str,
    pool: &PgPool,
) -> anyhow::Result<usize> {
    let url = format!("{}/api/internal/cluster-tenants/{cluster_tenant}/members", link.url.trim_end_matches('/'));
    let response = client
        .get(&url)
        .bearer_auth(&link.token)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .with_context(|| format!("GET {url}"))?;
    if !response.status().is_success() {
        bail!("GET {url} answered {}", response.status());
    }
    let body = response.bytes().await.with_context(|| format!("reading the answer of {url}"))?;
    let members: Vec<MemberWire> =
        serde_json::from_slice(&body).with_context(|| format!("decoding the answer of {url}"))?;
    let mut tx = pool.begin().await?;
    for m in &members {
        let status = if m.status == "suspended" { "suspended" } else { "active" };
        opencrane_silo_db::memberships::upsert(&mut *tx, cluster_tenant, &m.subject, &m.role, status).await?;
    }
    let keep: Vec<String> = members.iter().map(|m| m.subject.clone()).collect();
    opencrane_silo_db::memberships::retain_only(&mut *tx, cluster_tenant, &keep).await?;
    tx.commit().await?;
    Ok(members.len())
}

/// Pulls on start and every [`INTERVAL`] until `stop` turns true; `first` is told when the first
/// pull finished (successfully or not).
pub fn spawn(link: FleetLink, cluster_tenant: String, pool: PgPool, mut stop: watch::Receiver<bool>) {
    tokio::spawn(async move {
        let client = openidconnect::reqwest::Client::new();
        loop {
            match pull_once(&client, &link, &cluster_tenant, &pool).await {
                Ok(n) => {
                    tracing::debug!(cluster_tenant = %cluster_tenant, members = n, "membership read-model refreshed")
                }
                Err(err) => {
                    tracing::warn!(cluster_tenant = %cluster_tenant, error = %format!("{err:#}"), "membership pull failed; keeping the local rows")
                }
            }
            tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                () = tokio::time::sleep(INTERVAL) => {}
            }
        }
    });
}
