//! The fleet's DNS truth for people: the `/dns` page (platform operators: every customer) and a
//! customer's own hosts (whoever may read the customer), read from what the probes stored; and a
//! check now (`POST /cluster-tenants/{name}/refresh`), which runs the probes for that customer and
//! answers the fresh result.

use opencrane_fleet_db::dns_checks::{self, DnsCheckRow};
use serde_json::json;

use crate::{
    error::AppError,
    model::fleet::dns::{DnsCustomerView, DnsHostView, DnsOverview},
    service::{OrFail as _, fleet::cluster_tenants},
    state::{AppState, Caller},
};

fn text(v: &serde_json::Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

/// A stored check as people read it.
pub fn host_view(row: &DnsCheckRow) -> DnsHostView {
    let record = &row.record;
    let cert = row.certificate.as_ref();
    let problem = match (record["error"].as_str(), cert.and_then(|c| c["error"].as_str())) {
        (Some(dns), _) => Some(dns.to_owned()),
        (None, Some(tls)) => Some(tls.to_owned()),
        (None, None) => None,
    };
    DnsHostView {
        host: row.host.clone(),
        kind: row.kind.clone(),
        record_state: row.record_state.clone(),
        expected: text(&record["expected"]),
        got: record["got"].as_array().map(|a| a.iter().filter_map(text).collect()).unwrap_or_default(),
        ownership: text(&record["ownership"]),
        cert_health: row.cert_health.clone(),
        cert_issuer: cert.and_then(|c| text(&c["issuer"])),
        cert_names: cert
            .and_then(|c| c["names"].as_array())
            .map(|a| a.iter().filter_map(text).collect())
            .unwrap_or_default(),
        cert_not_after: cert.and_then(|c| serde_json::from_value(c["notAfter"].clone()).ok()),
        cert_days_left: cert.and_then(|c| c["assessment"]["daysLeft"].as_i64()),
        problem,
        checked_at: row.checked_at,
    }
}

/// Every customer's hosts (platform operators).
pub async fn overview(state: &AppState, caller: &Caller) -> Result<DnsOverview, AppError> {
    let principal = caller.principal.as_ref().ok_or(AppError::Unauthorized)?;
    if !principal.is_platform_operator {
        let message = "Only platform operators may see the platform's DNS.".to_owned();
        return Err(cluster_tenants::not_operator(state, caller, "dns.read", "dns", message, json!({})).await);
    }
    let fleet = state.fleet()?;
    let settings = fleet.dns.as_ref().map(|d| d.settings().clone());
    let names = opencrane_fleet_db::cluster_tenants::names_and_display_names(&state.pool).await.or_fail(caller)?;
    let rows = dns_checks::all(&state.pool).await.or_fail(caller)?;
    let customers = names
        .into_iter()
        .map(|(name, display_name)| {
            let hosts = rows.iter().filter(|r| r.cluster_tenant == name).map(host_view).collect();
            DnsCustomerView { name, display_name, hosts }
        })
        .collect();
    Ok(DnsOverview {
        probing: settings.is_some(),
        ingress_ip: settings.as_ref().and_then(|s| s.ingress_ip).map(|ip| ip.to_string()),
        nameservers: settings.map(|s| s.nameservers.iter().map(ToString::to_string).collect()).unwrap_or_default(),
        customers,
    })
}

/// One customer's hosts, as last checked.
pub async fn of(state: &AppState, caller: &Caller, name: &str) -> Result<Vec<DnsHostView>, AppError> {
    cluster_tenants::get(state, caller, name).await?;
    let rows = dns_checks::of(&state.pool, name).await.or_fail(caller)?;
    Ok(rows.iter().map(host_view).collect())
}

/// Whether the probes run here (a base domain and an ingress address are configured).
pub fn probing(state: &AppState) -> bool {
    state.fleet().is_ok_and(|f| f.dns.is_some())
}

/// Checks one customer's hosts now and answers the fresh result (without probes configured:
/// what is stored, i.e. nothing; see [`probing`]).
pub async fn refresh(state: &AppState, caller: &Caller, name: &str) -> Result<Vec<DnsHostView>, AppError> {
    cluster_tenants::get(state, caller, name).await?;
    let Some(truth) = state.fleet()?.dns.clone() else { return of(state, caller, name).await };
    let rows = truth.refresh(&state.pool, name).await.or_fail(caller)?;
    Ok(rows.iter().map(host_view).collect())
}
