//! Which stored session each chat is in: session keys in the Python Hermes's shape
//! (`agent:main:{platform}:{chat_type}:{chat_id}[:{thread_id}][:{user_id}]`) mapped to the id of
//! the session the conversation continues, kept in `$HERMES_HOME/sessions/sessions.json` (the
//! file the Python gateway keeps for the same purpose) so a restarted gateway picks every chat
//! up where it was. The reset policy (`session_reset`: none, idle after N minutes, daily at an
//! hour, or both) decides when a chat starts over.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Local, TimeZone, Timelike, Utc};
use serde_json::{Map, Value, json};

use crate::platform::{ChatRef, ChatType, InboundMessage};

/// When a chat's conversation starts over by itself (`session_reset` in config.yaml).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetPolicy {
    /// Never (the Python Hermes's default since July 2026).
    None,
    /// After this many minutes without a message.
    Idle { minutes: u32 },
    /// At this local hour every day.
    Daily { hour: u32 },
    /// Whichever comes first.
    Both { minutes: u32, hour: u32 },
}

impl ResetPolicy {
    /// `session_reset: {mode, idle_minutes, at_hour}` (top level, or under `gateway:`).
    pub fn from_config(raw: &Value) -> ResetPolicy {
        let section = raw
            .get("session_reset")
            .or_else(|| raw.pointer("/gateway/session_reset"));
        let Some(section) = section.filter(|s| s.is_object()) else {
            return ResetPolicy::None;
        };
        let minutes = section
            .get("idle_minutes")
            .and_then(Value::as_u64)
            .map_or(1440, |m| m.clamp(1, u64::from(u32::MAX)) as u32);
        let hour = section
            .get("at_hour")
            .and_then(Value::as_u64)
            .map_or(4, |h| h.min(23) as u32);
        match section
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or("none")
        {
            "idle" => ResetPolicy::Idle { minutes },
            "daily" => ResetPolicy::Daily { hour },
            "both" => ResetPolicy::Both { minutes, hour },
            _ => ResetPolicy::None,
        }
    }

    /// Whether a conversation last active at `last` is over at `now`, and why.
    pub fn expired(&self, last: DateTime<Utc>, now: DateTime<Utc>) -> Option<&'static str> {
        let idle = |minutes: u32| now - last >= chrono::Duration::minutes(i64::from(minutes));
        let daily = |hour: u32| {
            // The last daily boundary at or before now, in local time.
            let local_now = now.with_timezone(&Local);
            let today = local_now
                .with_hour(hour)
                .and_then(|t| t.with_minute(0))
                .and_then(|t| t.with_second(0))
                .and_then(|t| t.with_nanosecond(0));
            let boundary = match today {
                Some(b) if b <= local_now => b,
                Some(b) => b - chrono::Duration::days(1),
                None => return false,
            };
            last.with_timezone(&Local) < boundary
        };
        match *self {
            ResetPolicy::None => None,
            ResetPolicy::Idle { minutes } => idle(minutes).then_some("idle"),
            ResetPolicy::Daily { hour } => daily(hour).then_some("daily"),
            ResetPolicy::Both { minutes, hour } => {
                if idle(minutes) {
                    Some("idle")
                } else if daily(hour) {
                    Some("daily")
                } else {
                    None
                }
            }
        }
    }
}

/// How chats map to session keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRules {
    /// One session per participant in groups and channels (Python's default: on).
    pub group_sessions_per_user: bool,
    /// One session per participant inside threads too (default: off, threads are shared).
    pub thread_sessions_per_user: bool,
}

impl KeyRules {
    pub fn from_config(raw: &Value) -> KeyRules {
        let flag = |key: &str, default: bool| {
            raw.get(key)
                .or_else(|| raw.pointer(&format!("/gateway/{key}")))
                .and_then(Value::as_bool)
                .unwrap_or(default)
        };
        KeyRules {
            group_sessions_per_user: flag("group_sessions_per_user", true),
            thread_sessions_per_user: flag("thread_sessions_per_user", false),
        }
    }

    /// The session key of a message.
    pub fn key(&self, message: &InboundMessage) -> String {
        key_for(&message.chat, Some(&message.user_id), *self)
    }
}

