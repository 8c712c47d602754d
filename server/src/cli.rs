//! The command line. Every flag can also be set through the environment variable named in its
//! help, so a Kubernetes Deployment configures the binary with `env:` only.

use std::{net::IpAddr, path::PathBuf};

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

/// `opencrane`: the OpenCrane admin platform.
#[derive(Debug, Parser)]
#[command(name = "opencrane", version, about, long_about = None)]
pub struct Cli {
    /// Logging options.
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the fleet console and API (one per cluster, namespace opencrane-system).
    FleetManager(FleetArgs),
    /// Serve one silo's console and API (one per ClusterTenant, namespace opencrane-<name>).
    ClustertenantManager(SiloArgs),
    /// Apply the embedded migrations of one schema to a database and exit.
    Migrate(MigrateArgs),
    /// Run everything locally: a private PostgreSQL, the fleet-manager and one demo silo.
    Dev(DevArgs),
    /// Install the fleet release, or one silo release, on the current kube context (helm and
    /// kubectl on PATH). `--dry-run` prints every command and manifest instead.
    Deploy(DeployArgs),
    /// Print what the fleet's provisioner would apply for a ClusterTenant resource (a YAML file,
    /// `-` for stdin): the objects of every step, and the values of its silo release. Nothing is
    /// applied; errors name the field.
    ProvisionRender(ProvisionRenderArgs),
    /// Print the CiliumNetworkPolicy a silo manager applies on a cluster running Cilium for
    /// these AccessPolicy resources (a YAML file of documents, `-` for stdin): the MCP gateway's
    /// egress, narrowed to the policies' domains or the floor's allow-list. Nothing is applied.
    AccessEgressRender(AccessEgressRenderArgs),
    /// Print the OpenAPI 3.1 document of one role's REST API (JSON), as that role serves it at
    /// `/api/v1/openapi.json` with every feature area on.
    Openapi {
        /// Which role's API.
        #[arg(long, value_enum)]
        role: ApiRole,
    },
    /// Re-seal every secret of a silo's database (provider keys, users' LiteLLM keys) from its
    /// current credentials key to a new one, in one transaction; then put the new key into the
    /// manager's Secret and restart it. Scale the manager to zero first.
    RotateCredentialsKey(RotateCredentialsKeyArgs),
    /// Create a Secret of generated values once, or add the keys it lacks; never overwrite a
    /// key. The charts run it as a pre-install/pre-upgrade hook (instead of `lookup`).
    EnsureSecret(EnsureSecretArgs),
    /// Move the customers of the original's shared database (one PostgreSQL for every tenant)
    /// onto this fleet and one database per silo: preflight, provision, copy, verify, cut over.
    /// Each phase is idempotent, so running it again resumes; the source is only read. Run from
    /// the checkout while `cargo xtask dev` runs, it finds the dev fleet by itself.
    MigrateShared(MigrateSharedArgs),
    /// Print the opencrane.io CustomResourceDefinitions (YAML) generated from the Rust types.
    Crd {
        /// Print the silo chart's template (guarded by `crds.install`, kept on uninstall).
        #[arg(long)]
        silo_template: bool,
    },
}

impl Command {
    /// The service name its traces carry.
    pub fn service_name(&self) -> &'static str {
        match self {
            Self::FleetManager(_) => "opencrane-fleet-manager",
            Self::ClustertenantManager(_) => "opencrane-clustertenant-manager",
            Self::Dev(_) => "opencrane-dev",
            _ => "opencrane",
        }
    }
}

/// The role whose API `opencrane openapi` describes.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ApiRole {
    /// The fleet-manager.
    Fleet,
    /// A clustertenant-manager.
    Silo,
}

/// The Kubernetes provisioner's settings (the fleet chart sets them).
#[derive(Clone, Debug, Args)]
pub struct ClusterArgs {
    /// The ingress controller's public address: each silo gets a DNS record `<name>.<base>`.
    #[arg(long = "ingress-ip", env = "OPENCRANE_INGRESS_IP")]
    pub ingress_ip: Option<std::net::IpAddr>,
    /// The fleet-manager's ServiceAccount, bound to the installer role in each silo namespace.
    #[arg(long = "service-account", env = "OPENCRANE_SERVICE_ACCOUNT", default_value = "opencrane-fleet-manager")]
    pub service_account: String,
    /// The fleet chart's ClusterRole for installing a silo release inside its namespace.
    #[arg(
        long = "silo-installer-role",
        env = "OPENCRANE_SILO_INSTALLER_ROLE",
        default_value = "opencrane-fleet-silo-installer"
    )]
    pub silo_installer_role: String,
    /// Directory holding the opencrane-silo chart (the image ships it).
    #[arg(long = "charts-dir", env = "OPENCRANE_CHARTS_DIR", default_value = "charts")]
    pub charts_dir: PathBuf,
    /// This replica's name in leader election (the pod name); random when unset.
    #[arg(long = "pod-name", env = "POD_NAME")]
    pub pod_name: Option<String>,
    /// The cert-manager ClusterIssuer customers' certificates are requested from (the fleet
    /// chart's certManager.issuerName).
    #[arg(long = "cert-issuer-name", env = "OPENCRANE_CERT_ISSUER_NAME", default_value = "opencrane-issuer")]
    pub cert_issuer_name: String,
    /// cert-manager's namespace, where the DNS-01 solver's Secret goes.
    #[arg(long = "cert-manager-namespace", env = "CERT_MANAGER_NAMESPACE", default_value = "cert-manager")]
    pub cert_manager_namespace: String,
    /// The fleet manages the issuer (`/dns`, `PUT /api/v1/platform/dns`); the chart sets it with
    /// certManager.createIssuer=fleet. Otherwise the issuer is only shown.
    #[arg(long = "manage-issuer", env = "OPENCRANE_MANAGE_ISSUER", default_value = "false", value_parser = parse_flag, action = ArgAction::Set)]
    pub manage_issuer: bool,
    /// The ingress class of the issuer's HTTP-01 solver, for customers' vanity hosts (unset:
    /// DNS-01 only).
    #[arg(long = "ingress-class", env = "OPENCRANE_INGRESS_CLASS")]
    pub ingress_class: Option<String>,
    /// Where the silos reach this fleet's internal API (the fleet chart sets it from its internal
    /// Service); unset, the silo profile's default
    /// (`opencrane-fleet-manager-internal.opencrane-system`).
    #[arg(long = "fleet-internal-url", env = "OPENCRANE_FLEET_INTERNAL_URL", value_parser = parse_http_url)]
    pub fleet_internal_url: Option<String>,
}

