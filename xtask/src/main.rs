//! Project automation, run as `cargo xtask <command>`:
//!
//! - `dev [ARGS…]`  build the browser bundle and the binary, then run `opencrane dev ARGS…`
//! - `test`         every check CI runs: fmt, cargo deny, query-metadata drift, unit and
//!   database tests, browser end-to-end tests, chart tests; clippy (server side and wasm side
//!   separately) inside the builds they need
//! - `bench`        release build, then bundle size, idle memory and list-page latency
//! - `build [--release]`  the browser bundle (`target/site`) and the binary
//! - `link-order`   record which functions each role runs (valgrind) into the release linker's
//!   `server/symbol-order.txt`
//! - `prepare`      regenerate the committed sqlx query metadata (`crates/*-db/.sqlx`)
//!
//! It bootstraps what the build needs (the wasm target, the `wasm-bindgen` CLI at the version
//! the lockfile pins) and starts its own PostgreSQL from the installed server binaries. It depends
//! on nothing but `std` and `opencrane-localpg`, so it compiles in seconds.

mod bench;
mod link_order;
mod site;
mod tasks;

use std::{
    env,
    path::{Path, PathBuf},
    process::{Command, ExitCode},
    sync::atomic::{AtomicBool, Ordering},
};

/// Set for `test`: it builds everything once from whatever is there, so cargo's incremental
/// caches (gigabytes per workspace crate and build mode, more than the artifacts themselves) buy
/// nothing and are what filled CI's disk. `dev` and `build` keep them for quick rebuilds.
static WITHOUT_INCREMENTAL: AtomicBool = AtomicBool::new(false);

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("dev") => tasks::dev(&args[1..]),
        Some("test") => {
            WITHOUT_INCREMENTAL.store(true, Ordering::Relaxed);
            tasks::test(&args[1..])
        }
        Some("bench") => bench::run(&args[1..]),
        Some("build") => tasks::build(args.iter().any(|a| a == "--release")),
        Some("prepare") => tasks::prepare(),
        Some("link-order") => link_order::run(),
        Some("crds") => tasks::crds(),
        _ => {
            eprintln!(
                "usage: cargo xtask <dev [ARGS…] | test [--skip-e2e] | bench | build [--release] | prepare | link-order | crds>\n\n\
                 dev      run the product locally (fleet on http://127.0.0.1:3000, a demo silo beside it)\n\
                 test     every check CI runs\n\
                 bench    bundle size, idle memory and list-page latency (release build)\n\
                 build    the browser bundle and the binary\n\
                 prepare  regenerate the committed sqlx query metadata\n\
                 link-order  record the functions each role runs for the release link (valgrind)\n\
                 crds     regenerate the CRD YAML the charts carry"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("\nxtask: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The result of a task step; the error is a sentence for the terminal.
pub type Result<T = (), E = String> = std::result::Result<T, E>;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
}

/// Cargo's target directory (honours `CARGO_TARGET_DIR`).
pub fn target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root().join("target"))
}

/// `cargo` as invoked by the user (so rustup's toolchain file applies); without incremental
/// caches during `test` unless `CARGO_INCREMENTAL` says otherwise.
pub fn cargo() -> Command {
    let mut cmd = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    if WITHOUT_INCREMENTAL.load(Ordering::Relaxed) && env::var_os("CARGO_INCREMENTAL").is_none() {
        cmd.env("CARGO_INCREMENTAL", "0");
    }
    cmd
}

/// `cargo` for a release build: without the development-only `--cfg erase_components` that
/// `.cargo/config.toml` gives every other build (an empty `RUSTFLAGS` takes precedence over it),
/// so the shipped bundle and binary keep Leptos' static view types (smaller and faster).
pub fn release_cargo() -> Command {
    let mut cmd = cargo();
    cmd.env("RUSTFLAGS", "");
    cmd
}

/// Runs `cmd`, echoing it, and fails with its exit status.
pub fn run(cmd: &mut Command) -> Result {
    eprintln!("\n$ {}", display(cmd));
    let status = cmd.status().map_err(|e| format!("cannot run {}: {e}", display(cmd)))?;
    if status.success() { Ok(()) } else { Err(format!("`{}` failed ({status})", display(cmd))) }
}

/// The command line of `cmd`, for messages.
pub fn display(cmd: &Command) -> String {
    let mut parts = vec![cmd.get_program().to_string_lossy().into_owned()];
    parts.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}
