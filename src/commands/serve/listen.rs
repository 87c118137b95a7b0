//! The listening socket, bounded: at most `[serve] max_connections` open at
//! once (the next waits in the kernel's backlog until one closes), and a
//! connection that neither sends nor takes a byte for `[serve]
//! idle_timeout` is closed — an idle keep-alive, a client that stalls in
//! its headers or its body. Memory stays bounded whatever clients do: a
//! body is capped by `[serve] max_body`, a JSON document's nesting by the
//! parser.

use std::future::Future as _;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

pub(super) struct Bounded {
    listener: TcpListener,
    permits: Arc<Semaphore>,
    idle: Duration,
}

impl Bounded {
    pub(super) fn new(listener: TcpListener, max_connections: usize, idle: Duration) -> Bounded {
        Bounded { listener, permits: Arc::new(Semaphore::new(max_connections.max(1))), idle }
    }
}

impl axum::serve::Listener for Bounded {
    type Io = Connection;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Connection, SocketAddr) {
        let permit = self.permits.clone().acquire_owned().await.expect("the semaphore is never closed");
        loop {
            match self.listener.accept().await {
                Ok((stream, addr)) => {
                    let _ = stream.set_nodelay(true);
                    let idle = Box::pin(tokio::time::sleep(self.idle));
                    return (Connection { stream, _permit: permit, idle_for: self.idle, idle }, addr);
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

/// An accepted connection: its slot among `max_connections`, and its
/// idle deadline, pushed back by every byte read or written.
pub(super) struct Connection {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
    idle_for: Duration,
    idle: Pin<Box<Sleep>>,
}

impl Connection {
    fn busy(&mut self) {
        let next = Instant::now() + self.idle_for;
        self.idle.as_mut().reset(next);
    }

    /// `Pending` until the idle deadline; then an error that closes the connection.
    fn idle_check(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
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
                    self.busy();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => self.idle_check(cx).map(Err),
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
            Poll::Pending => self.idle_check(cx).map(Err),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
