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

/// How often usage is reported to the fleet for billing (a failed report is tried at the next
/// pull).
pub const REPORT_EVERY: Duration = Duration::from_secs(600);

/// How often while the silo's own customer is being deleted, or the fleet refuses its pulls (the
/// deletion was requested): its last days reach the fleet before the silo is gone.
pub const FINAL_REPORT_EVERY: Duration = Duration::from_secs(30);

/// Whether a usage report is due, given how long ago the last one succeeded (`None`: never) and
/// whether the silo may be about to go.
pub fn report_due(since_last: Option<Duration>, ending: bool) -> bool {
    let every = if ending { FINAL_REPORT_EVERY } else { REPORT_EVERY };
    since_last.is_none_or(|elapsed| elapsed >= every)
}

/// Between pulls while the silo's own ClusterTenant is not yet at rest (provisioning, resuming):
/// the silo learns that it is ready within seconds of the fleet, not a minute later.
pub const SETTLING: Duration = Duration::from_secs(2);

/// How long to wait before the next pull, given the phase last learnt (`None`: not learnt).
pub fn next_wait(phase: Option<&str>) -> Duration {
    match phase {
        Some("ready" | "suspended") => INTERVAL,
        _ => SETTLING,
    }
}

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
    /// This silo's credential.
    pub token: FleetToken,
}

/// Where a silo's credential for the fleet comes from.
#[derive(Clone)]
pub enum FleetToken {
    /// Held in memory (the dev process hands each silo the credential it minted).
    Value(String),
    /// A file (the Secret mounted by the silo chart), read on every pull so that a rotated
    /// credential is used as soon as the kubelet has updated the file.
    File(std::path::PathBuf),
}

impl std::fmt::Debug for FleetToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Value(_) => f.write_str("Value(<redacted>)"),
            Self::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
}

impl FleetToken {
    /// The credential now.
    pub fn current(&self) -> anyhow::Result<String> {
        match self {
            Self::Value(token) => Ok(token.clone()),
            Self::File(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading the fleet credential from {}", path.display()))?;
                let token = text.trim();
                anyhow::ensure!(!token.is_empty(), "the fleet credential file {} is empty", path.display());
                Ok(token.to_owned())
            }
        }
    }
}

/// `GET <fleet>/api/internal/cluster-tenants/<path>` with the fleet token, decoded; anything but a
/// 2xx is an error.
async fn get<T: serde::de::DeserializeOwned>(
    client: &openidconnect::reqwest::Client,
    link: &FleetLink,
    path: &str,
) -> anyhow::Result<T> {
    let url = format!("{}/api/internal/cluster-tenants/{path}", link.url.trim_end_matches('/'));
    let response = crate::metrics::fleet_call(
        client.get(&url).bearer_auth(link.token.current()?).timeout(Duration::from_secs(10)),
    )
    .await
    .with_context(|| format!("GET {url}"))?;
    if !response.status().is_success() {
        bail!("GET {url} answered {}", response.status());
    }
    let body = response.bytes().await.with_context(|| format!("reading the answer of {url}"))?;
    serde_json::from_slice(&body).with_context(|| format!("decoding the answer of {url}"))
}

/// Why the fleet did not admit a person signing in.
#[derive(Debug)]
pub enum AdmitError {
    /// 403 `MEMBER_SUSPENDED`: their membership is suspended.
    Suspended,
    /// 409 `SEAT_CAP_EXCEEDED`: every seat is taken.
    NoSeat,
    /// Another refusal (the customer is being deleted, a bad request…), with the fleet's code.
    Refused(String),
    /// The fleet could not be asked (unreachable, 5xx, a garbled answer).
    Unavailable(anyhow::Error),
}

