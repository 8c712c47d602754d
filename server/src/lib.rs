//! The `opencrane` binary's library: command-line parsing, start-up of each role, the HTTP
//! stack around the Leptos app, the REST API, and the embedded development environment.
//!
//! `main.rs` only parses and dispatches to [`run`]; everything testable lives here.

// Leptos view types nest deeply; release builds compute their layouts here too.
#![recursion_limit = "256"]

pub mod cli;
pub mod deploy;
pub mod dev;
pub mod ensure_secret;
pub mod fleet;
pub mod http;
pub mod idle;
pub mod links;
pub mod metrics;
pub mod migrate_shared;
pub mod silo;
pub mod start;
pub mod telemetry;

use anyhow::Context as _;

use crate::cli::{Cli, Command};

/// Runs the chosen subcommand to completion.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::FleetManager(args) => fleet::run_fleet(args).await,
        Command::ClustertenantManager(args) => silo::run_silo(args).await,
        Command::Migrate(args) => {
            let pool = opencrane_db::connect_lazy(&args.database_url, &opencrane_db::PoolSettings::default())
                .context("parsing the database URL")?;
            let schema = args.schema.into();
            opencrane_db::migrate(&pool, schema)
                .await
                .with_context(|| format!("applying the {} migrations", schema.as_str()))?;
            tracing::info!(schema = schema.as_str(), "migrations applied");
            Ok(())
        }
        Command::Dev(args) => dev::run(args).await,
        Command::Deploy(args) => {
            tokio::task::spawn_blocking(move || deploy::run(args)).await.context("the deploy task")?
        }
        Command::ProvisionRender(args) => provision_render(&args),
        Command::AccessEgressRender(args) => access_egress_render(&args),
        Command::Openapi { role } => {
            // The document depends on the role and its switches, never on data: the pool is
            // never connected.
            let pool = sqlx::postgres::PgPoolOptions::new()
                .connect_lazy("postgres://localhost/unused")
                .context("a pool that never connects")?;
            let options = leptos::config::LeptosOptions::builder().output_name("opencrane").build();
            let state = match role {
                cli::ApiRole::Fleet => fleet::fleet_state(options, pool, None, true, true, true),
                cli::ApiRole::Silo => silo::silo_state(options, pool, "example".into(), None, true),
            };
            let document = http::rest::openapi::document(&state);
            write_stdout(&format!("{}\n", serde_json::to_string_pretty(&document)?))
        }
        Command::EnsureSecret(args) => ensure_secret::run(args).await,
        Command::RotateCredentialsKey(args) => rotate_credentials_key(&args).await,
        Command::MigrateShared(args) => migrate_shared::run(&args).await,
        Command::Crd { silo_template } => {
            let yaml = if silo_template { opencrane_crd::silo_crds_template() } else { opencrane_crd::crds_yaml() };
            write_stdout(&yaml.context("rendering the CRDs")?)
        }
    }
}

/// `opencrane rotate-credentials-key`: every sealed value re-sealed under the new key, all or nothing.
async fn rotate_credentials_key(args: &cli::RotateCredentialsKeyArgs) -> anyhow::Result<()> {
    use opencrane_portal::seal::SecretBox;
    let old = SecretBox::from_base64(&args.credentials_key_file.0).context("--credentials-key-file")?;
    let new = SecretBox::from_base64(&args.new_credentials_key_file.0).context("--new-credentials-key-file")?;
    let pool = opencrane_db::connect_lazy(&args.database_url, &opencrane_db::PoolSettings::default())
        .context("parsing the database URL")?;
    opencrane_db::migrate(&pool, opencrane_db::Schema::Silo).await.context("applying the silo migrations")?;
    let rotated = opencrane_portal::credentials_key::rotate(&pool, old, new, "--credentials-key-file").await?;
    write_stdout(&format!(
        "Re-sealed {} secret(s) under credentials key version {}. Put the new key into the manager's \
         Secret (OPENCRANE_CREDENTIALS_KEY) and restart it; it refuses the old key from now on.\n",
        rotated.resealed, rotated.version
    ))
}

/// A file's text, or stdin's for `-`.
fn read_input(file: &std::path::Path) -> anyhow::Result<String> {
    use std::io::Read as _;
    if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading stdin")?;
        Ok(text)
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))
    }
}

