//! The chat gateway's own settings, with the Python Hermes's keys and defaults: how chats map to
//! sessions (`group_sessions_per_user`, `thread_sessions_per_user`, `session_reset`), how long a
//! dangerous command waits for an answer in the chat (`approvals.timeout`, 60 s), whether tool
//! progress is shown (`display.tool_progress`, per platform under `display.platforms.<name>`),
//! how many conversations stay loaded (128, unloaded after an hour idle), and the size cap on
//! attachments.

use std::time::Duration;

use serde_json::Value;

use super::routes::{KeyRules, ResetPolicy};

/// Conversations kept loaded at once (Python's agent cache).
pub const MAX_LIVE_CHATS: usize = 128;
/// A loaded conversation idle this long is unloaded (it reloads from the store).
pub const CHAT_IDLE: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone)]
pub struct ChatSettings {
    pub keys: KeyRules,
    pub reset: ResetPolicy,
    /// How long an approval prompt waits before it counts as denied.
    pub approval_timeout: Duration,
    pub max_live_chats: usize,
    pub chat_idle: Duration,
    /// The largest attachment downloaded (bytes).
    pub max_attachment_bytes: u64,
    raw_display: Value,
}

impl ChatSettings {
    pub fn from_config(raw: &Value) -> ChatSettings {
        let approval_timeout = raw
            .pointer("/approvals/timeout")
            .and_then(Value::as_u64)
            .unwrap_or(60)
            .clamp(1, 86_400);
        let max_mb = raw
            .pointer("/gateway/max_attachment_mb")
            .and_then(Value::as_u64)
            .unwrap_or(20)
            .clamp(1, 2048);
        ChatSettings {
            keys: KeyRules::from_config(raw),
            reset: ResetPolicy::from_config(raw),
            approval_timeout: Duration::from_secs(approval_timeout),
            max_live_chats: MAX_LIVE_CHATS,
            chat_idle: CHAT_IDLE,
            max_attachment_bytes: max_mb * 1024 * 1024,
            raw_display: raw.get("display").cloned().unwrap_or(Value::Null),
        }
    }

    /// Whether tool calls show as progress lines on `platform`: `display.platforms.<p>.
    /// tool_progress`, else `display.tool_progress`, else on (`all`, Python's default).
    pub fn tool_progress(&self, platform: &str) -> bool {
        let value = self
            .raw_display
            .pointer(&format!("/platforms/{platform}/tool_progress"))
            .or_else(|| {
                self.raw_display
                    .pointer(&format!("/tool_progress_overrides/{platform}"))
            })
            .or_else(|| self.raw_display.get("tool_progress"));
        match value {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => !matches!(s.trim(), "off" | "false" | "none" | "no"),
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let s = ChatSettings::from_config(&Value::Null);
        assert_eq!(s.approval_timeout, Duration::from_secs(60));
        assert!(s.tool_progress("telegram"));
        let raw: Value = serde_json::from_str(
            r#"{"approvals": {"timeout": 5}, "display": {"tool_progress": "all", "platforms": {"slack": {"tool_progress": "off"}}}}"#,
        )
        .unwrap();
        let s = ChatSettings::from_config(&raw);
        assert_eq!(s.approval_timeout, Duration::from_secs(5));
        assert!(s.tool_progress("telegram"));
        assert!(!s.tool_progress("slack"));
    }
}
