//! How a turn's end reaches an OpenAI client: the HTTP status, error type and code each
//! [`TurnEnd`] deserves, so an OpenAI SDK raises the exception a caller can act on
//! (`AuthenticationError` stays for our own key; a provider's 401 is the upstream's problem: 502;
//! a context overflow is the caller's request: 400 `context_length_exceeded`; a rate limit is 429
//! with `Retry-After`; a spent iteration budget still answers, with `finish_reason: "length"`).

use axum::http::StatusCode;
use hermes_protocol::{ErrorClass, TurnEnd, TurnFailure};

/// `finish_reason` of an answered turn.
pub fn finish_reason(end: &TurnEnd) -> &'static str {
    match end {
        TurnEnd::Completed => "stop",
        TurnEnd::BudgetExhausted => "length",
        TurnEnd::Interrupted | TurnEnd::Failed(_) => "error",
    }
}

/// An error answer: status, OpenAI error `type` and `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorShape {
    pub status: StatusCode,
    pub kind: &'static str,
    pub code: &'static str,
}

const fn shape(status: StatusCode, kind: &'static str, code: &'static str) -> ErrorShape {
    ErrorShape { status, kind, code }
}

/// The error answer of a turn that did not answer (`None`: it did).
pub fn error_shape(end: &TurnEnd) -> Option<ErrorShape> {
    match end {
        TurnEnd::Completed | TurnEnd::BudgetExhausted => None,
        TurnEnd::Interrupted => Some(shape(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "cancelled",
        )),
        TurnEnd::Failed(failure) => Some(failure_shape(failure)),
    }
}

fn failure_shape(failure: &TurnFailure) -> ErrorShape {
    use StatusCode as S;
    match failure.class {
        ErrorClass::Auth => shape(S::BAD_GATEWAY, "upstream_error", "upstream_auth_error"),
        ErrorClass::Billing => shape(S::BAD_GATEWAY, "upstream_error", "upstream_billing_error"),
        ErrorClass::RateLimit => shape(
            S::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "rate_limit_exceeded",
        ),
        ErrorClass::Overloaded => shape(
            S::SERVICE_UNAVAILABLE,
            "upstream_error",
            "upstream_overloaded",
        ),
        ErrorClass::ServerError => shape(S::BAD_GATEWAY, "upstream_error", "upstream_error"),
        ErrorClass::Timeout => shape(S::GATEWAY_TIMEOUT, "upstream_error", "upstream_timeout"),
        ErrorClass::ContextOverflow => shape(
            S::BAD_REQUEST,
            "invalid_request_error",
            "context_length_exceeded",
        ),
        ErrorClass::PayloadTooLarge => shape(
            S::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            "payload_too_large",
        ),
        ErrorClass::ModelNotFound => {
            shape(S::NOT_FOUND, "invalid_request_error", "model_not_found")
        }
        ErrorClass::ContentPolicy => shape(
            S::BAD_REQUEST,
            "invalid_request_error",
            "content_policy_violation",
        ),
        ErrorClass::FormatError => shape(S::BAD_GATEWAY, "upstream_error", "upstream_format_error"),
        ErrorClass::ToolLoop => shape(S::INTERNAL_SERVER_ERROR, "server_error", "tool_loop"),
        ErrorClass::Unknown => shape(S::INTERNAL_SERVER_ERROR, "server_error", "agent_error"),
    }
}

/// Seconds a client should wait before retrying (rate limits): the provider's own figure, else
/// a short default.
pub fn retry_after(end: &TurnEnd) -> Option<u64> {
    match end {
        TurnEnd::Failed(f) if f.class == ErrorClass::RateLimit => {
            Some(f.retry_after_secs.unwrap_or(1))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_a_status() {
        let all = [
            ErrorClass::Auth,
            ErrorClass::Billing,
            ErrorClass::RateLimit,
            ErrorClass::Overloaded,
            ErrorClass::ServerError,
            ErrorClass::Timeout,
            ErrorClass::ContextOverflow,
            ErrorClass::PayloadTooLarge,
            ErrorClass::ModelNotFound,
            ErrorClass::ContentPolicy,
            ErrorClass::FormatError,
            ErrorClass::ToolLoop,
            ErrorClass::Unknown,
        ];
        for class in all {
            let shape = error_shape(&TurnEnd::failed(class, "x")).unwrap();
            assert!(shape.status.is_client_error() || shape.status.is_server_error());
        }
        assert_eq!(
            error_shape(&TurnEnd::failed(ErrorClass::Auth, "401"))
                .unwrap()
                .status,
            StatusCode::BAD_GATEWAY
        );
        assert_eq!(finish_reason(&TurnEnd::BudgetExhausted), "length");
        assert!(error_shape(&TurnEnd::BudgetExhausted).is_none());
        assert_eq!(
            retry_after(&TurnEnd::failed(ErrorClass::RateLimit, "slow down")),
            Some(1)
        );
    }
}
