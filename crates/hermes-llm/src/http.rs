//! The shared HTTP client: rustls with the ring provider, connect and idle (per-read) timeouts.

use crate::{HttpTimeouts, LlmError};

pub(crate) fn client(timeouts: &HttpTimeouts) -> Result<reqwest::Client, LlmError> {
    // Installing twice is harmless; the first provider stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        .read_timeout(timeouts.idle)
        .tcp_nodelay(true)
        .user_agent(concat!("hermes-rs/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))
}
