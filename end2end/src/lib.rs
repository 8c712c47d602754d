//! Browser end-to-end harness: the real `opencrane dev` process (its own PostgreSQL, both roles)
//! driven through headless Chromium over WebDriver.
//!
//! The WebDriver client is a few dozen lines over `std::net` (JSON over HTTP/1.1 on loopback):
//! a full client crate would pull HTTP-client features into the workspace's shared dependencies
//! and force the server to be compiled twice. Every process started here is stopped on drop,
//! including when a test panics.

#![allow(clippy::expect_used, reason = "a test harness: a missing browser or server must fail the test loudly")]

use std::{
    env,
    io::{BufRead, BufReader, Read, Write},
    net::{Ipv4Addr, TcpListener, TcpStream},
    os::unix::process::CommandExt as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

/// How long a wait may take before the test fails. Generous: waits end as soon as their condition
/// holds, and on a loaded 2-core CI machine a page with a cold wasm bundle can take seconds.
pub const TIMEOUT: Duration = Duration::from_secs(45);

/// At most this many dev servers (each with its PostgreSQL and a browser) run at once: the test
/// harness runs tests in parallel, and more would only starve each other on small machines.
const CONCURRENT_SERVERS: usize = 2;

static SLOTS: std::sync::Mutex<usize> = std::sync::Mutex::new(0);
static SLOT_FREED: std::sync::Condvar = std::sync::Condvar::new();

/// A running dev server's claim on one of the [`CONCURRENT_SERVERS`] slots.
struct Slot;

impl Slot {
    fn take() -> Self {
        let mut used = SLOTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while *used >= CONCURRENT_SERVERS {
            used = SLOT_FREED.wait(used).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *used += 1;
        Self
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut used = SLOTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *used -= 1;
        SLOT_FREED.notify_one();
    }
}

/// A free loopback port.
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port: {e}"))
}

fn find_on_path(names: &[&str]) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path).flat_map(|dir| names.iter().map(move |n| dir.join(n))).find(|p| p.is_file())
}

/// Polls `check` until it returns `Some`, or fails the test after [`TIMEOUT`].
pub fn wait_for<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    wait_explained(what, check, String::new)
}

/// [`wait_for`], and a timeout says what `explain` finds then (the page a browser is on).
pub fn wait_explained<T>(what: &str, mut check: impl FnMut() -> Option<T>, explain: impl Fn() -> String) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {TIMEOUT:?} waiting for {what}{}", explain());
        thread::sleep(Duration::from_millis(100));
    }
}

fn signal(pid: u32, sig: &str) {
    if pid != 0 {
        let _ = Command::new("kill").args(["-s", sig, "--"]).arg(pid.to_string()).status();
    }
}

/// A running `opencrane dev` with its own state directory; stopped with Ctrl-C (SIGINT) on drop.
pub struct DevServer {
    child: Option<Child>,
    _slot: Slot,
    state_dir: PathBuf,
    /// `http://127.0.0.1:<port>` of the fleet console.
    pub fleet_url: String,
    /// `http://127.0.0.1:<port>` of the demo silo.
    pub silo_url: String,
    /// The port of the dev server's PostgreSQL.
    pub postgres_port: u16,
}

impl DevServer {
    /// Starts the binary named by `OPENCRANE_BIN` (default `target/debug/opencrane`) with the
    /// site in `LEPTOS_SITE_ROOT`, on free ports.
    pub fn start() -> Self {
        Self::start_with(&["--port", "0", "--silo-port", "0"])
    }

    /// Like [`start`](Self::start), with these `opencrane dev` arguments (ports included).
    pub fn start_with(args: &[&str]) -> Self {
        Self::start_with_env(args, &[])
    }

