//! Scriptable mock HTTP server for integration tests (std only, no async runtime).
//!
//! The `indexq` binary runs as a separate process and talks to this server on
//! 127.0.0.1. Each route (method + exact path, query ignored) plays a script of
//! [`MockResponse`]s in order, repeating the last one. Responses can be delayed or
//! never sent at all (`hang`), and every request is recorded before any delay so
//! tests can observe requests still in flight. Every answer closes the connection.
//! Answers can also misbehave on the wire: close before answering
//! (`reset_before`), close in the middle of the body (`reset_mid_body`), send the
//! body a byte at a time (`drip`) or declare more body than they send (`truncated`).
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

type Responder = Arc<dyn Fn(&Request) -> MockResponse + Send + Sync>;

/// Longest a `hang()` response keeps its connection open.
const MAX_HANG: Duration = Duration::from_secs(120);
/// How often delayed/hanging connections check whether the server was dropped.
const POLL: Duration = Duration::from_millis(50);

pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    stopped: AtomicBool,
    state: Mutex<State>,
    arrived: Condvar,
}

#[derive(Default)]
struct State {
    /// (METHOD, path) -> (script, index of the next response to serve).
    routes: HashMap<(String, String), (Vec<MockResponse>, usize)>,
    /// Routes answered by a function of the request (tried before scripts).
    responders: HashMap<(String, String), Responder>,
    requests: Vec<Request>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps for `d` in small steps; returns true if the server stopped meanwhile.
    fn pause(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        while !self.stopped.load(Ordering::SeqCst) {
            let now = Instant::now();
            if now >= end {
                return false;
            }
            thread::sleep(POLL.min(end - now));
        }
        true
    }
}

#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Request target as sent, including any query string.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Request {
    /// First header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The body parsed as JSON; panics (showing the body) if it is not valid JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("request body is not JSON ({e}): {:?}", self.body))
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        self.method.eq_ignore_ascii_case(method) && strip_query(&self.path) == path
    }
}

#[derive(Debug, Clone, Default)]
pub struct MockResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    delay: Option<Duration>,
    hang: bool,
    fault: Fault,
}

/// How a response misbehaves on the wire (after any `delay`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
enum Fault {
    /// A well-formed answer.
    #[default]
    None,
    /// Reads the request, then closes the connection without a byte of answer.
    ResetBefore,
    /// Sends the head (declaring the whole body), half the body, then closes.
    ResetMidBody,
    /// Sends the head at once, then the body one byte at a time with this pause.
    Drip(Duration),
    /// Declares a longer body than it sends, sends all it has, then closes.
    Truncated,
}

impl MockResponse {
    /// A response with this status and an empty body.
    pub fn status(code: u16) -> MockResponse {
        MockResponse { status: code, ..Default::default() }
    }

    /// Adds a header. An explicit `Content-Length` or `Connection` replaces the automatic one.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn body(self, body: &str) -> Self {
        self.bytes(body.as_bytes())
    }

    /// A body of any bytes (e.g. gzip).
    pub fn bytes(mut self, body: &[u8]) -> Self {
        self.body = body.to_vec();
        self
    }

    /// Sets the body and `Content-Type: application/json; charset=utf-8`.
    pub fn json(self, body: &str) -> Self {
        self.header("Content-Type", "application/json; charset=utf-8").body(body)
    }

    /// Waits this long (after recording the request) before answering.
    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = Some(d);
        self
    }

    /// Never answers: the connection stays open and silent until the server is
    /// dropped (or at most 120 s), then closes.
    pub fn hang(mut self) -> Self {
        self.hang = true;
        self
    }

    /// Accepts the request, then closes the connection without answering.
    pub fn reset_before(mut self) -> Self {
        self.fault = Fault::ResetBefore;
        self
    }

    /// Sends the head with a `Content-Length` of the whole body (at least 1,024
    /// bytes), then only the first half of the body, then closes the connection.
    pub fn reset_mid_body(mut self) -> Self {
        self.fault = Fault::ResetMidBody;
        self
    }

    /// Sends the head at once, then the body one byte at a time, pausing
    /// `per_byte` before each byte (stops early if the server is dropped or the
    /// client hangs up).
    pub fn drip(mut self, per_byte: Duration) -> Self {
        self.fault = Fault::Drip(per_byte);
        self
    }

    /// Declares a `Content-Length` larger than the body (twice it, at least
    /// 64 bytes more), sends the whole body, then closes the connection.
    pub fn truncated(mut self) -> Self {
        self.fault = Fault::Truncated;
        self
    }

    /// The `Content-Length` this response declares.
    fn declared_len(&self) -> usize {
        match self.fault {
            Fault::Truncated => self.body.len() * 2 + 64,
            Fault::ResetMidBody => self.body.len().max(1024),
            _ => self.body.len(),
        }
    }

    /// Plays the response on the wire, misbehaving as scripted.
    fn play(&self, out: &mut TcpStream, head_only: bool, shared: &Shared) -> std::io::Result<()> {
        match self.fault {
            Fault::None => self.write_to(out, head_only),
            Fault::ResetBefore => out.shutdown(std::net::Shutdown::Both),
            Fault::ResetMidBody => {
                self.write_head(out)?;
                out.write_all(&self.body[..self.body.len() / 2])?;
                out.flush()?;
                // Let the client start reading the body before the connection goes.
                shared.pause(Duration::from_millis(100));
                out.shutdown(std::net::Shutdown::Both)
            }
            Fault::Truncated => {
                self.write_head(out)?;
                out.write_all(&self.body)?;
                out.flush()?;
                out.shutdown(std::net::Shutdown::Both)
            }
            Fault::Drip(per_byte) => {
                self.write_head(out)?;
                out.flush()?;
                if head_only {
                    return Ok(());
                }
                for b in &self.body {
                    if shared.pause(per_byte) {
                        break;
                    }
                    out.write_all(std::slice::from_ref(b))?;
                    out.flush()?;
                }
                Ok(())
            }
        }
    }

    fn write_to(&self, out: &mut impl Write, head_only: bool) -> std::io::Result<()> {
        self.write_head(out)?;
        if !head_only {
            out.write_all(&self.body)?;
        }
        out.flush()
    }

    fn write_head(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut msg = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        if find_header(&self.headers, "Content-Length").is_none() {
            msg += &format!("Content-Length: {}\r\n", self.declared_len());
        }
        if find_header(&self.headers, "Connection").is_none() {
            msg += "Connection: close\r\n";
        }
        for (k, v) in &self.headers {
            msg += &format!("{k}: {v}\r\n");
        }
        msg += "\r\n";
        out.write_all(msg.as_bytes())
    }
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn strip_query(target: &str) -> &str {
    target.split('?').next().unwrap_or(target)
}

fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let mut found = headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name));
    found.next().map(|(_, v)| v.as_str())
}

/// Every JWT bearer assertion (the `assertion` field of a form body) any
/// mock server of this test process received: the suite-wide secrets check
/// (`support::secrets`) looks for them in every output and ledger.
static ASSERTIONS: Mutex<Vec<String>> = Mutex::new(Vec::new());

pub fn assertions_seen() -> Vec<String> {
    ASSERTIONS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn note_assertion(req: &Request) {
    let form = url::form_urlencoded::parse(req.body.as_bytes());
    let assertions: Vec<String> = form.filter(|(k, _)| k == "assertion").map(|(_, v)| v.into_owned()).collect();
    if !assertions.is_empty() {
        ASSERTIONS.lock().unwrap_or_else(|e| e.into_inner()).extend(assertions);
    }
}

/// The port the ledger fixtures' URLs name (they were written by older
/// binaries against it).
pub const FIXTURE_PORT: u16 = 47392;

/// How long the first bind of a fixed port waits for a socket that holds it.
const FIXED_PORT_WAIT: Duration = Duration::from_secs(30);

/// The fixed ports bound so far, each kept open until the run ends.
static FIXED_PORTS: Mutex<Vec<(u16, TcpListener)>> = Mutex::new(Vec::new());

/// A listener on 127.0.0.1:`port`, bound the first time it is asked for and
/// then kept: a fixed port lies in the kernel's range of ephemeral ports,
/// so once let go, another test's connection could take it for as long as
/// it lives. The first bind waits up to `FIXED_PORT_WAIT` for a socket that
/// holds it; `Sandbox::new` reserves `FIXTURE_PORT` early in the run.
pub fn reserve_fixed_port(port: u16) -> TcpListener {
    let mut fixed = FIXED_PORTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, listener)) = fixed.iter().find(|(p, _)| *p == port) {
        return listener.try_clone().expect("mock server: clone the fixed port's listener");
    }
    let deadline = Instant::now() + FIXED_PORT_WAIT;
    let listener = loop {
        match TcpListener::bind(("127.0.0.1", port)) {
            Ok(listener) => break listener,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && Instant::now() < deadline => {
                thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("mock server: bind 127.0.0.1:{port}: {e}"),
        }
    };
    let clone = listener.try_clone().expect("mock server: clone the fixed port's listener");
    fixed.push((port, listener));
    clone
}

impl MockServer {
    /// Binds 127.0.0.1:0 and serves each connection on its own thread.
    pub fn start() -> MockServer {
        MockServer::start_on(0)
    }

