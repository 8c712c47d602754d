//! `dev`, `build`, `test` and `prepare`.

use std::{
    collections::BTreeMap,
    fs,
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::Command,
};

use opencrane_localpg::{Binaries, LocalPostgres};

use crate::{Result, cargo, release_cargo, root, run, site, target_dir};

/// Native (non-wasm) packages: linted, tested, and built together so their features unify the
/// same way every time (no rebuilds between steps).
const NATIVE: &[&str] = &[
    "opencrane",
    "app",
    "opencrane-db",
    "opencrane-common-db",
    "opencrane-crd",
    "opencrane-deploy",
    "opencrane-provision",
    "opencrane-fake-kube",
    "opencrane-entitlements",
    "opencrane-portal",
    "opencrane-zitadel",
    "opencrane-fleet-db",
    "opencrane-silo-db",
    "opencrane-types",
    "opencrane-localpg",
    "opencrane-migrate",
    "opencrane-e2e",
    "xtask",
];

/// Query crates: the schema each is checked against, the crate, and its directory.
const SCHEMAS: &[(&str, &str, &str)] = &[
    ("fleet", "opencrane-fleet-db", "crates/fleet-db"),
    ("silo", "opencrane-silo-db", "crates/silo-db"),
    // The tables both schemas share; checked against the fleet's, tested against both.
    ("fleet", "opencrane-common-db", "crates/common-db"),
];

fn binary_path() -> PathBuf {
    target_dir().join("debug").join("opencrane")
}

/// Builds the browser bundle and the binary (debug, or release with `--release`).
pub fn build(release: bool) -> Result {
    let site = site::build(release)?;
    let mut cmd = if release { release_cargo() } else { cargo() };
    cmd.args(["build", "--locked", "-p", "opencrane", "--bin", "opencrane"]);
    if release {
        cmd.arg("--release");
    }
    run(&mut cmd)?;
    eprintln!("\nsite: {}", site.display());
    Ok(())
}

/// Builds, then replaces this process with `opencrane dev ARGS…`.
pub fn dev(args: &[String]) -> Result {
    let site = site::build(false)?;
    run(cargo().args(["build", "--locked", "-p", "opencrane", "--bin", "opencrane"]))?;
    let err =
        Command::new(binary_path()).arg("dev").args(args).current_dir(root()).env("LEPTOS_SITE_ROOT", site).exec();
    Err(format!("cannot start opencrane: {err}"))
}

/// A PostgreSQL for the test run, with a database per schema migrated by plain `psql`.
struct TestDatabase {
    server: LocalPostgres,
}

impl TestDatabase {
    fn start() -> Result<Self> {
        let dir = target_dir().join("xtask").join("postgres");
        // A fresh cluster every run: tests must not depend on leftovers.
        let _ = fs::remove_dir_all(&dir);
        eprintln!("\nStarting PostgreSQL for the tests in {}…", dir.display());
        let server = LocalPostgres::start(&dir).map_err(|e| e.to_string())?;
        Ok(Self { server })
    }

    /// Creates `name` and applies `migrations/<schema>/*.sql` in order.
    fn migrated(&self, name: &str, schema: &str) -> Result<String> {
        let psql = Binaries::discover().map_err(|e| e.to_string())?.bindir().join("psql");
        let quiet = |cmd: &mut Command| -> Result {
            let out = cmd.output().map_err(|e| format!("running psql: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!("psql failed: {}", String::from_utf8_lossy(&out.stderr)))
            }
        };
        quiet(
            Command::new(&psql)
                .arg(self.server.url("postgres"))
                .args(["-v", "ON_ERROR_STOP=1", "-c"])
                .arg(format!("CREATE DATABASE {name}")),
        )?;
        let mut files: Vec<PathBuf> = fs::read_dir(root().join("migrations").join(schema))
            .map_err(|e| format!("reading migrations/{schema}: {e}"))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "sql"))
            .collect();
        files.sort();
        // Each in one transaction, as sqlx applies them.
        for file in files {
            quiet(
                Command::new(&psql)
                    .arg(self.server.url(name))
                    .args(["-q", "-1", "-v", "ON_ERROR_STOP=1", "-f"])
                    .arg(&file),
            )?;
        }
        Ok(self.server.url(name))
    }
}