/// `agent:main:{platform}:{chat_type}:{chat_id}[:{thread}][:{user}]`, as the Python gateway
/// builds it (DMs never add the user: the chat is the user).
pub fn key_for(chat: &ChatRef, user_id: Option<&str>, rules: KeyRules) -> String {
    let mut parts = vec![
        "agent".to_string(),
        "main".to_string(),
        chat.platform.clone(),
        chat.chat_type.as_str().to_string(),
        chat.chat_id.clone(),
    ];
    if let Some(thread) = &chat.thread_id {
        parts.push(thread.clone());
    }
    if chat.chat_type != ChatType::Direct {
        let isolate = if chat.thread_id.is_some() {
            rules.thread_sessions_per_user
        } else {
            rules.group_sessions_per_user
        };
        if let Some(user) = user_id.filter(|u| isolate && !u.is_empty()) {
            parts.push(user.to_string());
        }
    }
    parts.join(":")
}

/// One chat's entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub session_key: String,
    pub session_id: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Where answers go back to.
    pub origin: Option<Origin>,
}

/// The chat a session came from (for delivery: cron `origin`, `send_message`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub chat: ChatRef,
    pub chat_name: Option<String>,
    pub user_id: Option<String>,
    pub user_name: Option<String>,
}

impl Origin {
    pub fn to_json(&self) -> Value {
        json!({
            "platform": self.chat.platform,
            "chat_id": self.chat.chat_id,
            "chat_name": self.chat_name,
            "chat_type": self.chat.chat_type.as_str(),
            "user_id": self.user_id,
            "user_name": self.user_name,
            "thread_id": self.chat.thread_id,
        })
    }

