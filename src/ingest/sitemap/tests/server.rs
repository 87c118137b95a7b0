//! A tiny HTTP/1.1 server on 127.0.0.1 (plain or TLS with the test
//! certificate) that serves fixed responses, for the sitemap tests.

use std::collections::HashMap;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A tiny HTTP/1.1 server on 127.0.0.1: fixed responses by path, one request per connection.
pub(super) struct Server {
    pub(super) base: String,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

pub(super) struct Response {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    location: Option<String>,
}

pub(super) fn ok(content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
    Response { status: 200, content_type, body: body.into(), location: None }
}

pub(super) fn redirect(to: &str) -> Response {
    Response { status: 301, content_type: "text/plain", body: Vec::new(), location: Some(to.to_string()) }
}

/// The test certificate (tests/fixtures/tls: self-signed for 127.0.0.1 and localhost, valid until 2126).
fn test_certificate() -> (Vec<u8>, Vec<u8>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");
    (fs::read(format!("{dir}/cert.der")).unwrap(), fs::read(format!("{dir}/key.der")).unwrap())
}

/// Answers one request on `stream` from `routes`.
fn answer(mut stream: impl Read + Write, routes: &HashMap<String, Response>, requests: &Mutex<Vec<String>>) {
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    requests.lock().unwrap().push(path.clone());
    let (status, reason, content_type, body, location) = match routes.get(&path) {
        Some(r) => (
            r.status,
            if r.status == 200 { "OK" } else { "Nope" },
            r.content_type,
            &r.body[..],
            r.location.as_deref().map(|to| format!("Location: {to}\r\n")).unwrap_or_default(),
        ),
        None => (404, "Not Found", "text/plain", &b"not found"[..], String::new()),
    };
    let header = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{location}Connection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(header.as_bytes());
    let _ = stream.write_all(body);
    let _ = stream.flush();
}

impl Server {
    pub(super) fn start(routes: impl FnOnce(&str) -> HashMap<String, Response>) -> Server {
        Server::serve(false, routes)
    }

    /// The same over TLS with [`test_certificate`]: `https://127.0.0.1:PORT`.
    pub(super) fn start_tls(routes: impl FnOnce(&str) -> HashMap<String, Response>) -> Server {
        Server::serve(true, routes)
    }

    fn serve(tls: bool, routes: impl FnOnce(&str) -> HashMap<String, Response>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let base = format!("{}://{addr}", if tls { "https" } else { "http" });
        let routes = routes(&base);
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (stop2, requests2) = (stop.clone(), requests.clone());
        let config = tls.then(|| {
            use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
            let (cert, key) = test_certificate();
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![CertificateDer::from(cert)], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)))
                .unwrap();
            Arc::new(config)
        });
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                match &config {
                    Some(config) => {
                        let Ok(conn) = rustls::ServerConnection::new(config.clone()) else { continue };
                        answer(rustls::StreamOwned::new(conn, stream), &routes, &requests2);
                    }
                    None => answer(stream, &routes, &requests2),
                }
            }
        });
        Server { base, addr, stop, requests, thread: Some(thread) }
    }

    pub(super) fn hits(&self, path: &str) -> usize {
        self.requests.lock().unwrap().iter().filter(|p| *p == path).count()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The real fetch client, trusting the test certificate.
pub(super) fn fetch_client_trusting_the_test_certificate() -> super::FetchClient {
    let http = crate::config::HttpSettings {
        connect_timeout: std::time::Duration::from_secs(5),
        timeout: std::time::Duration::from_secs(10),
    };
    let root = reqwest::Certificate::from_der(&test_certificate().0).unwrap();
    let builder = crate::engines::fetch_client_builder(&http).no_proxy().add_root_certificate(root);
    super::FetchClient::new(builder, super::Pins::default()).unwrap()
}
