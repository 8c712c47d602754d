//! The platform's DNS-01 issuer (`GET/PUT /api/v1/platform/dns`): the cert-manager ACME
//! `ClusterIssuer` the customers' certificates come from, and the solver's credentials Secret
//! `opencrane-dns01-<provider>` in cert-manager's namespace (where cert-manager reads a
//! ClusterIssuer's secrets).
//!
//! The pipeline is the reconcilers' one: [`validate`] a request (pure: each problem names its
//! field) → [`build`] the two objects (pure) → apply them ([`cluster::PlatformDns`], thin I/O,
//! server-side apply) → [`summarise`] the issuer as the cluster has it (pure: its own Ready
//! condition, and the token only as "set, last changed <when>"). Unlike the original, the zone is
//! written into the DNS-01 solver's `dnsZones` selector (so only the platform's zone is solved by
//! DNS-01; customers' vanity hosts, in zones the platform cannot write, keep HTTP-01), and a
//! request without `apiToken` keeps the token on file instead of failing.
//!
//! The token goes into the Secret and nowhere else: [`IssuerRequest`]'s `Debug` hides it, no
//! summary or error carries it.

pub mod cluster;

use base64::Engine as _;
use chrono::{DateTime, Utc};
pub use opencrane_types::platform_dns::IssuerSummary;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The label every object written here carries.
pub const MANAGED_BY: &str = "opencrane-fleet-manager";

/// The annotation holding when the solver's token was last written (RFC 3339).
pub const TOKEN_CHANGED_AT: &str = "opencrane.io/token-changed-at";

/// The key of the token in the solver Secret (the original's).
pub const TOKEN_KEY: &str = "api-token";

/// Let's Encrypt's production directory, the default ACME server.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";

/// A DNS-01 provider of cert-manager: its spelling on the wire, its key under `dns01`, and where
/// a supplied token goes (`None`: credentials come from `solverConfig` only).
struct ProviderSpec {
    wire: &'static str,
    key: &'static str,
    token_ref: Option<&'static str>,
    /// Keys `solverConfig` must have (with a token, besides the token's reference).
    required: &'static [&'static str],
    /// Keys `solverConfig` must have when a token is given.
    with_token: &'static [&'static str],
    /// What the token is, for the sentence asking for it.
    token_is: &'static str,
}

const PROVIDERS: &[ProviderSpec] = &[
    ProviderSpec {
        wire: "cloudflare",
        key: "cloudflare",
        token_ref: Some("apiTokenSecretRef"),
        required: &[],
        with_token: &[],
        token_is: "a Cloudflare API token with Zone:DNS:Edit on the zone",
    },
    ProviderSpec {
        wire: "digitalocean",
        key: "digitalocean",
        token_ref: Some("tokenSecretRef"),
        required: &[],
        with_token: &[],
        token_is: "a DigitalOcean API token with write access to the domain",
    },
    ProviderSpec {
        wire: "route53",
        key: "route53",
        token_ref: Some("secretAccessKeySecretRef"),
        required: &["region"],
        with_token: &["accessKeyID"],
        token_is: "the IAM user's secret access key (or use the pod's IAM role without a token)",
    },
    ProviderSpec {
        wire: "clouddns",
        key: "cloudDNS",
        token_ref: Some("serviceAccountSecretRef"),
        required: &["project"],
        with_token: &[],
        token_is: "a Google service-account key (JSON), or Workload Identity without a token",
    },
    ProviderSpec {
        wire: "rfc2136",
        key: "rfc2136",
        token_ref: Some("tsigSecretSecretRef"),
        required: &["nameserver"],
        with_token: &["tsigKeyName"],
        token_is: "the TSIG key's secret",
    },
    ProviderSpec { wire: "acmedns", key: "acmeDNS", token_ref: None, required: &[], with_token: &[], token_is: "" },
    ProviderSpec { wire: "azuredns", key: "azureDNS", token_ref: None, required: &[], with_token: &[], token_is: "" },
    ProviderSpec { wire: "akamai", key: "akamai", token_ref: None, required: &[], with_token: &[], token_is: "" },
    ProviderSpec { wire: "webhook", key: "webhook", token_ref: None, required: &[], with_token: &[], token_is: "" },
];

fn provider(wire: &str) -> Option<&'static ProviderSpec> {
    PROVIDERS.iter().find(|p| p.wire == wire)
}

