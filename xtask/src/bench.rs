//! `cargo xtask bench`: figures, not pass/fail. Builds in release mode and prints
//!
//! - each role's hydrate bundle: wasm raw and gzip, JS raw and gzip (and after `wasm-opt -Oz` when
//!   the npm build of binaryen is available; Debian's binaryen 108 breaks hydration);
//! - bytes on the wire for a first and a repeat visit of a page without an island (the customers
//!   list) and of one with an island (the new-customer form), as a browser accepting gzip that
//!   keeps the `immutable` hashed files gets them;
//! - the fleet-manager's resident memory after start-up, idle, and after the load;
//! - how much of `server/symbol-order.txt` (the release link's function order, see
//!   `server/build.rs`) the binary still matches;
//! - the silo manager (standalone, its own database): time from exec to ready, resident memory
//!   idle (after start, and after one request of each route and page), after the load and 10 s
//!   later, its groups, users and policies routes under `wrk` at
//!   c=10 — answered again from the kept answer (the same request over and over) and read afresh
//!   (a request unlike any before, as after every change) — with the SQL statements one request
//!   of each kind runs (counted from its own statement log), and the
//!   `/users` page's bytes on the wire — beside the original's figures on this machine;
//! - latency (p50/p99) and throughput of the ClusterTenants list page with 10,000 rows, measured
//!   by `wrk` in a separate process on loopback at a fixed concurrency, for the first page, a deep
//!   page sorted by display name (jumped to, and reached by Next), and two searches (a name
//!   prefix, a substring of display names) — on a settled fleet (provisioning off), given again
//!   from the kept pages, then read afresh for every request (`--kept-answers false`; the
//!   searches also one request at a time, the server's own time) — and the first page again
//!   during the start-up reconcile storm of 10,000 failing customers;
//! - the fleet at scale (`crates/provision/benches/scale.rs`): 1,000 customers provisioned, a
//!   restart's re-convergence time and its writes to the API server, a burst of 100 new ones;
//! - the migration from a shared installation (`opencrane migrate-shared`): rows per second of
//!   the copy and of the verification, for the fixture's three customers with 100,000 audit rows.

use std::{
    fs,
    io::Read,
    net::{Ipv4Addr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use opencrane_localpg::{Binaries, LocalPostgres};

use crate::{Result, release_cargo, root, site, target_dir};

/// Rows seeded for the list benchmark.
const ROWS: u32 = 10_000;
/// wrk connections (fixed concurrency) and duration per scenario.
const CONNECTIONS: u32 = 16;
/// Customers on a plan with a month of usage, for the billing figures.
const BILLED: u32 = 1_000;
const SECONDS: u32 = 10;
/// Audit entries in the migration figure's source.
const AUDIT_ROWS: u32 = 100_000;

fn gzip_size(path: &Path) -> Result<u64> {
    let out = Command::new("gzip")
        .args(["-9", "-c"])
        .arg(path)
        .output()
        .map_err(|e| format!("gzip is needed to measure compressed sizes: {e}"))?;
    Ok(out.stdout.len() as u64)
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

/// A process's memory: resident set and, of it, the process's own (anonymous) pages — the rest
/// are pages of the executable and libraries, shared with every process mapping them (and
/// counted with the neighbours the kernel maps around each page it faults in).
#[derive(Clone, Copy)]
struct Memory {
    rss_kib: u64,
    anon_kib: u64,
}

impl std::fmt::Display for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        #[allow(clippy::cast_precision_loss, reason = "a printed figure")]
        let mib = |kib: u64| kib as f64 / 1024.0;
        write!(f, "{:.1} MiB ({:.1} MiB private)", mib(self.rss_kib), mib(self.anon_kib))
    }
}

fn memory(pid: u32) -> Memory {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.split_whitespace().next()?.parse().ok()))
            .unwrap_or(0)
    };
    Memory { rss_kib: field("VmRSS:"), anon_kib: field("RssAnon:") }
}

