//! The PostgreSQL ledger tests' server, schemas and faults.
//!
//! The server comes from the environment: `INDEXQ_TEST_PG` (a
//! `postgres://user@host:port/db` URL without password) and
//! `INDEXQ_TEST_PG_PASSWORD`; `eval "$(.ci/postgres start)"` sets both. Each
//! test takes its own schema ([`PgServer::ledger`]), so tests never see each
//! other's rows. A sandbox switched to PostgreSQL ([`Sandbox::use_pg`])
//! writes the ledger keys at the top of its config, gives every run the
//! password through `$INDEXQ_TEST_PG_PASSWORD` (`ledger_password_env`), and
//! no `$INDEXQ_LEDGER`. The password is one of the [`super::secrets`] every
//! run's output is checked for.
//!
//! [`Machine`] runs the binary as if on another machine (its own working
//! directory, config file and `$INDEXQ_HOST`), and [`PgProxy`] is a TCP proxy
//! that can drop every connection and stop listening, as a server that goes
//! away, and listen again.
#![allow(dead_code)]

use super::{Run, Sandbox};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// The variable that holds the test server's password, in the test process
/// and in every run of a sandbox that uses PostgreSQL.
pub const PASSWORD_ENV: &str = "INDEXQ_TEST_PG_PASSWORD";

/// The test server, as `INDEXQ_TEST_PG` names it.
#[derive(Debug, Clone)]
pub struct PgServer {
    /// `postgres://user@host:port/db`, without the password.
    pub url: String,
    pub password: String,
    pub host: String,
    pub port: u16,
}

/// The test server, as `INDEXQ_TEST_PG` names it. Every test that calls
/// this is `#[ignore = "needs PostgreSQL: …"]`: plain `cargo test` lists it
/// as ignored, `cargo test -- --include-ignored` runs it (`.ci/run` does,
/// with a server), and run without a server it fails here.
pub fn server() -> PgServer {
    let Some(url) = std::env::var("INDEXQ_TEST_PG").ok().filter(|u| !u.trim().is_empty()) else {
        panic!("this test needs PostgreSQL: INDEXQ_TEST_PG is not set; run `eval \"$(.ci/postgres start)\"` first");
    };
    let url = url.trim().to_string();
    let password = std::env::var(PASSWORD_ENV).unwrap_or_default();
    let (host, port) = host_port(&url);
    PgServer { url, password, host, port }
}

/// The test server's password, as a secret no output may hold (only when
/// long enough to be recognisable).
pub fn password() -> Option<String> {
    std::env::var(PASSWORD_ENV).ok().filter(|p| p.len() >= 6)
}

/// `(start, end)` of the `host:port` part of a URL's authority.
fn authority_span(url: &str) -> (usize, usize) {
    let start = url.find("://").map(|i| i + 3).unwrap_or_else(|| panic!("not a URL: {url}"));
    let end = url[start..].find(['/', '?']).map(|i| start + i).unwrap_or(url.len());
    let at = url[start..end].rfind('@').map(|i| start + i + 1).unwrap_or(start);
    (at, end)
}

/// `url` with its host and port replaced by `addr` (user and password kept).
pub fn url_with_addr(url: &str, addr: SocketAddr) -> String {
    let (start, end) = authority_span(url);
    format!("{}{addr}{}", &url[..start], &url[end..])
}

fn host_port(url: &str) -> (String, u16) {
    let (start, end) = authority_span(url);
    let authority = &url[start..end];
    match authority.rsplit_once(':') {
        Some((host, port)) => (host.to_string(), port.parse().unwrap_or_else(|_| panic!("bad port in {url}"))),
        None => (authority.to_string(), 5432),
    }
}

/// Percent-encodes all but RFC 3986's unreserved characters.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

static SCHEMAS: AtomicU64 = AtomicU64::new(0);