/// Asks the fleet to admit `request`'s person, signing in to this silo
/// (`POST <fleet>/api/internal/cluster-tenants/<name>/members/adopt`).
pub async fn admit(
    client: &openidconnect::reqwest::Client,
    link: &FleetLink,
    cluster_tenant: &str,
    request: &app::model::fleet::members::AdmitRequest,
) -> Result<app::model::fleet::members::Admitted, AdmitError> {
    let url = format!("{}/api/internal/cluster-tenants/{cluster_tenant}/members/adopt", link.url.trim_end_matches('/'));
    let token = link.token.current().map_err(AdmitError::Unavailable)?;
    let response = crate::metrics::fleet_call(
        client
            .post(&url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(request).unwrap_or_default())
            .timeout(Duration::from_secs(10)),
    )
    .await
    .map_err(|e| AdmitError::Unavailable(anyhow::Error::new(e).context(format!("POST {url}"))))?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| AdmitError::Unavailable(anyhow::Error::new(e)))?;
    if status.is_success() {
        return serde_json::from_slice(&body).map_err(|e| {
            AdmitError::Unavailable(anyhow::Error::new(e).context(format!("decoding the answer of {url}")))
        });
    }
    if status.is_server_error() || status.as_u16() == 401 {
        return Err(AdmitError::Unavailable(anyhow::anyhow!("POST {url} answered {status}")));
    }
    let code = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["code"].as_str().map(str::to_owned))
        .unwrap_or_else(|| status.as_u16().to_string());
    Err(match code.as_str() {
        "MEMBER_SUSPENDED" => AdmitError::Suspended,
        "SEAT_CAP_EXCEEDED" => AdmitError::NoSeat,
        _ => AdmitError::Refused(code),
    })
}

/// The fleet's memberships as the silo's read-model rows `(subject, role, status)`. Fail closed:
/// only `active` grants access and `suspended` keeps the row without it; any other status (a
/// pending invitation, a state a newer fleet adds) is left out, so that person has no access here.
pub fn project(members: &[MemberWire]) -> Vec<(&str, &str, &'static str)> {
    members
        .iter()
        .filter_map(|m| {
            let status = match m.status.as_str() {
                "active" => "active",
                "suspended" => "suspended",
                other => {
                    tracing::warn!(subject = %m.subject, status = other, "membership status not understood: no access");
                    return None;
                }
            };
            Some((m.subject.as_str(), m.role.as_str(), status))
        })
        .collect()
}

/// What one pull changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pulled {
    /// Members the fleet listed (as projected).
    pub members: usize,
    /// People offboarded by this pull: their membership stopped granting access (suspended or
    /// removed on the fleet) or they still had a session; their sessions are ended, and the LLM
    /// loop, poked, blocks their key.
    pub offboarded: Vec<String>,
}

/// Pulls once: makes the read-model equal to the fleet's answer (a member the fleet no longer
/// lists is kept as `removed`), then offboards, in the same transaction, everyone whose
/// membership grants nothing: their sessions end (the LLM key follows on the loop's next pass,
/// from the same rows). Each offboarding is audited.
pub async fn pull_once(
    client: &openidconnect::reqwest::Client,
    link: &FleetLink,
    cluster_tenant: &str,
    pool: &PgPool,
) -> anyhow::Result<Pulled> {
    use opencrane_silo_db::memberships;
    let members: Vec<MemberWire> = get(client, link, &format!("{cluster_tenant}/members")).await?;
    let projected = project(&members);
    let mut tx = pool.begin().await?;
    let before: std::collections::HashMap<String, String> =
        memberships::list(&mut *tx).await?.into_iter().map(|m| (m.subject, m.status)).collect();
    for (subject, role, status) in &projected {
        memberships::upsert(&mut *tx, cluster_tenant, subject, role, status).await?;
    }
    let keep: Vec<String> = projected.iter().map(|(subject, _, _)| (*subject).to_owned()).collect();
    memberships::mark_removed(&mut tx, cluster_tenant, &keep).await?;
    let mut offboarded = Vec::new();
    for subject in memberships::without_access(&mut *tx).await? {
        let ended = opencrane_common_db::sessions::delete_for_subject(&mut *tx, &subject, None).await?;
        let was_active = before.get(&subject).is_some_and(|s| s == "active");
        if !was_active && ended.is_empty() {
            continue;
        }
        let status = memberships::for_subject(&mut *tx, cluster_tenant, &subject).await?.map(|m| m.status);
        let metadata = serde_json::json!({ "status": status, "sessionsEnded": ended.len() });
        let entry = opencrane_common_db::audit::NewAuditEntry {
            actor: "fleet",
            actor_role: "system",
            action: "membership.offboard",
            target: &subject,
            outcome: "success",
            request_id: None,
            metadata: &metadata,
        };
        opencrane_common_db::audit::append(&mut *tx, &entry).await?;
        offboarded.push(subject);
    }
    tx.commit().await?;
    Ok(Pulled { members: projected.len(), offboarded })
}

