//! Building the browser bundle: the wasm target, the `wasm-bindgen` CLI pinned by the lockfile,
//! and the site directory the server serves (`pkg/opencrane.{js,wasm,css}` plus `public/`).

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use crate::{Result, cargo, root, run, target_dir};

/// The `wasm-bindgen` version in `Cargo.lock` (the CLI must match it exactly).
pub fn locked_wasm_bindgen_version() -> Result<String> {
    let lock = fs::read_to_string(root().join("Cargo.lock")).map_err(|e| format!("reading Cargo.lock: {e}"))?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "name = \"wasm-bindgen\""
            && let Some(version) = lines.next().and_then(|l| l.trim().strip_prefix("version = \""))
        {
            return Ok(version.trim_end_matches('"').to_owned());
        }
    }
    Err("Cargo.lock does not pin wasm-bindgen".into())
}

/// Makes sure the wasm32 target is installed (rust-toolchain.toml lists it; older rustup
/// versions do not install listed targets on their own).
pub fn ensure_wasm_target() -> Result {
    let Ok(out) = Command::new("rustup").current_dir(root()).args(["target", "list", "--installed"]).output() else {
        return Ok(()); // No rustup: assume the toolchain was set up by other means.
    };
    if String::from_utf8_lossy(&out.stdout).lines().any(|l| l.trim() == "wasm32-unknown-unknown") {
        return Ok(());
    }
    run(Command::new("rustup").current_dir(root()).args(["target", "add", "wasm32-unknown-unknown"]))
}

/// Returns a `wasm-bindgen` CLI of the locked version: one on `PATH` if it matches, else the one
/// under `target/tools`, installing it there first if needed (about two minutes).
pub fn ensure_wasm_bindgen() -> Result<PathBuf> {
    ensure_tool("wasm-bindgen-cli", "wasm-bindgen", &locked_wasm_bindgen_version()?)
}

/// Returns the binary `bin` of crates.io's `package` at exactly `version`: one on `PATH` if it
/// reports that version, else the one under `target/tools`, `cargo install`ing it there first.
pub fn ensure_tool(package: &str, bin: &str, version: &str) -> Result<PathBuf> {
    let matches = |bin: &Path| {
        Command::new(bin)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().nth(1) == Some(version))
            .unwrap_or(false)
    };
    let on_path = PathBuf::from(bin);
    if matches(&on_path) {
        return Ok(on_path);
    }
    let tools = target_dir().join("tools");
    let local = tools.join("bin").join(bin);
    if matches(&local) {
        return Ok(local);
    }
    eprintln!("\nInstalling {package} {version} into {} (once; a few minutes)…", tools.display());
    let install = |locked: bool| {
        let mut cmd = cargo();
        cmd.args(["install", package, "--version", &format!("={version}"), "--root"]).arg(&tools);
        if locked {
            cmd.arg("--locked");
        }
        // The tool's own build must not inherit this workspace's settings.
        cmd.current_dir(std::env::temp_dir()).env_remove("CARGO_TARGET_DIR");
        run(&mut cmd)
    };
    // A lagging registry index can fail --locked resolution; retry without it.
    install(true).or_else(|_| install(false))?;
    if matches(&local) { Ok(local) } else { Err(format!("{} does not report version {version}", local.display())) }
}

/// Where a build profile's site lives.
pub fn site_dir(release: bool) -> PathBuf {
    target_dir().join(if release { "site-release" } else { "site" })
}

/// Builds the hydrate bundle and assembles the site directory; returns it.
pub fn build(release: bool) -> Result<PathBuf> {
    ensure_wasm_target()?;
    let wasm_bindgen = ensure_wasm_bindgen()?;
    let profile = if release { "wasm-release" } else { "dev" };
    run(cargo().args([
        "build",
        "--locked",
        "-p",
        "frontend",
        "--lib",
        "--target",
        "wasm32-unknown-unknown",
        "--profile",
        profile,
    ]))?;
    let profile_dir = if release { "wasm-release" } else { "debug" };
    let wasm = target_dir().join("wasm32-unknown-unknown").join(profile_dir).join("frontend.wasm");
    let site = site_dir(release);
    let pkg = site.join("pkg");
    fs::create_dir_all(&pkg).map_err(|e| format!("creating {}: {e}", pkg.display()))?;
    run(Command::new(&wasm_bindgen)
        .args(["--target", "web", "--no-typescript", "--out-name", "opencrane", "--out-dir"])
        .arg(&pkg)
        .arg(&wasm))?;
    // The server asks for /pkg/opencrane.wasm (it is built with LEPTOS_OUTPUT_NAME set).
    fs::rename(pkg.join("opencrane_bg.wasm"), pkg.join("opencrane.wasm"))
        .map_err(|e| format!("renaming the wasm: {e}"))?;
    fs::copy(root().join("style/main.css"), pkg.join("opencrane.css"))
        .map_err(|e| format!("copying the stylesheet: {e}"))?;
    for entry in fs::read_dir(root().join("public")).map_err(|e| format!("reading public/: {e}"))? {
        let entry = entry.map_err(|e| e.to_string())?;
        if entry.path().is_file() {
            fs::copy(entry.path(), site.join(entry.file_name()))
                .map_err(|e| format!("copying {}: {e}", entry.path().display()))?;
        }
    }
    Ok(site)
}
