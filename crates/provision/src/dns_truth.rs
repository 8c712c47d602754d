//! What the world sees of each customer: for its canonical host `<name>.<base>` (the record the
//! DNSEndpoint publishes) and its vanity host, whether the name resolves to the ingress address at
//! the zone's authoritative nameservers ([`crate::probe::dns`]), and which certificate the
//! ingress serves for the host ([`crate::probe::tls`]). Results are stored (`dns_checks`) so pages
//! render from the database; a background loop re-checks every customer on a schedule with jitter
//! and at most [`DnsTruthSettings::concurrency`] customers at a time, so a thousand customers do
//! not hammer a nameserver; `refresh` checks one now. With the cluster's client, the vanity host's
//! row also carries cert-manager's Ready condition of its Certificate (`certificate.certManager`),
//! beside the certificate the host really serves.

use std::{net::IpAddr, net::SocketAddr, sync::Arc, time::Duration};

use chrono::Utc;
use futures_util::StreamExt as _;
use opencrane_fleet_db::dns_checks::{self, DnsCheckRow};
use serde_json::json;
use sqlx::PgPool;
use tokio::sync::watch;

use crate::probe::{
    dns::{DnsProbe, RecordCheck},
    tls,
};

/// How the probes run.
#[derive(Clone, Debug)]
pub struct DnsTruthSettings {
    /// The platform base domain (`<name>.<base>` is each customer's canonical host).
    pub base_domain: String,
    /// The ingress address the records should point at (`None`: no record is published, nothing
    /// is checked).
    pub ingress_ip: Option<IpAddr>,
    /// The nameservers to ask (`ip[:port]`); empty: the base domain's NS records.
    pub nameservers: Vec<SocketAddr>,
    /// The port the ingress serves TLS on (443).
    pub tls_port: u16,
    /// Per query and handshake.
    pub timeout: Duration,
    /// Customers checked at once.
    pub concurrency: usize,
    /// Between background passes (each pass waits up to a tenth more, at random).
    pub interval: Duration,
}

/// The probes and their schedule.
#[derive(Clone)]
pub struct DnsTruth {
    settings: DnsTruthSettings,
    cluster: Option<kube::Client>,
}

impl std::fmt::Debug for DnsTruth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsTruth").field("settings", &self.settings).field("cluster", &self.cluster.is_some()).finish()
    }
}

/// A check that could not ask the nameservers.
fn unreachable(host: &str, expected: IpAddr, error: String) -> RecordCheck {
    RecordCheck {
        host: host.to_owned(),
        expected,
        state: crate::probe::dns::RecordState::Unreachable { error },
        ownership: None,
    }
}

impl DnsTruth {
    /// Probes with `settings`.
    pub fn new(settings: DnsTruthSettings) -> Self {
        Self { settings, cluster: None }
    }

    /// Also reads the vanity Certificates' Ready condition from this cluster.
    #[must_use]
    pub fn with_cluster(mut self, client: kube::Client) -> Self {
        self.cluster = Some(client);
        self
    }