impl ClusterArgs {
    /// The platform issuer's settings.
    pub fn issuer_settings(&self) -> opencrane_provision::platform_dns::IssuerSettings {
        opencrane_provision::platform_dns::IssuerSettings {
            issuer_name: self.cert_issuer_name.clone(),
            cert_manager_namespace: self.cert_manager_namespace.clone(),
            managed: self.manage_issuer,
            ingress_class: self.ingress_class.clone().filter(|c| !c.trim().is_empty()),
        }
    }
}

/// `access-egress-render` flags.
#[derive(Debug, Args)]
pub struct AccessEgressRenderArgs {
    /// AccessPolicy resources (YAML documents; none is fine), or `-` for stdin.
    #[arg(long = "file", short = 'f')]
    pub file: PathBuf,
    /// The silo's namespace.
    #[arg(long)]
    pub namespace: String,
    /// The floor's HTTPS allow-list, as the chart passes it (OPENCRANE_CILIUM_EGRESS_FLOOR).
    #[arg(long, env = "OPENCRANE_CILIUM_EGRESS_FLOOR", value_parser = parse_egress_floor)]
    pub egress_floor: EgressFloor,
}

/// `provision-render` flags.
#[derive(Debug, Args)]
pub struct ProvisionRenderArgs {
    /// The ClusterTenant resource (YAML), or `-` for stdin.
    #[arg(long = "file", short = 'f')]
    pub file: PathBuf,
    /// The platform base domain (silos answer at `<name>.<base>`).
    #[arg(long, env = "PLATFORM_BASE_DOMAIN", value_parser = parse_domain)]
    pub base_domain: String,
    /// The ingress controller's public address: adds the DNS record.
    #[arg(long)]
    pub ingress_ip: Option<std::net::IpAddr>,
    /// Print the silo release's values instead of the objects.
    #[arg(long)]
    pub release_values: bool,
    /// With --release-values: the fleet's OpenID issuer (its `OIDC_ISSUER_URL`), which a silo
    /// with an organisation's login app signs in at.
    #[arg(long, requires = "release_values")]
    pub oidc_issuer_url: Option<String>,
    /// With --release-values: the organisation's login app, as the identity step records it.
    #[arg(long, requires_all = ["release_values", "zitadel_org_id"])]
    pub zitadel_client_id: Option<String>,
    /// With --release-values: the organisation's Zitadel id, as the identity step records it.
    #[arg(long, requires_all = ["release_values", "zitadel_client_id"])]
    pub zitadel_org_id: Option<String>,
    /// Render as on a cluster running Cilium (the provisioner discovers it by its CRD): adds the
    /// identity layer's default-deny CiliumNetworkPolicy.
    #[arg(long)]
    pub cilium: bool,
    /// The file is a `PUT /api/v1/platform/dns` body (JSON or YAML): print the platform issuer's
    /// objects (the solver Secret, the ClusterIssuer) instead.
    #[arg(long)]
    pub platform_dns: bool,
    /// With --platform-dns: the issuer's name.
    #[arg(long, default_value = "opencrane-issuer")]
    pub issuer_name: String,
    /// With --platform-dns: cert-manager's namespace.
    #[arg(long, default_value = "cert-manager")]
    pub cert_manager_namespace: String,
    /// With --platform-dns: the ingress class of the HTTP-01 solver.
    #[arg(long)]
    pub ingress_class: Option<String>,
}

/// Log output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Readable lines for a terminal.
    Human,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Logging flags (the filter itself comes from `RUST_LOG`).
#[derive(Debug, Args)]
pub struct TelemetryArgs {
    /// Log format.
    #[arg(long, env = "OPENCRANE_LOG_FORMAT", value_enum, default_value = "human", global = true)]
    pub log_format: LogFormat,
}

/// Where and how to serve HTTP.
#[derive(Clone, Debug, Args)]
pub struct HttpArgs {
    /// Address to listen on.
    #[arg(long = "bind", env = "OPENCRANE_BIND_ADDRESS", default_value = "0.0.0.0")]
    pub bind: IpAddr,
    /// Port to listen on.
    #[arg(long, env = "PORT", default_value_t = 8080)]
    pub port: u16,
    /// Directory holding the browser bundles (`pkg/opencrane-{fleet,silo}.{js,wasm}`, `pkg/opencrane.css`) and static files.
    #[arg(long, env = "LEPTOS_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,
    /// Port of the Prometheus `/metrics` listener (same address as `--port`, nothing else on
    /// it); 0 turns it off.
    #[arg(long, env = "OPENCRANE_METRICS_PORT", default_value_t = 9090)]
    pub metrics_port: u16,
}

/// The role's own database.
#[derive(Clone, Debug, Args)]
pub struct DbArgs {
    /// PostgreSQL connection URL.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: String,
    /// Upper bound on database connections.
    #[arg(long, env = "OPENCRANE_DB_MAX_CONNECTIONS", default_value_t = 10)]
    pub db_max_connections: u32,
    /// Apply pending migrations at start-up (under an advisory lock; safe with several replicas).
    #[arg(long, env = "OPENCRANE_MIGRATE_ON_START", default_value = "true", value_parser = parse_flag, action = ArgAction::Set)]
    pub migrate_on_start: bool,
    /// Give list answers again while the database's data generation is the same (the silo's
    /// users, groups and policies lists, the fleet's customers pages; see the README's "Kept
    /// answers"). `false` reads every answer afresh — after restoring rows with triggers
    /// disabled (`pg_restore --disable-triggers`, a replica's `session_replication_role`), which
    /// the generation does not see, or to rule the kept answers out.
    #[arg(long, env = "OPENCRANE_KEPT_ANSWERS", default_value = "true", value_parser = parse_flag, action = ArgAction::Set)]
    pub kept_answers: bool,
}

/// How callers authenticate.
#[derive(Clone, Debug, Args)]
pub struct AuthArgs {
    /// OIDC sign-in.
    #[command(flatten)]
    pub oidc: OidcArgs,
    /// Serve plain HTTP without `Secure` cookies (no `__Host-` prefix) and with `http://`
    /// redirect URIs. Refused unless bound to loopback; for local runs and tests only.
    #[arg(long, env = "OPENCRANE_INSECURE_HTTP", default_value = "false", value_parser = parse_flag, action = ArgAction::Set)]
    pub insecure_http: bool,
    /// Reverse proxies (IPs or CIDRs) whose `X-Forwarded-For` is believed for rate limiting.
    #[arg(long, env = "OPENCRANE_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<String>,
    /// Static bearer token for machine callers (CI, fleet↔silo); holds the operator role.
    /// Prefer `--api-token-file`: a value on the command line is visible in the process list.
    #[arg(long, env = "OPENCRANE_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    /// A file holding the API token (a mounted Secret), instead of `--api-token`.
    #[arg(long, env = "OPENCRANE_API_TOKEN_FILE", value_parser = read_secret_file, conflicts_with = "api_token")]
    pub api_token_file: Option<SecretFile>,
    /// Development identity: every browser request is the "Developer" operator. Refused unless
    /// the server is bound to a loopback address.
    #[arg(long, env = "OPENCRANE_DEV_IDENTITY", default_value = "false", value_parser = parse_flag, action = ArgAction::Set)]
    pub dev_identity: bool,
}

