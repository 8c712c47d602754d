//! A private PostgreSQL server started from the binaries installed on this machine.
//!
//! Used by `opencrane dev` (the embedded default), by the test harness (one server per test run,
//! a fresh database per test) and by the benchmarks. It owns the server process: the server runs
//! in the foreground as a child of the caller, listens on a free loopback port with password
//! (SCRAM) authentication, keeps its Unix socket inside the state directory, and is stopped
//! (fast shutdown) when the handle is dropped. A server left behind by a killed earlier run is
//! found through its `postmaster.pid` and stopped before a new one starts.
//!
//! PostgreSQL refuses to run as root, so as root the server runs as an unprivileged system user
//! (`postgres` when the distribution created one, otherwise `opencrane-pg`, created on demand).
//!
//! This crate depends on nothing but `std`, so `cargo xtask` builds it in seconds.

use std::{
    env, fmt, fs,
    io::{self, Read},
    net::{Ipv4Addr, TcpListener},
    os::unix::{fs::PermissionsExt, process::CommandExt},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

/// The superuser role created by `initdb`.
pub const SUPERUSER: &str = "opencrane";

/// Why a local PostgreSQL server could not be started.
#[derive(Debug)]
pub enum Error {
    /// No PostgreSQL server binaries were found; the message says what to install.
    NotInstalled(String),
    /// A command (initdb, useradd, the server itself) failed; carries its name and output.
    Command { what: String, detail: String },
    /// The data directory was made by another PostgreSQL major version.
    VersionMismatch { data_dir: PathBuf, data: String, binaries: String },
    /// The server did not become ready in time; carries the tail of its log.
    NotReady { log: String },
    /// A file-system or process error.
    Io { what: String, source: io::Error },
    /// No server started under this state directory is running.
    NotRunning { state_dir: PathBuf },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotInstalled(msg) => f.write_str(msg),
            Self::Command { what, detail } => write!(f, "{what} failed: {detail}"),
            Self::VersionMismatch { data_dir, data, binaries } => write!(
                f,
                "the data directory {} was created by PostgreSQL {data}, but the installed \
                 binaries are PostgreSQL {binaries}; remove that directory to start afresh",
                data_dir.display()
            ),
            Self::NotReady { log } => {
                write!(f, "PostgreSQL did not become ready within 30 s; its log ends with:\n{log}")
            }
            Self::Io { what, source } => write!(f, "{what}: {source}"),
            Self::NotRunning { state_dir } => write!(
                f,
                "no PostgreSQL started under {} is running (start `cargo xtask dev` first, or pass the database URLs)",
                state_dir.display()
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// The directory holding `initdb` and `postgres`.
#[derive(Clone, Debug)]
pub struct Binaries {
    bindir: PathBuf,
}

impl Binaries {
    /// Finds the server binaries: `OPENCRANE_PG_BINDIR`, then `pg_config --bindir`, then `PATH`,
    /// then the usual package locations (newest major version first).
    pub fn discover() -> Result<Self> {
        Self::discover_in(
            env::var_os("OPENCRANE_PG_BINDIR").map(PathBuf::from),
            env::var_os("PATH").as_deref(),
            &["/usr/lib/postgresql", "/usr/local/opt", "/opt/homebrew/opt"],
        )
    }

    /// [`discover`](Self::discover) with its inputs spelled out (for tests).
    pub fn discover_in(explicit: Option<PathBuf>, path: Option<&std::ffi::OsStr>, roots: &[&str]) -> Result<Self> {
        let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
        if let Some(dir) = explicit {
            return if has_server(&dir) {
                Ok(Self { bindir: dir })
            } else {
                Err(Error::NotInstalled(format!(
                    "OPENCRANE_PG_BINDIR={} does not contain initdb and postgres",
                    dir.display()
                )))
            };
        }
        let path_dirs: Vec<PathBuf> = path.map(|p| env::split_paths(p).collect()).unwrap_or_default();
        let mut candidates = Vec::new();
        if let Some(pg_config) = path_dirs.iter().map(|d| d.join("pg_config")).find(|p| p.is_file())
            && let Ok(out) = Command::new(pg_config).arg("--bindir").output()
            && out.status.success()
        {
            candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
        }
        candidates.extend(path_dirs);
        for root in roots {
            let Ok(entries) = fs::read_dir(root) else { continue };
            let mut versions: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("postgresql") || n.chars().all(|c| c.is_ascii_digit()))
                })
                .collect();
            versions.sort_by_key(|p| std::cmp::Reverse(major_of(p)));
            candidates.extend(versions.into_iter().map(|p| p.join("bin")));
        }
        if !roots.is_empty() {
            candidates.extend(["/usr/local/pgsql/bin", "/usr/pgsql/bin"].map(PathBuf::from));
        }
        candidates.into_iter().find(|dir| has_server(dir)).map(|bindir| Self { bindir }).ok_or_else(|| {
            Error::NotInstalled(
                "No PostgreSQL server binaries (initdb, postgres) were found. Install the \
                 PostgreSQL server package (Debian/Ubuntu: `apt-get install postgresql`; \
                 Fedora: `dnf install postgresql-server`; macOS: `brew install postgresql@16`), \
                 or point OPENCRANE_PG_BINDIR at the directory that holds initdb."
                    .to_owned(),
            )
        })
    }

    /// The directory the binaries were found in.
    pub fn bindir(&self) -> &Path {
        &self.bindir
    }

    fn tool(&self, name: &str) -> PathBuf {
        self.bindir.join(name)
    }

    /// The major version of the binaries, e.g. `15`.
    pub fn major_version(&self) -> Result<String> {
        let out = Command::new(self.tool("postgres"))
            .arg("--version")
            .output()
            .map_err(io_err("running postgres --version"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        // "postgres (PostgreSQL) 15.18 (Debian ...)"
        text.split_whitespace()
            .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
            .and_then(|v| v.split('.').next())
            .map(str::to_owned)
            .ok_or_else(|| Error::Command { what: "postgres --version".into(), detail: text.into_owned() })
    }
}

fn major_of(path: &Path) -> u32 {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(|n| n.trim_start_matches(|c: char| !c.is_ascii_digit()))
        .and_then(|n| n.split(['.', '@']).next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// The operating-system account the server runs as.
#[derive(Clone, Debug)]
struct RunAs {
    uid: u32,
    gid: u32,
}

impl RunAs {
    /// `None` when not root: the server then runs as the current user.
    fn resolve() -> Result<Option<Self>> {
        if current_uid()? != 0 {
            return Ok(None);
        }
        for name in ["postgres", "opencrane-pg"] {
            if let Some(run_as) = Self::lookup(name)? {
                return Ok(Some(run_as));
            }
        }
        let out = Command::new("useradd")
            .args(["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "opencrane-pg"])
            .output()
            .map_err(io_err("running useradd"))?;
        if !out.status.success() {
            return Err(Error::Command {
                what: "useradd opencrane-pg".into(),
                detail: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        Self::lookup("opencrane-pg")?.map(Some).ok_or_else(|| Error::Command {
            what: "useradd opencrane-pg".into(),
            detail: "the user does not exist after creating it".into(),
        })
    }

    fn lookup(name: &str) -> Result<Option<Self>> {
        let passwd = fs::read_to_string("/etc/passwd").map_err(io_err("reading /etc/passwd"))?;
        Ok(passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            (fields.next() == Some(name)).then_some(())?;
            let uid = fields.nth(1)?.parse().ok()?;
            let gid = fields.next()?.parse().ok()?;
            Some(Self { uid, gid })
        }))
    }

    fn apply(&self, cmd: &mut Command) {
        cmd.uid(self.uid).gid(self.gid);
    }

    fn chown_tree(&self, path: &Path) -> Result<()> {
        std::os::unix::fs::chown(path, Some(self.uid), Some(self.gid))
            .map_err(io_err(format!("chown {}", path.display())))?;
        if path.is_dir() {
            for entry in fs::read_dir(path).map_err(io_err(format!("reading {}", path.display())))? {
                let entry = entry.map_err(io_err("reading a directory entry"))?;
                if !entry.file_type().map_err(io_err("stat"))?.is_symlink() {
                    self.chown_tree(&entry.path())?;
                }
            }
        }
        Ok(())
    }
}

fn current_uid() -> Result<u32> {
    let status = fs::read_to_string("/proc/self/status").map_err(io_err("reading /proc/self/status"));
    match status {
        Ok(status) => Ok(status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|uid| uid.parse().ok())
            .unwrap_or(u32::MAX)),
        // No procfs (macOS): ask `id`.
        Err(_) => {
            let out = Command::new("id").arg("-u").output().map_err(io_err("running id -u"))?;
            Ok(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(u32::MAX))
        }
    }
}

/// How to reach a server that another process ([`LocalPostgres::start`], e.g. `opencrane dev`)
/// started under `state_dir` and still runs: its loopback port and superuser password.
pub fn running(state_dir: &Path) -> Result<(u16, String)> {
    let not_running = || Error::NotRunning { state_dir: state_dir.to_path_buf() };
    let root = match fs::read_to_string(state_dir.join("LOCATION")) {
        Ok(location) => PathBuf::from(location.trim()),
        Err(_) => state_dir.to_path_buf(),
    };
    let pidfile = fs::read_to_string(root.join("data").join("postmaster.pid")).map_err(|_| not_running())?;
    let mut lines = pidfile.lines();
    let pid: u32 = lines.next().and_then(|l| l.trim().parse().ok()).ok_or_else(not_running)?;
    // Line 4 is the port; the last line turns to "ready" once connections are accepted.
    let port: u16 = pidfile.lines().nth(3).and_then(|l| l.trim().parse().ok()).ok_or_else(not_running)?;
    let ready = pidfile.lines().nth(7).is_some_and(|l| l.trim() == "ready");
    if !ready || !Path::new(&format!("/proc/{pid}")).exists() {
        return Err(not_running());
    }
    let password = fs::read_to_string(root.join("password")).map_err(io_err("reading the password file"))?;
    Ok((port, password.trim().to_owned()))
}

/// A running private PostgreSQL server; dropping it stops the server.
#[derive(Debug)]
pub struct LocalPostgres {
    child: Option<Child>,
    port: u16,
    password: String,
    root: PathBuf,
}

impl LocalPostgres {
    /// Starts a server whose files live under `state_dir` (created if missing): the cluster in
    /// `data/`, the socket in `run/`, the log in `postgres.log`, the superuser password in
    /// `password`. An existing cluster is reused, so data survives restarts.
    ///
    /// As root, when the unprivileged account cannot reach `state_dir` (e.g. it is under
    /// `/root`), the files go to a directory under the system temp dir named after `state_dir`.
    pub fn start(state_dir: &Path) -> Result<Self> {
        let binaries = Binaries::discover()?;
        let run_as = RunAs::resolve()?;
        fs::create_dir_all(state_dir).map_err(io_err(format!("creating {}", state_dir.display())))?;
        let state_dir = state_dir.canonicalize().map_err(io_err(format!("resolving {}", state_dir.display())))?;
        let root = match &run_as {
            Some(_) if !traversable_by_others(&state_dir) => {
                let fallback = env::temp_dir().join(format!("opencrane-pg-{:016x}", fnv1a(&state_dir)));
                fs::create_dir_all(&fallback).map_err(io_err(format!("creating {}", fallback.display())))?;
                fs::write(state_dir.join("LOCATION"), format!("{}\n", fallback.display()))
                    .map_err(io_err("writing LOCATION"))?;
                fallback
            }
            _ => state_dir,
        };
        let data = root.join("data");
        let run = root.join("run");
        fs::create_dir_all(&run).map_err(io_err(format!("creating {}", run.display())))?;
        stop_stale_server(&data);

        let password_file = root.join("password");
        let password = match fs::read_to_string(&password_file) {
            Ok(p) if !p.trim().is_empty() => p.trim().to_owned(),
            _ => {
                let p = random_hex(16)?;
                fs::write(&password_file, &p).map_err(io_err("writing the password file"))?;
                p
            }
        };
        fs::set_permissions(&password_file, fs::Permissions::from_mode(0o600))
            .map_err(io_err("chmod password file"))?;

        let binaries_major = binaries.major_version()?;
        if data.join("PG_VERSION").is_file() {
            let data_major =
                fs::read_to_string(data.join("PG_VERSION")).map_err(io_err("reading PG_VERSION"))?.trim().to_owned();
            if data_major != binaries_major {
                return Err(Error::VersionMismatch { data_dir: data, data: data_major, binaries: binaries_major });
            }
        } else {
            if data.exists() {
                fs::remove_dir_all(&data).map_err(io_err("removing a half-initialised data directory"))?;
            }
            if let Some(run_as) = &run_as {
                run_as.chown_tree(&root)?;
            }
            fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).map_err(io_err("chmod state dir"))?;
            let pwfile = run.join("initdb-pw");
            fs::write(&pwfile, &password).map_err(io_err("writing the initdb password file"))?;
            if let Some(run_as) = &run_as {
                run_as.chown_tree(&pwfile)?;
            }
            let mut initdb = Command::new(binaries.tool("initdb"));
            initdb
                .arg("-D")
                .arg(&data)
                .args(["-U", SUPERUSER, "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"])
                .args(["--auth-local=scram-sha-256", "--auth-host=scram-sha-256"])
                .arg(format!("--pwfile={}", pwfile.display()));
            if let Some(run_as) = &run_as {
                run_as.apply(&mut initdb);
            }
            let out = initdb.output().map_err(io_err("running initdb"));
            let _ = fs::remove_file(&pwfile);
            let out = out?;
            if !out.status.success() {
                return Err(Error::Command {
                    what: "initdb".into(),
                    detail: format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
                });
            }
        }
        if let Some(run_as) = &run_as {
            run_as.chown_tree(&run)?;
        }

        let port = free_port()?;
        let log_path = root.join("postgres.log");
        let log = fs::File::create(&log_path).map_err(io_err("creating postgres.log"))?;
        let log_err = log.try_clone().map_err(io_err("cloning the log handle"))?;
        if let Some(run_as) = &run_as {
            run_as.chown_tree(&log_path)?;
        }
        let mut postgres = Command::new(binaries.tool("postgres"));
        postgres
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-k"])
            .arg(&run)
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=64MB"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            // Ctrl-C in a terminal reaches the whole foreground group; the server must instead be
            // stopped by us, after the application has closed its connections.
            .process_group(0);
        if let Some(run_as) = &run_as {
            run_as.apply(&mut postgres);
        }
        let child = postgres.spawn().map_err(io_err("starting postgres"))?;
        let mut server = Self { child: Some(child), port, password, root };
        server.wait_ready(&data, &log_path)?;
        Ok(server)
    }

    fn wait_ready(&mut self, data: &Path, log_path: &Path) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(Error::Command {
                    what: "postgres".into(),
                    detail: format!("exited with {status} during start-up:\n{}", tail(log_path)),
                });
            }
            // The last line of postmaster.pid turns to "ready" once connections are accepted.
            if let Ok(pidfile) = fs::read_to_string(data.join("postmaster.pid"))
                && pidfile.lines().nth(7).is_some_and(|l| l.trim() == "ready")
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::NotReady { log: tail(log_path) });
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The superuser password.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// Where the server's files live (the state dir, or its fallback under the temp dir).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// A connection URL for `database` as the superuser.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{SUPERUSER}:{}@127.0.0.1:{}/{database}", self.password, self.port)
    }

    /// Stops the server with a fast shutdown and waits for it to exit.
    pub fn stop(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        signal(child.id(), "INT");
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(25)),
                Ok(None) => {
                    // Immediate shutdown, then the hard way.
                    signal(child.id(), "QUIT");
                    thread::sleep(Duration::from_secs(2));
                    let _ = child.kill();
                    let _ = child.wait();
                    return Ok(());
                }
                Err(e) => return Err(Error::Io { what: "waiting for postgres".into(), source: e }),
            }
        }
    }
}

