//! The background review: the trigger of the learning loop. After a turn a session may owe a
//! review (the Python Hermes's triggers and defaults): a memory review every
//! `memory.nudge_interval` user turns (10), a skill review once `skills.creation_nudge_interval`
//! tool iterations (10) have passed since `skill_manage` was last used; `0` turns either off.
//! The counters are the session's own ([`Nudges`]), so one gateway process hosts many sessions
//! each on its own schedule.
//!
//! The review itself ([`fork`]) is a forked agent that may only use `memory` and `skill_manage`,
//! runs on a tokio task after the answer was delivered, never touches the live session's
//! history or prompt, is stored as its own session (source `review`), and announces its writes
//! in one line each (`💾 memory updated`, `📚 skill saved: NAME`) unless
//! `display.learning_notices: false`.

mod fork;
mod nudges;
mod prompts;

use std::time::Duration;

use hermes_config::Config;
use serde_json::Value;

pub(crate) use fork::{NobodyToAsk, ReviewJob, start};
pub use fork::{Notices, REFUSAL, ReviewHandle, ReviewOutcome};
pub use nudges::{Due, Nudges};
pub use prompts::{COMBINED, MEMORY, SKILLS, TOOLS_NOTE};

/// The store source of review sessions (hidden from `hermes sessions list` unless `--all`).
pub const SOURCE: &str = "review";

/// The review's settings, read from config.yaml.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewSettings {
    /// `memory.nudge_interval`: user turns between memory reviews (0: never).
    pub memory_interval: u32,
    /// `skills.creation_nudge_interval`: tool iterations without `skill_manage` before a skill
    /// review (0: never).
    pub skill_interval: u32,
    /// `memory.review_wait_seconds`: how long a one-shot run waits for a running review before
    /// it exits.
    pub wait: Duration,
    /// `display.learning_notices`: announce the review's writes.
    pub notices: bool,
    /// `auxiliary.background_review.{provider,model}` when it names another model than the
    /// session's (`auto` or unset: the session's own model, replaying the conversation).
    pub routed: Option<(String, String)>,
}

impl Default for ReviewSettings {
    fn default() -> Self {
        ReviewSettings {
            memory_interval: 10,
            skill_interval: 10,
            wait: Duration::from_secs(30),
            notices: true,
            routed: None,
        }
    }
}

impl ReviewSettings {
    pub fn from_config(config: &Config) -> ReviewSettings {
        let raw = &config.raw;
        let defaults = ReviewSettings::default();
        let text = |pointer: &str| {
            raw.pointer(pointer)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let routed = match (
            text("/auxiliary/background_review/provider"),
            text("/auxiliary/background_review/model"),
        ) {
            (Some(provider), Some(model)) if provider != "auto" => Some((provider, model)),
            _ => None,
        };
        ReviewSettings {
            memory_interval: number(raw.pointer("/memory/nudge_interval"))
                .unwrap_or(defaults.memory_interval),
            skill_interval: number(raw.pointer("/skills/creation_nudge_interval"))
                .unwrap_or(defaults.skill_interval),
            wait: number(raw.pointer("/memory/review_wait_seconds"))
                .map(|s| Duration::from_secs(u64::from(s)))
                .unwrap_or(defaults.wait),
            notices: flag(raw.pointer("/display/learning_notices")).unwrap_or(defaults.notices),
            routed,
        }
    }
}

/// A count written as a number or a quoted number (config.yaml is edited by hand).
fn number(value: Option<&Value>) -> Option<u32> {
    match value? {
        Value::Number(n) => n.as_u64().map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn flag(value: Option<&Value>) -> Option<bool> {
    match value? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" => Some(true),
            "false" | "no" | "off" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(yaml: serde_json::Value) -> ReviewSettings {
        let config = Config {
            raw: yaml,
            ..Config::default()
        };
        ReviewSettings::from_config(&config)
    }

    #[test]
    fn defaults_and_keys() {
        assert_eq!(settings(serde_json::json!({})), ReviewSettings::default());
        let s = settings(serde_json::json!({
            "memory": {"nudge_interval": 0, "review_wait_seconds": "5"},
            "skills": {"creation_nudge_interval": 3},
            "display": {"learning_notices": false},
            "auxiliary": {"background_review": {"provider": "openrouter", "model": "small"}},
        }));
        assert_eq!(s.memory_interval, 0);
        assert_eq!(s.skill_interval, 3);
        assert_eq!(s.wait, Duration::from_secs(5));
        assert!(!s.notices);
        assert_eq!(s.routed, Some(("openrouter".into(), "small".into())));
        let auto = settings(serde_json::json!({
            "auxiliary": {"background_review": {"provider": "auto", "model": "small"}},
        }));
        assert_eq!(auto.routed, None);
    }
}