impl AuthArgs {
    /// The API token, from the flag or its file.
    pub fn api_token(&self) -> Option<String> {
        self.api_token.clone().or_else(|| self.api_token_file.as_ref().map(|f| f.0.clone()))
    }
}

/// OpenID Connect sign-in (both roles). Setting any of issuer, client id or redirect URI turns
/// sign-in on; then the fleet needs all three (a silo may instead rely on its organisation's
/// client, see `--org-client-id`).
#[derive(Clone, Debug, Default, Args)]
pub struct OidcArgs {
    /// The provider's issuer URL (discovery at `<issuer>/.well-known/openid-configuration`).
    #[arg(long = "oidc-issuer-url", env = "OIDC_ISSUER_URL")]
    pub issuer_url: Option<String>,
    /// The client id (on a silo: the fallback client).
    #[arg(long = "oidc-client-id", env = "OIDC_CLIENT_ID")]
    pub client_id: Option<String>,
    /// The client secret (confidential clients); omit for a public PKCE client.
    #[arg(long = "oidc-client-secret", env = "OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub client_secret: Option<String>,
    /// The callback URL registered for the client: `https://<host>/api/v1/auth/callback`.
    #[arg(long = "oidc-redirect-uri", env = "OIDC_REDIRECT_URI")]
    pub redirect_uri: Option<String>,
    /// Scopes requested (space separated).
    #[arg(long = "oidc-scopes", env = "OIDC_SCOPES", default_value = "openid email profile")]
    pub scopes: String,
    /// Claim carrying groups.
    #[arg(long = "oidc-groups-claim", env = "OIDC_GROUPS_CLAIM", default_value = "groups")]
    pub groups_claim: String,
    /// Claim carrying roles (merged into groups; Zitadel: `urn:zitadel:iam:org:project:roles`).
    #[arg(long = "oidc-roles-claim", env = "OIDC_ROLES_CLAIM", default_value = "roles")]
    pub roles_claim: String,
    /// Absolute session lifetime in seconds.
    #[arg(long = "oidc-session-max-age-seconds", env = "OIDC_SESSION_MAX_AGE_SECONDS", default_value_t = 43_200)]
    pub session_max_age_seconds: u64,
    /// Idle timeout in seconds.
    #[arg(long = "oidc-session-idle-seconds", env = "OIDC_SESSION_IDLE_SECONDS", default_value_t = 1_800)]
    pub session_idle_seconds: u64,
    /// Only emails in these domains may sign in (comma separated; empty = any).
    #[arg(long = "oidc-allowed-email-domains", env = "OIDC_ALLOWED_EMAIL_DOMAINS", value_delimiter = ',')]
    pub allowed_email_domains: Vec<String>,
    /// Only these emails may sign in (besides the allowed domains).
    #[arg(long = "oidc-allowed-emails", env = "OIDC_ALLOWED_EMAILS", value_delimiter = ',')]
    pub allowed_emails: Vec<String>,
    /// Where the provider sends people after sign-out (default: this server's `/`).
    #[arg(long = "oidc-post-logout-redirect-uri", env = "OIDC_POST_LOGOUT_REDIRECT_URI")]
    pub post_logout_redirect_uri: Option<String>,
    /// Groups whose members are platform operators (comma separated).
    #[arg(long = "platform-operator-groups", env = "OPENCRANE_PLATFORM_OPERATOR_GROUPS", value_delimiter = ',')]
    pub platform_operator_groups: Vec<String>,
    /// The verified email of the first platform operator.
    #[arg(long = "platform-operator-seed-email", env = "OPENCRANE_PLATFORM_OPERATOR_SEED_EMAIL")]
    pub platform_operator_seed_email: Option<String>,
    /// Groups whose members administer a silo's organisation (silo only).
    #[arg(long = "org-admin-groups", env = "OPENCRANE_ORG_ADMIN_GROUPS", value_delimiter = ',')]
    pub org_admin_groups: Vec<String>,
}

/// `fleet-manager` flags.
#[derive(Clone, Debug, Args)]
pub struct FleetArgs {
    /// HTTP.
    #[command(flatten)]
    pub http: HttpArgs,
    /// Database.
    #[command(flatten)]
    pub db: DbArgs,
    /// Authentication.
    #[command(flatten)]
    pub auth: AuthArgs,
    /// Base domain: customers are served at <name>.<base>, the fleet at platform.<base>.
    #[arg(long, env = "PLATFORM_BASE_DOMAIN", value_parser = parse_domain)]
    pub platform_base_domain: Option<String>,
    /// Mount the ClusterTenant area (pages and /api/v1/cluster-tenants).
    #[arg(long, env = "OPENCRANE_CLUSTER_TENANT_MANAGER_ENABLED", default_value = "true", value_parser = parse_flag, action = ArgAction::Set)]
    pub cluster_tenant_manager_enabled: bool,
    /// Mount the billing area (pages and /api/v1/billing-accounts).
    #[arg(long, env = "OPENCRANE_BILLING_ENABLED", default_value = "true", value_parser = parse_flag, action = ArgAction::Set)]
    pub billing_enabled: bool,
    /// Port of the internal API for silos (`/api/internal`), on the same address as `--port`;
    /// the chart exposes it through its own Service, reachable from silo managers only.
    #[arg(long, env = "OPENCRANE_INTERNAL_PORT", default_value_t = 8081)]
    pub internal_port: u16,
    /// The fleet's own namespace (the chart sets it from the pod): where the Zitadel key Secret lives.
    #[arg(long = "namespace", env = "POD_NAMESPACE")]
    pub namespace: Option<String>,
    /// Which backend provisions silos. `kubernetes` (the cluster this runs in) is the one a
    /// fleet-manager runs, or `off` (nothing is provisioned or reconciled); `local` exists under
    /// `opencrane dev`.
    #[arg(long, env = "OPENCRANE_PROVISIONER", value_enum, default_value = "kubernetes")]
    pub provisioner: ProvisionerKind,
    /// Where the Kubernetes provisioner applies silos.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Zitadel's Management API.
    #[command(flatten)]
    pub zitadel: ZitadelArgs,
    /// The DNS and certificate probes.
    #[command(flatten)]
    pub dns_probe: DnsProbeArgs,
    /// The original's shared database, for the `/migrations` page.
    #[command(flatten)]
    pub shared_source: SharedSourceArgs,
}