    /// cert-manager's word on customer `name`'s vanity Certificate, as stored with the row.
    async fn issuance(&self, name: &str) -> Option<serde_json::Value> {
        let client = self.cluster.as_ref()?;
        Some(match crate::kubernetes::dns::vanity_issuance(client, name).await {
            Ok(Some(issuance)) => {
                let mut value = serde_json::to_value(&issuance).unwrap_or_default();
                value["text"] = json!(issuance.describe());
                value
            }
            Ok(None) => json!({ "absent": true, "text": "no Certificate yet (the provisioning dns step applies it)" }),
            Err(e) => json!({ "error": true, "text": format!("the Certificate could not be read: {e}") }),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &DnsTruthSettings {
        &self.settings
    }

    /// The hosts of a customer: canonical first, then the vanity host.
    pub fn hosts(&self, name: &str, vanity: Option<&str>) -> Vec<(String, &'static str)> {
        let mut hosts = vec![(format!("{name}.{}", self.settings.base_domain), "canonical")];
        hosts.extend(vanity.map(|v| (v.to_owned(), "vanity")));
        hosts
    }

    async fn probes(&self) -> Result<(DnsProbe, DnsProbe), String> {
        let timeout = self.settings.timeout;
        if self.settings.nameservers.is_empty() {
            let platform = DnsProbe::authoritative_for(&self.settings.base_domain, timeout).await?;
            Ok((platform, DnsProbe::system(timeout)?))
        } else {
            let probe = DnsProbe::new(&self.settings.nameservers, timeout);
            Ok((probe.clone(), probe))
        }
    }

    /// Asks the platform zone's nameservers about one host (the provisioning `dns` step's wait);
    /// `None` without an ingress address.
    pub async fn check_record(&self, host: &str) -> Option<RecordCheck> {
        let ingress = self.settings.ingress_ip?;
        Some(match self.probes().await {
            Ok((platform, _)) => platform.check(host, ingress).await,
            Err(error) => unreachable(host, ingress, error),
        })
    }

    /// Checks one customer's hosts now (nothing is stored). Empty without an ingress address.
    pub async fn check(&self, name: &str, vanity: Option<&str>) -> Vec<DnsCheckRow> {
        let Some(ingress) = self.settings.ingress_ip else { return Vec::new() };
        let probes = self.probes().await;
        let mut rows = Vec::new();
        for (host, kind) in self.hosts(name, vanity) {
            let record = match &probes {
                Ok((platform, vanity_probe)) => {
                    let probe = if kind == "canonical" { platform } else { vanity_probe };
                    probe.check(&host, ingress).await
                }
                Err(error) => unreachable(&host, ingress, error.clone()),
            };
            let addr = SocketAddr::new(ingress, self.settings.tls_port);
            let (cert_health, mut certificate) = match tls::served(addr, &host, self.settings.timeout).await {
                Ok(served) => {
                    let health = tls::assess(&served, Utc::now());
                    let label = match health {
                        tls::CertHealth::Valid { .. } => "valid",
                        tls::CertHealth::Expiring { .. } => "expiring",
                        tls::CertHealth::Expired => "expired",
                        tls::CertHealth::WrongName => "wrongName",
                    };
                    let mut value = serde_json::to_value(&served).unwrap_or_default();
                    value["assessment"] = serde_json::to_value(&health).unwrap_or_default();
                    (label, value)
                }
                Err(error) => ("unreachable", json!({ "error": error })),
            };
            if kind == "vanity"
                && let Some(issuance) = self.issuance(name).await
            {
                certificate["certManager"] = issuance;
            }
            rows.push(DnsCheckRow {
                cluster_tenant: name.to_owned(),
                host,
                kind: kind.to_owned(),
                record_state: record.state.as_str().to_owned(),
                record: serde_json::to_value(&record).unwrap_or_default(),
                cert_health: Some(cert_health.to_owned()),
                certificate: Some(certificate),
                checked_at: Utc::now(),
            });
        }
        rows
    }

    /// Checks one customer now and stores the result.
    pub async fn refresh(&self, pool: &PgPool, name: &str) -> Result<Vec<DnsCheckRow>, opencrane_db::Error> {
        let row = opencrane_fleet_db::cluster_tenants::get(pool, name).await?;
        let rows = self.check(name, row.vanity_domain.as_deref()).await;
        let mut conn = pool.acquire().await?;
        dns_checks::replace(&mut conn, name, &rows).await?;
        Ok(rows)
    }

    /// Checks every customer not being deleted, at most `concurrency` at once; how many.
    pub async fn pass(&self, pool: &PgPool) -> Result<usize, opencrane_db::Error> {
        let names = opencrane_fleet_db::cluster_tenants::names_to_probe(pool).await?;
        let done = futures_util::stream::iter(names)
            .map(|name| async move {
                if let Err(e) = self.refresh(pool, &name).await {
                    tracing::warn!(cluster_tenant = %name, error = %e, "DNS check could not be stored");
                }
            })
            .buffer_unordered(self.settings.concurrency.max(1))
            .count()
            .await;
        Ok(done)
    }

    /// Runs [`Self::pass`] every interval (plus jitter) until `shutdown` turns true.
    pub fn spawn(self: Arc<Self>, pool: PgPool, mut shutdown: watch::Receiver<bool>) {
        tokio::spawn(async move {
            loop {
                match self.pass(&pool).await {
                    Ok(n) => tracing::debug!(customers = n, "DNS and certificates checked"),
                    Err(e) => tracing::warn!(error = %e, "the DNS check pass failed"),
                }
                let wait = self.settings.interval + jitter(self.settings.interval / 10);
                tokio::select! {
                    _ = shutdown.wait_for(|s| *s) => break,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        });
    }
}

/// Up to `max`, from the clock's sub-second digits (replicas started together drift apart).
fn jitter(max: Duration) -> Duration {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    max.mul_f64(f64::from(nanos % 1000) / 1000.0)
}
