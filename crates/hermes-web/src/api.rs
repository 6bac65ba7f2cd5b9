//! The HTTP client for the services the user configured (search backends, image and speech
//! providers, transcription): fixed endpoints chosen by the user, not by the model, so they are
//! not held to the SSRF rules (a self-hosted SearXNG on localhost is normal). Every answer is
//! read up to a size cap and every request has a deadline; errors name the service and carry
//! the service's own message.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

/// Largest JSON or text answer read from a service.
const MAX_TEXT_BYTES: usize = 8 * 1024 * 1024;
/// Largest binary answer (generated audio or image).
pub const MAX_MEDIA_BYTES: usize = 50 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    #[error("{service}: {var} is not set")]
    MissingKey { service: String, var: String },
    #[error("{service} answered HTTP {status}: {message}")]
    Status {
        service: String,
        status: u16,
        message: String,
    },
    #[error("cannot reach {service}: {message}")]
    Transport { service: String, message: String },
    #[error("{service}: unexpected answer: {message}")]
    Format { service: String, message: String },
    #[error("{service}: the answer is larger than {limit} bytes")]
    TooLarge { service: String, limit: usize },
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
}

impl ApiError {
    pub fn format(service: &str, message: impl Into<String>) -> ApiError {
        ApiError::Format {
            service: service.to_string(),
            message: message.into(),
        }
    }

    pub fn missing_key(service: &str, var: &str) -> ApiError {
        ApiError::MissingKey {
            service: service.to_string(),
            var: var.to_string(),
        }
    }
}

/// One client for every configured service, built on first use (a session that never calls
/// a service never loads TLS roots for it). Cheap to clone.
#[derive(Debug, Clone)]
pub struct ApiClient {
    timeout: Duration,
    client: Arc<OnceLock<Result<reqwest::Client, String>>>,
}

impl ApiClient {
    /// A client whose requests each have `timeout` in all.
    pub fn new(timeout: Duration) -> ApiClient {
        ApiClient {
            timeout,
            client: Arc::new(OnceLock::new()),
        }
    }

    /// The HTTP client.
    pub fn http(&self) -> Result<&reqwest::Client, ApiError> {
        self.client
            .get_or_init(|| {
                let _ = rustls::crypto::ring::default_provider().install_default();
                reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(15))
                    .timeout(self.timeout)
                    .user_agent(concat!("hermes-rs/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| ApiError::Client(e.clone()))
    }

    /// Sends `request` and parses a JSON answer.
    pub async fn json(
        &self,
        service: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Value, ApiError> {
        let bytes = self.bytes(service, request, MAX_TEXT_BYTES).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::format(service, format!("not JSON: {e}")))
    }

    /// Sends `request` and returns the text answer.
    pub async fn text(
        &self,
        service: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<String, ApiError> {
        let bytes = self.bytes(service, request, MAX_TEXT_BYTES).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Sends `request` and returns the body (at most `limit` bytes) of a 2xx answer; any other
    /// status is an error carrying the service's message.
    pub async fn bytes(
        &self,
        service: &str,
        request: reqwest::RequestBuilder,
        limit: usize,
    ) -> Result<Vec<u8>, ApiError> {
        let mut response = request.send().await.map_err(|e| ApiError::Transport {
            service: service.to_string(),
            message: one_line(&e),
        })?;
        let status = response.status();
        let mut body = Vec::new();
        let cap = if status.is_success() {
            limit
        } else {
            64 * 1024
        };
        loop {
            let chunk = response.chunk().await.map_err(|e| ApiError::Transport {
                service: service.to_string(),
                message: one_line(&e),
            })?;
            let Some(chunk) = chunk else { break };
            if body.len() + chunk.len() > cap {
                if status.is_success() {
                    return Err(ApiError::TooLarge {
                        service: service.to_string(),
                        limit,
                    });
                }
                break;
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            return Err(ApiError::Status {
                service: service.to_string(),
                status: status.as_u16(),
                message: error_message(&body),
            });
        }
        Ok(body)
    }
}

/// The service's own words from an error body: `error.message`, `error`, `message`, `detail`,
/// else the start of the text.
pub fn error_message(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let candidates = [
            v.pointer("/error/message"),
            v.get("error"),
            v.get("message"),
            v.get("detail"),
            v.pointer("/detail/message"),
        ];
        for c in candidates.into_iter().flatten() {
            match c {
                Value::String(s) if !s.trim().is_empty() => return shorten(s.trim()),
                Value::Object(_) | Value::Array(_) => return shorten(&c.to_string()),
                _ => {}
            }
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        "(empty body)".into()
    } else {
        shorten(text)
    }
}

fn shorten(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 300 {
        format!("{}…", one.chars().take(300).collect::<String>())
    } else {
        one
    }
}

/// An error and its causes in one line, without repeats.
pub fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = err.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_come_from_the_usual_fields() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(error_message(br#"{"detail":"quota"}"#), "quota");
        assert_eq!(error_message(b"  plain\n text "), "plain text");
        assert_eq!(error_message(b""), "(empty body)");
        assert!(error_message("x".repeat(1000).as_bytes()).ends_with('…'));
    }
}