/// The original's shared database the `/migrations` page migrates from.
#[derive(Clone, Args)]
pub struct SharedSourceArgs {
    /// A PostgreSQL URL of the original's shared database (read through a read-only
    /// connection). It carries a password: set it from a Secret (the chart's
    /// `migration.sourceSecret`), not on the command line.
    #[arg(long = "shared-source-url", env = "OPENCRANE_SHARED_SOURCE_URL", hide_env_values = true)]
    pub url: Option<String>,
}

impl std::fmt::Debug for SharedSourceArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSourceArgs").field("url", &self.url.as_ref().map(|_| "…")).finish()
    }
}

/// The probes of what DNS and TLS really serve for each customer (they run when the base domain
/// and the ingress address are known).
#[derive(Clone, Debug, Args)]
pub struct DnsProbeArgs {
    /// Nameservers the DNS probe asks (`ip` or `ip:port`, comma-separated); default: the
    /// authoritative nameservers of the base domain (its NS records).
    #[arg(long = "dns-probe-nameservers", env = "OPENCRANE_DNS_PROBE_NAMESERVERS", value_delimiter = ',', value_parser = parse_nameserver)]
    pub nameservers: Vec<std::net::SocketAddr>,
    /// Seconds between two passes over every customer (0: only on request).
    #[arg(long = "dns-probe-interval-seconds", env = "OPENCRANE_DNS_PROBE_INTERVAL_SECONDS", default_value_t = 300)]
    pub interval_seconds: u64,
    /// Customers probed at once.
    #[arg(long = "dns-probe-concurrency", env = "OPENCRANE_DNS_PROBE_CONCURRENCY", default_value_t = 8,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// The port the ingress serves TLS on (the served-certificate probe).
    #[arg(long = "dns-probe-tls-port", env = "OPENCRANE_DNS_PROBE_TLS_PORT", default_value_t = 443)]
    pub tls_port: u16,
    /// Seconds each query or handshake may take.
    #[arg(long = "dns-probe-timeout-seconds", env = "OPENCRANE_DNS_PROBE_TIMEOUT_SECONDS", default_value_t = 3,
          value_parser = clap::value_parser!(u64).range(1..=60))]
    pub timeout_seconds: u64,
}

impl DnsProbeArgs {
    /// The probes' settings, when there is something to probe (a base domain and an ingress address).
    pub fn settings(
        &self,
        base_domain: Option<&str>,
        ingress_ip: Option<IpAddr>,
    ) -> Option<opencrane_provision::dns_truth::DnsTruthSettings> {
        Some(opencrane_provision::dns_truth::DnsTruthSettings {
            base_domain: base_domain?.to_owned(),
            ingress_ip: Some(ingress_ip?),
            nameservers: self.nameservers.clone(),
            tls_port: self.tls_port,
            timeout: std::time::Duration::from_secs(self.timeout_seconds),
            concurrency: usize::from(self.concurrency),
            interval: std::time::Duration::from_secs(self.interval_seconds),
        })
    }
}

/// `ip` (port 53) or `ip:port`.
fn parse_nameserver(value: &str) -> Result<std::net::SocketAddr, String> {
    let value = value.trim();
    value
        .parse::<std::net::SocketAddr>()
        .or_else(|_| value.parse::<IpAddr>().map(|ip| std::net::SocketAddr::new(ip, 53)))
        .map_err(|_| format!("“{value}” is not a nameserver address such as 10.0.0.53 or 127.0.0.1:5353"))
}

/// The fleet's link to Zitadel's Management API (per-org apps, service-account key rotation).
/// Setting the URL requires a service-account key, as JSON or as a file (the chart mounts the
/// key Secret, so a rotation reaches the running pod without a restart).
#[derive(Clone, Debug, Default, Args)]
pub struct ZitadelArgs {
    /// The Zitadel instance URL; empty leaves Zitadel IAM off.
    #[arg(long = "zitadel-mgmt-api-url", env = "ZITADEL_MGMT_API_URL")]
    pub mgmt_api_url: Option<String>,
    /// A file holding the service-account key JSON.
    #[arg(long = "zitadel-sa-key-file", env = "ZITADEL_MGMT_SA_KEY_FILE", conflicts_with = "sa_key")]
    pub sa_key_file: Option<PathBuf>,
    /// The service-account key JSON itself.
    #[arg(long = "zitadel-sa-key", env = "ZITADEL_MGMT_SA_KEY", hide_env_values = true)]
    pub sa_key: Option<String>,
    /// The Secret (in the fleet's namespace) that key rotation updates.
    #[arg(long = "zitadel-secret-name", env = "ZITADEL_MGMT_SECRET_NAME")]
    pub secret_name: Option<String>,
    /// The key of the JSON in that Secret.
    #[arg(long = "zitadel-secret-key", env = "ZITADEL_MGMT_SECRET_KEY", default_value = "service-account-key")]
    pub secret_key: String,
    /// Interval of the Zitadel reconcile pass in milliseconds (0 disables it).
    #[arg(long = "zitadel-reconcile-interval-ms", env = "ZITADEL_RECONCILE_INTERVAL_MS", default_value_t = 21_600_000)]
    pub reconcile_interval_ms: u64,
    /// How long the old key stays valid after a two-phase rotation's activation, in hours
    /// (every replica picks the new key up from the Secret well within it).
    #[arg(long = "zitadel-rotation-grace-hours", env = "ZITADEL_ROTATION_GRACE_HOURS", default_value_t = 24,
          value_parser = clap::value_parser!(u32).range(1..=720))]
    pub rotation_grace_hours: u32,
}

/// How a silo relates to a fleet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DeploymentMode {
    /// Provisioned by the fleet; pulls its ClusterTenant and memberships from it.
    FleetManaged,
    /// No fleet.
    Standalone,
}