/// The providers a request may name.
pub fn provider_names() -> Vec<&'static str> {
    PROVIDERS.iter().map(|p| p.wire).collect()
}

/// The wire spelling of the provider whose solver key is `key` (`cloudDNS` → `clouddns`).
pub fn provider_of_key(key: &str) -> String {
    PROVIDERS.iter().find(|p| p.key == key).map_or_else(|| key.to_owned(), |p| p.wire.to_owned())
}

/// The solver Secret of `provider`.
pub fn secret_name(provider: &str) -> String {
    format!("opencrane-dns01-{provider}")
}

/// The body of `PUT /api/v1/platform/dns` (the original's).
#[derive(Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssuerRequest {
    /// `cloudflare`, `digitalocean`, `route53`, `clouddns`, `rfc2136` (or `acmedns`, `azuredns`,
    /// `akamai`, `webhook` with a `solverConfig`).
    #[serde(default)]
    pub provider: Option<String>,
    /// The platform's DNS zone (the base domain, or a zone above it).
    #[serde(default)]
    pub zone: Option<String>,
    /// The ACME account's e-mail.
    #[serde(default)]
    pub email: Option<String>,
    /// The ACME directory (default Let's Encrypt production).
    #[serde(default)]
    pub server: Option<String>,
    /// The issuer's name; it must be the fleet's issuer (the one certificates are requested from).
    #[serde(default)]
    pub issuer_name: Option<String>,
    /// The provider's credential; written to the solver Secret only.
    #[serde(default)]
    pub api_token: Option<String>,
    /// The provider's solver block, placed under its key (cert-manager's field names).
    #[serde(default)]
    pub solver_config: Option<Value>,
}

impl std::fmt::Debug for IssuerRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuerRequest")
            .field("provider", &self.provider)
            .field("zone", &self.zone)
            .field("email", &self.email)
            .field("server", &self.server)
            .field("issuer_name", &self.issuer_name)
            .field("api_token", &self.api_token.as_ref().map(|_| "<set>"))
            .field("solver_config", &self.solver_config.is_some())
            .finish()
    }
}

/// Where the fleet's issuer lives and what it may do.
#[derive(Clone, Debug)]
pub struct IssuerSettings {
    /// The ClusterIssuer customers' certificates name (`certManager.issuerName`).
    pub issuer_name: String,
    /// cert-manager's namespace (its cluster resource namespace: ClusterIssuer secrets live there).
    pub cert_manager_namespace: String,
    /// Whether the fleet manages the issuer (`certManager.createIssuer=fleet`); otherwise the chart
    /// does and the issuer is only shown.
    pub managed: bool,
    /// The ingress class for the HTTP-01 solver of vanity hosts (`None`: DNS-01 only).
    pub ingress_class: Option<String>,
}

/// Why a request is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// 400: a field is missing or malformed.
    #[error("{field}: {message}")]
    Invalid {
        /// The field (the request's JSON name).
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// 422 `DNS_PROVIDER_MISCONFIGURED`: the provider lacks what its solver needs.
    #[error("{field}: {message}")]
    Misconfigured {
        /// The field that would fix it.
        field: &'static str,
        /// What is needed.
        message: String,
    },
    /// 409: the issuer is not the fleet's to write.
    #[error("{0}")]
    NotManaged(String),
    /// The cluster refused or could not be reached (a sentence without secrets).
    #[error("{0}")]
    Cluster(String),
}

/// A request that passed [`validate`].
#[derive(Clone)]
pub struct Valid {
    spec: &'static ProviderSpec,
    zone: String,
    email: String,
    server: String,
    token: Option<String>,
    solver_config: Map<String, Value>,
}

impl Valid {
    /// The provider's wire spelling.
    pub fn provider(&self) -> &'static str {
        self.spec.wire
    }

    /// Whether a new token was given.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }
}

