//! The errors of the platform layer: what a send/edit/delete/download reports
//! ([`PlatformError`]) and what a bad configuration reports ([`PlatformConfigError`]).

use std::path::PathBuf;
use std::time::Duration;

/// A failed platform operation. Messages never contain a bot token.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// The platform refused the request (a bad chat id, a deleted message, a missing scope).
    #[error("{platform} refused the request: {message}")]
    Api {
        platform: &'static str,
        /// HTTP status (0 when the platform reports errors in a 200 body, as Slack does).
        status: u16,
        /// The platform's own error code or description.
        message: String,
    },
    /// Rate limited longer than the adapter waits by itself.
    #[error("{platform} rate limit: retry after {}s", retry_after.as_secs_f64())]
    RateLimited {
        platform: &'static str,
        retry_after: Duration,
    },
    /// The credentials were rejected.
    #[error("{platform} rejected the credentials ({hint}): {message}")]
    Unauthorized {
        platform: &'static str,
        /// The setting to fix, e.g. `TELEGRAM_BOT_TOKEN`.
        hint: &'static str,
        message: String,
    },
    /// The network failed (connect, TLS, timeout, reset) before an answer arrived.
    #[error("{platform}: network error: {message}")]
    Network {
        platform: &'static str,
        message: String,
    },
    /// The platform answered with something that is not its documented shape.
    #[error("{platform}: unexpected answer: {message}")]
    Protocol {
        platform: &'static str,
        message: String,
    },
    /// The operation does not exist on this platform (editing a webhook delivery, ...).
    #[error("{platform} cannot {operation}")]
    Unsupported {
        platform: &'static str,
        operation: &'static str,
    },
    /// The message or its parts are invalid for the platform (empty text, button data too
    /// long, too many buttons).
    #[error("{platform}: {message}")]
    Invalid {
        platform: &'static str,
        message: String,
    },
    /// A file is larger than allowed.
    #[error("{what} is {size} bytes, over the {limit}-byte limit")]
    TooLarge { what: String, size: u64, limit: u64 },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The adapter is shutting down.
    #[error("{platform} adapter is stopped")]
    Stopped { platform: &'static str },
}

impl PlatformError {
    /// Whether trying the same operation again later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            PlatformError::Network { .. } | PlatformError::RateLimited { .. } => true,
            PlatformError::Api { status, .. } => *status >= 500,
            _ => false,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> PlatformError {
        PlatformError::Io {
            path: path.into(),
            source,
        }
    }
}

/// A platform configuration that cannot work; `hermes gateway` reports it and does not start
/// that platform.
#[derive(Debug, thiserror::Error)]
pub enum PlatformConfigError {
    #[error("platforms.{platform}: {message}")]
    Invalid {
        platform: &'static str,
        message: String,
    },
    #[error("platforms.{platform} is enabled but {variable} is not set")]
    MissingCredential {
        platform: &'static str,
        variable: &'static str,
    },
    #[error("{platform}: cannot set up the HTTP client: {message}")]
    Client {
        platform: &'static str,
        message: String,
    },
}

impl PlatformConfigError {
    /// The platform whose settings are wrong (`gateway` for one no adapter exists for).
    pub fn platform(&self) -> &'static str {
        match self {
            PlatformConfigError::Invalid { platform, .. }
            | PlatformConfigError::MissingCredential { platform, .. }
            | PlatformConfigError::Client { platform, .. } => platform,
        }
    }
}