/// Learns the silo's own ClusterTenant from the fleet (`GET …/cluster-tenants/<name>`).
pub async fn pull_own(
    client: &openidconnect::reqwest::Client,
    link: &FleetLink,
    cluster_tenant: &str,
    pool: &PgPool,
) -> anyhow::Result<String> {
    let own: app::service::fleet::cluster_tenants::SiloSelf = get(client, link, cluster_tenant).await?;
    if own.name != cluster_tenant {
        bail!("the fleet answered for {} instead of {cluster_tenant}", own.name);
    }
    let learnt = Learnt {
        display_name: own.display_name,
        phase: own.phase,
        suspended: own.suspended,
        vanity_domain: own.vanity_domain,
        source: "fleet",
    };
    store_own(pool, cluster_tenant, learnt).await
}

/// Learns the silo's own ClusterTenant from its custom resource (the silo's ClusterRole may read
/// exactly that one).
pub async fn read_own_resource(
    client: &opencrane_provision::kubernetes::Client,
    cluster_tenant: &str,
    pool: &PgPool,
) -> anyhow::Result<String> {
    let resource = opencrane_provision::kubernetes::read_cluster_tenant(client, cluster_tenant)
        .await
        .map_err(|e| anyhow::anyhow!("reading ClusterTenant {cluster_tenant}: {e}"))?;
    let phase =
        resource.status.as_ref().and_then(|s| s.phase).map_or("pending", opencrane_crd::cluster_tenant::Phase::as_str);
    let learnt = Learnt {
        display_name: resource.spec.display_name,
        phase: phase.to_owned(),
        suspended: resource.spec.suspended,
        vanity_domain: resource.spec.vanity_domain,
        source: "resource",
    };
    store_own(pool, cluster_tenant, learnt).await
}

/// What the silo learnt about itself.
struct Learnt {
    display_name: String,
    phase: String,
    suspended: bool,
    vanity_domain: Option<String>,
    source: &'static str,
}

/// Stores what was learnt; answers the phase.
async fn store_own(pool: &PgPool, name: &str, learnt: Learnt) -> anyhow::Result<String> {
    let phase = learnt.phase.clone();
    let own = opencrane_silo_db::own::OwnClusterTenant {
        name: name.to_owned(),
        display_name: learnt.display_name,
        phase: learnt.phase,
        suspended: learnt.suspended,
        vanity_domain: learnt.vanity_domain,
        source: learnt.source.to_owned(),
        updated_at: chrono::Utc::now(),
    };
    let mut conn = pool.acquire().await?;
    opencrane_silo_db::own::store(&mut conn, &own).await?;
    Ok(phase)
}

