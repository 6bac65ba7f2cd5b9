//! The API server's connections, served by hyper directly (not `axum::serve`) so that slow and
//! idle clients cannot starve the server:
//!
//! - request headers must arrive within the header deadline (hyper's `header_read_timeout`),
//!   so a socket that sends half a request line is closed;
//! - at most `max_connections` connections are open; when a new one arrives at the cap, the
//!   oldest connection that is not in the middle of a request (waiting for its first headers,
//!   or idle between keep-alive requests) is closed to make room, and only when every
//!   connection is busy is the new one turned away. A thousand half-open sockets therefore
//!   never lock out `/health`;
//! - a failed `accept` (out of file descriptors) backs off briefly instead of spinning;
//! - at shutdown (and at eviction) a connection inside a request finishes it and closes; an
//!   idle or half-open one is dropped at once.
//!
//! A request counts as in progress from its headers to the last byte of its answer (SSE
//! streams included), through a guard carried by the response body.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::Service;

/// Default for `gateway.api_server.max_connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default for `gateway.api_server.header_timeout` (seconds).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for `gateway.api_server.body_timeout` (seconds).
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a failed `accept` waits before the next one.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// How many connections, and how long a client may take to send its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Open connections at once (at least 1).
    pub max_connections: usize,
    /// From the start of a request (or of the connection) to the end of its headers.
    pub header_timeout: Duration,
    /// From the end of the headers to the last byte of the body.
    pub body_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
        }
    }
}

/// One open connection as the accept loop sees it.
struct Slot {
    opened: Instant,
    /// Requests between their headers and the end of their answer.
    busy: Arc<AtomicUsize>,
    /// Fired to close the connection (eviction).
    close: CancellationToken,
}

#[derive(Default)]
struct Registry {
    next_id: AtomicU64,
    slots: Mutex<HashMap<u64, Slot>>,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Slot>> {
        // A panic elsewhere while holding the lock leaves the map intact: keep using it.
        self.slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes room for a new connection under `max`: `false` when every open one is busy.
    fn make_room(&self, max: usize) -> bool {
        let mut slots = self.lock();
        if slots.len() < max {
            return true;
        }
        let oldest_idle = slots
            .iter()
            .filter(|(_, s)| s.busy.load(Ordering::Acquire) == 0 && !s.close.is_cancelled())
            .min_by_key(|(_, s)| s.opened)
            .map(|(id, _)| *id);
        match oldest_idle {
            Some(id) => {
                if let Some(slot) = slots.remove(&id) {
                    slot.close.cancel();
                }
                true
            }
            None => false,
        }
    }

    fn add(&self, busy: Arc<AtomicUsize>, close: CancellationToken) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(
            id,
            Slot {
                opened: Instant::now(),
                busy,
                close,
            },
        );
        id
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }
}

/// Accepts and serves connections with `app` until `shutdown` fires, then lets every
/// connection finish its request in flight and returns when all are closed.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let registry = Arc::new(Registry::default());
    let tracker = TaskTracker::new();
    let max = limits.max_connections.max(1);
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("api server: accept failed: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        if !registry.make_room(max) {
            tracing::warn!(
                "api server: {max} connections are all busy (gateway.api_server.max_connections); a new one was closed"
            );
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let busy = Arc::new(AtomicUsize::new(0));
        let close = shutdown.child_token();
        let id = registry.add(busy.clone(), close.clone());
        let registry = registry.clone();
        let app = app.clone();
        tracker.spawn(async move {
            serve_connection(stream, app, limits.header_timeout, busy, close).await;
            registry.remove(id);
        });
    }
    drop(listener);
    tracker.close();
    tracker.wait().await;
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    app: Router,
    header_timeout: Duration,
    busy: Arc<AtomicUsize>,
    close: CancellationToken,
) {
    let counter = busy.clone();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let guard = BusyGuard::new(counter.clone());
        let mut app = app.clone();
        async move {
            let response = app.call(request.map(Body::new)).await?;
            Ok::<_, std::convert::Infallible>(response.map(|body| TrackedBody {
                inner: body,
                _guard: guard,
            }))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    let mut closing = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!("api server connection: {e}");
                }
                return;
            }
            _ = close.cancelled(), if !closing => {
                if busy.load(Ordering::Acquire) == 0 {
                    // Idle or half-open: hyper's graceful close would wait for the rest of a
                    // half-sent request, so the connection is dropped at once.
                    return;
                }
                // A request in flight finishes first.
                connection.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    }
}

/// Counts a request in progress while it lives.
struct BusyGuard(Arc<AtomicUsize>);

impl BusyGuard {
    fn new(counter: Arc<AtomicUsize>) -> Self {
        counter.fetch_add(1, Ordering::AcqRel);
        BusyGuard(counter)
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request counted as in progress until it is sent or dropped.
struct TrackedBody {
    inner: Body,
    _guard: BusyGuard,
}

impl hyper::body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_idle_connection_makes_room() {
        let registry = Registry::default();
        let busy_counter = Arc::new(AtomicUsize::new(1));
        let busy_close = CancellationToken::new();
        registry.add(busy_counter.clone(), busy_close.clone());
        let old_idle = CancellationToken::new();
        registry.add(Arc::new(AtomicUsize::new(0)), old_idle.clone());
        let new_idle = CancellationToken::new();
        registry.add(Arc::new(AtomicUsize::new(0)), new_idle.clone());

        assert!(registry.make_room(3));
        assert!(old_idle.is_cancelled(), "the oldest idle one is closed");
        assert!(!new_idle.is_cancelled() && !busy_close.is_cancelled());
        assert_eq!(registry.lock().len(), 2);
        // Below the cap nothing is closed.
        assert!(registry.make_room(3));
        assert!(!new_idle.is_cancelled());
    }

    #[test]
    fn all_busy_turns_the_newcomer_away() {
        let registry = Registry::default();
        let close = CancellationToken::new();
        registry.add(Arc::new(AtomicUsize::new(2)), close.clone());
        assert!(!registry.make_room(1));
        assert!(!close.is_cancelled());
    }

    #[test]
    fn a_busy_guard_counts_while_alive() {
        let counter = Arc::new(AtomicUsize::new(0));
        let a = BusyGuard::new(counter.clone());
        let b = BusyGuard::new(counter.clone());
        assert_eq!(counter.load(Ordering::Acquire), 2);
        drop(a);
        drop(b);
        assert_eq!(counter.load(Ordering::Acquire), 0);
    }
}