/// Regenerates `crate_name`'s query metadata into `out` by recompiling it online.
fn generate_metadata(crate_name: &str, database_url: &str, out: &Path) -> Result {
    let _ = fs::remove_dir_all(out);
    fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    // A target dir of its own: cleaning the crate to force the macros to run again must not
    // invalidate the main build (everything above the query crate would recompile).
    let target = target_dir().join("xtask").join("sqlx-target");
    run(cargo().args(["clean", "-p", crate_name]).env("CARGO_TARGET_DIR", &target))?;
    run(cargo()
        .args(["check", "--locked", "--all-targets", "-p", crate_name])
        .env("CARGO_TARGET_DIR", &target)
        .env("SQLX_OFFLINE", "false")
        .env("SQLX_OFFLINE_DIR", out)
        .env("DATABASE_URL", database_url))
}

fn read_dir_files(dir: &Path) -> BTreeMap<String, String> {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| {
                    (e.file_name().to_string_lossy().into_owned(), fs::read_to_string(e.path()).unwrap_or_default())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Regenerates the committed sqlx metadata (`crates/<schema>-db/.sqlx`).
pub fn prepare() -> Result {
    let db = TestDatabase::start()?;
    for (i, (schema, crate_name, dir)) in SCHEMAS.iter().enumerate() {
        let url = db.migrated(&format!("prepare_{i}_{schema}"), schema)?;
        generate_metadata(crate_name, &url, &root().join(dir).join(".sqlx"))?;
    }
    eprintln!("\nQuery metadata regenerated; commit crates/*-db/.sqlx.");
    Ok(())
}

/// The chart tests (`charts/tests`, Python: helm-python-sdk renders and lints, kubernetes-validate
/// validates) in a virtualenv of their own under the target directory, reinstalled only when
/// `charts/tests/requirements.txt` changes. Needs the freshly built `opencrane` binary.
fn chart_tests() -> Result {
    let venv = target_dir().join("xtask").join("venv");
    let python = venv.join("bin").join("python");
    let requirements = root().join("charts").join("tests").join("requirements.txt");
    let wanted = fs::read_to_string(&requirements).map_err(|e| format!("reading {}: {e}", requirements.display()))?;
    let stamp = venv.join("installed-requirements.txt");
    if fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        let _ = fs::remove_dir_all(&venv);
        eprintln!("\nInstalling the chart tests' Python packages into {}…", venv.display());
        let created = Command::new("python3").args(["-m", "venv"]).arg(&venv).status();
        if !created.is_ok_and(|s| s.success()) {
            return Err("the chart tests need Python 3 with venv (Debian: `apt-get install python3 python3-venv`; .ci/run installs them)".into());
        }
        run(Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements))?;
        fs::write(&stamp, &wanted).map_err(|e| format!("writing {}: {e}", stamp.display()))?;
    }
    run(Command::new(&python)
        .args(["-m", "unittest", "discover", "-s", "charts/tests", "-v"])
        .current_dir(root())
        .env("OPENCRANE_BIN", binary_path()))
}

/// Every check CI runs. `--skip-e2e` leaves out the browser tests (for quick local runs only).
pub fn test(args: &[String]) -> Result {
    let skip_e2e = args.iter().any(|a| a == "--skip-e2e");
    if !skip_e2e {
        check_browser()?;
        install_test_provider()?;
    }
    site::ensure_wasm_target()?;

    run(cargo().args(["fmt", "--all", "--check"]))?;
    supply_chain()?;
    // Clippy runs inside the builds below (`site::linting`), not as passes of their own.

    let db = TestDatabase::start()?;
    for (i, (schema, crate_name, dir)) in SCHEMAS.iter().enumerate() {
        let url = db.migrated(&format!("drift_{i}_{schema}"), schema)?;
        let fresh = target_dir().join("xtask").join(format!("sqlx-{crate_name}"));
        generate_metadata(crate_name, &url, &fresh)?;
        let committed = root().join(dir).join(".sqlx");
        if read_dir_files(&fresh) != read_dir_files(&committed) {
            return Err(format!(
                "the committed query metadata in {} is out of date with the queries or migrations; run `cargo xtask prepare` and commit it",
                committed.display()
            ));
        }
    }
    eprintln!("\nQuery metadata matches the queries and migrations.");

    // Unit, database, HTTP and browser tests in one invocation, so the `opencrane` binary the
    // browser tests drive is built with exactly the features the other tests use.
    let mut packages: Vec<&str> = NATIVE.to_vec();
    if skip_e2e {
        packages.retain(|p| *p != "opencrane-e2e");
    }
    let clippy = site::clippy_driver()?;
    let test_command = || {
        let mut cmd = cargo();
        site::linting(&mut cmd, &clippy);
        cmd.args(["test", "--locked"]);
        for package in &packages {
            cmd.args(["-p", package]);
        }
        cmd
    };
    run(test_command().arg("--no-run"))?;
    chart_tests()?;
    let site = site::build_linted(&clippy)?;
    run(test_command()
        .env("DATABASE_URL", db.server.url("postgres"))
        .env("OPENCRANE_BIN", binary_path())
        .env("LEPTOS_SITE_ROOT", site))
}

