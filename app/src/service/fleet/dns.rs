//! The fleet's DNS truth for people: the `/dns` page (platform operators: every customer) and a
//! customer's own hosts (whoever may read the customer), read from what the probes stored; and a
//! check now (`POST /cluster-tenants/{name}/refresh`), which runs the probes for that customer and
//! answers the fresh result. And the platform's certificate issuer (`GET/PUT /platform/dns`,
//! platform operators only — the original left these routes ungated): read from and written to
//! the cluster through [`opencrane_provision::platform_dns`]; its token reaches neither the
//! answer, the audit log nor the logs.

use opencrane_fleet_db::dns_checks::{self, DnsCheckRow};
use opencrane_provision::platform_dns::{self, IssuerRequest, IssuerSummary};
use serde_json::json;

use crate::{
    error::{AppError, FieldErrors},
    model::fleet::dns::{DnsCustomerView, DnsHostView, DnsOverview, PlatformDnsForm, PlatformDnsView},
    service::{OrFail as _, fleet::cluster_tenants, record},
    state::{AppState, Caller},
};

fn text(v: &serde_json::Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

/// A stored check as people read it.
pub fn host_view(row: &DnsCheckRow) -> DnsHostView {
    let record = &row.record;
    let cert = row.certificate.as_ref();
    let issuance = cert.map(|c| &c["certManager"]).filter(|i| i.is_object());
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
        issuance_ready: issuance.and_then(|i| i["ready"].as_bool()),
        issuance: issuance.and_then(|i| text(&i["text"])),
        problem,
        checked_at: row.checked_at,
    }
}

/// Every customer's hosts (platform operators).
pub async fn overview(state: &AppState, caller: &Caller) -> Result<DnsOverview, AppError> {
    let message = "Only platform operators may see the platform's DNS.";
    cluster_tenants::require_operator(state, caller, "dns.read", "dns", message).await?;
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

/// Checks one customer's hosts now and answers the customer with the fresh result (without probes
/// configured: what is stored, i.e. nothing; see [`probing`]).
pub async fn refresh(
    state: &AppState,
    caller: &Caller,
    name: &str,
) -> Result<(crate::model::fleet::cluster_tenant::ClusterTenant, Vec<DnsHostView>), AppError> {
    let customer = cluster_tenants::get(state, caller, name).await?;
    let rows = match state.fleet()?.dns.clone() {
        Some(truth) => truth.refresh(&state.pool, name).await.or_fail(caller)?,
        None => dns_checks::of(&state.pool, name).await.or_fail(caller)?,
    };
    Ok((customer, rows.iter().map(host_view).collect()))
}

async fn issuer_operator(state: &AppState, caller: &Caller, action: &str) -> Result<(), AppError> {
    let message = "Only platform operators may see or change the platform's certificate issuer.";
    cluster_tenants::require_operator(state, caller, action, "platform-dns", message).await
}

fn issuer_view(issuer: IssuerSummary) -> PlatformDnsView {
    PlatformDnsView { available: true, issuer, problem: None }
}

fn issuer_error(err: platform_dns::Error) -> AppError {
    use platform_dns::Error as E;
    match err {
        E::Invalid { field, message } => {
            let mut fields = FieldErrors::new();
            fields.add(field, message);
            AppError::Validation { fields }
        }
        E::Misconfigured { field, message } => {
            AppError::Unprocessable { code: "DNS_PROVIDER_MISCONFIGURED".into(), message, field: Some(field.into()) }
        }
        E::NotManaged(message) => AppError::Conflict { code: "ISSUER_NOT_MANAGED".into(), message, field: None },
        E::Cluster(message) => AppError::Upstream { code: "KUBERNETES_UNAVAILABLE".into(), message },
    }
}

/// The platform's issuer as the cluster has it. Without a Kubernetes API (`opencrane dev` with
/// the local provisioner) `available` is false; a cluster that refuses or cannot be reached is
/// `problem`, not an error, so the DNS page still shows the customers.
pub async fn issuer(state: &AppState, caller: &Caller) -> Result<PlatformDnsView, AppError> {
    issuer_operator(state, caller, "dns.issuer.read").await?;
    let Some(plane) = state.fleet()?.platform_dns.clone() else { return Ok(PlatformDnsView::default()) };
    match plane.status().await {
        Ok(summary) => Ok(issuer_view(summary)),
        Err(err) => {
            tracing::warn!(request_id = %caller.request_id, error = %err, "reading the platform issuer");
            let settings = plane.settings();
            Ok(PlatformDnsView {
                available: true,
                issuer: IssuerSummary {
                    issuer_name: settings.issuer_name.clone(),
                    issuer_kind: "ClusterIssuer".into(),
                    issuer_namespace: settings.cert_manager_namespace.clone(),
                    editable: settings.managed,
                    ..IssuerSummary::default()
                },
                problem: Some(err.to_string()),
            })
        }
    }
}

/// The page's fields as the REST body (`solverConfig` is JSON text).
pub fn request_of(form: &PlatformDnsForm) -> Result<IssuerRequest, AppError> {
    let some = |v: &str| Some(v.trim().to_owned()).filter(|v| !v.is_empty());
    let solver_config = match some(&form.solver_config) {
        None => None,
        Some(text) => Some(serde_json::from_str(&text).map_err(|e| {
            AppError::field(
                "solverConfig",
                format!("solverConfig is not JSON ({e}); enter the solver block as a JSON object."),
            )
        })?),
    };
    Ok(IssuerRequest {
        provider: some(&form.provider),
        zone: some(&form.zone),
        email: some(&form.email),
        server: some(&form.server),
        issuer_name: None,
        api_token: some(&form.api_token),
        solver_config,
    })
}

/// Writes the issuer (and the solver Secret when a token is given) and answers it as the cluster
/// then has it. Audited with what changed, never with the token.
pub async fn configure_issuer(
    state: &AppState,
    caller: &Caller,
    request: IssuerRequest,
) -> Result<PlatformDnsView, AppError> {
    issuer_operator(state, caller, "dns.issuer.configure").await?;
    let Some(plane) = state.fleet()?.platform_dns.clone() else {
        return Err(AppError::Unprocessable {
            code: "PLATFORM_DNS_UNAVAILABLE".into(),
            message: "This fleet-manager reaches no Kubernetes API server, so there is no issuer to configure.".into(),
            field: None,
        });
    };
    let meta = json!({
        "provider": request.provider,
        "zone": request.zone,
        "email": request.email,
        "server": request.server,
        "tokenChanged": request.api_token.as_ref().is_some_and(|t| !t.trim().is_empty()),
        "solverConfig": request.solver_config.is_some(),
    });
    let target = plane.settings().issuer_name.clone();
    match plane.configure(&request, chrono::Utc::now()).await {
        Ok(summary) => {
            record(&state.pool, caller, "dns.issuer.configure", &target, "success", meta).await?;
            Ok(issuer_view(summary))
        }
        Err(err) => {
            let err = issuer_error(err);
            let mut meta = meta;
            meta["code"] = json!(err.code());
            if let Err(audit_err) = record(&state.pool, caller, "dns.issuer.configure", &target, "failure", meta).await
            {
                tracing::warn!(request_id = %caller.request_id, error = %audit_err, "could not record a refusal");
            }
            Err(err)
        }
    }
}
