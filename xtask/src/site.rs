//! Building the browser bundles: the wasm target, the `wasm-bindgen` CLI pinned by the lockfile,
//! and the site directory the server serves: one bundle per role (`pkg/opencrane-fleet.{js,wasm}`,
//! `pkg/opencrane-silo.{js,wasm}`: each holds only its role's islands), the stylesheet
//! (`pkg/opencrane.css`), content-hashed copies of each and `pkg/bundle.json`, plus `public/`.

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
        // Built unoptimised: on 2 cores that takes about 2 minutes instead of 4 to 6 (cargo-deny,
        // wasm-bindgen), and each still runs in seconds (measured: cargo-deny's check 8 s instead
        // of 2; wasm-bindgen on the debug bundle 10 s instead of 2). CI builds them on every run.
        for (key, value) in [("OPT_LEVEL", "0"), ("DEBUG", "false"), ("LTO", "false"), ("CODEGEN_UNITS", "256")] {
            cmd.env(format!("CARGO_PROFILE_RELEASE_{key}"), value);
        }
        run(&mut cmd)
    };
    // A lagging registry index can fail --locked resolution; retry without it.
    install(true).or_else(|_| install(false))?;
    if matches(&local) { Ok(local) } else { Err(format!("{} does not report version {version}", local.display())) }
}

/// The file a release site holds when its wasm went through wasm-opt.
const OPTIMISED_MARK: &str = "wasm-opt.txt";

/// Whether the release site's wasm went through wasm-opt.
pub fn wasm_optimised(site: &Path) -> bool {
    site.join(OPTIMISED_MARK).is_file()
}

/// `wasm-opt` of npm's binaryen (its build keeps hydration intact), installed under
/// `target/tools` once; `None` without npm.
fn wasm_opt() -> Option<PathBuf> {
    let tools = target_dir().join("tools");
    let local = tools.join("node_modules/.bin/wasm-opt");
    if local.is_file() {
        return Some(local);
    }
    let installed = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
        .arg(&tools)
        .arg("binaryen@132")
        .status()
        .is_ok_and(|s| s.success());
    (installed && local.is_file()).then_some(local)
}

/// The release bundle through `wasm-opt -Oz` (`from` → `to`); without npm the bundle ships as
/// wasm-bindgen made it, and the build says so.
fn optimise(from: &Path, to: &Path) -> Result<bool> {
    let Some(tool) = wasm_opt() else {
        eprintln!("\nwasm-opt (npm binaryen@132) is not available: the release bundle is not optimised");
        return Ok(false);
    };
    run(Command::new(tool)
        .args(["-Oz", "--enable-bulk-memory", "--enable-nontrapping-float-to-int", "--enable-sign-ext", "-o"])
        .arg(to)
        .arg(from))?;
    Ok(true)
}

/// The roles, each with a bundle of its own islands (the `frontend` crate's feature of that name).
pub const ROLES: [&str; 2] = ["fleet", "silo"];

/// The file stem of `role`'s bundle (as `app::bundle::stem` names it).
pub fn stem(role: &str) -> String {
    format!("opencrane-{role}")
}

/// Copies each bundle file (and its `.gz`) to `<stem>.<hash>.<ext>`, the hash of its content,
/// and lists the names in `pkg/bundle.json` (`app::bundle::Manifest`) — what the pages refer to,
/// so the server may let browsers cache them for good. Hashed files of earlier builds are removed.
fn name_by_content(pkg: &Path) -> Result {
    use std::hash::{Hash as _, Hasher as _};
    for entry in fs::read_dir(pkg).map_err(|e| format!("reading {}: {e}", pkg.display()))? {
        let name = entry.map_err(|e| e.to_string())?.file_name().to_string_lossy().into_owned();
        if name.split('.').nth(1).is_some_and(|h| h.len() == 16 && h.chars().all(|c| c.is_ascii_hexdigit())) {
            fs::remove_file(pkg.join(&name)).map_err(|e| format!("removing {name}: {e}"))?;
        }
    }
    let hashed = |stem: &str, ext: &str| -> Result<String> {
        let plain = pkg.join(format!("{stem}.{ext}"));
        let bytes = fs::read(&plain).map_err(|e| format!("reading {}: {e}", plain.display()))?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        bytes.hash(&mut hasher);
        let hashed = format!("{stem}.{:016x}.{ext}", hasher.finish());
        fs::copy(&plain, pkg.join(&hashed)).map_err(|e| format!("writing {hashed}: {e}"))?;
        fs::copy(pkg.join(format!("{stem}.{ext}.gz")), pkg.join(format!("{hashed}.gz")))
            .map_err(|e| format!("writing {hashed}.gz: {e}"))?;
        Ok(hashed)
    };
    let mut entries = vec![format!("\"css\": \"{}\"", hashed("opencrane", "css")?)];
    for role in ROLES {
        let stem = stem(role);
        let (js, wasm) = (hashed(&stem, "js")?, hashed(&stem, "wasm")?);
        entries.push(format!("\"{role}\": {{\"js\": \"{js}\", \"wasm\": \"{wasm}\"}}"));
    }
    fs::write(pkg.join("bundle.json"), format!("{{{}}}\n", entries.join(", ")))
        .map_err(|e| format!("writing the bundle manifest: {e}"))
}

