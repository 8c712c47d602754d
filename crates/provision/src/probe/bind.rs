//! A real authoritative DNS server for tests (feature `bind-harness`): BIND 9's `named` from
//! Debian's `bind9` package, started on a free loopback port with one zone that accepts RFC 2136
//! dynamic updates from loopback — the way external-dns' rfc2136 provider changes a zone — and
//! changed with `nsupdate` (package `bind9-dnsutils`). Stopped when dropped.

#![allow(clippy::missing_panics_doc, clippy::unwrap_used, reason = "test support: a failed setup fails the test")]

use std::{
    io::Write as _,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// A running `named` serving one zone.
pub struct Bind {
    child: Child,
    /// Where it answers (UDP and TCP).
    pub addr: SocketAddr,
    /// The zone it is authoritative for.
    pub zone: String,
    dir: PathBuf,
}

/// Where Debian installs `named`.
pub const NAMED: &str = "/usr/sbin/named";

impl Bind {
    /// Starts `named` for `zone` (SOA and NS only) and waits until it answers.
    pub fn start(zone: &str) -> std::io::Result<Self> {
        let dir = std::env::temp_dir().join(format!("opencrane-bind-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir)?;
        let port = free_port()?;
        let zone_file = dir.join("zone.db");
        std::fs::write(
            &zone_file,
            format!(
                "$TTL 60\n@ IN SOA ns.{zone}. hostmaster.{zone}. 1 60 60 600 60\n@ IN NS ns.{zone}.\nns IN A 127.0.0.1\n"
            ),
        )?;
        let d = dir.display();
        let conf = dir.join("named.conf");
        std::fs::write(
            &conf,
            format!(
                "options {{ directory \"{d}\"; pid-file \"{d}/named.pid\"; session-keyfile \"{d}/session.key\";\n\
                 managed-keys-directory \"{d}\"; listen-on port {port} {{ 127.0.0.1; }}; listen-on-v6 {{ none; }};\n\
                 recursion no; dnssec-validation no; allow-query {{ any; }}; notify no; }};\n\
                 controls {{ }};\n\
                 zone \"{zone}\" {{ type primary; file \"{d}/zone.db\"; journal \"{d}/zone.jnl\"; allow-update {{ 127.0.0.1; }}; }};\n"
            ),
        )?;
        let log = std::fs::File::create(dir.join("named.log"))?;
        let child =
            Command::new(NAMED).args(["-g", "-n", "1", "-c"]).arg(&conf).stdout(Stdio::null()).stderr(log).spawn()?;
        let bind = Self { child, addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port), zone: zone.into(), dir };
        bind.wait_ready()?;
        Ok(bind)
    }

    fn wait_ready(&self) -> std::io::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            // An update that changes nothing: succeeds once the zone is loaded and listening.
            if self.nsupdate(&format!("prereq yxdomain {}.", self.zone)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = std::fs::read_to_string(self.dir.join("named.log")).unwrap_or_default();
        Err(std::io::Error::other(format!("named did not start on {}:\n{log}", self.addr)))
    }

    /// Runs one `nsupdate` transaction (`commands` without `server`/`send`).
    pub fn nsupdate(&self, commands: &str) -> std::io::Result<()> {
        let mut child = Command::new("nsupdate")
            .args(["-t", "3"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let script = format!("server {} {}\nzone {}\n{commands}\nsend\n", self.addr.ip(), self.addr.port(), self.zone);
        child.stdin.take().ok_or_else(|| std::io::Error::other("no stdin"))?.write_all(script.as_bytes())?;
        let out = child.wait_with_output()?;
        if out.status.success() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!("nsupdate: {}", String::from_utf8_lossy(&out.stderr))))
        }
    }

    /// Makes `name`'s only address `ip` (an A or AAAA record, TTL 60).
    pub fn set_address(&self, name: &str, ip: IpAddr) {
        let kind = if ip.is_ipv4() { "A" } else { "AAAA" };
        self.nsupdate(&format!("update delete {name}. {kind}\nupdate add {name}. 60 {kind} {ip}")).unwrap();
    }

    /// Deletes every record of `name`.
    pub fn delete(&self, name: &str) {
        self.nsupdate(&format!("update delete {name}.")).unwrap();
    }

    /// Makes `name`'s only TXT record `text`.
    pub fn set_txt(&self, name: &str, text: &str) {
        self.nsupdate(&format!("update delete {name}. TXT\nupdate add {name}. 60 TXT \"{text}\"")).unwrap();
    }

    /// Stops the server now (the probe then sees it unreachable).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Bind {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A loopback port free for both UDP and TCP right now.
fn free_port() -> std::io::Result<u16> {
    for _ in 0..50 {
        let udp = std::net::UdpSocket::bind("127.0.0.1:0")?;
        let port = udp.local_addr()?.port();
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(std::io::Error::other("no free port"))
}