impl PgServer {
    /// `host:port`, as messages about the server name it.
    pub fn host_port(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The server's address (for a proxy in front of it).
    pub fn addr(&self) -> SocketAddr {
        let host = if self.host == "localhost" { "127.0.0.1" } else { &self.host };
        format!("{host}:{}", self.port).parse().unwrap_or_else(|e| panic!("{host}:{}: {e}", self.port))
    }

    /// A schema name no other test (or test run) uses: `t_<pid>_<n>_<nanos>`.
    pub fn schema(&self) -> String {
        let n = SCHEMAS.fetch_add(1, Ordering::SeqCst);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        format!("t_{}_{n}_{}", std::process::id(), nanos % 1_000_000_000_000)
    }

    /// A ledger in a new schema of this server.
    pub fn ledger(&self) -> PgLedger {
        PgLedger {
            url: self.url.clone(),
            schema: self.schema(),
            password: self.password.clone(),
            password_env: !self.password.is_empty(),
            lease: None,
            timeout: None,
        }
    }

    /// The URL with the host and port replaced by `addr` (e.g. a proxy's).
    pub fn url_via(&self, addr: SocketAddr) -> String {
        url_with_addr(&self.url, addr)
    }

    /// The URL with the password in it: `postgres://user:PASSWORD@host:port/db`.
    pub fn url_with_password(&self, password: &str) -> String {
        let start = self.url.find("://").unwrap() + 3;
        let (at, _) = authority_span(&self.url);
        assert!(at > start, "INDEXQ_TEST_PG names no user: {}", self.url);
        let user = &self.url[start..at - 1];
        let user = user.split(':').next().unwrap();
        format!("{}{user}:{}@{}", &self.url[..start], encode(password), &self.url[at..])
    }

    /// Runs SQL with `psql` (as the test role) and returns what it printed
    /// (unaligned, tuples only); panics if it fails.
    pub fn psql(&self, sql: &str) -> String {
        let out = Command::new("psql")
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", &self.url, "-c", sql])
            .env("PGPASSWORD", &self.password)
            .env("PGCONNECT_TIMEOUT", "10")
            .output()
            .expect("psql runs (it comes with the PostgreSQL client)");
        assert!(
            out.status.success(),
            "psql {sql:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

/// Where a sandbox's ledger is in PostgreSQL, and how it is configured.
#[derive(Debug, Clone)]
pub struct PgLedger {
    /// The `ledger` URL (it may point at a [`PgProxy`] or hold a password).
    pub url: String,
    pub schema: String,
    /// The password runs get in `$INDEXQ_TEST_PG_PASSWORD`.
    pub password: String,
    /// Whether the config says `ledger_password_env = "INDEXQ_TEST_PG_PASSWORD"`.
    pub password_env: bool,
    /// `ledger_lease`, e.g. `"2s"`.
    pub lease: Option<String>,
    /// `ledger_timeout`, e.g. `"3s"`.
    pub timeout: Option<String>,
}

impl PgLedger {
    pub fn lease(mut self, lease: &str) -> PgLedger {
        self.lease = Some(lease.to_string());
        self
    }

    pub fn timeout(mut self, timeout: &str) -> PgLedger {
        self.timeout = Some(timeout.to_string());
        self
    }

    /// The same schema, reached through `url`.
    pub fn via(mut self, url: &str) -> PgLedger {
        self.url = url.to_string();
        self
    }

    /// The top-level config keys (before any table).
    pub fn config_lines(&self) -> String {
        let mut text = format!("ledger = {}\nledger_schema = {}\n", toml_str(&self.url), toml_str(&self.schema));
        if self.password_env {
            text.push_str(&format!("ledger_password_env = {}\n", toml_str(PASSWORD_ENV)));
        }
        if let Some(lease) = &self.lease {
            text.push_str(&format!("ledger_lease = {}\n", toml_str(lease)));
        }
        if let Some(timeout) = &self.timeout {
            text.push_str(&format!("ledger_timeout = {}\n", toml_str(timeout)));
        }
        text.push('\n');
        text
    }

    /// What a run needs: the password in its variable (and no `$INDEXQ_LEDGER`).
    pub fn apply(&self, cmd: &mut Command) {
        cmd.env(PASSWORD_ENV, &self.password);
    }
}

impl Sandbox {
    /// Keeps this sandbox's ledger in PostgreSQL from now on (rewrites the config).
    pub fn use_pg(&mut self, ledger: PgLedger) {
        self.pg = Some(ledger);
        self.write_config();
    }

    /// Another machine: its own working directory with a copy of the
    /// sandbox's config (as it is now), and `$INDEXQ_HOST` set to `host`.
    pub fn machine(&self, host: &str) -> Machine<'_> {
        let config = self.write_config();
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(&config, dir.path().join("indexq.toml")).unwrap();
        Machine { sb: self, dir, host: host.to_string() }
    }
}

/// Panics if a SQLite ledger was created where a run of `sb` (or of a
/// machine in `dirs`) would have put one: a PostgreSQL test that quietly ran
/// on SQLite would prove nothing.
pub fn assert_no_sqlite(sb: &Sandbox, dirs: &[&Path]) {
    let mut places = vec![sb.ledger(), sb.dir.path().join("xdg-state/indexq/ledger.db")];
    places.extend(dirs.iter().map(|d| d.join("xdg-state/indexq/ledger.db")));
    for place in places {
        assert!(!place.exists(), "a SQLite ledger appeared at {}", place.display());
    }
}

/// A run of the binary as if on another machine.
pub struct Machine<'a> {
    sb: &'a Sandbox,
    pub dir: tempfile::TempDir,
    pub host: String,
}

impl Machine<'_> {
    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("indexq.toml")
    }

