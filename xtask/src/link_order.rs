//! `cargo xtask link-order`: writes `server/symbol-order.txt`, the order in which the release
//! linker lays out the functions each role runs (see `server/build.rs`).
//!
//! It builds the release binary, then runs each manager under valgrind's callgrind on a database
//! of its own: once to start and stand idle (as `cargo xtask bench` measures it), once to start and
//! serve the pages and routes the bench and an admin's first visit load. The list is each role's
//! start-up functions (the silo's first), then the functions only requests ran, then those only
//! the bench's load on the silo's list routes ran (ten connections at once, each request answered
//! again and read afresh: the pool grows, kept answers make room); within a group by name, so the
//! file changes only where the code does. The load's own group keeps the code only a load runs
//! together after what one request of each runs, so a silo that served a load maps a few more
//! pages of its code, not one page here and there over the whole binary.
//!
//! Needs valgrind (Debian: `apt-get install valgrind`). Run it when the bench's idle RSS grows or
//! its "link order" line reports many functions missing: most names survive edits (they carry the
//! crate and the path, not the code), but a dependency's upgrade renames its functions, and the
//! functions ThinLTO made local to a code unit (`….llvm.<hash of the unit>`) are renamed by any
//! edit to their unit (one page's change renamed 819 of 6,423).

use std::{
    collections::{BTreeSet, HashMap},
    fs,
    path::Path,
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use opencrane_localpg::LocalPostgres;

use crate::{
    Result,
    bench::{self, Server},
    root, site, target_dir, tasks,
};

/// The file the release linker reads (relative to the repository root).
pub const ORDER_FILE: &str = "server/symbol-order.txt";

/// The paths each role's request run visits (three times each), beside its static files.
const SILO_PAGES: &[&str] = &[
    "/",
    "/users",
    "/users/u1",
    "/groups",
    "/policies",
    "/access",
    "/budgets",
    "/models",
    "/members",
    "/audit",
    "/sessions",
    "/tokens",
];
const FLEET_PAGES: &[&str] = &[
    "/",
    "/cluster-tenants",
    "/cluster-tenants?page=2",
    "/cluster-tenants?q=cust-1",
    "/cluster-tenants/new",
    "/cluster-tenants/cust-1",
    "/cluster-tenants/cust-1/members",
    "/billing",
    "/dns",
    "/identity",
    "/audit",
];
const FLEET_ROUTES: &[&str] = &["/api/v1/cluster-tenants"];

/// One manager to profile: its label, arguments, what its request run visits, and the routes
/// its load run loads (none: no load run).
struct Role {
    label: &'static str,
    args: Vec<String>,
    port: u16,
    paths: Vec<&'static str>,
    load: Vec<&'static str>,
}

/// What a profile's run does once the manager is ready and idle.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    /// Nothing: start-up only.
    Idle,
    /// Each of the role's paths and its pages' static files.
    Requests,
    /// The requests, then wrk on each load route as the bench runs it.
    Load,
}

impl Run {
    fn label(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Requests => "served",
            Self::Load => "loaded",
        }
    }
}

