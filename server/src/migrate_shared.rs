//! `opencrane migrate-shared`: the migration from the original's shared database
//! (`opencrane_migrate`) against the fleet of a running `opencrane dev` — found through its
//! state directory (the private PostgreSQL's port and password, the silos' credentials key), so
//! no further flags are needed from the checkout — or against the fleet database named by
//! `--fleet-database-url`, with the silos' databases (`--silo-server-url`) or, as on a cluster,
//! through each silo's own manager (`--relay`). A progress bar per phase goes to stderr (a
//! plain line per step when stderr is not a terminal), the JSON report to stdout. It never waits
//! on a prompt.

use std::{path::Path, time::Duration};

use anyhow::{Context as _, anyhow};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use opencrane_migrate::{Error, Event, Options, Phase, Reach, Silos};
use opencrane_portal::seal::SecretBox;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::{cli::MigrateSharedArgs, write_stdout};

/// The silo databases of the dev environment: `ocsilo_<name>` on its PostgreSQL, reached as its
/// superuser, once the local provisioner has created and migrated them.
pub struct DevSilos {
    server: PgConnectOptions,
    credentials_key: Option<String>,
}

impl DevSilos {
    /// The silos of the PostgreSQL at `server` (as its superuser); `credentials_key` seals their
    /// secrets (dev gives every silo the same one).
    pub fn new(server: PgConnectOptions, credentials_key: Option<String>) -> Self {
        Self { server, credentials_key }
    }
}

#[async_trait::async_trait]
impl Silos for DevSilos {
    async fn reach(&self, customer: &str) -> Result<Option<Reach>, Error> {
        let database = opencrane_provision::local::database_of(customer);
        let options = self.server.clone().database(&database);
        let pool = match PgPoolOptions::new().max_connections(2).connect_with(options).await {
            Ok(pool) => pool,
            // Not created yet (3D000 invalid_catalog_name), or not reachable yet.
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("3D000") => return Ok(None),
            Err(e) => return Err(Error::Silo(format!("connecting to {database}: {e}"))),
        };
        // Migrated to this binary's silo schema (the import marker's table is among its newest).
        let ready: bool = sqlx::query_scalar("SELECT to_regclass('public.shared_import') IS NOT NULL")
            .fetch_one(&pool)
            .await
            .map_err(|e| Error::Silo(format!("looking at {database}: {e}")))?;
        Ok(ready.then_some(Reach::Database(pool)))
    }

    fn credentials_key(&self, _customer: &str) -> Option<SecretBox> {
        self.credentials_key.as_deref().and_then(|k| SecretBox::from_base64(k).ok())
    }
}

/// The fleet database and silos of the `opencrane dev` running under `state_dir`.
fn dev_environment(state_dir: &Path) -> anyhow::Result<(PgConnectOptions, DevSilos)> {
    let (port, password) = opencrane_localpg::running(&state_dir.join("postgres"))?;
    let server =
        PgConnectOptions::new().host("127.0.0.1").port(port).username(opencrane_localpg::SUPERUSER).password(&password);
    let key = std::fs::read_to_string(state_dir.join("credentials.key")).ok().map(|k| k.trim().to_owned());
    Ok((server.clone().database(crate::dev::FLEET_DATABASE), DevSilos::new(server, key)))
}

/// The fleet database and silos named by the flags, else those of the running dev environment;
/// with `--relay` the silos are reached through their managers instead (`None`).
fn environment(args: &MigrateSharedArgs) -> anyhow::Result<(PgConnectOptions, Option<DevSilos>)> {
    let (fleet, silos) = match (&args.fleet_database_url, &args.silo_server_url) {
        (Some(fleet), Some(silos)) => {
            let fleet: PgConnectOptions = fleet.parse().context("--fleet-database-url")?;
            let server: PgConnectOptions = silos.parse().context("--silo-server-url")?;
            let key = args.credentials_key_file.as_ref().map(|k| k.0.trim().to_owned());
            (fleet, DevSilos::new(server, key))
        }
        (Some(fleet), None) if args.relay => {
            return Ok((fleet.parse().context("--fleet-database-url")?, None));
        }
        (Some(_), None) => {
            anyhow::bail!("--fleet-database-url needs --silo-server-url (the silos' databases) or --relay")
        }
        _ => dev_environment(&args.state_dir)?,
    };
    Ok((fleet, (!args.relay).then_some(silos)))
}