    pub fn from_json(v: &Value) -> Option<Origin> {
        let text = |k: &str| {
            v.get(k).and_then(|x| match x {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
        };
        let chat_type = match v.get("chat_type").and_then(Value::as_str).unwrap_or("dm") {
            "group" => ChatType::Group,
            "channel" => ChatType::Channel,
            "webhook" => ChatType::Webhook,
            _ => ChatType::Direct,
        };
        let chat = ChatRef::new(&text("platform")?, chat_type, text("chat_id")?)
            .with_thread(text("thread_id"));
        Some(Origin {
            chat,
            chat_name: text("chat_name"),
            user_id: text("user_id"),
            user_name: text("user_name"),
        })
    }
}

/// The routing table, persisted after every change.
#[derive(Debug)]
pub struct Routes {
    path: PathBuf,
    entries: Mutex<BTreeMap<String, Route>>,
}

impl Routes {
    /// The table of the home at `home_root` (`sessions/sessions.json`); unreadable entries are
    /// skipped.
    pub fn load(home_root: &Path) -> Routes {
        let path = home_root.join("sessions").join("sessions.json");
        let mut entries = BTreeMap::new();
        if let Ok(bytes) = std::fs::read(&path)
            && let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(&bytes)
        {
            for (key, v) in map {
                let time = |k: &str| {
                    v.get(k)
                        .and_then(Value::as_str)
                        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
                        .map(|t| t.with_timezone(&Utc))
                };
                let Some(session_id) = v.get("session_id").and_then(Value::as_str) else {
                    continue;
                };
                let now = Utc::now();
                entries.insert(
                    key.clone(),
                    Route {
                        session_key: key,
                        session_id: session_id.to_string(),
                        created_at: time("created_at").unwrap_or(now),
                        updated_at: time("updated_at").unwrap_or(now),
                        origin: v.get("origin").and_then(Origin::from_json),
                    },
                );
            }
        }
        Routes {
            path,
            entries: Mutex::new(entries),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Route>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn get(&self, key: &str) -> Option<Route> {
        self.lock().get(key).cloned()
    }

    /// Every chat seen, most recently active first.
    pub fn all(&self) -> Vec<Route> {
        let mut all: Vec<Route> = self.lock().values().cloned().collect();
        all.sort_by_key(|r| std::cmp::Reverse(r.updated_at));
        all
    }

    /// Records that `key` talks in `session_id` now.
    pub fn set(&self, key: &str, session_id: &str, origin: Option<Origin>) {
        let now = Utc::now();
        {
            let mut entries = self.lock();
            let entry = entries.entry(key.to_string()).or_insert_with(|| Route {
                session_key: key.to_string(),
                session_id: session_id.to_string(),
                created_at: now,
                updated_at: now,
                origin: None,
            });
            if entry.session_id != session_id {
                entry.session_id = session_id.to_string();
                entry.created_at = now;
            }
            entry.updated_at = now;
            if origin.is_some() {
                entry.origin = origin;
            }
        }
        self.save();
    }

    /// Forgets `key` (its next message starts a new session).
    pub fn remove(&self, key: &str) {
        if self.lock().remove(key).is_some() {
            self.save();
        }
    }

    fn save(&self) {
        let map: Map<String, Value> = self
            .lock()
            .iter()
            .map(|(k, r)| {
                (
                    k.clone(),
                    json!({
                        "session_key": r.session_key,
                        "session_id": r.session_id,
                        "created_at": r.created_at.to_rfc3339(),
                        "updated_at": r.updated_at.to_rfc3339(),
                        "platform": r.origin.as_ref().map(|o| o.chat.platform.clone()),
                        "chat_type": r.origin.as_ref().map(|o| o.chat.chat_type.as_str()),
                        "display_name": r.origin.as_ref().and_then(|o| o.chat_name.clone()),
                        "origin": r.origin.as_ref().map(Origin::to_json),
                    }),
                )
            })
            .collect();
        let text = serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_default();
        if let Err(e) = hermes_config::atomic_write(&self.path, text.as_bytes()) {
            tracing::warn!("cannot save {}: {e}", self.path.display());
        }
    }
}

/// A UTC time from seconds since the epoch (for tests and the store's timestamps).
pub fn utc(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(secs, 0).single().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(kind: ChatType, thread: Option<&str>) -> ChatRef {
        ChatRef::new("telegram", kind, "-100").with_thread(thread.map(str::to_string))
    }

    #[test]
    fn keys_follow_the_python_shape() {
        let rules = KeyRules {
            group_sessions_per_user: true,
            thread_sessions_per_user: false,
        };
        assert_eq!(
            key_for(&chat(ChatType::Direct, None), Some("7"), rules),
            "agent:main:telegram:dm:-100"
        );
        assert_eq!(
            key_for(&chat(ChatType::Group, None), Some("7"), rules),
            "agent:main:telegram:group:-100:7"
        );
        assert_eq!(
            key_for(&chat(ChatType::Group, Some("55")), Some("7"), rules),
            "agent:main:telegram:group:-100:55",
            "threads are shared by default"
        );
        let shared = KeyRules {
            group_sessions_per_user: false,
            ..rules
        };
        assert_eq!(
            key_for(&chat(ChatType::Group, None), Some("7"), shared),
            "agent:main:telegram:group:-100"
        );
    }

    #[test]
    fn reset_policies() {
        let raw: Value =
            serde_json::from_str(r#"{"session_reset": {"mode": "idle", "idle_minutes": 30}}"#)
                .unwrap();
        let p = ResetPolicy::from_config(&raw);
        assert_eq!(p, ResetPolicy::Idle { minutes: 30 });
        let t = utc(1_800_000_000);
        assert_eq!(p.expired(t, t + chrono::Duration::minutes(29)), None);
        assert_eq!(
            p.expired(t, t + chrono::Duration::minutes(30)),
            Some("idle")
        );
        assert_eq!(ResetPolicy::from_config(&Value::Null), ResetPolicy::None);
        let daily = ResetPolicy::Daily { hour: 4 };
        assert_eq!(
            daily.expired(t, t + chrono::Duration::hours(25)),
            Some("daily")
        );
        assert_eq!(daily.expired(t, t + chrono::Duration::seconds(1)), None);
    }

    #[test]
    fn routes_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let routes = Routes::load(dir.path());
        let origin = Origin {
            chat: chat(ChatType::Direct, None),
            chat_name: Some("Ann".into()),
            user_id: Some("7".into()),
            user_name: Some("ann".into()),
        };
        routes.set("agent:main:telegram:dm:-100", "s1", Some(origin.clone()));
        let again = Routes::load(dir.path());
        let route = again.get("agent:main:telegram:dm:-100").unwrap();
        assert_eq!(route.session_id, "s1");
        assert_eq!(route.origin, Some(origin));
        again.remove("agent:main:telegram:dm:-100");
        assert!(
            Routes::load(dir.path())
                .get("agent:main:telegram:dm:-100")
                .is_none()
        );
    }
}