/// Writes `file.gz` beside `file` (best compression for a release, a quick one otherwise).
fn precompress(file: &Path, release: bool) -> Result {
    let out = Command::new("gzip")
        .args([if release { "-9" } else { "-1" }, "--no-name", "--keep", "--force"])
        .arg(file)
        .output()
        .map_err(|e| format!("gzip is needed to precompress the bundle: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("gzip {}: {}", file.display(), String::from_utf8_lossy(&out.stderr)))
    }
}

/// Where a build profile's site lives.
pub fn site_dir(release: bool) -> PathBuf {
    target_dir().join(if release { "site-release" } else { "site" })
}

/// Clippy's driver of the project's toolchain (the `clippy` component rust-toolchain.toml lists).
pub fn clippy_driver() -> Result<PathBuf> {
    let out = Command::new("rustc")
        .current_dir(root())
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("running rustc: {e}"))?;
    let driver = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("bin").join("clippy-driver");
    if driver.is_file() {
        Ok(driver)
    } else {
        Err(format!(
            "{} is missing: install the toolchain's clippy component (rustup component add clippy)",
            driver.display()
        ))
    }
}

/// Lints the workspace's crates in the same compilation that builds them: clippy's driver as
/// cargo's workspace wrapper (what `cargo clippy` itself does, for a `check`), warnings denied.
/// A separate `cargo clippy --all-targets` type-checks every one of the ~800 crates a second
/// time, about 8 minutes of CI on 2 cores, and another 2 for the wasm side; this costs only the
/// lints. Builds that do not lint (`dev`, `build`) leave it out, so their artifacts are apart.
pub fn linting<'a>(cmd: &'a mut Command, driver: &Path) -> &'a mut Command {
    // clippy-driver reads its own arguments from CLIPPY_ARGS, separated by this marker.
    cmd.env("RUSTC_WORKSPACE_WRAPPER", driver).env("CLIPPY_ARGS", "-Dwarnings__CLIPPY_HACKERY__")
}

/// Builds the hydrate bundle and assembles the site directory; returns it.
pub fn build(release: bool) -> Result<PathBuf> {
    build_with(release, None)
}

/// [`build`] (debug) with the wasm side's crates linted by `driver` (see [`linting`]).
pub fn build_linted(driver: &Path) -> Result<PathBuf> {
    build_with(false, Some(driver))
}

/// Builds `role`'s bundle into `pkg` (`<stem>.js`, `<stem>.wasm`); whether wasm-opt ran. Each is
/// its own cargo invocation (the feature selects the islands), and both share every dependency's
/// build: only `app` and `frontend` compile twice.
fn build_role(role: &str, release: bool, lint: Option<&Path>, wasm_bindgen: &Path, pkg: &Path) -> Result<bool> {
    let profile = if release { "wasm-release" } else { "dev" };
    let mut cmd = if release { crate::release_cargo() } else { cargo() };
    cmd.args([
        "build",
        "--locked",
        "-p",
        "frontend",
        "--lib",
        "--target",
        "wasm32-unknown-unknown",
        "--profile",
        profile,
    ]);
    cmd.arg("--features").arg(format!("frontend/{role}"));
    if let Some(driver) = lint {
        // `app` named too, so its hydrate build is linted as a package of its own.
        linting(&mut cmd, driver).args(["-p", "app"]);
    }
    run(&mut cmd)?;
    let profile_dir = if release { "wasm-release" } else { "debug" };
    let built = target_dir().join("wasm32-unknown-unknown").join(profile_dir).join("frontend.wasm");
    let stem = stem(role);
    run(Command::new(wasm_bindgen)
        .args(["--target", "web", "--no-typescript", "--out-name", &stem, "--out-dir"])
        .arg(pkg)
        .arg(&built))?;
    let (made, wasm) = (pkg.join(format!("{stem}_bg.wasm")), pkg.join(format!("{stem}.wasm")));
    if release && optimise(&made, &wasm)? {
        fs::remove_file(&made).map_err(|e| format!("removing {}: {e}", made.display()))?;
        Ok(true)
    } else {
        fs::rename(&made, &wasm).map_err(|e| format!("renaming the wasm: {e}"))?;
        Ok(false)
    }
}

fn build_with(release: bool, lint: Option<&Path>) -> Result<PathBuf> {
    ensure_wasm_target()?;
    let wasm_bindgen = ensure_wasm_bindgen()?;
    let site = site_dir(release);
    let pkg = site.join("pkg");
    fs::create_dir_all(&pkg).map_err(|e| format!("creating {}: {e}", pkg.display()))?;
    let _ = fs::remove_file(site.join(OPTIMISED_MARK));
    // The one bundle of both roles that sites built before the split held.
    for old in ["opencrane.js", "opencrane.wasm", "opencrane.js.gz", "opencrane.wasm.gz"] {
        let _ = fs::remove_file(pkg.join(old));
    }
    let mut optimised = release;
    for role in ROLES {
        optimised &= build_role(role, release, lint, &wasm_bindgen, &pkg)?;
    }
    if optimised {
        fs::write(site.join(OPTIMISED_MARK), "wasm-opt -Oz\n").map_err(|e| format!("marking the site: {e}"))?;
    }
    fs::copy(root().join("style/main.css"), pkg.join("opencrane.css"))
        .map_err(|e| format!("copying the stylesheet: {e}"))?;
    // What the server sends to a browser that accepts gzip (`/pkg` serves the `.gz` beside a file).
    precompress(&pkg.join("opencrane.css"), release)?;
    for role in ROLES {
        for ext in ["js", "wasm"] {
            precompress(&pkg.join(format!("{}.{ext}", stem(role))), release)?;
        }
    }
    name_by_content(&pkg)?;
    for entry in fs::read_dir(root().join("public")).map_err(|e| format!("reading public/: {e}"))? {
        let entry = entry.map_err(|e| e.to_string())?;
        if entry.path().is_file() {
            fs::copy(entry.path(), site.join(entry.file_name()))
                .map_err(|e| format!("copying {}: {e}", entry.path().display()))?;
        }
    }
    Ok(site)
}
