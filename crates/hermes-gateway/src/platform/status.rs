//! The live health of one adapter ([`StatusCell`]): connection state, last error and counters,
//! updated by the adapter's tasks and read by `hermes gateway status`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use crate::platform::types::{AdapterStatus, ConnectionState};

/// Longest error message kept.
const MAX_ERROR_LEN: usize = 500;

#[derive(Debug)]
struct Inner {
    state: ConnectionState,
    since: SystemTime,
    last_error: Option<(SystemTime, String)>,
    /// Whether the adapter connected at least once (later connections are reconnects).
    connected_once: bool,
}

/// Shared, cheap-to-update status of an adapter.
#[derive(Debug)]
pub struct StatusCell {
    inner: Mutex<Inner>,
    received: AtomicU64,
    sent: AtomicU64,
    reconnects: AtomicU64,
}

impl Default for StatusCell {
    fn default() -> Self {
        StatusCell {
            inner: Mutex::new(Inner {
                state: ConnectionState::Stopped,
                since: SystemTime::now(),
                last_error: None,
                connected_once: false,
            }),
            received: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
        }
    }
}

impl StatusCell {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn set_state(&self, state: ConnectionState) {
        let mut inner = self.lock();
        if state == ConnectionState::Connected {
            if inner.connected_once && inner.state != ConnectionState::Connected {
                self.reconnects.fetch_add(1, Ordering::Relaxed);
            }
            inner.connected_once = true;
        }
        if inner.state != state {
            inner.state = state;
            inner.since = SystemTime::now();
        }
    }

    /// Records an error (cut to a readable length).
    pub fn error(&self, message: impl Into<String>) {
        let mut message: String = message.into();
        if message.len() > MAX_ERROR_LEN {
            let mut cut = MAX_ERROR_LEN;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        self.lock().last_error = Some((SystemTime::now(), message));
    }

    pub fn add_received(&self) {
        self.received.fetch_add(1, Ordering::Relaxed);
    }

    pub fn add_sent(&self, n: usize) {
        self.sent.fetch_add(n as u64, Ordering::Relaxed);
    }

    pub fn state(&self) -> ConnectionState {
        self.lock().state.clone()
    }

    pub fn snapshot(&self) -> AdapterStatus {
        let inner = self.lock();
        AdapterStatus {
            state: inner.state.clone(),
            since: inner.since,
            last_error: inner.last_error.clone(),
            received: self.received.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            reconnects: self.reconnects.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnects_count_connections_after_the_first() {
        let s = StatusCell::default();
        s.set_state(ConnectionState::Connecting);
        s.set_state(ConnectionState::Connected);
        s.set_state(ConnectionState::Reconnecting);
        s.set_state(ConnectionState::Connected);
        s.set_state(ConnectionState::Connected);
        s.add_received();
        s.add_sent(3);
        s.error("x".repeat(2000));
        let snap = s.snapshot();
        assert_eq!(snap.reconnects, 1);
        assert_eq!(snap.received, 1);
        assert_eq!(snap.sent, 3);
        assert_eq!(snap.state, ConnectionState::Connected);
        assert!(snap.last_error.unwrap().1.len() < 600);
    }
}