fn trimmed(v: Option<&String>) -> Option<String> {
    v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// Checks a request against the settings; the first problem of each field is reported.
pub fn validate(request: &IssuerRequest, settings: &IssuerSettings) -> Result<Valid, Error> {
    let invalid = |field, message: String| Err(Error::Invalid { field, message });
    let Some(wire) = trimmed(request.provider.as_ref()).map(|p| p.to_ascii_lowercase()) else {
        return invalid("provider", format!("provider is required (one of {}).", provider_names().join(", ")));
    };
    let Some(spec) = provider(&wire) else {
        return invalid(
            "provider",
            format!("“{wire}” is not a provider here (one of {}).", provider_names().join(", ")),
        );
    };
    let Some(zone) = trimmed(request.zone.as_ref()).map(|z| z.to_ascii_lowercase()) else {
        return invalid("zone", "zone is required (the platform's DNS zone, e.g. example.com).".into());
    };
    if let Err(message) = opencrane_types::rules::domain_name(&zone) {
        return invalid("zone", message);
    }
    let Some(email) = trimmed(request.email.as_ref()) else {
        return invalid("email", "email is required (the ACME account's contact).".into());
    };
    if let Err(message) = opencrane_types::rules::email_address(&email) {
        return invalid("email", message);
    }
    let server = trimmed(request.server.as_ref()).unwrap_or_else(|| LETS_ENCRYPT.to_owned());
    if !server.starts_with("https://") || server.contains(char::is_whitespace) || server.len() <= "https://".len() {
        return invalid("server", "Enter the ACME directory as an https:// URL.".into());
    }
    if let Some(name) = trimmed(request.issuer_name.as_ref())
        && name != settings.issuer_name
    {
        return invalid(
            "issuerName",
            format!(
                "This fleet requests certificates from “{}” (certManager.issuerName); another issuer would not be used.",
                settings.issuer_name
            ),
        );
    }
    let solver_config = match &request.solver_config {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => {
            return invalid("solverConfig", "solverConfig must be an object (the provider's solver block).".into());
        }
    };
    let token = trimmed(request.api_token.as_ref());
    if token.is_some() && spec.token_ref.is_none() {
        return invalid(
            "apiToken",
            format!(
                "{wire} takes its credentials in solverConfig: reference your own Secret there instead of apiToken."
            ),
        );
    }
    Ok(Valid { spec, zone, email, server, token, solver_config })
}

/// The objects to apply, the Secret first (the issuer refers to it).
#[derive(Clone, Debug)]
pub struct Plan {
    /// The solver Secret, when a new token is written.
    pub secret: Option<Value>,
    /// The ClusterIssuer.
    pub issuer: Value,
}

/// Builds the objects. `token_on_file`: the solver Secret already holds a token (a request
/// without one keeps it). A provider that still lacks what its solver needs is
/// [`Error::Misconfigured`].
pub fn build(valid: &Valid, settings: &IssuerSettings, token_on_file: bool, now: DateTime<Utc>) -> Result<Plan, Error> {
    let spec = valid.spec;
    let secret = secret_name(spec.wire);
    let mut solver = valid.solver_config.clone();
    if let Some(token_ref) = spec.token_ref
        && (valid.token.is_some() || token_on_file)
    {
        solver.entry(token_ref.to_owned()).or_insert_with(|| json!({ "name": secret, "key": TOKEN_KEY }));
        if spec.wire == "rfc2136" {
            solver.entry("tsigAlgorithm".to_owned()).or_insert_with(|| json!("HMACSHA256"));
        }
    }
    let misconfigured = |field, message: String| Err(Error::Misconfigured { field, message });
    let has_credential = spec.token_ref.is_some_and(|r| solver.contains_key(r));
    match spec.wire {
        "cloudflare" if !has_credential && !solver.contains_key("apiKeySecretRef") => {
            return misconfigured("apiToken", format!("cloudflare needs apiToken: {}.", spec.token_is));
        }
        "digitalocean" if !has_credential => {
            return misconfigured("apiToken", format!("digitalocean needs apiToken: {}.", spec.token_is));
        }
        _ if spec.token_ref.is_none() && solver.is_empty() => {
            return misconfigured(
                "solverConfig",
                format!("{} needs solverConfig: its solver block in cert-manager's field names.", spec.wire),
            );
        }
        _ => {}
    }
    for key in spec.required {
        if !solver.contains_key(*key) {
            return misconfigured("solverConfig", format!("{} needs solverConfig.{key}.", spec.wire));
        }
    }
    if has_credential {
        for key in spec.with_token {
            if !solver.contains_key(*key) && !solver.contains_key(&format!("{key}SecretRef")) {
                return misconfigured(
                    "solverConfig",
                    format!("{} with a token ({}) needs solverConfig.{key} too.", spec.wire, spec.token_is),
                );
            }
        }
    }
    let labels = json!({
        "app.kubernetes.io/managed-by": MANAGED_BY,
        "app.kubernetes.io/part-of": "opencrane",
    });
    let secret_object = valid.token.as_ref().map(|token| {
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": secret,
                "namespace": settings.cert_manager_namespace,
                "labels": labels,
                "annotations": { TOKEN_CHANGED_AT: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true) },
            },
            "type": "Opaque",
            "data": { TOKEN_KEY: base64::engine::general_purpose::STANDARD.encode(token) },
        })
    });
    let mut solvers = vec![json!({
        "selector": { "dnsZones": [valid.zone] },
        "dns01": { spec.key: Value::Object(solver) },
    })];
    if let Some(class) = &settings.ingress_class {
        // Customers' vanity hosts live in zones the platform cannot write.
        solvers.push(json!({ "http01": { "ingress": { "ingressClassName": class } } }));
    }
    let issuer = json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "ClusterIssuer",
        "metadata": { "name": settings.issuer_name, "labels": labels },
        "spec": {
            "acme": {
                "server": valid.server,
                "email": valid.email,
                "privateKeySecretRef": { "name": format!("{}-account-key", settings.issuer_name) },
                "solvers": solvers,
            }
        }
    });
    Ok(Plan { secret: secret_object, issuer })
}