    /// Like [`start_with`](Self::start_with), with these environment variables too (e.g.
    /// `KUBECONFIG` pointing at a fake API server).
    pub fn start_with_env(args: &[&str], envs: &[(&str, &str)]) -> Self {
        let bin = binary();
        let site = workspace()
            .join(env::var_os("LEPTOS_SITE_ROOT").map(PathBuf::from).unwrap_or_else(|| "target/site".into()));
        for wasm in ["pkg/opencrane-fleet.wasm", "pkg/opencrane-silo.wasm"] {
            assert!(site.join(wasm).is_file(), "the browser bundle {wasm} is missing in {}", site.display());
        }
        let slot = Slot::take();
        let state_dir = env::temp_dir().join(format!("opencrane-e2e-{}-{}", std::process::id(), free_port()));
        let mut child = Command::new(&bin)
            .arg("dev")
            .args(args)
            .arg("--state-dir")
            .arg(&state_dir)
            .env("LEPTOS_SITE_ROOT", &site)
            .env("RUST_LOG", "warn")
            .envs(envs.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Self {
            _slot: slot,
            child: Some(child),
            state_dir,
            fleet_url: String::new(),
            silo_url: String::new(),
            postgres_port: 0,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while server.fleet_url.is_empty() || server.silo_url.is_empty() || server.postgres_port == 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            let line =
                rx.recv_timeout(left).unwrap_or_else(|_| panic!("opencrane dev did not report its URLs within 60 s"));
            let url = || line.split_whitespace().find(|w| w.starts_with("http://")).map(str::to_owned);
            if line.trim_start().starts_with("Fleet console") {
                server.fleet_url = url().unwrap_or_default();
            } else if line.trim_start().starts_with("Demo silo") {
                server.silo_url = url().unwrap_or_default();
            } else if let Some(rest) = line.trim_start().strip_prefix("PostgreSQL") {
                let port = rest.trim().split([',', ' ']).next().and_then(|a| a.rsplit(':').next());
                server.postgres_port = port.and_then(|p| p.parse().ok()).unwrap_or_default();
            }
        }
        // Keep draining stdout so the server never blocks on a full pipe; the lines show up in
        // the output of a failing test.
        thread::spawn(move || {
            while let Ok(line) = rx.recv() {
                eprintln!("[opencrane] {line}");
            }
        });
        server
    }

    /// The dev token the server wrote.
    pub fn token(&self) -> String {
        std::fs::read_to_string(self.state_dir.join("token")).map(|t| t.trim().to_owned()).unwrap_or_default()
    }

    fn postgres_root(&self) -> PathBuf {
        std::fs::read_to_string(self.state_dir.join("postgres/LOCATION"))
            .map(|l| PathBuf::from(l.trim()))
            .unwrap_or_else(|_| self.state_dir.join("postgres"))
    }

    /// The pid of the PostgreSQL server this dev instance started, from its pid file.
    pub fn postgres_pid(&self) -> Option<u32> {
        let root = self.postgres_root();
        std::fs::read_to_string(root.join("data/postmaster.pid")).ok()?.lines().next()?.trim().parse().ok()
    }

    /// Runs `sql` as the dev PostgreSQL's superuser with `psql` and returns its unaligned output.
    pub fn sql(&self, sql: &str) -> String {
        self.sql_in("postgres", sql)
    }

    /// The state directory (`--state-dir`).
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// A `psql` on `database` as the dev PostgreSQL's superuser, not yet started (`-At`, stop on
    /// the first error).
    pub fn psql(&self, database: &str) -> Command {
        let binaries = opencrane_localpg::Binaries::discover().expect("the PostgreSQL binaries");
        let password = std::fs::read_to_string(self.postgres_root().join("password")).expect("the superuser password");
        let mut psql = Command::new(binaries.bindir().join("psql"));
        psql.args(["-h", "127.0.0.1", "-p", &self.postgres_port.to_string(), "-U", opencrane_localpg::SUPERUSER])
            .args(["-d", database, "-At", "-v", "ON_ERROR_STOP=1"])
            .env("PGPASSWORD", password.trim());
        psql
    }

    /// A connection URL for `database` as the dev PostgreSQL's superuser.
    pub fn postgres_url(&self, database: &str) -> String {
        let password = std::fs::read_to_string(self.postgres_root().join("password")).expect("the superuser password");
        format!(
            "postgres://{}:{}@127.0.0.1:{}/{database}",
            opencrane_localpg::SUPERUSER,
            password.trim(),
            self.postgres_port
        )
    }

    /// Runs `sql` on `database` as the dev PostgreSQL's superuser; its unaligned output.
    pub fn sql_in(&self, database: &str, sql: &str) -> String {
        let output = self.psql(database).args(["-c", sql]).output().expect("running psql");
        assert!(output.status.success(), "psql failed: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// Sends Ctrl-C (SIGINT) and waits for a clean exit; returns the exit status.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        signal(child.id(), "INT");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return child.wait().ok();
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.state_dir);
    }
}

/// The `opencrane` binary under test: `OPENCRANE_BIN` (default `target/debug/opencrane`).
pub fn binary() -> PathBuf {
    // Relative paths are relative to the workspace (cargo runs tests in the package directory).
    let bin = workspace()
        .join(env::var_os("OPENCRANE_BIN").map(PathBuf::from).unwrap_or_else(|| "target/debug/opencrane".into()));
    assert!(bin.is_file(), "{} is missing: run the tests through `cargo xtask test`", bin.display());
    bin
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// One plain HTTP/1.1 exchange on loopback; returns status and body.
pub fn http(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&str>) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap_or_else(|| panic!("only http:// URLs: {url}"));
    let (host, path) = rest.split_once('/').map(|(h, p)| (h, format!("/{p}"))).unwrap_or((rest, "/".into()));
    let mut stream = TcpStream::connect(host).unwrap_or_else(|e| panic!("connect {host}: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok();
    let body = body.unwrap_or("");
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !body.is_empty() {
        request.push_str("Content-Type: application/json\r\n");
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap_or_else(|e| panic!("write to {host}: {e}"));
    // Servers may keep the connection open despite `Connection: close`, so read by length.
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).unwrap_or_else(|e| panic!("read from {host}: {e}"));
        if n == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let header = |name: &str| {
        head.lines().find_map(|l| {
            l.split_once(':').filter(|(k, _)| k.trim().eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_owned())
        })
    };
    let mut body = Vec::new();
    if let Some(len) = header("content-length").and_then(|l| l.parse::<usize>().ok()) {
        body.resize(len, 0);
        reader.read_exact(&mut body).unwrap_or_else(|e| panic!("read from {host}: {e}"));
    } else if header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).unwrap_or_else(|e| panic!("read from {host}: {e}"));
            let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap_or_else(|e| panic!("read from {host}: {e}"));
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else {
        reader.read_to_end(&mut body).unwrap_or_else(|e| panic!("read from {host}: {e}"));
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// A real OpenID Provider (npm `oidc-provider`, see `end2end/oidc/provider.mjs`) on loopback;
/// stopped on drop.
pub struct OidcProvider {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub issuer: String,
}

impl OidcProvider {
    /// Starts the provider on `port` with these clients (JSON client metadata) and extra scopes.
    pub fn start(port: u16, clients: &Value, scopes: &str) -> Self {
        let dir = workspace().join("end2end/oidc");
        assert!(
            dir.join("node_modules/oidc-provider").is_dir(),
            "the test OpenID Provider is not installed: run `npm ci --prefix end2end/oidc` (cargo xtask test does)"
        );
        let child = Command::new("node")
            .arg(dir.join("provider.mjs"))
            .env("PORT", port.to_string())
            .env("CLIENTS", clients.to_string())
            .env("SCOPES", scopes)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start node (is Node.js installed?)");
        let issuer = format!("http://127.0.0.1:{port}");
        let discovery = format!("{issuer}/.well-known/openid-configuration");
        wait_for("the OpenID Provider to answer", || {
            TcpStream::connect(("127.0.0.1", port))
                .ok()
                .and_then(|_| (http("GET", &discovery, &[], None).0 == 200).then_some(()))
        });
        Self { child, issuer }
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A headless Chromium session through ChromeDriver; both quit on drop.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    profile: PathBuf,
}

/// A WebDriver element reference.
#[derive(Clone, Debug)]
pub struct Element(String);

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    /// Starts ChromeDriver and a headless Chromium.
    pub fn start() -> Self {
        Self::start_with_hosts(&[])
    }

    /// Starts a browser that resolves `hosts` to 127.0.0.1 (for per-host sign-in on loopback).
    pub fn start_with_hosts(hosts: &[&str]) -> Self {
        Self::launch(hosts, true)
    }

    /// Starts a browser with JavaScript switched off for every page (Blink's `scriptEnabled`
    /// setting: pages run no script and load no wasm; WebDriver's own scripts still run).
    pub fn start_without_javascript() -> Self {
        Self::launch(&[], false)
    }

    fn launch(hosts: &[&str], javascript: bool) -> Self {
        let driver_bin =
            find_on_path(&["chromedriver"]).expect("chromedriver not found: apt-get install chromium-driver");
        let chrome = env::var_os("CHROMIUM")
            .map(PathBuf::from)
            .or_else(|| find_on_path(&["chromium", "chromium-browser", "google-chrome"]))
            .expect("Chromium not found: apt-get install chromium");
        let port = free_port();
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("cannot start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        wait_for("chromedriver to listen", || TcpStream::connect(("127.0.0.1", port)).ok());
        let profile = env::temp_dir().join(format!("opencrane-e2e-chrome-{port}"));
        let mut args = vec![
            "--headless".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--window-size=1280,900".into(),
            format!("--user-data-dir={}", profile.display()),
        ];
        if !javascript {
            args.push("--blink-settings=scriptEnabled=false".into());
        }
        if !hosts.is_empty() {
            let rules: Vec<String> = hosts.iter().map(|h| format!("MAP {h} 127.0.0.1")).collect();
            args.push(format!("--host-resolver-rules={}", rules.join(", ")));
        }
        let caps = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": { "binary": chrome, "args": args }
            }}
        });
        let mut browser = Self { driver, base, session: String::new(), profile };
        let created = browser.call("POST", "/session", Some(caps));
        browser.session = created["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {created}")).to_owned();
        browser
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let text = body.map(|b| b.to_string());
        let (status, reply) = http(method, &url, &[], text.as_deref());
        let value: Value = serde_json::from_str(&reply).unwrap_or(Value::Null);
        assert!(status < 400, "WebDriver {method} {path} failed ({status}): {reply}");
        value.get("value").cloned().unwrap_or(value)
    }

