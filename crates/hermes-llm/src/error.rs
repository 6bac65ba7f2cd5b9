//! Provider errors and their classification. Every failure of a model call becomes an
//! [`LlmError`]; [`LlmError::class`] sorts it into the [`ErrorClass`] set that decides the
//! policy (retry with backoff, compress, rotate credentials, fall back, or give up).

use std::time::Duration;

use serde_json::Value;

pub use hermes_protocol::ErrorClass;

#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    /// The server answered with an error status.
    #[error("HTTP {status}: {message}")]
    Http {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    /// The request never got a response (refused, reset, DNS, TLS).
    #[error("connection failed: {0}")]
    Connect(String),
    #[error("timed out: {0}")]
    Timeout(String),
    /// The response stream ended before the model finished.
    #[error("stream interrupted: {0}")]
    StreamCut(String),
    /// The stream carried an error object instead of a completion.
    #[error("provider error in stream: {0}")]
    InStream(String),
    /// A chunk could not be understood.
    #[error("malformed response: {0}")]
    Decode(String),
    /// Bad setup on our side (client construction, unsupported option).
    #[error("{0}")]
    Config(String),
}

impl LlmError {
    pub fn class(&self) -> ErrorClass {
        match self {
            LlmError::Http {
                status, message, ..
            } => classify_http(*status, message),
            LlmError::Connect(_) | LlmError::Timeout(_) | LlmError::StreamCut(_) => {
                ErrorClass::Timeout
            }
            LlmError::InStream(message) => classify_message(message).unwrap_or(ErrorClass::Unknown),
            LlmError::Decode(_) => ErrorClass::Unknown,
            LlmError::Config(_) => ErrorClass::FormatError,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The stream broke after the response began: what was received is valid but incomplete.
    pub fn is_stream_cut(&self) -> bool {
        matches!(self, LlmError::StreamCut(_))
    }

    pub(crate) fn from_reqwest(e: &reqwest::Error, during_body: bool) -> LlmError {
        let detail = error_chain(e);
        if e.is_timeout() {
            LlmError::Timeout(detail)
        } else if during_body || e.is_body() || e.is_decode() {
            LlmError::StreamCut(detail)
        } else {
            LlmError::Connect(detail)
        }
    }
}

/// The error and its sources on one line ("error sending request: connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

fn classify_http(status: u16, message: &str) -> ErrorClass {
    if let Some(class) = classify_message(message) {
        // The body is more specific than the status for these.
        if matches!(
            class,
            ErrorClass::ContextOverflow | ErrorClass::Billing | ErrorClass::ContentPolicy
        ) || (status == 400 || status == 404) && class == ErrorClass::ModelNotFound
            // Gemini reports a bad key as 400 INVALID_ARGUMENT.
            || status == 400 && class == ErrorClass::Auth
        {
            return class;
        }
    }
    match status {
        401 | 403 => ErrorClass::Auth,
        402 => ErrorClass::Billing,
        404 => ErrorClass::ModelNotFound,
        408 | 504 | 524 => ErrorClass::Timeout,
        413 => ErrorClass::PayloadTooLarge,
        429 => ErrorClass::RateLimit,
        503 | 529 => ErrorClass::Overloaded,
        500..=599 => ErrorClass::ServerError,
        400 | 405..=499 => ErrorClass::FormatError,
        _ => ErrorClass::Unknown,
    }
}

/// Recognises a class from the words of an error message, whatever the status.
fn classify_message(message: &str) -> Option<ErrorClass> {
    let m = message.to_ascii_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| m.contains(n));
    // Throttling first: Bedrock's says "Too many tokens, please wait", which is not an overflow.
    if any(&[
        "rate limit",
        "rate_limit",
        "too many requests",
        "throttl",
        "please wait",
    ]) {
        return Some(ErrorClass::RateLimit);
    }
    if any(&[
        "context_length_exceeded",
        "maximum context length",
        "context length",
        "context window",
        "prompt is too long",
        "too many tokens",
        "input is too long",
        "exceeds the context",
        "reduce the length",
        "exceeds the maximum number of tokens",
        "context_window_exceeded",
    ]) {
        Some(ErrorClass::ContextOverflow)
    } else if any(&[
        "insufficient_quota",
        "insufficient credits",
        "credit balance",
        "billing",
        "payment required",
        "exceeded your current quota",
        "insufficient balance",
        "requires more credits",
    ]) {
        Some(ErrorClass::Billing)
    } else if any(&[
        "content_policy",
        "content policy",
        "safety system",
        "flagged",
    ]) {
        Some(ErrorClass::ContentPolicy)
    } else if any(&["overloaded"]) {
        Some(ErrorClass::Overloaded)
    } else if any(&[
        "model_not_found",
        "model not found",
        "no such model",
        "unknown model",
        "no endpoints found",
    ]) || (m.contains("model")
        && (m.contains("does not exist") || m.contains("not found")))
    {
        Some(ErrorClass::ModelNotFound)
    } else if any(&[
        "invalid api key",
        "invalid_api_key",
        "incorrect api key",
        "api key not valid",
        "invalid x-api-key",
        "no auth credentials",
        "unauthorized",
    ]) {
        Some(ErrorClass::Auth)
    } else if any(&["serviceunavailableexception", "service_unavailable"]) {
        Some(ErrorClass::Overloaded)
    } else if any(&["modeltimeoutexception"]) {
        Some(ErrorClass::Timeout)
    } else if any(&[
        "server_error",
        "internalserverexception",
        "modelstreamerrorexception",
        "api_error",
    ]) {
        // The kinds providers give errors of their own inside a stream (OpenAI
        // `server_error`, Anthropic `api_error`, Bedrock's exceptions).
        Some(ErrorClass::ServerError)
    } else {
        None
    }
}

/// The human-readable message of an error body in any of the shapes providers use.
pub(crate) fn error_message(body: &[u8], status: u16) -> String {
    let text = String::from_utf8_lossy(body);
    // Gemini wraps its error object in a one-element array.
    let parsed: Option<Value> = serde_json::from_slice::<Value>(body).ok().map(|v| match v {
        Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        other => other,
    });
    let message = parsed.as_ref().map(|v| match v.get("error") {
        Some(e) => error_text(e),
        None => error_text(v),
    });
    match message.filter(|m| !m.is_empty()) {
        Some(m) => m,
        None if text.trim().is_empty() => canonical_reason(status).to_string(),
        None => snippet(text.trim()),
    }
}

/// An error object sent inside a 200 stream (`{"message", "type" | "code"}`), as an error whose
/// text keeps the provider's error kind, which the classifier reads (`rate_limit_exceeded:
/// ...`, `server_error: ...`).
pub(crate) fn in_stream(e: &Value) -> LlmError {
    let message = error_text(e);
    let kind = ["type", "code"]
        .iter()
        .filter_map(|k| e.get(*k).and_then(Value::as_str))
        .find(|k| !k.is_empty() && *k != "error" && !message.contains(*k));
    LlmError::InStream(match kind {
        Some(kind) => format!("{kind}: {message}"),
        None => message,
    })
}

pub(crate) fn error_text(e: &Value) -> String {
    match e {
        Value::String(s) => s.clone(),
        Value::Object(map) => {
            let base = map
                .get("message")
                .or_else(|| map.get("detail"))
                .or_else(|| map.get("error"))
                .map(|m| match m {
                    Value::String(s) => s.clone(),
                    other => error_text(other),
                })
                .unwrap_or_else(|| snippet(&e.to_string()));
            // OpenRouter wraps the upstream provider's message in metadata.raw.
            match map
                .get("metadata")
                .and_then(|m| m.get("raw"))
                .and_then(Value::as_str)
            {
                Some(raw) if !raw.is_empty() && !base.contains(raw) => {
                    format!("{base} ({})", snippet(raw))
                }
                _ => base,
            }
        }
        other => snippet(&other.to_string()),
    }
}

fn canonical_reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "error",
    }
}

