//! HTTP plumbing shared by the adapters: the client (rustls with the ring provider, connect
//! and read timeouts, no redirects so a bot token never follows one), bounded body reads,
//! `Retry-After`, transport errors without URLs (Telegram's carry the token), and the retry
//! of rate-limited calls.

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::HeaderMap;

use crate::platform::error::{PlatformConfigError, PlatformError};

/// Longest JSON answer read from a platform API.
pub(crate) const MAX_API_BODY: usize = 8 * 1024 * 1024;

/// Rate-limited calls are tried this many times in all.
const RATE_LIMIT_ATTEMPTS: u32 = 4;

pub(crate) fn client(platform: &'static str) -> Result<reqwest::Client, PlatformConfigError> {
    // Installing twice is harmless; the first provider stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(15))
        .read_timeout(Duration::from_secs(90))
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true)
        .user_agent(concat!("hermes-rs/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| PlatformConfigError::Client {
            platform,
            message: e.without_url().to_string(),
        })
}

/// A transport error as a [`PlatformError::Network`], its URL removed.
pub(crate) fn network(platform: &'static str, e: reqwest::Error) -> PlatformError {
    let e = e.without_url();
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    PlatformError::Network { platform, message }
}

/// Reads a body up to `max` bytes (more is an error, not a silent cut).
pub(crate) async fn read_limited(
    platform: &'static str,
    response: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, PlatformError> {
    if let Some(len) = response.content_length()
        && len > max as u64
    {
        return Err(PlatformError::Protocol {
            platform,
            message: format!("answer of {len} bytes is over the {max}-byte limit"),
        });
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| network(platform, e))?;
        if body.len() + chunk.len() > max {
            return Err(PlatformError::Protocol {
                platform,
                message: format!("answer is over the {max}-byte limit"),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// `Retry-After` in seconds (fractions allowed, as Discord sends them).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

/// Runs `call` again after each rate limit the platform reports, waiting what it asks, as
/// long as that wait is at most `max_wait` (longer waits go back to the caller as
/// [`PlatformError::RateLimited`]).
pub(crate) async fn with_rate_limit<T, F, Fut>(
    max_wait: Duration,
    mut call: F,
) -> Result<T, PlatformError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, PlatformError>>,
{
    let mut attempt = 1;
    loop {
        match call().await {
            Err(PlatformError::RateLimited {
                platform,
                retry_after,
            }) if attempt < RATE_LIMIT_ATTEMPTS && retry_after <= max_wait => {
                attempt += 1;
                // A zero wait still yields, so a buggy server cannot spin us.
                tokio::time::sleep(retry_after.max(Duration::from_millis(50))).await;
                let _ = platform;
            }
            other => return other,
        }
    }
}

/// Compares secrets without an early exit on the first differing byte.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn secrets_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn retry_after_header_is_parsed_with_fractions() {
        let mut h = HeaderMap::new();
        h.insert(reqwest::header::RETRY_AFTER, "1.5".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        h.insert(reqwest::header::RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&h), None);
    }

    #[tokio::test]
    async fn rate_limits_are_waited_out_within_the_cap() {
        let calls = AtomicU32::new(0);
        let out = with_rate_limit(Duration::from_secs(1), || async {
            if calls.fetch_add(1, Ordering::SeqCst) < 2 {
                Err(PlatformError::RateLimited {
                    platform: "t",
                    retry_after: Duration::from_millis(10),
                })
            } else {
                Ok(7)
            }
        })
        .await
        .unwrap();
        assert_eq!(out, 7);
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        let long = with_rate_limit(Duration::from_secs(1), || async {
            Err::<(), _>(PlatformError::RateLimited {
                platform: "t",
                retry_after: Duration::from_secs(30),
            })
        })
        .await;
        assert!(matches!(long, Err(PlatformError::RateLimited { .. })));
    }
}
