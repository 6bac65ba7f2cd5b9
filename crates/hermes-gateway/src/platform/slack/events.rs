//! Socket Mode envelopes into [`InboundEvent`]s, the Python Hermes's way: `message` and
//! `app_mention` events (DMs, channels, threads: a top-level channel message becomes the root
//! of the thread the answer goes to, unless `reply_in_thread: false`; each top-level DM is its
//! own thread unless `dm_top_level_threads_as_sessions: false`), mentions of the bot,
//! replies in the bot's threads, files, user names from `users.info`; `block_actions`
//! button clicks. Redelivered events (same `event_id`, or the same message seen as both
//! `message` and `app_mention`) are delivered once.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::settings::{PLATFORM, SlackSettings};
use super::web::{Token, WebApi};
use crate::platform::gate::{self, GateInput, RecentSet};
use crate::platform::types::{
    Attachment, AttachmentKind, ChatRef, ChatType, FileSource, InboundEvent, InboundMessage,
};

/// User names remembered at most.
const MAX_NAMES: usize = 2048;

/// What the adapter remembers across connections and sends.
#[derive(Debug)]
pub(crate) struct Memory {
    pub bot_user_id: Mutex<Option<String>>,
    pub bot_id: Mutex<Option<String>>,
    /// Thread roots the bot posted in or was mentioned in.
    pub bot_threads: Mutex<RecentSet>,
    /// Event ids and message keys already delivered.
    pub seen: Mutex<RecentSet>,
    names: Mutex<HashMap<String, Option<String>>>,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            bot_user_id: Mutex::new(None),
            bot_id: Mutex::new(None),
            bot_threads: Mutex::new(RecentSet::new(4096)),
            seen: Mutex::new(RecentSet::new(4096)),
            names: Mutex::new(HashMap::new()),
        }
    }
}

impl Memory {
    pub fn mark_bot_thread(&self, ts: &str) {
        self.bot_threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(ts);
    }

    fn is_bot_thread(&self, ts: &str) -> bool {
        self.bot_threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(ts)
    }

    /// Records `key`; false when it was seen before.
    fn first_time(&self, key: &str) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key)
    }

    fn bot_user_id(&self) -> Option<String> {
        self.bot_user_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn timestamp(ts: &str) -> SystemTime {
    ts.split('.')
        .next()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or_else(SystemTime::now, |secs| {
            UNIX_EPOCH + Duration::from_secs(secs)
        })
}

fn files(event: &Value) -> Vec<Attachment> {
    event["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let url = f["url_private_download"]
                .as_str()
                .or(f["url_private"].as_str())?;
            let mime = f["mimetype"].as_str().map(str::to_string);
            let mut kind = AttachmentKind::from_mime(mime.as_deref());
            if f["subtype"] == json!("slack_audio") {
                kind = AttachmentKind::Voice;
            }
            Some(Attachment {
                kind,
                file_name: f["name"].as_str().map(str::to_string),
                mime,
                size: f["size"].as_u64(),
                source: FileSource::Url(url.to_string()),
            })
        })
        .collect()
}

/// The chat of a channel id when the event does not say its type: `D…` is a DM.
fn chat_type_of(channel: &str, channel_type: Option<&str>) -> ChatType {
    match channel_type {
        Some("im") => ChatType::Direct,
        Some(_) => ChatType::Group,
        None if channel.starts_with('D') => ChatType::Direct,
        None => ChatType::Group,
    }
}

pub(crate) struct Converter<'a> {
    pub web: &'a WebApi,
    pub settings: &'a SlackSettings,
    pub memory: &'a Memory,
}

