//! `opencrane`: one binary, two roles (`fleet-manager`, `clustertenant-manager`), plus `migrate`
//! and the embedded default `dev`. See `opencrane --help`.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = opencrane::cli::Cli::parse();
    let service = cli.command.service_name();
    let result = opencrane::telemetry::init(&cli.telemetry, service).and_then(|()| {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        runtime.block_on(opencrane::run(cli))
    });
    opencrane::telemetry::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // The chain of causes on one line; backtraces are for panics, not for bad input.
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