    /// A builder for one run on this machine.
    pub fn indexq(&self, args: &[&str]) -> Run {
        let mut run = self.sb.indexq(args);
        let dir = self.dir.path();
        run.cmd
            .current_dir(dir)
            .env("HOME", dir)
            .env("XDG_STATE_HOME", dir.join("xdg-state"))
            .env("XDG_CONFIG_HOME", dir.join("xdg-config"))
            .env("INDEXQ_CONFIG", self.config_path())
            .env("INDEXQ_HOST", &self.host);
        run
    }

    /// Writes a URL list (paths on the sandbox's site) on this machine.
    pub fn urls(&self, name: &str, paths: &[String]) -> PathBuf {
        let text: String = paths.iter().map(|p| format!("{}\n", self.sb.url(p))).collect();
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// Waits for a spawned run, at most `limit` (then kills it and panics):
/// a run that hangs fails its test instead of hanging the suite. Its
/// output is read meanwhile, so a long one cannot fill the pipe and stall it.
pub fn wait_at_most(mut child: std::process::Child, limit: Duration, what: &str) -> super::Done {
    fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<Vec<u8>> {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let end = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            let (out, err) = (stdout.join().unwrap(), stderr.join().unwrap());
            panic!(
                "{what} still ran after {limit:?}\n--- stdout\n{}\n--- stderr\n{}",
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&err)
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    let output = std::process::Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() };
    super::Done::from(output)
}

/// A TCP proxy on 127.0.0.1 in front of the server. `stop` closes the
/// listener and every open connection (clients see the server go away);
/// `start` listens again on the same port.
pub struct PgProxy {
    addr: SocketAddr,
    upstream: SocketAddr,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    running: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl PgProxy {
    /// A proxy to `upstream` on a free port of 127.0.0.1, listening.
    pub fn new(upstream: SocketAddr) -> PgProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy: bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let mut proxy = PgProxy {
            addr,
            upstream,
            conns: Arc::new(Mutex::new(Vec::new())),
            running: Arc::new(AtomicBool::new(false)),
            accept: None,
        };
        proxy.serve(listener);
        proxy
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn is_running(&self) -> bool {
        self.accept.is_some()
    }

    /// Listens again on the same port (no-op if listening).
    pub fn start(&mut self) {
        if self.accept.is_some() {
            return;
        }
        // std sets SO_REUSEADDR on Unix, so the port is free again at once;
        // retry briefly in case it is not.
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr) {
                Ok(l) => break l,
                Err(e) if tries < 50 => {
                    tries += 1;
                    let _ = e;
                    thread::sleep(Duration::from_millis(100));
                }
                Err(e) => panic!("proxy: bind {} again: {e}", self.addr),
            }
        };
        self.serve(listener);
    }

    /// Stops listening and closes every connection, both ways.
    pub fn stop(&mut self) {
        self.running.store(false, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join(); // drops the listener: new connections are refused
        }
        for conn in self.conns.lock().unwrap().drain(..) {
            let _ = conn.shutdown(Shutdown::Both);
        }
    }

    fn serve(&mut self, listener: TcpListener) {
        listener.set_nonblocking(true).unwrap();
        self.running.store(true, Ordering::SeqCst);
        let running = Arc::clone(&self.running);
        let conns = Arc::clone(&self.conns);
        let upstream = self.upstream;
        self.accept = Some(thread::spawn(move || {
            while running.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        let Ok(server) = TcpStream::connect_timeout(&upstream, Duration::from_secs(5)) else {
                            continue; // drops the client: it sees the connection close
                        };
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        let (Ok(c2), Ok(s2), Ok(c3), Ok(s3)) =
                            (client.try_clone(), server.try_clone(), client.try_clone(), server.try_clone())
                        else {
                            continue;
                        };
                        {
                            let mut list = conns.lock().unwrap();
                            list.push(c3);
                            list.push(s3);
                        }
                        thread::spawn(move || pump(client, server));
                        thread::spawn(move || pump(s2, c2));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => thread::sleep(Duration::from_millis(5)),
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        }));
    }
}

/// Copies `from` to `to` until either side closes, then closes both.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A free TCP port on 127.0.0.1 (nothing listens there once this returns).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Whether `haystack` holds `needle` (for messages: shows the haystack).
pub fn assert_absent(haystack: &str, needle: &str, what: &str) {
    assert!(!haystack.contains(needle), "{what} shows {needle:?}:\n{haystack}");
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A PostgreSQL cluster of one test's own — its own port and folder, made by
/// `.ci/postgres start` — that the test may stop and start again: a server
/// restart under a running process. The shared test server must never be
/// restarted (other tests use it at the same time). Stopped and removed
/// when dropped.
pub struct PrivateCluster {
    /// The cluster, as the ledger tests reach a server.
    pub server: PgServer,
    dir: PathBuf,
    port: u16,
}

impl PrivateCluster {
    /// A fresh cluster on a free loopback port, with the test server's
    /// password (so that the secrets checks look for it).
    pub fn start() -> PrivateCluster {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("indexq-pg-private-{}-{port}", std::process::id()));
        let mut password = std::env::var(PASSWORD_ENV).unwrap_or_default();
        if password.is_empty() {
            password = "pg-private-secret-7Hw2".into();
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/postgres");
        let out = Command::new("bash")
            .arg(&script)
            .arg("start")
            .env("INDEXQ_CI_PG_PORT", port.to_string())
            .env("INDEXQ_CI_PG_DIR", &dir)
            .env("INDEXQ_CI_PG_PASSWORD", &password)
            .output()
            .expect(".ci/postgres runs");
        let cluster = PrivateCluster {
            server: PgServer {
                url: format!("postgres://indexq@127.0.0.1:{port}/indexq_test"),
                password,
                host: "127.0.0.1".into(),
                port,
            },
            dir,
            port,
        };
        assert!(out.status.success(), "a private cluster on {port}: {}", String::from_utf8_lossy(&out.stderr));
        cluster
    }

    /// `pg_ctl` on this cluster's data folder, as its owner (`postgres`
    /// when the test runs as root, as `.ci/postgres` runs it).
    fn pg_ctl(&self, args: &[&str]) {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL's server binaries under /usr/lib/postgresql")
            .filter_map(|e| Some(e.ok()?.path().join("bin/pg_ctl")))
            .filter(|p| p.exists())
            .max()
            .expect("a pg_ctl under /usr/lib/postgresql/*/bin");
        let data = self.dir.join("data");
        let log = self.dir.join("postgres.log");
        let port = format!("-p {}", self.port);
        let mut all: Vec<&std::ffi::OsStr> = vec![bin.as_os_str()];
        all.extend(["-D".as_ref(), data.as_os_str(), "-l".as_ref(), log.as_os_str(), "-o".as_ref()]);
        all.push(port.as_ref());
        all.extend(args.iter().map(std::ffi::OsStr::new));
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let mut command = if root { Command::new("runuser") } else { Command::new(all[0]) };
        if root {
            command.args(["-u", "postgres", "--"]).args(&all);
        } else {
            command.args(&all[1..]);
        }
        let out = command.output().expect("pg_ctl runs");
        assert!(out.status.success(), "pg_ctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Stops the server (`-m fast`: every session is ended, as a restart
    /// or a failover ends them), waiting until it is down.
    pub fn stop(&self) {
        self.pg_ctl(&["stop", "-m", "fast", "-w", "-t", "60"]);
    }

    /// Starts it again on the same data, waiting until it takes connections.
    pub fn start_again(&self) {
        self.pg_ctl(&["start", "-w", "-t", "60"]);
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/postgres");
        let _ = Command::new("bash")
            .arg(&script)
            .arg("stop")
            .env("INDEXQ_CI_PG_PORT", self.port.to_string())
            .env("INDEXQ_CI_PG_DIR", &self.dir)
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