impl Converter<'_> {
    async fn user_name(&self, user: &str) -> Option<String> {
        if let Some(known) = self
            .memory
            .names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(user)
        {
            return known.clone();
        }
        let name = match self
            .web
            .call_form("users.info", &[("user", user.to_string())], Token::Bot)
            .await
        {
            Ok(v) => {
                let u = &v["user"];
                [&u["profile"]["display_name"], &u["real_name"], &u["name"]]
                    .into_iter()
                    .filter_map(Value::as_str)
                    .find(|s| !s.is_empty())
                    .map(str::to_string)
            }
            // A missing `users:read` scope only costs the name.
            Err(_) => None,
        };
        let mut names = self
            .memory
            .names
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if names.len() >= MAX_NAMES {
            names.clear();
        }
        names.insert(user.to_string(), name.clone());
        name
    }

    /// Converts one envelope's payload; `None` when nothing goes to the core.
    pub async fn convert(&self, kind: &str, payload: &Value) -> Option<InboundEvent> {
        match kind {
            "events_api" => {
                let event_id = payload["event_id"].as_str().unwrap_or_default();
                if !event_id.is_empty() && !self.memory.first_time(&format!("ev:{event_id}")) {
                    return None;
                }
                let event = &payload["event"];
                match event["type"].as_str() {
                    Some("message") | Some("app_mention") => self.message(event).await,
                    _ => None,
                }
            }
            "interactive" if payload["type"] == json!("block_actions") => {
                self.button(payload).await
            }
            _ => None,
        }
    }

    async fn message(&self, event: &Value) -> Option<InboundEvent> {
        let bot_user = self.memory.bot_user_id()?;
        let subtype = event["subtype"].as_str();
        if !matches!(
            subtype,
            None | Some("bot_message") | Some("file_share") | Some("thread_broadcast")
        ) {
            return None;
        }
        let channel = event["channel"].as_str()?;
        let ts = event["ts"].as_str()?;
        let user = event["user"].as_str().unwrap_or_default();
        let our_bot = self
            .memory
            .bot_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if user == bot_user || (our_bot.is_some() && event["bot_id"].as_str() == our_bot.as_deref())
        {
            return None;
        }
        // The same message may come as `message` and as `app_mention`.
        if !self.memory.first_time(&format!("msg:{channel}:{ts}")) {
            return None;
        }
        let text = event["text"].as_str().unwrap_or_default();
        let attachments = files(event);
        if text.trim().is_empty() && attachments.is_empty() {
            return None;
        }
        let from_bot = event["bot_id"].is_string() || subtype == Some("bot_message");
        let handle = format!("<@{bot_user}>");
        let mentioned = text.contains(&handle)
            || event["type"] == json!("app_mention")
            || gate::matches_patterns(&self.settings.mentions, text);
        if from_bot && !gate::admits_bot(self.settings.allow_bots, mentioned) {
            return None;
        }
        if user.is_empty() && !from_bot {
            return None;
        }
        let channel_type = event["channel_type"].as_str();
        let chat_type = chat_type_of(channel, channel_type);
        let event_thread = event["thread_ts"].as_str().filter(|t| *t != ts);
        let is_dm = matches!(channel_type, Some("im") | Some("mpim")) || channel.starts_with('D');
        let thread = match event_thread {
            Some(t) => Some(t.to_string()),
            None if is_dm => self.settings.dm_threads.then(|| ts.to_string()),
            None => self.settings.reply_in_thread.then(|| ts.to_string()),
        };
        let replies_to_bot = event_thread.is_some_and(|t| self.memory.is_bot_thread(t));
        let admitted = gate::admits(
            &self.settings.mentions,
            &GateInput {
                chat_ids: vec![channel],
                direct: chat_type == ChatType::Direct,
                mentioned,
                replied_to_bot: replies_to_bot,
                in_bot_thread: replies_to_bot,
            },
        );
        if !admitted {
            return None;
        }
        if mentioned
            && !self.settings.mentions.thread_require_mention
            && let Some(t) = &thread
        {
            // Later messages of a thread the bot was called into need no mention.
            self.memory.mark_bot_thread(t);
        }
        let user_name = if user.is_empty() {
            event["username"].as_str().map(str::to_string)
        } else {
            self.user_name(user).await
        };
        Some(InboundEvent::Message(InboundMessage {
            chat: ChatRef::new(PLATFORM, chat_type, channel).with_thread(thread),
            chat_name: None,
            message_id: ts.to_string(),
            user_id: if user.is_empty() {
                event["bot_id"].as_str().unwrap_or_default().to_string()
            } else {
                user.to_string()
            },
            user_name,
            text: text.replace(&handle, "").trim().to_string(),
            attachments,
            reply_to: event_thread.map(str::to_string),
            mentions_bot: mentioned,
            replies_to_bot,
            from_bot,
            deliver_to: None,
            skills: Vec::new(),
            received_at: timestamp(ts),
        }))
    }

    async fn button(&self, payload: &Value) -> Option<InboundEvent> {
        let action = payload["actions"].as_array()?.first()?;
        let channel = payload["channel"]["id"]
            .as_str()
            .or(payload["container"]["channel_id"].as_str())?;
        let message_ts = payload["container"]["message_ts"]
            .as_str()
            .or(payload["message"]["ts"].as_str())?;
        let key = format!(
            "act:{channel}:{message_ts}:{}",
            action["action_ts"].as_str().unwrap_or_default()
        );
        if !self.memory.first_time(&key) {
            return None;
        }
        let thread = payload["container"]["thread_ts"]
            .as_str()
            .or(payload["message"]["thread_ts"].as_str())
            .map(str::to_string);
        let user = payload["user"]["id"].as_str()?;
        Some(InboundEvent::Button {
            chat: ChatRef::new(PLATFORM, chat_type_of(channel, None), channel).with_thread(thread),
            user_id: user.to_string(),
            user_name: payload["user"]["username"]
                .as_str()
                .or(payload["user"]["name"].as_str())
                .map(str::to_string),
            message_id: message_ts.to_string(),
            data: action["value"].as_str().unwrap_or_default().to_string(),
        })
    }
}
