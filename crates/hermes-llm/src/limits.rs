//! Bounds on what one model call may receive, whatever the provider sends: the answer kept
//! (text, reasoning, tool-call arguments), the size of one stream event, the longest silence
//! without progress, and the longest a whole response may take. Keep-alives, comments and
//! events that carry nothing are not progress, so a server trickling them cannot hold a call
//! open. [`StreamLimits::from_config`] reads them the way the Python Hermes reads its stream
//! timeouts (per-provider config first, then the environment), plus two size caps of ours.

use std::time::Duration;

use hermes_config::Environment;
use serde_json::Value;

/// Default cap on the answer kept per call: far beyond any model's output limit.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;
/// Default idle deadline (Python's `HERMES_STREAM_STALE_TIMEOUT`).
pub const DEFAULT_IDLE: Duration = Duration::from_secs(180);
/// Default idle deadline for a server on this machine (Python's
/// `agent.local_stream_stale_timeout`): a local model may need minutes to read a long prompt.
pub const DEFAULT_LOCAL_IDLE: Duration = Duration::from_secs(900);
/// Default overall deadline (Python's `HERMES_API_TIMEOUT`).
pub const DEFAULT_TOTAL: Duration = Duration::from_secs(1800);

/// The bounds of one model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Bytes of answer kept per call: text, reasoning and tool-call arguments.
    pub max_answer_bytes: usize,
    /// Bytes of one stream event (an SSE event with all its lines; a whole JSON answer).
    pub max_event_bytes: usize,
    /// Longest wait for progress: for the response to start, then between events that carry
    /// something.
    pub idle: Duration,
    /// Longest a response may take from the request to its end.
    pub total: Duration,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            max_event_bytes: crate::sse::DEFAULT_MAX_EVENT,
            idle: DEFAULT_IDLE,
            total: DEFAULT_TOTAL,
        }
    }
}

/// Which bound a response crossed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitExceeded {
    #[error(
        "the response exceeded {limit} bytes, so it was cut off (raise agent.stream_max_bytes or HERMES_STREAM_MAX_BYTES if this was expected)"
    )]
    AnswerTooLarge { limit: usize },
    #[error(
        "one stream event exceeded {limit} bytes, so the response was cut off (raise agent.stream_max_event_bytes or HERMES_STREAM_MAX_EVENT_BYTES if this was expected)"
    )]
    EventTooLarge { limit: usize },
    #[error(
        "no progress from the provider for {}s (keep-alives do not count; providers.<name>.stale_timeout_seconds or HERMES_STREAM_STALE_TIMEOUT sets this)",
        .after.as_secs_f64()
    )]
    Stalled { after: Duration },
    #[error(
        "the response took longer than {}s (providers.<name>.request_timeout_seconds or HERMES_API_TIMEOUT sets this)",
        .after.as_secs_f64()
    )]
    Deadline { after: Duration },
}

impl StreamLimits {
    /// The limits for `provider` (its preset id or custom name) at `base_url`, from config.yaml
    /// (`raw`, the whole document) and the environment:
    ///
    /// - idle: `providers.<provider>.models.<model>.stale_timeout_seconds`, then
    ///   `providers.<provider>.stale_timeout_seconds`, then `HERMES_STREAM_STALE_TIMEOUT`; for a
    ///   server on this machine without any of those, `HERMES_LOCAL_STREAM_STALE_TIMEOUT`, then
    ///   `agent.local_stream_stale_timeout`, then 900 s; else 180 s.
    /// - total: `providers.<provider>.models.<model>.timeout_seconds`, then
    ///   `providers.<provider>.request_timeout_seconds`, then `HERMES_API_TIMEOUT`, else 1800 s.
    /// - sizes: `agent.stream_max_bytes` / `HERMES_STREAM_MAX_BYTES` and
    ///   `agent.stream_max_event_bytes` / `HERMES_STREAM_MAX_EVENT_BYTES`.
    ///
    /// Values that are not positive numbers are ignored.
    pub fn from_config(
        raw: &Value,
        env: &Environment,
        provider: &str,
        model: &str,
        base_url: &str,
    ) -> StreamLimits {
        let provider_cfg = raw.get("providers").and_then(|p| p.get(provider));
        let model_cfg = provider_cfg
            .and_then(|p| p.get("models"))
            .and_then(|m| m.get(model));
        let agent = raw.get("agent");
        let cfg_secs = |v: Option<&Value>| v.and_then(positive_secs);
        let env_secs = |name: &str| env.var(name).as_deref().and_then(parse_secs);
        let configured_idle = cfg_secs(model_cfg.and_then(|m| m.get("stale_timeout_seconds")))
            .or_else(|| cfg_secs(provider_cfg.and_then(|p| p.get("stale_timeout_seconds"))))
            .or_else(|| env_secs("HERMES_STREAM_STALE_TIMEOUT"));
        let idle = match configured_idle {
            Some(d) => d,
            None if crate::resolve::is_loopback(base_url) => {
                env_secs("HERMES_LOCAL_STREAM_STALE_TIMEOUT")
                    .or_else(|| cfg_secs(agent.and_then(|a| a.get("local_stream_stale_timeout"))))
                    .unwrap_or(DEFAULT_LOCAL_IDLE)
            }
            None => DEFAULT_IDLE,
        };
        let total = cfg_secs(model_cfg.and_then(|m| m.get("timeout_seconds")))
            .or_else(|| cfg_secs(provider_cfg.and_then(|p| p.get("request_timeout_seconds"))))
            .or_else(|| env_secs("HERMES_API_TIMEOUT"))
            .unwrap_or(DEFAULT_TOTAL);
        let bytes = |key: &str, var: &str, default: usize| {
            agent
                .and_then(|a| a.get(key))
                .and_then(positive_bytes)
                .or_else(|| env.var(var).as_deref().and_then(parse_bytes))
                .unwrap_or(default)
        };
        StreamLimits {
            max_answer_bytes: bytes(
                "stream_max_bytes",
                "HERMES_STREAM_MAX_BYTES",
                DEFAULT_MAX_ANSWER_BYTES,
            ),
            max_event_bytes: bytes(
                "stream_max_event_bytes",
                "HERMES_STREAM_MAX_EVENT_BYTES",
                crate::sse::DEFAULT_MAX_EVENT,
            ),
            idle,
            total,
        }
    }
}

