//! The `opencrane` binary's library: command-line parsing, start-up of each role, the HTTP
//! stack around the Leptos app, the REST API, and the embedded development environment.
//!
//! `main.rs` only parses and dispatches to [`run`]; everything testable lives here.

// Leptos view types nest deeply; release builds compute their layouts here too.
#![recursion_limit = "256"]

pub mod cli;
pub mod deploy;
pub mod dev;
pub mod http;
pub mod links;
pub mod provisioner;
pub mod roles;
pub mod sync;
pub mod telemetry;

use anyhow::Context as _;

use crate::cli::{Cli, Command};

/// Runs the chosen subcommand to completion.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::FleetManager(args) => roles::run_fleet(args).await,
        Command::ClustertenantManager(args) => roles::run_silo(args).await,
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
        Command::Crd { silo_template } => {
            let yaml = if silo_template { opencrane_crd::silo_crds_template() } else { opencrane_crd::crds_yaml() };
            print!("{}", yaml.context("rendering the CRDs")?);
            Ok(())
        }
    }
}
