//! The listening socket and its limits, as servers in the open set them:
//!
//! - at most `[serve] max_connections` open at once for anyone, and
//!   `reserved_connections` more that only `/healthz`, `/readyz` and a
//!   request with a valid token may use (anything else on them gets `503`
//!   and the connection is closed), so that a crowd of anonymous
//!   connections never shuts out the health checks and the token holders;
//!   once both are full, the next connection waits in the kernel's backlog;
//! - at most `max_connections_per_address` from one client address: the
//!   next is answered `503` and closed at once, holding no slot;
//! - a request's headers must be whole `header_timeout` after their first
//!   byte (a slowloris client dribbling them is closed then, however often
//!   it sends), and a connection that neither sends nor takes a byte for
//!   `idle_timeout` is closed (an idle keep-alive, or a client that never
//!   starts);
//! - a body must arrive at `min_body_rate` bytes a second once it has had
//!   `header_timeout` (Apache's `mod_reqtimeout` rule): a slower one gets
//!   `408` and the connection is closed.
//!
//! Memory stays bounded whatever clients do: a body is capped by `[serve]
//! max_body`, a JSON document's nesting by the parser.
//!
//! hyper has a `header_read_timeout`, but its clock starts when hyper
//! begins to wait for a request, not at the request's first byte: it would
//! close every idle keep-alive connection after `header_timeout` instead of
//! `idle_timeout`, and axum's `serve` gives it no timer in any case. So the
//! connection keeps the header deadline itself, from its first byte, until
//! the gate (the outermost layer, where hyper hands over a request whose
//! headers are whole) says the request has begun.

use super::refusal::{ErrorCode, Refusal};
use crate::config::ConnectionLimits;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use futures::Stream;
use std::collections::HashMap;
use std::future::Future as _;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// What a client refused for its address's connections is told to wait, in
/// seconds: one of its own connections may close at any moment.
const CROWDED_RETRY_SECS: u64 = 1;

/// Connections open per client address.
type Addresses = Arc<Mutex<HashMap<IpAddr, u32>>>;

pub(super) struct Bounded {
    listener: TcpListener,
    /// `max_connections`: any request.
    general: Arc<Semaphore>,
    /// `reserved_connections`: health checks and token holders only.
    reserve: Arc<Semaphore>,
    addresses: Addresses,
    idle: Duration,
    limits: ConnectionLimits,
}

impl Bounded {
    pub(super) fn new(
        listener: TcpListener,
        max_connections: usize,
        idle: Duration,
        limits: ConnectionLimits,
    ) -> Bounded {
        Bounded {
            listener,
            general: Arc::new(Semaphore::new(max_connections.max(1))),
            reserve: Arc::new(Semaphore::new(limits.reserved as usize)),
            addresses: Arc::default(),
            idle,
            limits,
        }
    }

    /// A slot: one of `max_connections` if any is free, else one of the
    /// reserve; else the first of either to be freed.
    async fn slot(&self) -> (OwnedSemaphorePermit, bool) {
        let (permit, reserve) = tokio::select! {
            biased;
            p = self.general.clone().acquire_owned() => (p, false),
            p = self.reserve.clone().acquire_owned() => (p, true),
        };
        (permit.expect("the semaphores are never closed"), reserve)
    }
}