    fn try_call(&self, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let text = body.map(|b| b.to_string());
        let (status, reply) = http(method, &url, &[], text.as_deref());
        if status >= 400 {
            return None;
        }
        serde_json::from_str::<Value>(&reply).ok().and_then(|v| v.get("value").cloned())
    }

    /// Navigates to `url` and waits for the page to load.
    pub fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    /// [`wait_for`] on this page: a timeout names the URL and shows the page's text.
    pub fn wait_for<T>(&self, what: &str, check: impl FnMut() -> Option<T>) -> T {
        wait_explained(what, check, || {
            let text: String = self.page_text().chars().take(2000).collect();
            format!("\non {}:\n{text}", self.url())
        })
    }

    /// The current URL.
    pub fn url(&self) -> String {
        self.call("GET", "/url", None).as_str().unwrap_or_default().to_owned()
    }

    /// The first element matching `css`, if any.
    pub fn find(&self, css: &str) -> Option<Element> {
        self.try_call("POST", "/element", Some(json!({ "using": "css selector", "value": css })))
            .and_then(|v| v[ELEMENT_KEY].as_str().map(|id| Element(id.to_owned())))
    }

    /// Waits for an element matching `css`.
    pub fn wait(&self, css: &str) -> Element {
        wait_for(&format!("element {css}"), || self.find(css))
    }