/// `clustertenant-manager` flags.
#[derive(Clone, Debug, Args)]
pub struct SiloArgs {
    /// HTTP.
    #[command(flatten)]
    pub http: HttpArgs,
    /// Database (the silo's own).
    #[command(flatten)]
    pub db: DbArgs,
    /// Authentication.
    #[command(flatten)]
    pub auth: AuthArgs,
    /// The ClusterTenant this silo serves.
    #[arg(long, env = "OPENCRANE_CLUSTER_TENANT", value_parser = parse_cluster_tenant)]
    pub cluster_tenant: String,
    /// The fleet console's URL, for the members page's link (default `https://platform.<base>`).
    #[arg(long, env = "OPENCRANE_FLEET_CONSOLE_URL")]
    pub fleet_console_url: Option<String>,
    /// Base domain: the silo answers on `<cluster-tenant>.<base>`.
    #[arg(long, env = "PLATFORM_BASE_DOMAIN", value_parser = parse_domain)]
    pub platform_base_domain: Option<String>,
    /// The organisation's own OIDC client (Zitadel: its public PKCE login app), used for
    /// requests to `<cluster-tenant>.<base>` or the vanity domain.
    #[arg(long, env = "OPENCRANE_CLUSTER_TENANT_CLIENT_ID")]
    pub org_client_id: Option<String>,
    /// The organisation's Zitadel id: adds the scope `urn:zitadel:iam:org:id:<id>`, which limits
    /// sign-in to the organisation's users.
    #[arg(long, env = "OPENCRANE_CLUSTER_TENANT_ORG_ID")]
    pub org_id: Option<String>,
    /// The organisation's vanity domain, if any (another host the organisation's client serves).
    #[arg(long, env = "OPENCRANE_CLUSTER_TENANT_VANITY_DOMAIN", value_parser = parse_domain)]
    pub vanity_domain: Option<String>,
    /// fleet-managed or standalone (default: fleet-managed exactly when --fleet-internal-url is set).
    #[arg(long, env = "DEPLOYMENT_MODE", value_enum)]
    pub deployment_mode: Option<DeploymentMode>,
    /// The fleet-manager's in-cluster URL (fleet-managed silos; authenticates with this silo's own
    /// credential, OPENCRANE_FLEET_TOKEN_FILE).
    #[arg(long, env = "FLEET_INTERNAL_URL")]
    pub fleet_internal_url: Option<String>,
    /// File holding this silo's credential for the fleet's internal API (minted by the fleet, one
    /// per customer; re-read on every pull, so a rotation needs no restart). Outbound only: the
    /// silo never accepts it.
    #[arg(long, env = "OPENCRANE_FLEET_TOKEN_FILE")]
    pub fleet_token_file: Option<PathBuf>,
    /// The namespace the silo operator watches and may write (its own).
    #[arg(long, env = "WATCH_NAMESPACE")]
    pub watch_namespace: Option<String>,
    /// Refuse to start without --watch-namespace.
    #[arg(long, env = "REQUIRE_WATCH_NAMESPACE", default_value = "false", value_parser = parse_flag, action = ArgAction::Set)]
    pub require_watch_namespace: bool,
    /// On a cluster running Cilium (the silo chart sets it with `cilium.enabled`): the
    /// NetworkPolicy floor's HTTPS allow-list as JSON (`[{"cidr": "0.0.0.0/0", "except": […]}]`).
    /// The MCP gateway's egress then follows the access policies (CiliumNetworkPolicy
    /// `opencrane-access-egress`).
    #[arg(long, env = "OPENCRANE_CILIUM_EGRESS_FLOOR", value_parser = parse_egress_floor)]
    pub cilium_egress_floor: Option<EgressFloor>,
    /// The silo portal's enforcement and secrets.
    #[command(flatten)]
    pub portal: PortalArgs,
}

/// The silo portal: where LiteLLM is, and the key that seals provider keys at rest.
#[derive(Clone, Debug, Default, Args)]
pub struct PortalArgs {
    /// LiteLLM's admin endpoint (e.g. http://litellm:4000). Without it, access and limits are
    /// computed and shown but not enforced.
    #[arg(long, env = "LITELLM_ENDPOINT")]
    pub litellm_endpoint: Option<String>,
    /// LiteLLM's master key (required with --litellm-endpoint). Prefer the `_FILE` variant.
    #[arg(long, env = "LITELLM_MASTER_KEY", hide_env_values = true)]
    pub litellm_master_key: Option<String>,
    /// A file holding LiteLLM's master key, instead of `--litellm-master-key`.
    #[arg(long, env = "LITELLM_MASTER_KEY_FILE", value_parser = read_secret_file, conflicts_with = "litellm_master_key")]
    pub litellm_master_key_file: Option<SecretFile>,
    /// 32 random bytes in base64 (`openssl rand -base64 32`) sealing provider keys and LiteLLM
    /// keys in the silo database (required to store credentials and to enforce through LiteLLM).
    /// Prefer the `_FILE` variant.
    #[arg(long, env = "OPENCRANE_CREDENTIALS_KEY", hide_env_values = true)]
    pub credentials_key: Option<String>,
    /// A file holding the credentials key, instead of `--credentials-key`.
    #[arg(long, env = "OPENCRANE_CREDENTIALS_KEY_FILE", value_parser = read_secret_file, conflicts_with = "credentials_key")]
    pub credentials_key_file: Option<SecretFile>,
    /// The Secret the credentials key comes from (the chart sets it), named when the key does not
    /// match the one that sealed the silo's secrets.
    #[arg(long, env = "OPENCRANE_CREDENTIALS_KEY_SECRET")]
    pub credentials_key_secret: Option<String>,
}

impl PortalArgs {
    /// The LiteLLM master key, from the flag or its file.
    pub fn litellm_master_key(&self) -> Option<String> {
        self.litellm_master_key.clone().or_else(|| self.litellm_master_key_file.as_ref().map(|f| f.0.clone()))
    }

    /// Where the credentials key came from, for messages.
    pub fn credentials_key_source(&self) -> String {
        match (&self.credentials_key_secret, &self.credentials_key_file) {
            (Some(secret), _) => format!("Secret {secret} (OPENCRANE_CREDENTIALS_KEY)"),
            (None, Some(_)) => "the file OPENCRANE_CREDENTIALS_KEY_FILE names".into(),
            (None, None) => "OPENCRANE_CREDENTIALS_KEY".into(),
        }
    }

    /// The credentials key, from the flag or its file.
    pub fn credentials_key(&self) -> Option<String> {
        self.credentials_key.clone().or_else(|| self.credentials_key_file.as_ref().map(|f| f.0.clone()))
    }
}

/// Which schema `migrate` applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchemaArg {
    /// The fleet registry.
    Fleet,
    /// A silo database.
    Silo,
}

impl From<SchemaArg> for opencrane_db::Schema {
    fn from(value: SchemaArg) -> Self {
        match value {
            SchemaArg::Fleet => Self::Fleet,
            SchemaArg::Silo => Self::Silo,
        }
    }
}

/// `migrate` flags.
#[derive(Clone, Debug, Args)]
pub struct MigrateArgs {
    /// Which schema to apply.
    #[arg(long, value_enum)]
    pub schema: SchemaArg,
    /// PostgreSQL connection URL.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: String,
}