/// Runs the command.
pub fn run() -> Result {
    Command::new("valgrind").arg("--version").stdout(Stdio::null()).status().map_err(|e| {
        format!("valgrind is needed to record which functions run (Debian: apt-get install valgrind): {e}")
    })?;
    tasks::build(true)?;
    let site = site::site_dir(true);
    let binary = fs::canonicalize(target_dir().join("release/opencrane")).map_err(|e| e.to_string())?;
    let work = target_dir().join("xtask/link-order");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let pg = LocalPostgres::start(&work.join("postgres")).map_err(|e| e.to_string())?;
    bench::seed_silo(&binary, &pg)?;
    bench::psql(&pg, "postgres", "CREATE DATABASE fleet")?;
    crate::run(Command::new(&binary).args(["migrate", "--schema", "fleet", "--database-url", &pg.url("fleet")]))?;
    bench::psql(
        &pg,
        "fleet",
        "INSERT INTO cluster_tenants (name, display_name) \
         SELECT 'cust-' || i, 'Customer ' || i FROM generate_series(1, 120) i; \
         INSERT INTO org_memberships (cluster_tenant, subject, role) \
         SELECT name, 'owner-' || name, 'owner' FROM cluster_tenants; ANALYZE;",
    )?;

    let silo_port = bench::free_port()?;
    let fleet_port = bench::free_port()?;
    let silo_paths = bench::SILO_ROUTES.iter().map(|(_, path)| *path).chain(SILO_PAGES.iter().copied());
    let roles = [
        Role {
            label: "silo",
            args: bench::silo_args(silo_port, &pg.url("silo")),
            port: silo_port,
            paths: silo_paths.collect(),
            load: bench::SILO_ROUTES.iter().map(|(_, path)| *path).collect(),
        },
        Role {
            label: "fleet",
            args: bench::fleet_args(fleet_port, &pg.url("fleet"), "off"),
            port: fleet_port,
            paths: FLEET_PAGES.iter().chain(FLEET_ROUTES).copied().collect(),
            load: Vec::new(),
        },
    ];
    let binary_name = binary.to_string_lossy().into_owned();
    let mut start_up = Vec::new();
    let mut serving = Vec::new();
    let mut loaded = Vec::new();
    for role in &roles {
        let ran = |run| profile(&binary, &site, role, &work, run).map(|p| ran_in(&p, &binary_name));
        start_up.push(ran(Run::Idle)?);
        serving.push(ran(Run::Requests)?);
        loaded.push(if role.load.is_empty() { BTreeSet::new() } else { ran(Run::Load)? });
    }
    drop(pg);

    let mut listed = BTreeSet::new();
    let mut order = String::new();
    let mut counts = Vec::new();
    for (label, group) in [("silo start-up", &start_up[0]), ("fleet start-up", &start_up[1])]
        .into_iter()
        .chain([("silo requests", &serving[0]), ("fleet requests", &serving[1])])
        .chain([("silo load", &loaded[0])])
    {
        let mut added = 0;
        for name in group {
            if listed.insert(name.as_str()) {
                order.push_str(name);
                order.push('\n');
                added += 1;
            }
        }
        counts.push(format!("{label} {added}"));
    }
    if start_up.iter().any(BTreeSet::is_empty) {
        return Err("callgrind recorded no function of the binary for a role's start-up".into());
    }
    fs::write(root().join(ORDER_FILE), order).map_err(|e| format!("writing {ORDER_FILE}: {e}"))?;
    eprintln!(
        "\n{ORDER_FILE}: {} functions ({}); rebuild the release binary to use it",
        listed.len(),
        counts.join(", ")
    );
    Ok(())
}