    /// Serves 127.0.0.1:`port` (a ledger fixture's, which its URLs name),
    /// on the listener `reserve_fixed_port` keeps for the whole run.
    pub fn start_on(port: u16) -> MockServer {
        let listener = if port == 0 {
            TcpListener::bind(("127.0.0.1", 0)).unwrap_or_else(|e| panic!("mock server: bind 127.0.0.1:0: {e}"))
        } else {
            reserve_fixed_port(port)
        };
        let addr = listener.local_addr().expect("mock server: local_addr");
        let shared = Arc::new(Shared {
            stopped: AtomicBool::new(false),
            state: Mutex::new(State::default()),
            arrived: Condvar::new(),
        });
        let sh = Arc::clone(&shared);
        let accept = thread::spawn(move || {
            for conn in listener.incoming() {
                if sh.stopped.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = conn {
                    let sh = Arc::clone(&sh);
                    thread::spawn(move || handle(stream, &sh));
                }
            }
        });
        MockServer { addr, shared, accept: Some(accept) }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Scripts `METHOD path` (query ignored), replacing any earlier script
    /// or `respond_with` for it. Responses are served in order and the last
    /// one repeats forever.
    pub fn on(&self, method: &str, path: &str, responses: Vec<MockResponse>) {
        assert!(!responses.is_empty(), "mock script for {method} {path} is empty");
        let key = (method.to_ascii_uppercase(), path.to_string());
        let mut state = self.shared.state();
        state.responders.remove(&key);
        state.routes.insert(key, (responses, 0));
    }

    /// Answers `METHOD path` (query ignored) with `f(request)`, e.g. to
    /// answer by the request's body. Takes precedence over `on`.
    pub fn respond_with(&self, method: &str, path: &str, f: impl Fn(&Request) -> MockResponse + Send + Sync + 'static) {
        let key = (method.to_ascii_uppercase(), path.to_string());
        self.shared.state().responders.insert(key, Arc::new(f));
    }

    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.state().requests.clone()
    }

    /// Requests to `METHOD path` (query ignored), in order of arrival.
    pub fn requests_to(&self, method: &str, path: &str) -> Vec<Request> {
        let state = self.shared.state();
        state.requests.iter().filter(|r| r.matches(method, path)).cloned().collect()
    }

    /// Blocks until at least `n` requests to `METHOD path` were recorded, or `timeout` passes.
    pub fn wait_for_requests(&self, method: &str, path: &str, n: usize, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        let mut state = self.shared.state();
        loop {
            let seen = state.requests.iter().filter(|r| r.matches(method, path));
            if seen.count() >= n {
                return true;
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            state = match self.shared.arrived.wait_timeout(state, end - now) {
                Ok((guard, _)) => guard,
                Err(e) => e.into_inner().0,
            };
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        // Wake the blocking accept() so the thread sees the flag and closes the listener.
        if TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_ok() {
            if let Some(accept) = self.accept.take() {
                let _ = accept.join();
            }
        }
    }
}

/// Serves one connection: read a request, record it, answer per the script, close.
fn handle(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let Some(req) = read_request(&mut reader, &mut out) else {
        return;
    };
    note_assertion(&req);
    let response = {
        let mut state = shared.state();
        let path = strip_query(&req.path).to_string();
        let key = (req.method.to_ascii_uppercase(), path);
        let computed = state.responders.get(&key).map(|f| f(&req));
        let scripted = computed.or_else(|| {
            state.routes.get_mut(&key).map(|(script, next)| {
                let r = script[(*next).min(script.len() - 1)].clone();
                *next += 1;
                r
            })
        });
        let response = scripted
            .unwrap_or_else(|| MockResponse::status(404).body(&format!("no mock for {} {}", req.method, key.1)));
        state.requests.push(req.clone());
        shared.arrived.notify_all();
        response
    };
    if response.hang {
        shared.pause(MAX_HANG);
        return;
    }
    if let Some(d) = response.delay {
        if shared.pause(d) {
            return;
        }
    }
    let _ = response.play(&mut out, req.method.eq_ignore_ascii_case("HEAD"), shared);
}

fn read_line(r: &mut impl BufRead) -> Option<String> {
    let mut line = String::new();
    match r.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_string()),
    }
}

fn read_request(r: &mut impl BufRead, out: &mut impl Write) -> Option<Request> {
    let line = read_line(r)?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        let line = read_line(r)?;
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':')?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let header = |name| find_header(&headers, name).map(str::to_ascii_lowercase);
    if header("Expect").is_some_and(|v| v == "100-continue") {
        out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").ok()?;
    }
    let mut body = Vec::new();
    if header("Transfer-Encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            let size_line = read_line(r)?;
            let size = usize::from_str_radix(size_line.split(';').next()?.trim(), 16).ok()?;
            if size == 0 {
                while !read_line(r)?.is_empty() {} // trailers
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..]).ok()?;
            read_line(r)?; // CRLF after chunk data
        }
    } else if let Some(len) = header("Content-Length") {
        body.resize(len.trim().parse().ok()?, 0);
        r.read_exact(&mut body).ok()?;
    }
    let body = String::from_utf8_lossy(&body).into_owned();
    Some(Request { method, path, headers, body })
}