/// `migrate-shared` flags.
#[derive(Clone, Debug, Args)]
pub struct MigrateSharedArgs {
    /// The original's shared database (read through a read-only connection).
    #[arg(long, env = "OPENCRANE_SHARED_SOURCE_URL", hide_env_values = true)]
    pub source_url: String,
    /// Only this customer (repeatable; all when absent).
    #[arg(long = "customer", value_name = "NAME")]
    pub customers: Vec<String>,
    /// The last phase to run: preflight, provision, copy, verify or cut-over.
    #[arg(long, default_value = "cut-over", value_parser = parse_phase)]
    pub phase: opencrane_migrate::Phase,
    /// Only the preflight: print the plan, change nothing (same as --phase preflight).
    #[arg(long)]
    pub dry_run: bool,
    /// Also write the JSON report to this file (it always goes to stdout).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// How long to wait for a customer's silo database before leaving it for the next run.
    #[arg(long, default_value_t = 300)]
    pub wait_seconds: u64,
    /// The delta copy (after a write freeze): for customers copied before and not yet cut over,
    /// copy again the tables whose rows now differ from the source.
    #[arg(long)]
    pub delta: bool,
    /// The state directory of the running `opencrane dev` whose fleet receives the customers.
    #[arg(long, env = "OPENCRANE_DEV_STATE_DIR", default_value = ".opencrane/dev")]
    pub state_dir: PathBuf,
    /// Instead of a dev environment: the fleet's database (with --silo-server-url or --relay).
    /// Not read from DATABASE_URL: a variable meant for something else must not turn the dev
    /// mode off.
    #[arg(long, env = "OPENCRANE_FLEET_DATABASE_URL", hide_env_values = true)]
    pub fleet_database_url: Option<String>,
    /// Instead of a dev environment: the PostgreSQL holding the silos' databases as the local
    /// provisioner lays them out (`ocsilo_<name>`), as a role that may write them.
    #[arg(long, env = "OPENCRANE_SILO_SERVER_URL", hide_env_values = true, requires = "fleet_database_url")]
    pub silo_server_url: Option<String>,
    /// Reach each silo through its own manager, as on a cluster (its database stays closed to
    /// this command): the rows are staged in the fleet's database and each silo takes its own.
    #[arg(long, conflicts_with = "silo_server_url")]
    pub relay: bool,
    /// The size of each silo's database volume (a Kubernetes quantity; with --relay the
    /// cluster provisioner's, 10Gi, unless given): a customer whose rows would need more than
    /// 80% of it is stopped at preflight.
    #[arg(long, value_parser = parse_quantity)]
    pub silo_database_size: Option<u64>,
    /// With --silo-server-url: a file holding the silos' credentials key (to seal legacy keys).
    #[arg(long, env = "OPENCRANE_CREDENTIALS_KEY_FILE", value_parser = read_secret_file)]
    pub credentials_key_file: Option<SecretFile>,
}

fn parse_quantity(value: &str) -> Result<u64, String> {
    opencrane_migrate::run::parse_quantity(value)
        .ok_or_else(|| format!("expected a size such as 10Gi, 500Mi or 2G; got {value:?}"))
}

fn parse_phase(value: &str) -> Result<opencrane_migrate::Phase, String> {
    opencrane_migrate::Phase::parse(value)
        .ok_or_else(|| format!("expected one of preflight, provision, copy, verify, cut-over; got {value:?}"))
}

/// `dev` flags.
#[derive(Clone, Debug, Args)]
pub struct DevArgs {
    /// Where the database, its password and the dev token live.
    #[arg(long, env = "OPENCRANE_DEV_STATE_DIR", default_value = ".opencrane/dev")]
    pub state_dir: PathBuf,
    /// Fleet console port (on 127.0.0.1).
    #[arg(long, env = "PORT", default_value_t = 3000)]
    pub port: u16,
    /// Demo silo console port (on 127.0.0.1); 0 picks a free one.
    #[arg(long, env = "OPENCRANE_DEV_SILO_PORT", default_value_t = 3001)]
    pub silo_port: u16,
    /// Name of the demo ClusterTenant and its silo.
    #[arg(long, default_value = "demo", value_parser = parse_cluster_tenant)]
    pub demo_silo: String,
    /// Directory holding the browser bundle.
    #[arg(long, env = "LEPTOS_SITE_ROOT", default_value = "target/site")]
    pub site_root: PathBuf,
    /// Base domain for the demo silo's host (`<demo>.<base>`), e.g. for trying per-host sign-in
    /// with a hosts entry that points it at 127.0.0.1.
    #[arg(long, env = "PLATFORM_BASE_DOMAIN", value_parser = parse_domain)]
    pub platform_base_domain: Option<String>,
    /// The demo organisation's own OIDC client, served on `<demo>.<base>`.
    #[arg(long)]
    pub silo_org_client_id: Option<String>,
    /// The demo organisation's Zitadel id (adds the org-restricting scope).
    #[arg(long)]
    pub silo_org_id: Option<String>,
    /// Real sign-in instead of the development identity: set the issuer, client and redirect
    /// URI (`http://127.0.0.1:<port>/api/v1/auth/callback`) of a provider.
    #[command(flatten)]
    pub oidc: OidcArgs,
    /// Which backend provisions silos: `local` (a database and a clustertenant-manager per silo
    /// on this machine) or `kubernetes`.
    #[arg(long, env = "OPENCRANE_PROVISIONER", value_enum, default_value = "local")]
    pub provisioner: ProvisionerKind,
    /// With `--provisioner kubernetes`: where silos go (the current kube context).
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// A LiteLLM every local silo enforces through (each under its own name prefix); the
    /// credentials key defaults to one kept in the state directory.
    #[command(flatten)]
    pub portal: PortalArgs,
    /// A Zitadel for the identity step and the `/identity` page; a rotated key is kept in the
    /// state directory (`zitadel-key.json`) and preferred over the flag at the next start.
    #[command(flatten)]
    pub zitadel: ZitadelArgs,
    /// The DNS and certificate probes (with `--platform-base-domain` and `--ingress-ip`).
    #[command(flatten)]
    pub dns_probe: DnsProbeArgs,
    /// The original's shared database, for the `/migrations` page (the local silos' databases
    /// are on the dev PostgreSQL).
    #[command(flatten)]
    pub shared_source: SharedSourceArgs,
}

/// `deploy` flags.
#[derive(Debug, Args)]
pub struct DeployArgs {
    /// Which release.
    #[command(subcommand)]
    pub target: DeployTarget,
}

/// The two releases.
#[derive(Debug, Subcommand)]
pub enum DeployTarget {
    /// The fleet release (once per cluster, namespace opencrane-system) and the cluster-wide
    /// infrastructure: ingress-nginx, cert-manager, the CloudNativePG operator, external-dns.
    Fleet(DeployFleetArgs),
    /// One silo release for one ClusterTenant (namespace opencrane-<name>). Install the fleet first.
    Silo(DeploySiloArgs),
}