/// Pulls on start and every [`INTERVAL`] ([`SETTLING`] while the silo is not at rest) until `stop` turns true: the members from the fleet, and
/// the silo's own ClusterTenant from its resource when running in a cluster, else from the fleet.
/// `portal.triggers` are the silo's background loops, poked when a pull offboarded someone (so
/// their LLM key is blocked now rather than at the loop's next pass); `portal.secrets` seals the
/// legacy keys of a relayed migration ([`super::import`], taken at every pull).
pub fn spawn(
    link: FleetLink,
    cluster_tenant: String,
    pool: PgPool,
    portal: app::state::PortalRuntime,
    mut stop: watch::Receiver<bool>,
) {
    let triggers = portal.triggers;
    tokio::spawn(async move {
        // Deliveries of a relayed migration come in a series (copy, then check): after one, ask
        // again within seconds for a while.
        let mut importing_until: Option<std::time::Instant> = None;
        let client = openidconnect::reqwest::Client::new();
        let kube = opencrane_provision::kubernetes::in_cluster_client().await;
        // Usage for billing: seats measured at every pull, reported every REPORT_EVERY, in the
        // time zone the fleet names (UTC until it has said).
        let mut time_zone = "UTC".to_owned();
        let mut last_report: Option<std::time::Instant> = None;
        loop {
            let pull = pull_once(&client, &link, &cluster_tenant, &pool).await;
            let pull_refused = pull.is_err();
            match pull {
                Ok(pulled) => {
                    if let Err(err) = super::usage::measure(&pool, &time_zone).await {
                        tracing::warn!(cluster_tenant = %cluster_tenant, error = %format!("{err:#}"), "could not measure the seats held");
                    }
                    if !pulled.offboarded.is_empty() {
                        tracing::info!(cluster_tenant = %cluster_tenant, offboarded = pulled.offboarded.len(), "members offboarded: sessions ended, keys to be blocked");
                        triggers.iter().for_each(opencrane_portal::reconcile::Trigger::poke);
                    }
                    tracing::debug!(cluster_tenant = %cluster_tenant, members = pulled.members, "membership read-model refreshed")
                }
                Err(err) => {
                    tracing::warn!(cluster_tenant = %cluster_tenant, error = %format!("{err:#}"), "membership pull failed; keeping the local rows")
                }
            }
            let own = match &kube {
                Some(kube) => read_own_resource(kube, &cluster_tenant, &pool).await,
                None => pull_own(&client, &link, &cluster_tenant, &pool).await,
            };
            let phase = match own {
                Ok(phase) => Some(phase),
                Err(err) => {
                    tracing::warn!(cluster_tenant = %cluster_tenant, error = %format!("{err:#}"), "could not learn the silo's own ClusterTenant");
                    None
                }
            };
            let ending = pull_refused || phase.as_deref() == Some("deleting");
            if report_due(last_report.map(|at| at.elapsed()), ending) {
                match super::usage::report_once(&client, &link, &cluster_tenant, &pool).await {
                    Ok((reported, zone)) => {
                        last_report = Some(std::time::Instant::now());
                        time_zone = zone;
                        tracing::debug!(cluster_tenant = %cluster_tenant, days = reported.days, changed = reported.changed, "usage reported");
                    }
                    Err(err) => {
                        tracing::warn!(cluster_tenant = %cluster_tenant, error = %format!("{err:#}"), "usage report failed; the next one catches up");
                    }
                }
            }
            match super::import::take_once(&client, &link, &cluster_tenant, &pool, portal.secrets.as_deref()).await {
                Ok(super::import::Taken::Nothing) => {}
                Ok(super::import::Taken::Reported { written }) => {
                    importing_until = Some(std::time::Instant::now() + INTERVAL);
                    tracing::info!(cluster_tenant = %cluster_tenant, written, "migrated rows from the shared installation: delivery applied and reported");
                }
                Ok(super::import::Taken::Refused(why)) => {
                    importing_until = Some(std::time::Instant::now() + INTERVAL);
                    tracing::warn!(cluster_tenant = %cluster_tenant, reason = %why, "a migration delivery could not be applied; the fleet was told");
                }
                Err(err) => {
                    tracing::warn!(cluster_tenant = %cluster_tenant, error = %format!("{err:#}"), "could not take the staged migration delivery; trying at the next pull")
                }
            }
            let importing = importing_until.is_some_and(|until| std::time::Instant::now() < until);
            let wait = if importing { SETTLING } else { next_wait(phase.as_deref()) };
            tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                () = tokio::time::sleep(wait) => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silo_that_may_be_going_reports_its_usage_sooner() {
        assert!(report_due(None, false), "the first report is due at once");
        assert!(!report_due(Some(Duration::from_secs(60)), false));
        assert!(report_due(Some(REPORT_EVERY), false));
        assert!(report_due(Some(FINAL_REPORT_EVERY), true), "being deleted: every half minute");
        assert!(!report_due(Some(Duration::from_secs(5)), true), "but not at every two-second pull");
    }

    #[test]
    fn a_silo_that_is_not_at_rest_asks_again_within_seconds() {
        assert_eq!(next_wait(Some("provisioning")), SETTLING);
        assert_eq!(next_wait(Some("pending")), SETTLING);
        assert_eq!(next_wait(None), SETTLING, "nothing learnt yet");
        assert_eq!(next_wait(Some("ready")), INTERVAL);
        assert_eq!(next_wait(Some("suspended")), INTERVAL);
    }

    fn member(subject: &str, status: &str) -> MemberWire {
        MemberWire { subject: subject.into(), role: "admin".into(), status: status.into() }
    }

    /// The projection fails closed: a status the silo does not know grants nothing (the
    /// original, and this project before, turned every status but `suspended` into `active`).
    #[test]
    fn only_active_grants_access_and_unknown_statuses_grant_nothing() {
        let members =
            [member("ana", "active"), member("ben", "suspended"), member("cy", "pending"), member("di", "ACTIVE")];
        let projected = project(&members);
        assert_eq!(projected, [("ana", "admin", "active"), ("ben", "admin", "suspended")]);
        assert!(projected.iter().all(|(subject, _, _)| !["cy", "di"].contains(subject)));
    }
}