    /// Clicks.
    pub fn click(&self, el: &Element) {
        self.call("POST", &format!("/element/{}/click", el.0), Some(json!({})));
    }

    /// Clicks, for a loop that clicks until something happens: `false` when the click missed
    /// because the page moved on meanwhile (the element went stale, or the page that answered
    /// has it hidden), which the loop's next pass sees. Elsewhere use [`Browser::click`].
    pub fn try_click(&self, el: &Element) -> bool {
        self.try_call("POST", &format!("/element/{}/click", el.0), Some(json!({}))).is_some()
    }

    /// Clears an input.
    pub fn clear(&self, el: &Element) {
        self.call("POST", &format!("/element/{}/clear", el.0), Some(json!({})));
    }

    /// Types into an input (one input event per character).
    pub fn type_text(&self, el: &Element, text: &str) {
        self.call("POST", &format!("/element/{}/value", el.0), Some(json!({ "text": text })));
    }

    /// The rendered text of an element.
    pub fn text(&self, el: &Element) -> String {
        self.call("GET", &format!("/element/{}/text", el.0), None).as_str().unwrap_or_default().to_owned()
    }

    /// The text of the first element matching `css`, if there is one (`None` also when the page
    /// was replaced between finding and reading it).
    pub fn text_of(&self, css: &str) -> Option<String> {
        let el = self.find(css)?;
        self.try_call("GET", &format!("/element/{}/text", el.0), None).and_then(|v| v.as_str().map(str::to_owned))
    }