/// How a plan is printed by `--dry-run`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// A commented shell script (secrets redacted).
    Shell,
    /// JSON: `{summary, notes, steps: [{title, tool, args, stdin}]}`.
    Json,
}

/// Flags both deploys share.
#[derive(Debug, Args)]
pub struct DeployCommonArgs {
    /// The platform base domain (required): customers at <name>.<base>, the fleet at platform.<base>.
    #[arg(long, alias = "domain", env = "OPENCRANE_BASE_DOMAIN", value_parser = parse_domain)]
    pub base_domain: String,
    /// The ingress controller's public address (published as DNS records with external-dns).
    #[arg(long, env = "OPENCRANE_INGRESS_IP")]
    pub ingress_ip: Option<IpAddr>,
    /// Helm release name.
    #[arg(long, default_value = "opencrane")]
    pub release: String,
    /// Directory holding the opencrane-fleet and opencrane-silo charts.
    #[arg(long = "charts", env = "OPENCRANE_CHARTS_DIR", default_value = "charts")]
    pub charts_dir: PathBuf,
    /// Tag of the opencrane image (default: the chart's appVersion).
    #[arg(long, env = "OPENCRANE_IMAGE_TAG")]
    pub image_tag: Option<String>,
    /// Extra values file for the OpenCrane release (repeatable, applied in order).
    #[arg(long = "values", short = 'f')]
    pub values: Vec<PathBuf>,
    /// Extra `key=value` for the OpenCrane release (repeatable; wins over everything else).
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// An argument passed verbatim to `helm upgrade` of the OpenCrane release (repeatable).
    #[arg(long = "helm-arg", allow_hyphen_values = true)]
    pub helm_args: Vec<String>,
    /// Upgrade keeping the installed release's values; only this command's flags change.
    #[arg(long)]
    pub reuse_values: bool,
    /// How long Helm waits for each release to become ready.
    #[arg(long, default_value = "10m")]
    pub timeout: String,
    /// Print every command and manifest instead of applying them (read-only checks still run).
    #[arg(long)]
    pub dry_run: bool,
    /// Format of the `--dry-run` plan.
    #[arg(long, value_enum, default_value = "shell")]
    pub plan_format: PlanFormat,
    /// Skip the read-only checks of the cluster.
    #[arg(long, env = "OPENCRANE_SKIP_PREFLIGHT", value_parser = parse_flag, default_value = "false", action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub skip_preflight: bool,
    /// The helm executable (default: found on PATH).
    #[arg(long, env = "OPENCRANE_HELM")]
    pub helm: Option<PathBuf>,
    /// The kubectl executable (default: found on PATH).
    #[arg(long, env = "OPENCRANE_KUBECTL")]
    pub kubectl: Option<PathBuf>,
    /// The kubeconfig context for both tools (default: the current one).
    #[arg(long, env = "OPENCRANE_KUBE_CONTEXT")]
    pub kube_context: Option<String>,
}

/// `deploy fleet` flags.
#[derive(Debug, Args)]
pub struct DeployFleetArgs {
    /// Shared flags.
    #[command(flatten)]
    pub common: DeployCommonArgs,
    /// The fleet namespace.
    #[arg(long, default_value = "opencrane-system")]
    pub namespace: String,
    /// The first platform operator's verified email (this or --platform-operator-groups is required).
    #[arg(long, env = "OPENCRANE_PLATFORM_OPERATOR_SEED_EMAIL")]
    pub platform_operator_seed_email: Option<String>,
    /// Groups whose members are platform operators (comma separated).
    #[arg(long, env = "OPENCRANE_PLATFORM_OPERATOR_GROUPS", value_delimiter = ',')]
    pub platform_operator_groups: Vec<String>,
    /// Install cert-manager (the default; kept for the documented interface).
    #[arg(long, conflicts_with = "no_cert_manager")]
    pub cert_manager: bool,
    /// Do not install cert-manager (it already runs in the cluster).
    #[arg(long)]
    pub no_cert_manager: bool,
    /// ACME account email: certificates from Let's Encrypt through DNS-01 (needs --dns01-provider).
    #[arg(long, env = "OPENCRANE_ACME_EMAIL", requires = "dns01_provider")]
    pub acme_email: Option<String>,
    /// DNS-01 solver for ACME: clouddns (needs --acme-email and --dns01-project).
    #[arg(long, env = "OPENCRANE_DNS01_PROVIDER", requires = "acme_email")]
    pub dns01_provider: Option<String>,
    /// Google Cloud project of the DNS zone (clouddns).
    #[arg(long, env = "OPENCRANE_DNS01_PROJECT")]
    pub dns01_project: Option<String>,
    /// The fleet-manager writes the certificate issuer, configured later on its /dns page or with
    /// `PUT /api/v1/platform/dns` (any DNS-01 provider); instead of --acme-email.
    #[arg(long, conflicts_with = "acme_email")]
    pub manage_issuer: bool,
    /// external-dns provider (e.g. google, aws, cloudflare); with --dns01-provider clouddns it
    /// defaults to google. Without one, external-dns is not installed.
    #[arg(long, env = "OPENCRANE_DNS_PROVIDER")]
    pub dns_provider: Option<String>,
    /// Do not install ingress-nginx (an nginx ingress class already exists).
    #[arg(long)]
    pub no_ingress_nginx: bool,
    /// Do not install external-dns (it already runs, with the crd source).
    #[arg(long)]
    pub no_external_dns: bool,
    /// Do not install the CloudNativePG operator (it already runs).
    #[arg(long)]
    pub no_db_operator: bool,
    /// The fleet's OIDC issuer URL (sign-in; needs --oidc-client-id).
    #[arg(long, env = "OPENCRANE_OIDC_ISSUER_URL")]
    pub oidc_issuer_url: Option<String>,
    /// The fleet's OIDC client id.
    #[arg(long, env = "OPENCRANE_OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,
    /// The fleet's redirect URI (default https://platform.<base>/api/v1/auth/callback).
    #[arg(long, env = "OPENCRANE_OIDC_REDIRECT_URI")]
    pub oidc_redirect_uri: Option<String>,
    /// File holding the OIDC client secret (stored in a Secret, never in Helm values).
    #[arg(long)]
    pub oidc_client_secret_file: Option<PathBuf>,
}