/// Runs `role` under callgrind until it is ready and 2 s idle, then does `run`: visits each of
/// its paths and the static files its pages link three times, and loads its load routes;
/// returns the profile.
fn profile(binary: &Path, site: &Path, role: &Role, work: &Path, run: Run) -> Result<String> {
    let out = work.join(format!("{}-{}.callgrind", role.label, run.label()));
    let mut valgrind = Command::new("valgrind");
    valgrind
        .args(["--tool=callgrind", "--demangle=no", "--dump-instr=no", "--quiet"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(binary)
        .args(&role.args)
        .env("GLIBC_TUNABLES", bench::image_tunables()?);
    let child = bench::as_server(&mut valgrind, site)
        .spawn()
        .map_err(|e| format!("starting the {} manager under valgrind: {e}", role.label))?;
    let server = Server(child);
    let started = Instant::now();
    while !bench::get_ok(role.port, "/readyz") {
        if started.elapsed() > Duration::from_secs(180) {
            return Err(format!("the {} manager did not become ready under valgrind within 180 s", role.label));
        }
        thread::sleep(Duration::from_millis(100));
    }
    thread::sleep(Duration::from_secs(2));
    if run != Run::Idle {
        let mut assets = BTreeSet::new();
        for path in &role.paths {
            for _ in 0..3 {
                let (_, body) = bench::fetch(role.port, path, true)?;
                assets.extend(body.split('"').filter(|part| part.starts_with("/pkg/")).map(str::to_owned));
                bench::fetch(role.port, path, false)?;
            }
        }
        for asset in &assets {
            bench::fetch(role.port, asset, false)?;
        }
    }
    if run == Run::Load {
        let fresh = bench::fresh_script()?;
        for path in &role.load {
            let url = format!("http://127.0.0.1:{}{path}", role.port);
            bench::wrk_at(&url, bench::SILO_CONNECTIONS, None)?;
            bench::wrk_at(&url, bench::SILO_CONNECTIONS, Some(&fresh))?;
        }
    }
    // Stopped by SIGTERM, the manager shuts down and callgrind writes the profile.
    drop(server);
    fs::read_to_string(&out).map_err(|e| format!("reading {}: {e}", out.display()))
}

/// The (mangled) names of the functions of the object `binary` that ran, from a callgrind
/// profile: each `fn=` block under an `ob=` naming it. Ids stand for names after their first
/// use (`fn=(12) name`, then `fn=(12)`, shared with `cfn=`; objects likewise with `cob=`), and
/// `'2` marks a recursion level of the same function.
fn ran_in(profile: &str, binary: &str) -> BTreeSet<String> {
    fn define(table: &mut HashMap<String, String>, value: &str) -> String {
        let Some(rest) = value.strip_prefix('(') else { return value.to_owned() };
        let Some((id, name)) = rest.split_once(')') else { return value.to_owned() };
        let name = name.trim_start();
        if !name.is_empty() {
            table.insert(id.to_owned(), name.to_owned());
        }
        table.get(id).cloned().unwrap_or_default()
    }
    let (mut objects, mut names) = (HashMap::new(), HashMap::new());
    let mut current = String::new();
    let mut ran = BTreeSet::new();
    for line in profile.lines() {
        if let Some(value) = line.strip_prefix("ob=") {
            current = define(&mut objects, value);
        } else if let Some(value) = line.strip_prefix("cob=") {
            define(&mut objects, value);
        } else if let Some(value) = line.strip_prefix("cfn=") {
            define(&mut names, value);
        } else if let Some(value) = line.strip_prefix("fn=") {
            let name = define(&mut names, value);
            let name = match name.rsplit_once('\'') {
                Some((base, level)) if level.bytes().all(|b| b.is_ascii_digit()) => base.to_owned(),
                _ => name,
            };
            if current == binary && !name.is_empty() && !name.starts_with('?') {
                ran.insert(name);
            }
        }
    }
    ran
}

/// How many of the order file's names the binary at `binary` defines, of how many (`nm` from
/// binutils reads its symbol table); `None` without `nm` or the file.
pub fn matched(binary: &Path) -> Option<(usize, usize)> {
    let listed = fs::read_to_string(root().join(ORDER_FILE)).ok()?;
    let out = Command::new("nm").args(["--defined-only", "--format=just-symbols"]).arg(binary).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let symbols = String::from_utf8_lossy(&out.stdout);
    let defined: std::collections::HashSet<&str> = symbols.lines().collect();
    let names: Vec<&str> = listed.lines().filter(|l| !l.is_empty()).collect();
    Some((names.iter().filter(|n| defined.contains(*n)).count(), names.len()))
}

#[cfg(test)]
mod tests {
    use super::ran_in;

    /// A callgrind profile as valgrind 3.19 writes it: compressed names, functions of two
    /// objects, a call into the other object, and a recursion level.
    #[test]
    fn reads_the_functions_of_one_object_from_a_profile() {
        let profile = "# callgrind format\nversion: 1\npositions: line\nevents: Ir\n\n\
            ob=(1) /usr/lib/libc.so.6\nfn=(1) malloc\n0 10\n\n\
            ob=(2) /bin/opencrane\nfn=(2) _RNvCs1_4main4main\n0 5\n\
            cob=(1)\ncfn=(1)\ncalls=1 0\n0 10\n\
            cfn=(3) _RNvCs1_4main6helper\ncalls=2 0\n0 3\n\n\
            fn=(3)\n0 3\n\
            fn=(4) _RNvCs1_4main7recurse'2\n0 1\n\n\
            ob=(1)\nfn=(5) free\n0 2\n\
            fn=(6) ???\n0 1\n";
        let ran: Vec<String> = ran_in(profile, "/bin/opencrane").into_iter().collect();
        assert_eq!(ran, ["_RNvCs1_4main4main", "_RNvCs1_4main6helper", "_RNvCs1_4main7recurse"]);
        assert!(ran_in(profile, "/bin/other").is_empty());
    }
}