/// The silo database volume the cluster provisioner gives every silo, in bytes.
pub fn cluster_silo_storage() -> Option<u64> {
    opencrane_migrate::run::parse_quantity(&opencrane_provision::build::ClusterSettings::new("").database_storage)
}

/// Runs the command.
pub async fn run(args: &MigrateSharedArgs) -> anyhow::Result<()> {
    let (fleet_options, direct) = environment(args)?;
    let fleet = PgPoolOptions::new()
        .max_connections(8)
        .connect_with(fleet_options)
        .await
        .context("connecting to the fleet database")?;
    let silos: Box<dyn Silos> = match direct {
        Some(silos) => Box::new(silos),
        None => Box::new(opencrane_migrate::relay::Relay::new(fleet.clone())),
    };
    let options = Options {
        customers: args.customers.clone(),
        until: if args.dry_run { Phase::Preflight } else { args.phase },
        wait: Duration::from_secs(args.wait_seconds),
        delta: args.delta,
        silo_storage: args.silo_database_size.or_else(|| args.relay.then(cluster_silo_storage).flatten()),
    };
    let bars = Bars::new();
    let report = opencrane_migrate::run::run(&args.source_url, &fleet, silos.as_ref(), &options, &|e| bars.show(&e))
        .await
        .map_err(|e| anyhow!("{e}"))?;
    bars.finish();
    let json = serde_json::to_string_pretty(&report)?;
    if let Some(path) = &args.report {
        std::fs::write(path, format!("{json}\n")).with_context(|| format!("writing {}", path.display()))?;
    }
    write_stdout(&format!("{json}\n"))?;
    if report.complete() {
        Ok(())
    } else {
        let stopped: Vec<String> =
            report.customers.iter().filter_map(|c| c.problem.as_ref().map(|p| format!("{}: {p}", c.name))).collect();
        Err(anyhow!(
            "not every customer reached {}: {} (run the same command again to resume)",
            options.until.as_str(),
            if stopped.is_empty() { "some are waiting".to_owned() } else { stopped.join("; ") }
        ))
    }
}

/// A progress bar per phase on a terminal; a line per event otherwise.
struct Bars {
    bars: std::sync::Mutex<Vec<(Phase, ProgressBar)>>,
    terminal: bool,
}

impl Bars {
    fn new() -> Self {
        use std::io::IsTerminal as _;
        Self { bars: std::sync::Mutex::new(Vec::new()), terminal: std::io::stderr().is_terminal() }
    }

    fn show(&self, event: &Event) {
        if !self.terminal {
            eprintln!("[{}] {}/{} {}", event.phase.as_str(), event.done, event.total, event.message);
            return;
        }
        let Ok(mut bars) = self.bars.lock() else { return };
        let bar = match bars.iter().find(|(p, _)| *p == event.phase) {
            Some((_, bar)) => bar.clone(),
            None => {
                let bar = ProgressBar::with_draw_target(Some(event.total as u64), ProgressDrawTarget::stderr());
                let style = ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
                bar.set_style(style.progress_chars("=> "));
                bar.set_prefix(event.phase.as_str());
                bars.push((event.phase, bar.clone()));
                bar
            }
        };
        bar.set_length(event.total as u64);
        bar.set_position(event.done as u64);
        bar.set_message(event.message.clone());
    }

    fn finish(&self) {
        if let Ok(bars) = self.bars.lock() {
            for (_, bar) in bars.iter() {
                bar.finish();
            }
        }
    }
}