/// `deploy silo` flags.
#[derive(Debug, Args)]
pub struct DeploySiloArgs {
    /// Shared flags.
    #[command(flatten)]
    pub common: DeployCommonArgs,
    /// The ClusterTenant this silo serves.
    #[arg(long, env = "OPENCRANE_CLUSTER_TENANT", value_parser = parse_cluster_tenant)]
    pub cluster_tenant: String,
    /// The silo namespace (default: opencrane-<cluster-tenant>).
    #[arg(long)]
    pub namespace: Option<String>,
    /// A silo without a fleet: installs the CRDs, generates its own token.
    #[arg(long)]
    pub standalone: bool,
    /// The fleet-manager's in-cluster URL (default: the fleet-managed profile's).
    #[arg(long, env = "FLEET_INTERNAL_URL", conflicts_with = "standalone")]
    pub fleet_internal_url: Option<String>,
    /// A file holding this customer's own silo credential (`ocs_…`, minted by the fleet) to
    /// write into the silo namespace; default: the one the fleet's provisioner wrote there. The
    /// fleet's API token is never accepted.
    #[arg(long, conflicts_with = "standalone")]
    pub fleet_token_file: Option<PathBuf>,
    /// The API server's address as a CIDR, for the silo operator's egress (repeatable;
    /// default: discovered from the kubernetes EndpointSlices).
    #[arg(long = "kube-api-cidr")]
    pub kube_api_cidrs: Vec<String>,
}

/// A secret read from a file at start (`--…-file`, a mounted Secret): its content without the
/// surrounding whitespace. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretFile(pub String);

impl std::fmt::Debug for SecretFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretFile(…)")
    }
}

fn read_secret_file(path: &str) -> Result<SecretFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(format!("{path} is empty"));
    }
    Ok(SecretFile(secret.to_owned()))
}

/// Parses a feature switch: true/false, 1/0, on/off, yes/no (any case).
pub fn parse_flag(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "on" | "yes" => Ok(true),
        "false" | "0" | "off" | "no" => Ok(false),
        other => Err(format!("expected true or false (or 1/0, on/off, yes/no), got “{other}”")),
    }
}

fn parse_http_url(value: &str) -> Result<String, String> {
    let url = value.trim().trim_end_matches('/');
    match url.split_once("://") {
        Some(("http" | "https", rest)) if !rest.is_empty() => Ok(url.to_owned()),
        _ => Err(format!("expected an http(s) URL, got “{value}”")),
    }
}

fn parse_domain(value: &str) -> Result<String, String> {
    let domain = value.trim().trim_end_matches('.').to_ascii_lowercase();
    app::model::rules::domain_name(&domain)?;
    Ok(domain)
}

/// The NetworkPolicy floor's HTTPS allow-list, as the silo chart passes it.
#[derive(Clone, Debug)]
pub struct EgressFloor(pub Vec<opencrane_portal::egress::CidrBlock>);

fn parse_egress_floor(value: &str) -> Result<EgressFloor, String> {
    serde_json::from_str(value)
        .map(EgressFloor)
        .map_err(|e| format!("expected a JSON list of {{\"cidr\": …, \"except\": […]}}: {e}"))
}

fn parse_cluster_tenant(value: &str) -> Result<String, String> {
    app::model::rules::cluster_tenant_name(value)?;
    Ok(value.to_owned())
}

/// Which backend provisions silos.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProvisionerKind {
    /// The Kubernetes cluster the fleet-manager runs in.
    Kubernetes,
    /// This machine (only under `opencrane dev`): a database per silo on the local PostgreSQL and
    /// a clustertenant-manager per silo in the same process.
    Local,
    /// None (fleet-manager only): customers are recorded and served, no silo is provisioned or
    /// reconciled — a fleet-manager that must not touch the cluster (maintenance, inspection,
    /// the benchmark's settled fleet).
    Off,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn feature_switches_accept_the_usual_spellings_and_refuse_others() {
        for yes in ["true", "1", "ON", "Yes"] {
            assert_eq!(parse_flag(yes), Ok(true));
        }
        for no in ["false", "0", "off", "NO"] {
            assert_eq!(parse_flag(no), Ok(false));
        }
        assert!(parse_flag("maybe").unwrap_err().contains("maybe"));
    }

    #[test]
    fn roles_parse_and_unknown_roles_fail() {
        let cli = Cli::try_parse_from([
            "opencrane",
            "fleet-manager",
            "--database-url",
            "postgres://x/y",
            "--billing-enabled",
            "off",
            "--platform-base-domain",
            "Example.COM.",
            "--kept-answers",
            "false",
        ])
        .unwrap();
        let Command::FleetManager(args) = cli.command else { panic!("wrong command") };
        assert!(!args.billing_enabled);
        assert!(!args.db.kept_answers);
        assert!(args.cluster_tenant_manager_enabled);
        assert_eq!(args.platform_base_domain.as_deref(), Some("example.com"));
        assert!(Cli::try_parse_from(["opencrane", "controller"]).is_err());
        let bad = Cli::try_parse_from([
            "opencrane",
            "clustertenant-manager",
            "--database-url",
            "x",
            "--cluster-tenant",
            "Bad_Name",
        ]);
        assert!(bad.unwrap_err().to_string().contains("lowercase"));
    }
}

/// `ensure-secret` flags.
#[derive(Clone, Debug, Args)]
pub struct EnsureSecretArgs {
    /// The Secret's name.
    #[arg(long)]
    pub name: String,
    /// Its namespace (the chart's hook sets it from the pod).
    #[arg(long, env = "POD_NAMESPACE")]
    pub namespace: Option<String>,
    /// A key and how to generate it: `NAME=alnum:N`, `NAME=sk:N` (`sk-` + N letters and digits)
    /// or `NAME=base64:N` (N random bytes). Repeatable.
    #[arg(long = "key", required = true, value_parser = crate::ensure_secret::parse_key)]
    pub keys: Vec<(String, crate::ensure_secret::Format)>,
    /// A label for a Secret it creates (`key=value`, repeatable).
    #[arg(long = "label")]
    pub labels: Vec<String>,
    /// The Kubernetes API server (default: in-cluster, else the current kube context).
    #[arg(long, hide = true)]
    pub kube_api_url: Option<String>,
}

/// `rotate-credentials-key` flags (keys only from files or the environment, never the command line).
#[derive(Clone, Debug, Args)]
pub struct RotateCredentialsKeyArgs {
    /// The silo's database.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: String,
    /// A file holding the current key.
    #[arg(long, env = "OPENCRANE_CREDENTIALS_KEY_FILE", value_parser = read_secret_file)]
    pub credentials_key_file: SecretFile,
    /// A file holding the new key (32 random bytes in base64: `openssl rand -base64 32`).
    #[arg(long, env = "OPENCRANE_NEW_CREDENTIALS_KEY_FILE", value_parser = read_secret_file)]
    pub new_credentials_key_file: SecretFile,
}