pub(crate) struct Server(pub(crate) Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-s", "TERM", "--"]).arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

pub(crate) fn psql(pg: &LocalPostgres, db: &str, sql: &str) -> Result {
    let psql = Binaries::discover().map_err(|e| e.to_string())?.bindir().join("psql");
    let out = Command::new(psql)
        .arg(pg.url(db))
        .args(["-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .map_err(|e| format!("psql: {e}"))?;
    if out.status.success() { Ok(()) } else { Err(format!("psql failed: {}", String::from_utf8_lossy(&out.stderr))) }
}

/// `sql`'s unaligned output.
fn psql_value(pg: &LocalPostgres, db: &str, sql: &str) -> Result<String> {
    let psql = Binaries::discover().map_err(|e| e.to_string())?.bindir().join("psql");
    let out = Command::new(psql)
        .arg(pg.url(db))
        .args(["-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .map_err(|e| format!("psql: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!("psql failed: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

/// Standard base64 (the credentials key file's format).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The migration figures: (rows, copy seconds, verify seconds). The source is the fixture of
/// the original's shared schema with {AUDIT_ROWS} more audit entries; the silos' databases are
/// laid out as the local provisioner does, on the bench's PostgreSQL.
fn migration_figures(binary: &Path, pg: &LocalPostgres) -> Result<(u64, f64, f64)> {
    psql(pg, "postgres", "CREATE DATABASE shared_source")?;
    let fixture = root().join("crates/migrate/fixtures/shared_original.sql");
    let psql_bin = Binaries::discover().map_err(|e| e.to_string())?.bindir().join("psql");
    let loaded = Command::new(psql_bin)
        .arg(pg.url("shared_source"))
        .args(["-q", "-v", "ON_ERROR_STOP=1", "-f"])
        .arg(&fixture)
        .output()
        .map_err(|e| format!("psql: {e}"))?;
    if !loaded.status.success() {
        return Err(format!("loading the fixture: {}", String::from_utf8_lossy(&loaded.stderr)));
    }
    psql(
        pg,
        "shared_source",
        &format!(
            "INSERT INTO audit_log (\"timestamp\", tenant, action, resource, message, metadata) \
             SELECT now() - (i || ' seconds')::interval, 'u' || lpad((1 + i % 200)::text, 3, '0'), 'tenant.update', \
                    'tenants/u' || (1 + i % 200), 'entry ' || i, jsonb_build_object('i', i) \
             FROM generate_series(1, {AUDIT_ROWS}) i; ANALYZE;"
        ),
    )?;
    psql(pg, "postgres", "CREATE DATABASE migration_fleet")?;
    crate::run(Command::new(binary).args([
        "migrate",
        "--schema",
        "fleet",
        "--database-url",
        &pg.url("migration_fleet"),
    ]))?;
    for customer in ["acme", "globex", "initech"] {
        psql(pg, "postgres", &format!("CREATE DATABASE ocsilo_{customer}"))?;
        let url = pg.url(&format!("ocsilo_{customer}"));
        crate::run(Command::new(binary).args(["migrate", "--schema", "silo", "--database-url", &url]))?;
    }
    let mut key = [0u8; 32];
    fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut key)).map_err(|e| format!("random: {e}"))?;
    let key_file = target_dir().join("xtask/bench-credentials.key");
    fs::write(&key_file, base64(&key)).map_err(|e| format!("writing the key: {e}"))?;
    let migrate = |phase: &str| -> Result<f64> {
        let started = Instant::now();
        let out = shipped(binary)?
            .args(["migrate-shared", "--phase", phase, "--source-url", &pg.url("shared_source")])
            .args(["--fleet-database-url", &pg.url("migration_fleet"), "--silo-server-url", &pg.url("postgres")])
            .arg("--credentials-key-file")
            .arg(&key_file)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("migrate-shared: {e}"))?;
        if !out.status.success() {
            return Err(format!("migrate-shared --phase {phase}: {}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok(started.elapsed().as_secs_f64())
    };
    migrate("provision")?;
    let copy = migrate("copy")?;
    let verify = migrate("verify")?;
    let mut rows = 0;
    for customer in ["acme", "globex", "initech"] {
        let count = psql_value(
            pg,
            &format!("ocsilo_{customer}"),
            "SELECT (SELECT count(*) FROM audit_log) + (SELECT count(*) FROM tenants) + (SELECT count(*) FROM groups) \
                  + (SELECT count(*) FROM group_members) + (SELECT count(*) FROM grants) + (SELECT count(*) FROM budgets) \
                  + (SELECT count(*) FROM access_policies) + (SELECT count(*) FROM provider_credentials) \
                  + (SELECT count(*) FROM model_definitions) + (SELECT count(*) FROM model_defaults) \
                  + (SELECT count(*) FROM access_tokens) + (SELECT count(*) FROM org_memberships)",
        )?;
        rows += count.parse::<u64>().map_err(|e| format!("counting rows: {e}"))?;
    }
    Ok((rows, copy, verify))
}

/// Groups, users and policies seeded in the silo for its figures (the original's figure is for
/// its groups list with 10 groups).
const SILO_GROUPS: u32 = 10;
const SILO_USERS: u32 = 200;
/// wrk connections for the silo routes (the original's figure is at c=10).
pub(crate) const SILO_CONNECTIONS: u32 = 10;

/// wrk's figures: (p50 ms, p99 ms, requests/s, non-2xx count).
pub(crate) type Wrk = (f64, f64, f64, u64);

/// A silo manager's figures.
struct SiloFigures {
    /// From exec to `/readyz` answering 200.
    start: Duration,
    /// Memory after start, idle; idle after one request of each route and page; right after the
    /// load; 10 s later.
    rss: [Memory; 4],
    /// Per route: its label, wrk's figures answered again and read afresh, and the SQL
    /// statements one request of each runs.
    routes: Vec<(&'static str, [Wrk; 2], [usize; 2])>,
    /// Bytes on the wire, first and repeat visit, of `/users`.
    users_page: (u64, u64),
}

/// A command running `binary` as the image runs it: with the `GLIBC_TUNABLES` of the
/// Dockerfile's `ENV` (read from there, so the bench measures the allocator settings that ship).
fn shipped(binary: &Path) -> Result<Command> {
    let mut command = Command::new(binary);
    command.env("GLIBC_TUNABLES", image_tunables()?);
    Ok(command)
}

/// The `GLIBC_TUNABLES` the Dockerfile's `ENV` sets.
pub(crate) fn image_tunables() -> Result<String> {
    let dockerfile =
        fs::read_to_string(root().join("Dockerfile")).map_err(|e| format!("reading the Dockerfile: {e}"))?;
    dockerfile
        .split_whitespace()
        .find_map(|word| word.strip_prefix("GLIBC_TUNABLES=").map(str::to_owned))
        .ok_or_else(|| "the Dockerfile's ENV sets no GLIBC_TUNABLES".into())
}

/// A clustertenant-manager's arguments: customer `acme`, standalone with the development
/// identity, on `port` and the database at `url`.
pub(crate) fn silo_args(port: u16, url: &str) -> Vec<String> {
    let args = ["clustertenant-manager", "--cluster-tenant", "acme", "--bind", "127.0.0.1", "--port"];
    let rest = ["--dev-identity", "true", "--database-url", url];
    args.iter().map(|a| (*a).to_owned()).chain([port.to_string()]).chain(rest.map(str::to_owned)).collect()
}

/// A fleet-manager's arguments: on `port` with the development identity, the database at `url`
/// and `provisioner`.
pub(crate) fn fleet_args(port: u16, url: &str, provisioner: &str) -> Vec<String> {
    ["fleet-manager", "--bind", "127.0.0.1", "--port", &port.to_string(), "--dev-identity", "true"]
        .into_iter()
        .chain(["--database-url", url, "--provisioner", provisioner])
        .map(str::to_owned)
        .collect()
}

/// `cmd` set up to run a manager for the bench: the site at `site`, errors logged to our stderr,
/// from the repository root.
pub(crate) fn as_server<'c>(cmd: &'c mut Command, site: &Path) -> &'c mut Command {
    cmd.env("LEPTOS_SITE_ROOT", site)
        .env("RUST_LOG", "error")
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
}

/// A free loopback port.
pub(crate) fn free_port() -> Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port())
}

/// Starts a release clustertenant-manager for customer `acme` on database `silo`, standalone,
/// with the development identity; with `log_to`, every SQL statement is logged there.
fn start_silo(
    binary: &Path,
    site: &Path,
    pg: &LocalPostgres,
    log_to: Option<&Path>,
) -> Result<(Server, u16, Duration)> {
    let port = free_port()?;
    let stdout = match log_to {
        Some(path) => Stdio::from(fs::File::create(path).map_err(|e| e.to_string())?),
        None => Stdio::null(),
    };
    let started = Instant::now();
    let child = shipped(binary)?
        .args(silo_args(port, &pg.url("silo")))
        .env("LEPTOS_SITE_ROOT", site)
        .env("RUST_LOG", if log_to.is_some() { "error,sqlx::query=debug" } else { "error" })
        .env("NO_COLOR", "1")
        .current_dir(root())
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting the silo manager: {e}"))?;
    let server = Server(child);
    while !get_ok(port, "/readyz") {
        if started.elapsed() > Duration::from_secs(30) {
            return Err("the silo manager did not become ready within 30 s".into());
        }
        thread::sleep(Duration::from_millis(2));
    }
    Ok((server, port, started.elapsed()))
}

/// Creates database `silo`, migrated, with `SILO_USERS` users, `SILO_GROUPS` groups with
/// members and as many access policies.
pub(crate) fn seed_silo(binary: &Path, pg: &LocalPostgres) -> Result {
    psql(pg, "postgres", "CREATE DATABASE silo")?;
    crate::run(Command::new(binary).args(["migrate", "--schema", "silo", "--database-url", &pg.url("silo")]))?;
    psql(
        pg,
        "silo",
        &format!(
            "INSERT INTO tenants (name, display_name, email, subject)              SELECT 'u' || i, 'User ' || i, 'u' || i || '@acme.test', 's-u' || i FROM generate_series(1, {SILO_USERS}) i;              INSERT INTO groups (name, scope) SELECT 'team-' || i, 'team' FROM generate_series(1, {SILO_GROUPS}) i;              INSERT INTO group_members (group_id, tenant)              SELECT g.id, 'u' || (1 + (i * 7 + length(g.name)) % {SILO_USERS}) FROM groups g, generate_series(1, 20) i              ON CONFLICT DO NOTHING;              INSERT INTO access_policies (name) SELECT 'policy-' || i FROM generate_series(1, {SILO_GROUPS}) i; ANALYZE;"
        ),
    )?;
    Ok(())
}

/// The silo's REST list routes the bench measures: label and path.
pub(crate) const SILO_ROUTES: [(&str, &str); 3] = [
    ("GET /api/v1/groups (10 groups, members)", "/api/v1/groups"),
    ("GET /api/v1/tenants (200 users, groups)", "/api/v1/tenants"),
    ("GET /api/v1/policies (10 policies)", "/api/v1/policies"),
];

/// The silo manager's figures: start time, memory idle/loaded/after, its list routes under wrk
/// with the statements each request runs, and the `/users` page's bytes on the wire.
fn silo_figures(binary: &Path, site: &Path, pg: &LocalPostgres) -> Result<SiloFigures> {
    seed_silo(binary, pg)?;
    let routes = SILO_ROUTES;
    // The statements one request runs, from a manager that logs every one.
    let log = target_dir().join("xtask/bench-silo-queries.log");
    let mut statements = Vec::new();
    {
        let (_server, port, _) = start_silo(binary, site, pg, Some(&log))?;
        thread::sleep(Duration::from_secs(1));
        let logged = || fs::read_to_string(&log).map(|l| l.matches("db.statement=").count()).map_err(|e| e.to_string());
        for (_, path) in routes {
            // The first request reads the list afresh, the second is answered from it.
            let mut counts = [0; 2];
            for count in &mut counts {
                let before = logged()?;
                if !get_ok(port, path) {
                    return Err(format!("{path} did not answer 200"));
                }
                thread::sleep(Duration::from_millis(300));
                *count = logged()? - before;
            }
            statements.push([counts[0], counts[1]]);
        }
    }
    let (server, port, start) = start_silo(binary, site, pg, None)?;
    thread::sleep(Duration::from_secs(2));
    let idle = memory(server.0.id());
    // One request of each: the code they run is mapped from then on, the first connection open.
    for path in routes.iter().map(|(_, path)| *path).chain(["/users"]) {
        if !get_ok(port, path) {
            return Err(format!("{path} did not answer 200"));
        }
    }
    thread::sleep(Duration::from_secs(5));
    let warm = memory(server.0.id());
    let mut measured = Vec::new();
    let fresh = fresh_script()?;
    for ((label, path), count) in routes.into_iter().zip(statements) {
        let url = format!("http://127.0.0.1:{port}{path}");
        let _ = Command::new("wrk").args(["-t1", "-c4", "-d2s", &url]).output();
        let again = wrk_at(&url, SILO_CONNECTIONS, None)?;
        let afresh = wrk_at(&url, SILO_CONNECTIONS, Some(&fresh))?;
        measured.push((label, [again, afresh], count));
    }
    if !get_ok(port, "/users") {
        return Err("/users did not answer 200".into());
    }
    let users_page = visit_bytes(port, "/users")?;
    let loaded = memory(server.0.id());
    thread::sleep(Duration::from_secs(10));
    let after = memory(server.0.id());
    Ok(SiloFigures { start, rss: [idle, warm, loaded, after], routes: measured, users_page })
}

/// A wrk script making every request unlike any before (a query parameter the routes ignore,
/// unique per thread and request), so a list route never answers from a kept answer: the figure
/// of a list read after every change.
const FRESH_REQUESTS: &str = r#"
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end
local n = 0
function request()
  n = n + 1
  local sep = string.find(wrk.path, "?", 1, true) and "&" or "?"
  return wrk.format(nil, wrk.path .. sep .. "fresh=" .. id .. "-" .. n)
end
"#;

/// Writes [`FRESH_REQUESTS`] under the target directory; answers its path for `wrk -s`.
pub(crate) fn fresh_script() -> Result<PathBuf> {
    let fresh = target_dir().join("xtask/bench-fresh.lua");
    fs::write(&fresh, FRESH_REQUESTS).map_err(|e| format!("writing {}: {e}", fresh.display()))?;
    Ok(fresh)
}

/// One wrk run: (p50 ms, p99 ms, requests/s, non-2xx count).
fn wrk(url: &str) -> Result<Wrk> {
    wrk_at(url, CONNECTIONS, None)
}

/// One wrk run at `connections` (two threads; one for a single connection), with `script`'s
/// requests if given.
pub(crate) fn wrk_at(url: &str, connections: u32, script: Option<&Path>) -> Result<Wrk> {
    let threads = connections.clamp(1, 2);
    let mut command = Command::new("wrk");
    command.args([&format!("-t{threads}"), &format!("-c{connections}"), &format!("-d{SECONDS}s"), "--latency"]);
    if let Some(script) = script {
        command.arg("-s").arg(script);
    }
    let out = command
        .arg(url)
        .output()
        .map_err(|e| format!("wrk is needed for the latency figures (Debian: apt-get install wrk): {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let ms = |label: &str| -> f64 {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(label).map(str::trim))
            .map(|v| {
                let (num, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len()));
                let n: f64 = num.parse().unwrap_or(f64::NAN);
                match unit {
                    "us" => n / 1000.0,
                    "s" => n * 1000.0,
                    _ => n,
                }
            })
            .unwrap_or(f64::NAN)
    };
    let rps = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:").map(|v| v.trim().parse().unwrap_or(f64::NAN)))
        .unwrap_or(f64::NAN);
    let errors = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:").map(|v| v.trim().parse().unwrap_or(0)))
        .unwrap_or(0);
    Ok((ms("50%"), ms("99%"), rps, errors))
}

/// Starts the release fleet-manager on the bench database with `provisioner` (and `extra`
/// arguments), ready.
fn start_fleet(
    binary: &Path,
    site: &Path,
    pg: &LocalPostgres,
    provisioner: &str,
    extra: &[&str],
) -> Result<(Server, u16)> {
    let port = free_port()?;
    let child = as_server(shipped(binary)?.args(fleet_args(port, &pg.url("bench"), provisioner)).args(extra), site)
        .spawn()
        .map_err(|e| format!("starting the server: {e}"))?;
    let server = Server(child);
    let started = Instant::now();
    while !get_ok(port, "/readyz") {
        if started.elapsed() > Duration::from_secs(30) {
            return Err("the server did not become ready within 30 s".into());
        }
        thread::sleep(Duration::from_millis(50));
    }
    thread::sleep(Duration::from_secs(2));
    Ok((server, port))
}

/// Checks `path` answers 200, warms it up, then measures it.
fn measure(port: u16, path: &str) -> Result<(f64, f64, f64, u64)> {
    if !get_ok(port, path) {
        return Err(format!("{path} did not answer 200"));
    }
    let url = format!("http://127.0.0.1:{port}{path}");
    let _ = Command::new("wrk").args(["-t1", "-c4", "-d2s", &url]).output();
    wrk(&url)
}

/// The bytes of `path`'s response body as a browser that accepts gzip receives it (following a
/// link of the site, so `Sec-Fetch-Site: same-origin`), and the body; `plain` asks for it
/// uncompressed instead (to read the page).
pub(crate) fn fetch(port: u16, path: &str, plain: bool) -> Result<(u64, String)> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).map_err(|e| e.to_string())?;
    let encoding = if plain { "" } else { "Accept-Encoding: gzip\r\nSec-Fetch-Site: same-origin\r\n" };
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{encoding}Connection: close\r\n\r\n");
    std::io::Write::write_all(&mut stream, request.as_bytes()).map_err(|e| e.to_string())?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).map_err(|e| e.to_string())?;
    let split = reply.windows(4).position(|w| w == b"\r\n\r\n").map_or(reply.len(), |p| p + 4);
    let body = &reply[split..];
    Ok((body.len() as u64, String::from_utf8_lossy(body).into_owned()))
}

/// Bytes on the wire for a first visit of `path` (the page, its stylesheet, and the glue and
/// wasm when the page has an island) and a repeat one (the page: the hashed files are cached).
fn visit_bytes(port: u16, path: &str) -> Result<(u64, u64)> {
    let (page, _) = fetch(port, path, false)?;
    let (_, html) = fetch(port, path, true)?;
    let mut first = page;
    let assets = html.split('"').filter(|part| part.starts_with("/pkg/opencrane")).map(str::to_owned);
    let islands = html.contains("<leptos-island");
    for asset in assets.collect::<std::collections::BTreeSet<_>>() {
        if asset.ends_with(".css") || islands {
            first += fetch(port, &asset, false)?.0;
        }
    }
    Ok((first, page))
}

pub(crate) fn get_ok(port: u16, path: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else { return false };
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    if std::io::Write::write_all(&mut stream, request.as_bytes()).is_err() {
        return false;
    }
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200")
}

/// Runs the benchmark and prints its figures.
pub fn run(_args: &[String]) -> Result {
    // Bundle.
    let site = site::build(true)?;
    let mut bundles = Vec::new();
    for role in site::ROLES {
        let (wasm, js) =
            (site.join(format!("pkg/{}.wasm", site::stem(role))), site.join(format!("pkg/{}.js", site::stem(role))));
        let wasm_raw = fs::metadata(&wasm).map_err(|e| e.to_string())?.len();
        let js_raw = fs::metadata(&js).map_err(|e| e.to_string())?.len();
        bundles.push((role, wasm_raw, gzip_size(&wasm)?, js_raw, gzip_size(&js)?));
    }
    let optimised = site::wasm_optimised(&site);

    // Server.
    crate::run(release_cargo().args(["build", "--locked", "--release", "-p", "opencrane", "--bin", "opencrane"]))?;
    let binary = target_dir().join("release/opencrane");
    let link_order = crate::link_order::matched(&binary);
    let pg_dir = target_dir().join("xtask/bench-postgres");
    let _ = fs::remove_dir_all(&pg_dir);
    let pg = LocalPostgres::start(&pg_dir).map_err(|e| e.to_string())?;
    psql(&pg, "postgres", "CREATE DATABASE bench")?;
    crate::run(Command::new(&binary).args(["migrate", "--schema", "fleet", "--database-url", &pg.url("bench")]))?;
    psql(
        &pg,
        "bench",
        &format!(
            "INSERT INTO cluster_tenants (name, display_name, isolation_tier, phase, seat_cap, created_at) \
             SELECT 'cust-' || i, 'Customer ' || md5(i::text), \
                    (ARRAY['shared','dedicatedNodes'])[1 + i % 2], \
                    (ARRAY['pending','provisioning','ready','failed'])[1 + i % 4], \
                    CASE WHEN i % 3 = 0 THEN NULL ELSE 10 + i % 90 END, now() - (i || ' minutes')::interval \
             FROM generate_series(1, {ROWS}) i; \
             INSERT INTO org_memberships (cluster_tenant, subject, role) \
             SELECT name, 'owner-' || name, 'owner' FROM cluster_tenants; ANALYZE;"
        ),
    )?;
    // Billing: {BILLED} customers on a plan since the trend began, each with 31 days of usage
    // (seats and two models' spend) up to today.
    psql(
        &pg,
        "bench",
        &format!(
            "INSERT INTO billing_plans (name, currency, seat_price, included_seats, markup_percent, monthly_minimum) \
             VALUES ('Team', 'EUR', 12.5, 2, 20, 50); \
             INSERT INTO billing_accounts (subject, display_name) \
             SELECT 'owner-cust-' || i, 'Account ' || i FROM generate_series(1, {BILLED}) i; \
             INSERT INTO plan_assignments (cluster_tenant, effective_from, plan_id, assigned_by) \
             SELECT 'cust-' || i, (date_trunc('month', current_date) - interval '5 months')::date, \
                    (SELECT id FROM billing_plans), 'bench' FROM generate_series(1, {BILLED}) i; \
             INSERT INTO usage_days (cluster_tenant, day, active_seats) \
             SELECT 'cust-' || i, current_date - d, 1 + (i + d) % 20 \
             FROM generate_series(1, {BILLED}) i, generate_series(0, 30) d; \
             INSERT INTO usage_spend (cluster_tenant, day, model, currency, amount) \
             SELECT cluster_tenant, day, m, 'EUR', (active_seats * 0.37)::numeric(18, 6) \
             FROM usage_days, unnest(ARRAY['fast', 'smart']) m; ANALYZE;"
        ),
    )?;
    // A settled fleet's tables as autovacuum leaves them a minute after a bulk load: the
    // visibility map set (a jump to a deep page reads the sort's index alone only on pages it
    // marks all-visible).
    psql(&pg, "bench", "VACUUM ANALYZE")?;
    // The page figures are a settled fleet's: provisioning off, so nothing reconciles meanwhile.
    let (server, port) = start_fleet(&binary, &site, &pg, "off", &[])?;
    let rss_idle = memory(server.0.id());

    // The cursor of the row page 150 continues after (what its Prev/Next links carry).
    let deep = psql_value(
        &pg,
        "bench",
        "SELECT name || '.' || replace(display_name, ' ', '%20') FROM cluster_tenants \
         ORDER BY lower(display_name) DESC, name DESC OFFSET 7449 LIMIT 1",
    )?;
    let keyset = format!("/cluster-tenants?sort=displayName&order=desc&page=150&after={deep}");
    let scenarios = [
        ("first page, by name", "/cluster-tenants"),
        ("page 150 of 200 by display name desc, jump", "/cluster-tenants?sort=displayName&order=desc&page=150"),
        ("page 150 of 200, by Next (keyset)", keyset.as_str()),
        ("search \"cust-99\", by age", "/cluster-tenants?q=cust-99&sort=createdAt"),
        ("search \"e1f\" (in display names), by name", "/cluster-tenants?q=e1f"),
        // Every customer's statement of the month priced (1,000 × 31 days of usage, six months of
        // trend), then filtered and paged.
        ("billing overview (REST), 1,000 billed", "/api/v1/billing/customers"),
        ("billing overview page, unbilled filter", "/billing?status=unbilled&page=3"),
    ];
    let mut results = Vec::new();
    for (label, path) in scenarios {
        results.push((label, measure(port, path)?));
    }
    let visits = [
        ("customers list (no island)", visit_bytes(port, "/cluster-tenants")?),
        ("new customer form (an island)", visit_bytes(port, "/cluster-tenants/new")?),
    ];
    let rss_loaded = memory(server.0.id());
    drop(server);
    // The customers pages read afresh for every request (as after every change): the same fleet
    // with its kept answers off.
    let (afresh, port) = start_fleet(&binary, &site, &pg, "off", &["--kept-answers", "false"])?;
    let customers_pages = || scenarios.iter().filter(|(_, path)| path.starts_with("/cluster-tenants"));
    let mut read_afresh = Vec::new();
    for (label, path) in customers_pages() {
        read_afresh.push((*label, measure(port, path)?));
    }
    // A search's server time: one request at a time, so nothing queues (loopback included).
    let mut alone = Vec::new();
    for (label, path) in customers_pages().filter(|(_, path)| path.contains("q=")) {
        alone.push((*label, wrk_at(&format!("http://127.0.0.1:{port}{path}"), 1, None)?));
    }
    drop(afresh);
    // The same fleet started with provisioning on and no cluster: every customer's reconcile
    // fails (no base domain) — the start-up storm, measured while it runs.
    let (storm, port) = start_fleet(&binary, &site, &pg, "kubernetes", &[])?;
    let storm_page = measure(port, "/cluster-tenants")?;
    let attempted = psql_value(
        &pg,
        "bench",
        "SELECT count(*) FROM cluster_tenants WHERE phase = 'failed' AND failed_attempts > 0",
    )?;
    drop(storm);
    let silo = silo_figures(&binary, &site, &pg)?;
    let (migrated_rows, copy_seconds, verify_seconds) = migration_figures(&binary, &pg)?;
    // The fleet at scale: the reconcile worker against the fake API server (its own bench target).
    let scale = release_cargo()
        .args(["bench", "--locked", "-p", "opencrane-provision", "--bench", "scale"])
        .env("DATABASE_URL", pg.url("postgres"))
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("running the scale bench: {e}"))?;
    if !scale.status.success() {
        return Err(format!("the scale bench failed: {}", String::from_utf8_lossy(&scale.stdout)));
    }
    drop(pg);

    println!("\n== OpenCrane benchmark (release build) ==");
    for (role, wasm_raw, wasm_gz, js_raw, js_gz) in bundles {
        println!(
            "{:<20}wasm {} raw, {} gzip;  js {} raw, {} gzip;  {} gzip in all",
            format!("{role} bundle"),
            kib(wasm_raw),
            kib(wasm_gz),
            kib(js_raw),
            kib(js_gz),
            kib(wasm_gz + js_gz)
        );
    }
    if !optimised {
        println!("  (not optimised: wasm-opt from npm binaryen@132 was not available to the build)");
    }
    for (label, (first, repeat)) in visits {
        println!("bytes on the wire  {label:<32} first visit {}, repeat visit {}", kib(first), kib(repeat));
    }
    println!("fleet-manager RSS   {rss_idle} idle after start;  {rss_loaded} after the load");
    println!(
        "pages, {ROWS} customers ({BILLED} billed with 31 days of usage), wrk {CONNECTIONS} connections x {SECONDS} s on loopback:"
    );
    for (label, (p50, p99, rps, errors)) in results {
        println!("  {label:<44} p50 {p50:>7.2} ms   p99 {p99:>7.2} ms   {rps:>8.0} req/s   non-2xx {errors}");
    }
    println!("  the customers pages read afresh for every request (`--kept-answers false`):");
    for (label, (p50, p99, rps, errors)) in read_afresh {
        println!("    {label:<42} p50 {p50:>7.2} ms   p99 {p99:>7.2} ms   {rps:>8.0} req/s   non-2xx {errors}");
    }
    println!("  one request at a time, read afresh (the server's own time, loopback included):");
    for (label, (p50, p99, rps, errors)) in alone {
        println!("    {label:<42} p50 {p50:>7.2} ms   p99 {p99:>7.2} ms   {rps:>8.0} req/s   non-2xx {errors}");
    }
    let (p50, p99, rps, errors) = storm_page;
    println!(
        "  {:<44} p50 {p50:>7.2} ms   p99 {p99:>7.2} ms   {rps:>8.0} req/s   non-2xx {errors}",
        "first page, during the start-up storm"
    );
    println!("    (provisioning on, no cluster: {attempted} customers had failed a reconcile by the end)");
    println!(
        "silo manager        ready {} ms after exec (the original: ~900 ms);  RSS {} idle, {} idle after one request of each route, {} after the load, {} 10 s later (the original: ~145 MiB idle)",
        silo.start.as_millis(),
        silo.rss[0],
        silo.rss[1],
        silo.rss[2],
        silo.rss[3]
    );
    match link_order {
        Some((found, listed)) => println!(
            "link order          {found} of the {listed} functions `{}` lists are in the binary (the rest moved: `cargo xtask link-order` lists them anew)",
            crate::link_order::ORDER_FILE
        ),
        None => println!("link order          not measured (`nm` from binutils reads the binary's symbols)"),
    }
    println!(
        "silo routes, wrk {SILO_CONNECTIONS} connections x {SECONDS} s on loopback (the original's groups list: ~740 req/s, p50 ~12.6 ms, 2 statements):"
    );
    for (label, figures, statements) in &silo.routes {
        for (kind, (p50, p99, rps, errors), statements) in
            [("answered again", figures[0], statements[1]), ("read afresh", figures[1], statements[0])]
        {
            println!(
                "  {label:<44} {kind:<14} p50 {p50:>7.2} ms   p99 {p99:>7.2} ms   {rps:>8.0} req/s   {statements} SQL statements per request   non-2xx {errors}"
            );
        }
    }
    println!(
        "bytes on the wire  {:<32} first visit {}, repeat visit {}",
        "silo users page (/users)",
        kib(silo.users_page.0),
        kib(silo.users_page.1)
    );
    #[allow(clippy::cast_precision_loss, reason = "a printed figure")]
    let per_second = |seconds: f64| migrated_rows as f64 / seconds;
    println!(
        "migrate-shared      {migrated_rows} rows ({AUDIT_ROWS} audit entries) into 3 silos: copy {copy_seconds:.2} s \
         ({:.0} rows/s), verify {verify_seconds:.2} s ({:.0} rows/s), each a whole process run",
        per_second(copy_seconds),
        per_second(verify_seconds)
    );
    print!("{}", String::from_utf8_lossy(&scale.stdout));
    Ok(())
}