impl Drop for LocalPostgres {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// Sends `sig` to one process. (`--` keeps `kill` from ever reading the pid as an option.)
fn signal(pid: u32, sig: &str) {
    if pid == 0 {
        return;
    }
    let _ = Command::new("kill")
        .args(["-s", sig, "--"])
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Stops a server that a killed earlier run left behind on this data directory.
fn stop_stale_server(data: &Path) {
    let Ok(pidfile) = fs::read_to_string(data.join("postmaster.pid")) else { return };
    let Some(pid) = pidfile.lines().next().and_then(|l| l.trim().parse::<u32>().ok()) else { return };
    let is_postgres = fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains("postgres"))
        .unwrap_or(false);
    if !is_postgres {
        return;
    }
    signal(pid, "INT");
    let deadline = Instant::now() + Duration::from_secs(15);
    while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
}

fn traversable_by_others(path: &Path) -> bool {
    path.ancestors().all(|dir| fs::metadata(dir).map(|m| m.permissions().mode() & 0o001 != 0).unwrap_or(false))
}

fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io_err("finding a free port"))?;
    listener.local_addr().map(|a| a.port()).map_err(io_err("finding a free port"))
}

/// `n` random bytes from the kernel, hex-encoded.
pub fn random_hex(n: usize) -> Result<String> {
    let mut buf = vec![0u8; n];
    fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)).map_err(io_err("reading /dev/urandom"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn fnv1a(path: &Path) -> u64 {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

fn tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn major_version_is_read_from_directory_names() {
        assert_eq!(major_of(Path::new("/usr/lib/postgresql/15")), 15);
        assert_eq!(major_of(Path::new("/opt/homebrew/opt/postgresql@16")), 16);
        assert_eq!(major_of(Path::new("/usr/local/opt/unrelated")), 0);
    }

    #[test]
    fn missing_binaries_say_what_to_install() {
        let none =
            Binaries::discover_in(None, Some(std::ffi::OsStr::new("/nonexistent")), &[]).unwrap_err().to_string();
        assert!(none.contains("apt-get install postgresql"), "{none}");
        assert!(none.contains("OPENCRANE_PG_BINDIR"));
        let wrong = Binaries::discover_in(Some("/nonexistent".into()), None, &[]).unwrap_err().to_string();
        assert!(wrong.contains("/nonexistent does not contain initdb"), "{wrong}");
    }

    #[test]
    fn random_hex_has_the_requested_length_and_alphabet() {
        let a = random_hex(16).unwrap();
        let b = random_hex(16).unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    /// Starts a real server from the installed binaries, connects over TCP with the password,
    /// and checks that dropping the handle stops the process.
    #[test]
    fn starts_and_stops_a_real_server() {
        let dir = env::temp_dir().join(format!("localpg-test-{}", random_hex(6).unwrap()));
        let server = LocalPostgres::start(&dir).unwrap();
        let psql = Binaries::discover().unwrap().tool("psql");
        let out = Command::new(psql).arg(server.url("postgres")).args(["-tAc", "select 40 + 2"]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42", "{out:?}");
        let pid = server.child.as_ref().unwrap().id();
        drop(server);
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "postgres still running after drop");
        let _ = fs::remove_dir_all(&dir);
    }
}
