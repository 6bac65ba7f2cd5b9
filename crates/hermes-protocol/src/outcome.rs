//! How a turn ends ([`TurnEnd`]) and why a failed one failed ([`ErrorClass`], [`TurnFailure`]).
//! Every frontend reads the same outcome: the CLI maps it to an exit code, the API server to
//! the HTTP status an OpenAI client expects, the gateway to a chat message. The classes are
//! the provider-error classes of `hermes-llm` (which decide retry, compression, rotation and
//! fallback) plus the agent's own failures, so an outcome never loses why it happened.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The failure classes of a model call, each with its own recovery policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    Auth,
    Billing,
    RateLimit,
    Overloaded,
    ServerError,
    /// Timeouts and transport failures (refused, reset, stream cut).
    Timeout,
    ContextOverflow,
    PayloadTooLarge,
    ModelNotFound,
    ContentPolicy,
    FormatError,
    /// Not a provider error: the model kept asking for tool calls that cannot run (invalid
    /// calls, or the same failing call again and again), so the agent stopped the turn.
    ToolLoop,
    Unknown,
}

impl ErrorClass {
    /// Whether trying the same request again later can succeed.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorClass::RateLimit
                | ErrorClass::Overloaded
                | ErrorClass::ServerError
                | ErrorClass::Timeout
                | ErrorClass::Unknown
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Auth => "auth",
            ErrorClass::Billing => "billing",
            ErrorClass::RateLimit => "rate_limit",
            ErrorClass::Overloaded => "overloaded",
            ErrorClass::ServerError => "server_error",
            ErrorClass::Timeout => "timeout",
            ErrorClass::ContextOverflow => "context_overflow",
            ErrorClass::PayloadTooLarge => "payload_too_large",
            ErrorClass::ModelNotFound => "model_not_found",
            ErrorClass::ContentPolicy => "content_policy",
            ErrorClass::FormatError => "format_error",
            ErrorClass::ToolLoop => "tool_loop",
            ErrorClass::Unknown => "unknown",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a turn failed: the class decides how a frontend reports it (exit code, HTTP status),
/// the message is what the user reads (one line, secrets already redacted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnFailure {
    pub class: ErrorClass,
    pub message: String,
    /// How long the provider asked us to wait (rate limits), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
}

impl TurnFailure {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> TurnFailure {
        TurnFailure {
            class,
            message: message.into(),
            retry_after_secs: None,
        }
    }
}

impl fmt::Display for TurnFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// How a turn ended. Exactly one of these: a turn cannot be both interrupted and failed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "snake_case")]
pub enum TurnEnd {
    /// The model answered without asking for more tools.
    #[default]
    Completed,
    /// The iteration budget ran out; the answer is the model's wrap-up from the grace call.
    BudgetExhausted,
    /// The user (or the client, or a shutdown) cancelled the turn.
    Interrupted,
    /// The turn could not finish.
    Failed(TurnFailure),
}

impl TurnEnd {
    pub fn failed(class: ErrorClass, message: impl Into<String>) -> TurnEnd {
        TurnEnd::Failed(TurnFailure::new(class, message))
    }

    /// The name stored as a session's end reason and shown in logs.
    pub fn as_str(&self) -> &'static str {
        match self {
            TurnEnd::Completed => "completed",
            TurnEnd::BudgetExhausted => "max_turns",
            TurnEnd::Interrupted => "interrupted",
            TurnEnd::Failed(_) => "failed",
        }
    }

    pub fn failure(&self) -> Option<&TurnFailure> {
        match self {
            TurnEnd::Failed(f) => Some(f),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_serialise_as_their_names() {
        for class in [
            ErrorClass::Auth,
            ErrorClass::ContextOverflow,
            ErrorClass::RateLimit,
        ] {
            let json = serde_json::to_string(&class).unwrap();
            assert_eq!(json, format!("\"{}\"", class.as_str()));
        }
    }

    #[test]
    fn ends_name_themselves() {
        assert_eq!(TurnEnd::default(), TurnEnd::Completed);
        assert_eq!(TurnEnd::BudgetExhausted.as_str(), "max_turns");
        let failed = TurnEnd::failed(ErrorClass::Auth, "HTTP 401");
        assert_eq!(failed.failure().map(|f| f.class), Some(ErrorClass::Auth));
        assert_eq!(failed.as_str(), "failed");
    }
}