/// Seconds written as a number or a numeric string; positive and finite only.
fn positive_secs(v: &Value) -> Option<Duration> {
    match v {
        Value::Number(n) => n.as_f64().and_then(secs),
        Value::String(s) => parse_secs(s),
        _ => None,
    }
}

fn parse_secs(s: &str) -> Option<Duration> {
    s.trim().parse::<f64>().ok().and_then(secs)
}

fn secs(v: f64) -> Option<Duration> {
    (v.is_finite() && v > 0.0).then(|| Duration::from_secs_f64(v.min(30.0 * 86_400.0)))
}

fn positive_bytes(v: &Value) -> Option<usize> {
    match v {
        Value::Number(n) => n.as_u64().and_then(|b| usize::try_from(b).ok()),
        Value::String(s) => parse_bytes(s),
        _ => None,
    }
    .filter(|&b| b > 0)
}

fn parse_bytes(s: &str) -> Option<usize> {
    s.trim().parse::<usize>().ok().filter(|&b| b > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::isolated(pairs.iter().copied())
    }

    #[test]
    fn defaults_and_the_local_idle_deadline() {
        let none = env(&[]);
        let remote = StreamLimits::from_config(
            &json!({}),
            &none,
            "openrouter",
            "m",
            "https://openrouter.ai/api/v1",
        );
        assert_eq!(remote, StreamLimits::default());
        let local = StreamLimits::from_config(
            &json!({}),
            &none,
            "ollama",
            "m",
            "http://localhost:11434/v1",
        );
        assert_eq!(local.idle, DEFAULT_LOCAL_IDLE);
        let local = StreamLimits::from_config(
            &json!({"agent": {"local_stream_stale_timeout": 60}}),
            &none,
            "ollama",
            "m",
            "http://localhost:11434/v1",
        );
        assert_eq!(local.idle, Duration::from_secs(60));
    }

    #[test]
    fn provider_config_wins_over_the_environment() {
        let raw = json!({
            "providers": {"custom": {
                "stale_timeout_seconds": 7,
                "request_timeout_seconds": "30",
                "models": {"big": {"stale_timeout_seconds": 9, "timeout_seconds": 99}}
            }},
            "agent": {"stream_max_bytes": 1000, "stream_max_event_bytes": "500"}
        });
        let e = env(&[
            ("HERMES_STREAM_STALE_TIMEOUT", "1"),
            ("HERMES_API_TIMEOUT", "2"),
            ("HERMES_STREAM_MAX_BYTES", "3"),
        ]);
        let l = StreamLimits::from_config(&raw, &e, "custom", "m", "http://10.0.0.1/v1");
        assert_eq!(
            l,
            StreamLimits {
                max_answer_bytes: 1000,
                max_event_bytes: 500,
                idle: Duration::from_secs(7),
                total: Duration::from_secs(30),
            }
        );
        let l = StreamLimits::from_config(&raw, &e, "custom", "big", "http://10.0.0.1/v1");
        assert_eq!(
            (l.idle, l.total),
            (Duration::from_secs(9), Duration::from_secs(99))
        );
        let l = StreamLimits::from_config(&json!({}), &e, "openai", "m", "https://x/v1");
        assert_eq!(
            (l.idle, l.total, l.max_answer_bytes),
            (Duration::from_secs(1), Duration::from_secs(2), 3)
        );
    }

    #[test]
    fn nonsense_values_are_ignored() {
        let raw = json!({"providers": {"custom": {"stale_timeout_seconds": -5, "request_timeout_seconds": "soon"}},
                         "agent": {"stream_max_bytes": 0}});
        let e = env(&[("HERMES_STREAM_MAX_EVENT_BYTES", "-1")]);
        let l = StreamLimits::from_config(&raw, &e, "custom", "m", "https://x/v1");
        assert_eq!(l, StreamLimits::default());
    }
}
