//! The TCP listener a webhook-driven adapter (the generic webhook, WhatsApp Cloud, SMS) serves
//! on: bound at the configured `host:port` each time the adapter (re)starts, or handed over
//! already bound (tests bind port 0 first and read the port back), and the address it got, for
//! callers who need to know where it listens.

use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::platform::backoff::Backoff;
use crate::platform::status::StatusCell;
use crate::platform::types::ConnectionState;

#[derive(Debug, Default)]
pub(crate) struct ListenerSlot {
    preset: Mutex<Option<std::net::TcpListener>>,
    local_addr: Mutex<Option<SocketAddr>>,
}

/// Why the listener could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ListenError {
    /// Binding `host:port` failed (in use, not an address of this machine, ...).
    #[error("cannot listen on {host}:{port}: {source}")]
    Bind {
        host: String,
        port: u16,
        source: std::io::Error,
    },
    /// Cloning the preset listener or handing it to tokio failed.
    #[error(transparent)]
    Setup(#[from] std::io::Error),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ListenerSlot {
    /// Serve on `listener` instead of binding.
    pub fn preset(&self, listener: std::net::TcpListener) {
        *lock(&self.preset) = Some(listener);
    }

    /// Where the adapter listens, once it does.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        *lock(&self.local_addr)
    }

    /// The listener to serve on: the preset one (a clone, so a restart can take it again) or a
    /// new one on `host:port` (`[v6]` brackets allowed). The error says what could not be done.
    pub fn bind(&self, host: &str, port: u16) -> Result<tokio::net::TcpListener, ListenError> {
        let std_listener = match lock(&self.preset).as_ref() {
            Some(l) => l.try_clone()?,
            None => std::net::TcpListener::bind((host.trim_matches(['[', ']']), port)).map_err(
                |source| ListenError::Bind {
                    host: host.to_string(),
                    port,
                    source,
                },
            )?,
        };
        std_listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        *lock(&self.local_addr) = listener.local_addr().ok();
        Ok(listener)
    }

    /// [`bind`](Self::bind), retried with `backoff` while it fails (each failure shown in
    /// `status` as reconnecting); `None` once `shutdown` is cancelled.
    pub async fn bind_retrying(
        &self,
        host: &str,
        port: u16,
        status: &StatusCell,
        backoff: &mut Backoff,
        shutdown: &CancellationToken,
    ) -> Option<tokio::net::TcpListener> {
        loop {
            match self.bind(host, port) {
                Ok(listener) => return Some(listener),
                Err(e) => {
                    status.set_state(ConnectionState::Reconnecting);
                    status.error(e.to_string());
                    if !backoff.wait(shutdown).await {
                        return None;
                    }
                }
            }
        }
    }
}