/// Summarises the issuer (`None`: absent) and its solver Secret's metadata (`None`: absent).
pub fn summarise(issuer: Option<&Value>, secret: Option<&Value>, settings: &IssuerSettings) -> IssuerSummary {
    let mut summary = IssuerSummary {
        issuer_name: settings.issuer_name.clone(),
        issuer_kind: "ClusterIssuer".into(),
        issuer_namespace: settings.cert_manager_namespace.clone(),
        editable: settings.managed,
        ..IssuerSummary::default()
    };
    let Some(issuer) = issuer else { return summary };
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    summary.configured = true;
    summary.managed_by = text(issuer.pointer("/metadata/labels/app.kubernetes.io~1managed-by"));
    summary.editable = settings.managed && summary.managed_by.as_deref() != Some("Helm");
    summary.self_signed = issuer.pointer("/spec/selfSigned").is_some();
    let acme = issuer.pointer("/spec/acme");
    summary.email = text(acme.and_then(|a| a.get("email")));
    summary.server = text(acme.and_then(|a| a.get("server")));
    let dns01 = acme
        .and_then(|a| a["solvers"].as_array())
        .and_then(|solvers| solvers.iter().find(|s| s.get("dns01").is_some()));
    if let Some(solver) = dns01 {
        summary.zone = text(solver.pointer("/selector/dnsZones/0"));
        let key = solver["dns01"].as_object().and_then(|m| m.keys().find(|k| *k != "cnameStrategy").cloned());
        if let Some(key) = key {
            let block = &solver["dns01"][&key];
            let wire = provider_of_key(&key);
            let refers_to_ours = provider(&wire)
                .and_then(|p| p.token_ref)
                .and_then(|r| block.pointer(&format!("/{r}/name")))
                .and_then(Value::as_str)
                .is_some_and(|name| name == secret_name(&wire));
            let mut shown = block.clone();
            if let (Some(map), true) = (shown.as_object_mut(), refers_to_ours) {
                map.retain(|k, _| Some(k.as_str()) != provider(&wire).and_then(|p| p.token_ref));
            }
            summary.solver_config = shown.as_object().is_some_and(|m| !m.is_empty()).then_some(shown);
            if refers_to_ours {
                summary.secret_name = Some(secret_name(&wire));
                if let Some(secret) = secret {
                    summary.token_set = secret.pointer(&format!("/data/{TOKEN_KEY}")).is_some();
                    summary.token_changed_at =
                        text(secret.pointer("/metadata/annotations/opencrane.io~1token-changed-at"))
                            .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
                            .map(|t| t.with_timezone(&Utc));
                }
            }
            summary.provider = Some(wire);
        }
    }
    let ready = issuer["status"]["conditions"]
        .as_array()
        .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Ready"));
    if let Some(condition) = ready {
        summary.ready = condition["status"].as_str().map(|s| s == "True");
        let reason = condition["reason"].as_str().unwrap_or_default();
        let message = condition["message"].as_str().unwrap_or_default();
        summary.message = match (reason.is_empty(), message.is_empty()) {
            (true, true) => None,
            (false, true) => Some(reason.to_owned()),
            (true, false) => Some(message.to_owned()),
            (false, false) => Some(format!("{reason}: {message}")),
        };
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> IssuerSettings {
        IssuerSettings {
            issuer_name: "opencrane-issuer".into(),
            cert_manager_namespace: "cert-manager".into(),
            managed: true,
            ingress_class: Some("nginx".into()),
        }
    }

    fn request(provider: &str) -> IssuerRequest {
        IssuerRequest {
            provider: Some(provider.into()),
            zone: Some("Example.com".into()),
            email: Some("ops@example.com".into()),
            ..IssuerRequest::default()
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-03T10:00:00Z").unwrap().with_timezone(&Utc)
    }

    fn field_of(result: Result<Valid, Error>) -> &'static str {
        match result {
            Err(Error::Invalid { field, .. }) => field,
            other => panic!("expected a field error, got {:?}", other.err()),
        }
    }

    #[test]
    fn each_missing_or_malformed_field_is_named() {
        let s = settings();
        assert_eq!(field_of(validate(&IssuerRequest::default(), &s)), "provider");
        assert_eq!(field_of(validate(&request("bind"), &s)), "provider");
        assert_eq!(field_of(validate(&IssuerRequest { zone: None, ..request("cloudflare") }, &s)), "zone");
        assert_eq!(
            field_of(validate(&IssuerRequest { zone: Some("https://x.y".into()), ..request("cloudflare") }, &s)),
            "zone"
        );
        assert_eq!(
            field_of(validate(&IssuerRequest { email: Some("  ".into()), ..request("cloudflare") }, &s)),
            "email"
        );
        assert_eq!(
            field_of(validate(&IssuerRequest { email: Some("ops".into()), ..request("cloudflare") }, &s)),
            "email"
        );
        assert_eq!(
            field_of(validate(&IssuerRequest { server: Some("http://acme".into()), ..request("cloudflare") }, &s)),
            "server"
        );
        assert_eq!(
            field_of(validate(&IssuerRequest { issuer_name: Some("other".into()), ..request("cloudflare") }, &s)),
            "issuerName"
        );
        assert_eq!(
            field_of(validate(&IssuerRequest { solver_config: Some(json!([1])), ..request("route53") }, &s)),
            "solverConfig"
        );
        assert_eq!(
            field_of(validate(&IssuerRequest { api_token: Some("t".into()), ..request("webhook") }, &s)),
            "apiToken"
        );
        // The fleet's own issuer name is fine, and so is the provider in capitals.
        let valid =
            validate(&IssuerRequest { issuer_name: Some("opencrane-issuer".into()), ..request("CloudFlare") }, &s);
        assert_eq!(valid.unwrap().provider(), "cloudflare");
    }

    #[test]
    fn a_provider_without_what_its_solver_needs_is_misconfigured() {
        let s = settings();
        let plan = |r: IssuerRequest, on_file: bool| build(&validate(&r, &s).unwrap(), &s, on_file, now());
        let field = |r: Result<Plan, Error>| match r {
            Err(Error::Misconfigured { field, .. }) => field,
            other => panic!("expected misconfigured, got {other:?}"),
        };
        assert_eq!(field(plan(request("cloudflare"), false)), "apiToken");
        assert_eq!(field(plan(request("digitalocean"), false)), "apiToken");
        assert_eq!(field(plan(request("route53"), false)), "solverConfig");
        assert_eq!(field(plan(request("clouddns"), false)), "solverConfig");
        assert_eq!(field(plan(request("rfc2136"), false)), "solverConfig");
        assert_eq!(field(plan(request("webhook"), false)), "solverConfig");
        let route53 = IssuerRequest {
            solver_config: Some(json!({"region": "eu-west-1"})),
            api_token: Some("k".into()),
            ..request("route53")
        };
        assert_eq!(field(plan(route53, false)), "solverConfig", "a secret access key needs its key id");
        // A token already on file satisfies the provider; ambient credentials need only the config.
        assert!(plan(request("cloudflare"), true).unwrap().secret.is_none());
        assert!(
            plan(IssuerRequest { solver_config: Some(json!({"project": "p"})), ..request("clouddns") }, false).is_ok()
        );
    }

    #[test]
    fn the_issuer_solves_only_the_zone_by_dns01_and_the_token_goes_to_the_secret() {
        let s = settings();
        let r = IssuerRequest { api_token: Some(" cf-token ".into()), ..request("cloudflare") };
        let plan = build(&validate(&r, &s).unwrap(), &s, false, now()).unwrap();
        let secret = plan.secret.unwrap();
        assert_eq!(secret["metadata"]["name"], "opencrane-dns01-cloudflare");
        assert_eq!(secret["metadata"]["namespace"], "cert-manager");
        assert_eq!(secret["data"]["api-token"], base64::engine::general_purpose::STANDARD.encode("cf-token"));
        assert_eq!(secret["metadata"]["annotations"][TOKEN_CHANGED_AT], "2026-12-03T10:00:00Z");
        let acme = &plan.issuer["spec"]["acme"];
        assert_eq!(plan.issuer["metadata"]["name"], "opencrane-issuer");
        assert_eq!(acme["server"], LETS_ENCRYPT);
        assert_eq!(acme["privateKeySecretRef"]["name"], "opencrane-issuer-account-key");
        assert_eq!(acme["solvers"][0]["selector"]["dnsZones"], json!(["example.com"]));
        assert_eq!(
            acme["solvers"][0]["dns01"]["cloudflare"]["apiTokenSecretRef"],
            json!({"name": "opencrane-dns01-cloudflare", "key": "api-token"})
        );
        assert_eq!(acme["solvers"][1]["http01"]["ingress"]["ingressClassName"], "nginx");
        assert!(!plan.issuer.to_string().contains("cf-token"), "the token is only in the Secret");
        assert!(!format!("{r:?}").contains("cf-token"), "Debug hides the token");
        // cert-manager's key for Cloud DNS, the provider's own config kept verbatim.
        let r = IssuerRequest {
            solver_config: Some(json!({"project": "p", "hostedZoneName": "z"})),
            ..request("clouddns")
        };
        let plan = build(&validate(&r, &s).unwrap(), &s, false, now()).unwrap();
        assert_eq!(
            plan.issuer["spec"]["acme"]["solvers"][0]["dns01"]["cloudDNS"],
            json!({"project": "p", "hostedZoneName": "z"})
        );
        assert!(plan.secret.is_none());
    }

    #[test]
    fn the_summary_reads_the_issuer_and_never_the_token() {
        let s = settings();
        assert!(!summarise(None, None, &s).configured);
        let r = IssuerRequest { api_token: Some("cf-token".into()), ..request("cloudflare") };
        let plan = build(&validate(&r, &s).unwrap(), &s, false, now()).unwrap();
        let mut issuer = plan.issuer.clone();
        issuer["status"] = json!({"conditions": [{"type": "Ready", "status": "False", "reason": "ErrRegisterACMEAccount", "message": "no such host"}]});
        let summary = summarise(Some(&issuer), plan.secret.as_ref(), &s);
        assert!(summary.configured && summary.editable && !summary.self_signed);
        assert_eq!(summary.provider.as_deref(), Some("cloudflare"));
        assert_eq!(summary.zone.as_deref(), Some("example.com"));
        assert_eq!(summary.email.as_deref(), Some("ops@example.com"));
        assert_eq!(summary.ready, Some(false));
        assert_eq!(summary.message.as_deref(), Some("ErrRegisterACMEAccount: no such host"));
        assert_eq!(summary.secret_name.as_deref(), Some("opencrane-dns01-cloudflare"));
        assert!(summary.token_set);
        assert_eq!(summary.token_changed_at, Some(now()));
        assert!(!serde_json::to_string(&summary).unwrap().contains("cf-token"));
        assert_eq!(summary.solver_config, None, "only the Secret reference was in the block");
        // The chart's issuer is shown, not editable.
        let helm = json!({"metadata": {"name": "opencrane-issuer", "labels": {"app.kubernetes.io/managed-by": "Helm"}}, "spec": {"selfSigned": {}}});
        let summary = summarise(Some(&helm), None, &s);
        assert!(summary.configured && summary.self_signed && !summary.editable);
        assert_eq!(summary.provider, None);
    }
}