impl axum::serve::Listener for Bounded {
    type Io = Connection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Connection, SocketAddr) {
        let (mut permit, mut reserve) = self.slot().await;
        loop {
            match self.listener.accept().await {
                Ok((stream, addr)) => {
                    let Some(address) = AddressSlot::take(&self.addresses, addr.ip(), self.limits.per_address) else {
                        refuse_crowded(&stream, self.limits.per_address);
                        continue;
                    };
                    // A slot of `max_connections` may have been freed while
                    // this one waited on a reserve slot.
                    if reserve {
                        if let Ok(general) = self.general.clone().try_acquire_owned() {
                            permit = general;
                            reserve = false;
                        }
                    }
                    let _ = stream.set_nodelay(true);
                    let shared = Arc::new(Shared { reserve, ..Shared::default() });
                    let connection = Connection {
                        stream,
                        _permit: permit,
                        _address: address,
                        idle_for: self.idle,
                        idle: Box::pin(tokio::time::sleep(self.idle)),
                        header_for: self.limits.header_timeout,
                        header: Box::pin(tokio::time::sleep(self.limits.header_timeout)),
                        header_running: false,
                        seen_started: 0,
                        shared,
                    };
                    return (connection, addr);
                }
                // Out of file descriptors and the like: wait, rather than spin.
                Err(e) => {
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// A connection of an address over its cap: a `503` written if the socket
/// takes it at once, then closed. Nothing waits on it, so a flood of them
/// costs an accept and a write each.
fn refuse_crowded(stream: &TcpStream, cap: u32) {
    let mut refusal = Refusal::new(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::TooManyConnections,
        format!("this address already has {cap} connections open ([serve] max_connections_per_address)"),
    )
    .hint("reuse a connection (keep-alive) instead of opening more");
    refusal.retry_after = Some(CROWDED_RETRY_SECS);
    let body = serde_json::to_string(&refusal).unwrap_or_default();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: {CROWDED_RETRY_SECS}\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(answer.as_bytes());
    tracing::debug!("a connection refused: its address is at max_connections_per_address");
}

/// One of an address's connections, counted until it is dropped.
struct AddressSlot {
    addresses: Addresses,
    ip: IpAddr,
}

impl AddressSlot {
    /// A slot for `ip`, unless it already holds `cap`.
    fn take(addresses: &Addresses, ip: IpAddr, cap: u32) -> Option<AddressSlot> {
        let mut open = addresses.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = open.entry(ip).or_insert(0);
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(AddressSlot { addresses: addresses.clone(), ip })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.addresses.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// What a connection and the gate in front of its requests share.
#[derive(Default)]
struct Shared {
    /// Requests whose headers were whole (counted by the gate).
    started: AtomicU64,
    /// Requests answered (counted by the gate).
    finished: AtomicU64,
    /// On a reserve slot: only health checks and token holders.
    reserve: bool,
}

/// An accepted connection: its slot, its address's count, its idle
/// deadline (pushed back by every byte read or written) and the deadline
/// of the headers being read.
pub(super) struct Connection {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    _address: AddressSlot,
    idle_for: Duration,
    idle: Pin<Box<Sleep>>,
    header_for: Duration,
    header: Pin<Box<Sleep>>,
    /// Whether `header` is a request's deadline (set at its first byte).
    header_running: bool,
    /// `shared.started` when `header` was last looked at.
    seen_started: u64,
    shared: Arc<Shared>,
}

impl Connection {
    fn busy(&mut self) {
        let next = Instant::now() + self.idle_for;
        self.idle.as_mut().reset(next);
    }

    /// Forgets the header deadline once the gate has seen the request begin.
    fn headers_seen(&mut self) {
        let started = self.shared.started.load(Ordering::Acquire);
        if started != self.seen_started {
            self.seen_started = started;
            self.header_running = false;
        }
    }

    /// Bytes read: with no request in hand, they are a request's first, and
    /// its headers' deadline starts. (Bytes read while a request is in hand
    /// are its body; a next request whose first bytes came in the same read
    /// as the end of the last one gets its deadline at its next read.)
    fn read_some(&mut self) {
        self.busy();
        self.headers_seen();
        let idle = self.shared.finished.load(Ordering::Acquire) == self.seen_started;
        if idle && !self.header_running {
            self.header_running = true;
            let deadline = Instant::now() + self.header_for;
            self.header.as_mut().reset(deadline);
        }
    }

    /// `Pending` until a deadline; then an error that closes the connection.
    fn deadlines(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        self.headers_seen();
        if self.header_running && self.header.as_mut().poll(cx).is_ready() {
            tracing::debug!("a request's headers were not whole within header_timeout: closed");
            return Poll::Ready(io::Error::new(io::ErrorKind::TimedOut, "headers not whole within header_timeout"));
        }
        match self.idle.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(io::Error::new(io::ErrorKind::TimedOut, "idle connection closed")),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Connection {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.read_some();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => self.deadlines(cx).map(Err),
        }
    }
}

impl AsyncWrite for Connection {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.stream).poll_write(cx, data) {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.busy();
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => self.deadlines(cx).map(Err),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// What the gate learns of a request's connection (axum's connect info).
#[derive(Clone)]
pub(super) struct Peer {
    shared: Arc<Shared>,
}

impl axum::extract::connect_info::Connected<IncomingStream<'_, Bounded>> for Peer {
    fn connect_info(stream: IncomingStream<'_, Bounded>) -> Peer {
        Peer { shared: stream.io().shared.clone() }
    }
}

/// Whether a request may use a reserve slot: a health check, or a request
/// with a valid token.
pub(super) type Trusted = Arc<dyn Fn(&Request) -> bool + Send + Sync>;

/// What the gate needs.
#[derive(Clone)]
pub(super) struct Gate {
    pub trusted: Trusted,
    pub limits: ConnectionLimits,
}

/// In front of everything: counts the request for its connection's header
/// deadline, keeps reserve slots for whom they are for, and paces the body.
pub(super) async fn gate(
    axum::extract::State(gate): axum::extract::State<Gate>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    request: Request,
    next: Next,
) -> Response {
    peer.shared.started.fetch_add(1, Ordering::AcqRel);
    let response = gated(&gate, &peer, request, next).await;
    peer.shared.finished.fetch_add(1, Ordering::AcqRel);
    response
}

async fn gated(gate: &Gate, peer: &Peer, request: Request, next: Next) -> Response {
    if peer.shared.reserve && !(gate.trusted)(&request) {
        let mut refusal = Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::TooManyConnections,
            "every connection is taken ([serve] max_connections); the rest are kept for /healthz, /readyz \
             and requests with a token",
        )
        .hint("send it again in a moment, or with a [[serve.token]]'s token");
        refusal.retry_after = Some(CROWDED_RETRY_SECS);
        return closing(refusal.into_response());
    }
    let cut = Arc::new(AtomicBool::new(false));
    let (parts, body) = request.into_parts();
    let paced = Paced {
        inner: body.into_data_stream(),
        start: Instant::now(),
        allowance: gate.limits.header_timeout,
        rate: gate.limits.min_body_rate,
        received: 0,
        deadline: Box::pin(tokio::time::sleep(gate.limits.header_timeout)),
        cut: cut.clone(),
    };
    let request = Request::from_parts(parts, Body::from_stream(paced));
    let response = next.run(request).await;
    if !cut.load(Ordering::Acquire) {
        return response;
    }
    let refusal = Refusal::new(
        StatusCode::REQUEST_TIMEOUT,
        ErrorCode::BodyTooSlow,
        format!("the body came slower than {} bytes a second ([serve] min_body_rate)", gate.limits.min_body_rate),
    )
    .hint("send the body at once, as it is ready");
    closing(refusal.into_response())
}

/// An answer after which the connection is closed.
fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// A request body that must keep up with `rate` bytes a second once
/// `allowance` has passed: its `n`th byte is due by `start + allowance +
/// n / rate`.
struct Paced {
    inner: axum::body::BodyDataStream,
    start: Instant,
    allowance: Duration,
    rate: u32,
    received: u64,
    deadline: Pin<Box<Sleep>>,
    cut: Arc<AtomicBool>,
}

/// A body slower than `[serve] min_body_rate`.
#[derive(Debug, thiserror::Error)]
#[error("the body came slower than [serve] min_body_rate")]
struct TooSlow;

impl Stream for Paced {
    type Item = Result<Bytes, axum::BoxError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.cut.load(Ordering::Relaxed) {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                this.received += bytes.len() as u64;
                let due =
                    this.start + this.allowance + Duration::from_secs_f64(this.received as f64 / f64::from(this.rate));
                this.deadline.as_mut().reset(due);
                Poll::Ready(Some(Ok(bytes)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.cut.store(true, Ordering::Release);
                    Poll::Ready(Some(Err(TooSlow.into())))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}