/// The cargo-deny release the supply-chain check runs (installed under `target/tools` once).
const CARGO_DENY: &str = "0.20.2";

/// `cargo deny` against `deny.toml`: licences, bans (deprecated crates, a second copy of the
/// runtime, router, drivers) and sources, always; RustSec advisories when the advisory database is
/// on the machine (`CARGO_HOME/advisory-dbs`, which `cargo deny fetch` fills from GitHub), since
/// this project's CI cannot reach GitHub. It says which it ran.
pub fn supply_chain() -> Result {
    let deny = site::ensure_tool("cargo-deny", "cargo-deny", CARGO_DENY)?;
    let mut checks = vec!["licenses", "bans", "sources"];
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let advisory_db = cargo_home.map(|h| h.join("advisory-dbs"));
    if advisory_db.as_deref().is_some_and(|d| std::fs::read_dir(d).is_ok_and(|mut e| e.next().is_some())) {
        checks.push("advisories");
    } else {
        eprintln!(
            "\ncargo deny: no RustSec advisory database on this machine (`cargo deny fetch` needs GitHub); \
             checking licences, bans and sources"
        );
    }
    // Quiet on the known duplicate majors (warnings); errors and the summary still print.
    run(Command::new(deny).current_dir(root()).args(["--log-level", "error", "check"]).args(checks))
}

/// The sign-in tests run a real OpenID Provider (npm `oidc-provider`) under Node.js; install its
/// locked dependencies once.
pub fn install_test_provider() -> Result {
    let dir = root().join("end2end").join("oidc");
    // The OpenID Provider and axe-core (the accessibility test).
    if ["oidc-provider", "axe-core"].iter().all(|p| dir.join("node_modules").join(p).is_dir()) {
        return Ok(());
    }
    let npm = Command::new("npm").arg("--version").output();
    if npm.map(|o| !o.status.success()).unwrap_or(true) {
        return Err("the sign-in tests need Node.js and npm (Debian: `apt-get install nodejs npm`)".into());
    }
    run(Command::new("npm").args(["ci", "--no-audit", "--no-fund", "--prefix"]).arg(&dir))
}

/// Chromium and its driver must be installed for the browser tests.
pub fn check_browser() -> Result {
    let found = |name: &str| {
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file())).unwrap_or(false)
    };
    if (found("chromium") || found("chromium-browser") || found("google-chrome")) && found("chromedriver") {
        Ok(())
    } else {
        Err("the browser tests need Chromium and ChromeDriver: `apt-get install chromium chromium-driver` \
             (Debian/Ubuntu; .ci/run installs them), or pass --skip-e2e for a quick local run"
            .into())
    }
}

/// Where the charts carry the generated CRDs, and the `opencrane crd` flags that print each.
pub const CRD_FILES: &[(&str, &[&str])] = &[
    ("charts/opencrane-fleet/crds/opencrane.io.yaml", &[]),
    ("charts/opencrane-silo/templates/crds.yaml", &["--silo-template"]),
];

/// Regenerates the CRD YAML in both charts from the Rust types (`opencrane crd`).
pub fn crds() -> Result {
    for (file, flags) in CRD_FILES {
        let out = cargo()
            .args(["run", "--quiet", "--locked", "-p", "opencrane", "--bin", "opencrane", "--", "crd"])
            .args(*flags)
            .output()
            .map_err(|e| format!("running opencrane crd: {e}"))?;
        if !out.status.success() {
            return Err(format!("opencrane crd failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let path = root().join(file);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        fs::write(&path, &out.stdout).map_err(|e| format!("writing {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
