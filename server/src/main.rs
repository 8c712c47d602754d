//! `opencrane`: one binary, two roles (`fleet-manager`, `clustertenant-manager`), plus `migrate`
//! and the embedded default `dev`. See `opencrane --help`.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cli = opencrane::cli::Cli::parse();
    opencrane::telemetry::init(&cli.telemetry)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(opencrane::run(cli))
}