/// `opencrane access-egress-render`: the silo runtime's pure egress step, printed.
fn access_egress_render(args: &cli::AccessEgressRenderArgs) -> anyhow::Result<()> {
    use serde::Deserialize as _;
    let text = read_input(&args.file)?;
    let mut rules = Vec::new();
    for (i, document) in serde_yaml_ng::Deserializer::from_str(&text).enumerate() {
        let value = serde_yaml_ng::Value::deserialize(document).with_context(|| format!("document {}", i + 1))?;
        if value.is_null() {
            continue;
        }
        let policy: opencrane_crd::access_policy::AccessPolicy = serde_yaml_ng::from_value(value)
            .with_context(|| format!("document {} is not an AccessPolicy resource", i + 1))?;
        rules.push(opencrane_portal::egress::DomainRules::of_spec(&policy.spec));
    }
    let policy = opencrane_portal::egress::gateway_egress(&rules, &args.egress_floor.0, &args.namespace);
    write_stdout(&format!("---\n{}", serde_yaml_ng::to_string(&policy)?))
}

/// `opencrane provision-render`: the provisioner's pure steps, printed.
fn provision_render(args: &cli::ProvisionRenderArgs) -> anyhow::Result<()> {
    let text = read_input(&args.file)?;
    if args.platform_dns {
        return platform_dns_render(args, &text);
    }
    let resource: opencrane_crd::cluster_tenant::ClusterTenant =
        serde_yaml_ng::from_str(&text).context("the file is not a ClusterTenant resource")?;
    let name = resource.metadata.name.clone().unwrap_or_default();
    let generation = resource.metadata.generation.unwrap_or(1);
    let mut desired = opencrane_provision::spec::Desired::from_resource(&name, &resource.spec, generation)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut settings = opencrane_provision::build::ClusterSettings::new(args.base_domain.clone());
    settings.ingress_ip = args.ingress_ip;
    settings.oidc_issuer_url = args.oidc_issuer_url.clone();
    if let (Some(client_id), Some(org_id)) = (&args.zitadel_client_id, &args.zitadel_org_id) {
        desired.identity =
            Some(opencrane_provision::spec::SiloIdentity { org_id: org_id.clone(), client_id: client_id.clone() });
    }
    if args.release_values {
        let values = opencrane_provision::build::release_values(&desired, &settings)
            .map_err(|missing| anyhow::anyhow!("{missing}: pass --oidc-issuer-url"))?;
        return write_stdout(&serde_yaml_ng::to_string(&values)?);
    }
    let mut out = String::new();
    for object in opencrane_provision::build::all_objects(&desired, &settings, args.cilium) {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(&object)?);
    }
    write_stdout(&out)
}

/// `opencrane provision-render --platform-dns`: the issuer's objects for a `PUT /platform/dns`
/// body, through the same validation (a bad field is an error naming it).
fn platform_dns_render(args: &cli::ProvisionRenderArgs, text: &str) -> anyhow::Result<()> {
    use opencrane_provision::platform_dns::{self, IssuerRequest, IssuerSettings};
    let request: IssuerRequest = serde_yaml_ng::from_str(text).context("the file is not a platform DNS request")?;
    let settings = IssuerSettings {
        issuer_name: args.issuer_name.clone(),
        cert_manager_namespace: args.cert_manager_namespace.clone(),
        managed: true,
        ingress_class: args.ingress_class.clone(),
    };
    let valid = platform_dns::validate(&request, &settings).map_err(|e| anyhow::anyhow!("{e}"))?;
    let plan = platform_dns::build(&valid, &settings, false, chrono::Utc::now()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut out = String::new();
    // JSON documents (valid YAML) so the timestamp annotation stays a string for every reader.
    for object in plan.secret.iter().chain([&plan.issuer]) {
        out.push_str("---\n");
        out.push_str(&serde_json::to_string_pretty(object)?);
        out.push('\n');
    }
    write_stdout(&out)
}

/// Writes `text` to stdout; a closed pipe (`| head`) ends quietly instead of panicking.
fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(err).context("writing to stdout"),
        _ => Ok(()),
    }
}