    /// The current value of an input, select or text area.
    pub fn value(&self, el: &Element) -> String {
        self.call("GET", &format!("/element/{}/property/value", el.0), None).as_str().unwrap_or_default().to_owned()
    }

    /// Makes every response from now on arrive `latency` late (ChromeDriver's network emulation),
    /// like a slow link: the page shows long before its wasm has loaded.
    pub fn slow_network(&self, latency: Duration) {
        let conditions = json!({ "network_conditions": {
            "offline": false,
            "latency": u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            // A slow link (500 KB/s): the bundle, sent compressed, still arrives seconds after
            // the page (at 10 MB/s the gzip copy came soon enough to race the typing).
            "download_throughput": 500_000,
            "upload_throughput": 10_000_000,
        }});
        self.call("POST", "/chromium/network_conditions", Some(conditions));
    }

    /// Whether the page has loaded its wasm bundle (a finished resource entry for it).
    pub fn wasm_loaded(&self) -> bool {
        self.eval(
            "return performance.getEntriesByType('resource').some(e => e.name.endsWith('.wasm') && e.responseEnd > 0);",
        )
        .as_bool()
        .unwrap_or(false)
    }

    /// Whether the page's islands are live (the hydrate entry marks `<body data-hydrated>`).
    pub fn hydrated(&self) -> bool {
        self.eval("return document.body.hasAttribute('data-hydrated');").as_bool().unwrap_or(false)
    }

    /// Whether a control is enabled.
    pub fn enabled(&self, el: &Element) -> bool {
        self.call("GET", &format!("/element/{}/enabled", el.0), None).as_bool().unwrap_or(false)
    }

    /// Runs `script` in the page and returns its result.
    pub fn eval(&self, script: &str) -> Value {
        self.call("POST", "/execute/sync", Some(json!({ "script": script, "args": [] })))
    }

    /// Runs `script` as an asynchronous WebDriver script: it ends by calling
    /// `arguments[arguments.length - 1]` with its result.
    pub fn eval_async(&self, script: &str) -> Value {
        self.call("POST", "/execute/async", Some(json!({ "script": script, "args": [] })))
    }

    /// Resizes the window (CSS pixels of the outer window; headless has no chrome around it).
    pub fn resize(&self, width: u32, height: u32) {
        self.call("POST", "/window/rect", Some(json!({ "width": width, "height": height })));
    }

    /// The cookies visible to the current page, with their attributes.
    pub fn cookies(&self) -> Vec<Value> {
        self.call("GET", "/cookie", None).as_array().cloned().unwrap_or_default()
    }

    /// The whole page's text.
    pub fn page_text(&self) -> String {
        self.eval("return document.body.innerText;").as_str().unwrap_or_default().to_owned()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = http("DELETE", &format!("{}/session/{}", self.base, self.session), &[], None);
        }
        // ChromeDriver runs in its own process group; take any Chromium it left with it.
        signal(self.driver.id(), "TERM");
        // `--` matters: without it, `kill -KILL -1234` reads "-1…" as options and signals every
        // process on the machine (pid -1).
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-s", "KILL", "--", &group]).status();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