pub(crate) fn snippet(s: &str) -> String {
    const MAX: usize = 300;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, message: &str) -> ErrorClass {
        LlmError::Http {
            status,
            message: message.into(),
            retry_after: None,
        }
        .class()
    }

    #[test]
    fn statuses_map_to_classes() {
        assert_eq!(http(401, "Incorrect API key provided"), ErrorClass::Auth);
        assert_eq!(http(429, "Rate limit reached"), ErrorClass::RateLimit);
        assert_eq!(http(500, "Internal server error"), ErrorClass::ServerError);
        assert_eq!(http(529, "Overloaded"), ErrorClass::Overloaded);
        assert_eq!(http(503, "Service Unavailable"), ErrorClass::Overloaded);
        assert_eq!(
            http(413, "Request Entity Too Large"),
            ErrorClass::PayloadTooLarge
        );
        assert_eq!(http(504, "Gateway Timeout"), ErrorClass::Timeout);
    }

    #[test]
    fn bodies_refine_the_status() {
        assert_eq!(
            http(400, "This model's maximum context length is 128000 tokens"),
            ErrorClass::ContextOverflow
        );
        assert_eq!(
            http(
                429,
                "You exceeded your current quota, please check your plan and billing"
            ),
            ErrorClass::Billing
        );
        assert_eq!(
            http(
                404,
                "The model `gpt-9` does not exist or you do not have access to it."
            ),
            ErrorClass::ModelNotFound
        );
        assert_eq!(
            http(400, "Invalid 'messages[1].role'"),
            ErrorClass::FormatError
        );
    }

    #[test]
    fn error_bodies_of_every_shape_are_readable() {
        assert_eq!(
            error_message(br#"{"error":{"message":"Incorrect API key"}}"#, 401),
            "Incorrect API key"
        );
        assert_eq!(error_message(br#"{"error":"bad"}"#, 400), "bad");
        assert_eq!(error_message(b"", 502), "Bad Gateway");
        assert_eq!(
            error_message(b"<html>oops</html>", 500),
            "<html>oops</html>"
        );
        assert_eq!(
            error_message(
                br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                529
            ),
            "Overloaded"
        );
    }

    #[test]
    fn transport_failures_are_retryable_and_auth_is_not() {
        assert!(LlmError::Connect("refused".into()).class().is_retryable());
        assert!(LlmError::StreamCut("eof".into()).class().is_retryable());
        assert!(!ErrorClass::Auth.is_retryable());
        assert!(!ErrorClass::ContextOverflow.is_retryable());
    }
}
