//! Discord dispatch events into [`InboundEvent`]s: `MESSAGE_CREATE` (DMs, guild channels,
//! threads known from `GUILD_CREATE`/`THREAD_CREATE` or looked up once with
//! `GET /channels/{id}`), mentions and replies to the bot, attachments, the group rules and
//! auto-threads (a mention in a channel opens a thread the answer goes to, as in the Python
//! Hermes); `INTERACTION_CREATE` button presses, acknowledged with a deferred update.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::rest::{Body, Rest};
use super::settings::{DiscordSettings, PLATFORM};
use crate::platform::deliver;
use crate::platform::gate::{self, GateInput, RecentSet};
use crate::platform::status::StatusCell;
use crate::platform::types::{
    Attachment, AttachmentKind, ChatRef, ChatType, FileSource, InboundEvent, InboundMessage,
};

/// Channel types that are threads.
const THREAD_TYPES: [u64; 3] = [10, 11, 12];
/// Message flag of a voice message.
const IS_VOICE_MESSAGE: u64 = 1 << 13;
/// Channels remembered at most.
const MAX_CHANNELS: usize = 4096;

#[derive(Debug, Clone)]
pub(crate) struct ChannelInfo {
    pub kind: u64,
    pub parent: Option<String>,
    pub name: Option<String>,
}

/// What the adapter remembers across events and sends.
#[derive(Debug)]
pub(crate) struct Memory {
    pub channels: Mutex<HashMap<String, ChannelInfo>>,
    /// Threads the bot opened or answered in (messages there need no mention).
    pub bot_threads: Mutex<RecentSet>,
    pub bot_id: Mutex<Option<String>>,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            channels: Mutex::new(HashMap::new()),
            bot_threads: Mutex::new(RecentSet::new(2048)),
            bot_id: Mutex::new(None),
        }
    }
}

impl Memory {
    pub fn remember_channel(&self, c: &Value) {
        let Some(id) = c["id"].as_str() else { return };
        let info = ChannelInfo {
            kind: c["type"].as_u64().unwrap_or(0),
            parent: c["parent_id"].as_str().map(str::to_string),
            name: c["name"].as_str().map(str::to_string),
        };
        let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
        if channels.len() >= MAX_CHANNELS && !channels.contains_key(id) {
            channels.clear();
        }
        channels.insert(id.to_string(), info);
    }

    pub fn mark_bot_thread(&self, id: &str) {
        self.bot_threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id);
    }

    fn is_bot_thread(&self, id: &str) -> bool {
        self.bot_threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(id)
    }

    fn bot_id(&self) -> Option<String> {
        self.bot_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Turns dispatches into events for the core (one per adapter run, across reconnects).
pub(crate) struct Processor {
    pub rest: Arc<Rest>,
    pub settings: DiscordSettings,
    pub status: Arc<StatusCell>,
    pub memory: Arc<Memory>,
    pub inbound: mpsc::Sender<InboundEvent>,
    pub shutdown: CancellationToken,
    /// Message and interaction ids already handled (replays after RESUME, starter messages
    /// of auto-threads).
    pub seen: RecentSet,
}

/// `<@id>` and `<@!id>` of the bot removed.
fn strip_mention(text: &str, bot_id: &str) -> String {
    text.replace(&format!("<@{bot_id}>"), "")
        .replace(&format!("<@!{bot_id}>"), "")
        .trim()
        .to_string()
}

/// A thread name from the message: its first line, at most 100 characters (Discord's limit).
fn thread_name(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let name: String = line.chars().take(90).collect();
    if name.is_empty() {
        "Hermes".to_string()
    } else {
        name
    }
}

fn attachments(d: &Value) -> Vec<Attachment> {
    let voice = d["flags"]
        .as_u64()
        .is_some_and(|f| f & IS_VOICE_MESSAGE != 0);
    d["attachments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| {
            let url = a["url"].as_str()?;
            let mime = a["content_type"].as_str().map(str::to_string);
            let mut kind = AttachmentKind::from_mime(mime.as_deref());
            if voice && kind == AttachmentKind::Audio {
                kind = AttachmentKind::Voice;
            }
            Some(Attachment {
                kind,
                file_name: a["filename"].as_str().map(str::to_string),
                mime,
                size: a["size"].as_u64(),
                source: FileSource::Url(url.to_string()),
            })
        })
        .collect()
}

impl Processor {
    pub async fn handle(&mut self, t: &str, d: Value) -> bool {
        match t {
            "READY" => {
                if let Some(id) = d["user"]["id"].as_str() {
                    *self
                        .memory
                        .bot_id
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(id.to_string());
                }
                true
            }
            "GUILD_CREATE" => {
                for key in ["channels", "threads"] {
                    for c in d[key].as_array().into_iter().flatten() {
                        self.memory.remember_channel(c);
                    }
                }
                true
            }
            "CHANNEL_CREATE" | "CHANNEL_UPDATE" | "THREAD_CREATE" | "THREAD_UPDATE" => {
                self.memory.remember_channel(&d);
                true
            }
            "THREAD_LIST_SYNC" => {
                for c in d["threads"].as_array().into_iter().flatten() {
                    self.memory.remember_channel(c);
                }
                true
            }
            "MESSAGE_CREATE" => self.message(d).await,
            "INTERACTION_CREATE" => self.interaction(d).await,
            _ => true,
        }
    }

    async fn push(&self, event: InboundEvent) -> bool {
        let delivered = deliver(&self.inbound, event, &self.shutdown).await;
        if delivered {
            self.status.add_received();
        }
        delivered
    }

    /// The channel's type and parent, from memory or asked once.
    async fn channel(&self, id: &str) -> Option<ChannelInfo> {
        if let Some(c) = self
            .memory
            .channels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
        {
            return Some(c);
        }
        match self
            .rest
            .request(reqwest::Method::GET, &format!("/channels/{id}"), Body::None)
            .await
        {
            Ok(Some(c)) => {
                self.memory.remember_channel(&c);
                self.memory
                    .channels
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(id)
                    .cloned()
            }
            Ok(None) => None,
            Err(e) => {
                self.status.error(format!("channel {id}: {e}"));
                // A channel the bot cannot read is remembered as a plain channel, so each
                // message does not ask again.
                if matches!(
                    e,
                    crate::platform::PlatformError::Api {
                        status: 403 | 404,
                        ..
                    }
                ) {
                    self.memory.remember_channel(&json!({"id": id, "type": 0}));
                }
                None
            }
        }
    }

    async fn message(&mut self, d: Value) -> bool {
        let Some(bot_id) = self.memory.bot_id() else {
            return true;
        };
        let (Some(id), Some(channel_id)) = (d["id"].as_str(), d["channel_id"].as_str()) else {
            return true;
        };
        let author_id = d["author"]["id"].as_str().unwrap_or_default();
        // Default messages and replies only (no joins, pins, thread notices...).
        let kind = d["type"].as_u64().unwrap_or(0);
        if author_id == bot_id || !matches!(kind, 0 | 19) || !self.seen.insert(id) {
            return true;
        }
        let content = d["content"].as_str().unwrap_or_default();
        let files = attachments(&d);
        if content.trim().is_empty() && files.is_empty() {
            return true;
        }
        let from_bot = d["author"]["bot"] == json!(true) || d["webhook_id"].is_string();
        let direct = d["guild_id"].is_null();
        let mentioned = d["mentions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m["id"].as_str() == Some(bot_id.as_str()))
            || content.contains(&format!("<@{bot_id}>"))
            || content.contains(&format!("<@!{bot_id}>"))
            || gate::matches_patterns(&self.settings.mentions, content);
        let replies_to_bot =
            d["referenced_message"]["author"]["id"].as_str() == Some(bot_id.as_str());
        if from_bot && !gate::admits_bot(self.settings.allow_bots, mentioned) {
            return true;
        }

        let info = if direct {
            None
        } else {
            self.channel(channel_id).await
        };
        let is_thread = info
            .as_ref()
            .is_some_and(|c| THREAD_TYPES.contains(&c.kind));
        let parent = if is_thread {
            info.as_ref().and_then(|c| c.parent.clone())
        } else {
            None
        };
        let mut chat_ids = vec![channel_id];
        if let Some(p) = parent.as_deref() {
            chat_ids.push(p);
        }
        let in_bot_thread = is_thread && self.memory.is_bot_thread(channel_id);
        let admitted = gate::admits(
            &self.settings.mentions,
            &GateInput {
                chat_ids: chat_ids.clone(),
                direct,
                mentioned,
                replied_to_bot: replies_to_bot,
                in_bot_thread,
            },
        );
        if !admitted {
            return true;
        }
        let text = strip_mention(content, &bot_id);

        let chat = if direct {
            ChatRef::new(PLATFORM, ChatType::Direct, channel_id)
        } else if is_thread {
            ChatRef::new(
                PLATFORM,
                ChatType::Group,
                parent.clone().unwrap_or_else(|| channel_id.to_string()),
            )
            .with_thread(Some(channel_id.to_string()))
        } else {
            let free = self.settings.mentions.free_response_channels.contains("*")
                || self
                    .settings
                    .mentions
                    .free_response_channels
                    .contains(channel_id);
            let no_thread = self.settings.no_thread_channels.contains("*")
                || self.settings.no_thread_channels.contains(channel_id);
            let wants_thread = self.settings.auto_thread
                && !free
                && !no_thread
                && kind != 19
                && (mentioned || !self.settings.mentions.require_mention);
            if wants_thread {
                let body = json!({"name": thread_name(&text), "auto_archive_duration": 1440});
                let created = self
                    .rest
                    .request(
                        reqwest::Method::POST,
                        &format!("/channels/{channel_id}/messages/{id}/threads"),
                        Body::Json(body),
                    )
                    .await;
                match created {
                    Ok(Some(thread)) if thread["id"].is_string() => {
                        self.memory.remember_channel(&thread);
                        let tid = thread["id"].as_str().unwrap_or_default().to_string();
                        self.memory.mark_bot_thread(&tid);
                        // Discord may announce the thread's starter message as a new one.
                        self.seen.insert(&tid);
                        ChatRef::new(PLATFORM, ChatType::Group, channel_id).with_thread(Some(tid))
                    }
                    other => {
                        let why = match other {
                            Err(e) => e.to_string(),
                            _ => "no thread in the answer".to_string(),
                        };
                        self.status.error(format!("could not open a thread: {why}"));
                        // Answering in the channel instead would break thread-first setups:
                        // say so, as the Python Hermes does.
                        let notice = json!({"content": "⚠️ Hermes could not create a Discord thread for this message, so the request was not processed. Please retry."});
                        let _ = self
                            .rest
                            .request(
                                reqwest::Method::POST,
                                &format!("/channels/{channel_id}/messages"),
                                Body::Json(notice),
                            )
                            .await;
                        return true;
                    }
                }
            } else {
                ChatRef::new(PLATFORM, ChatType::Group, channel_id)
            }
        };
        let chat_name = info.and_then(|c| c.name);
        let user_name = d["author"]["global_name"]
            .as_str()
            .or(d["author"]["username"].as_str())
            .map(str::to_string);
        let event = InboundEvent::Message(InboundMessage {
            chat,
            chat_name,
            message_id: id.to_string(),
            user_id: author_id.to_string(),
            user_name,
            text,
            attachments: files,
            reply_to: d["message_reference"]["message_id"]
                .as_str()
                .map(str::to_string),
            mentions_bot: mentioned,
            replies_to_bot,
            from_bot,
            deliver_to: None,
            skills: Vec::new(),
            received_at: SystemTime::now(),
        });
        self.push(event).await
    }

    async fn interaction(&mut self, d: Value) -> bool {
        // Only message components (buttons): we register no commands.
        if d["type"] != json!(3) {
            return true;
        }
        let (Some(id), Some(token)) = (d["id"].as_str(), d["token"].as_str()) else {
            return true;
        };
        if !self.seen.insert(id) {
            return true;
        }
        // Acknowledge within Discord's 3 s: a deferred update leaves the message as it is.
        let ack = self
            .rest
            .request(
                reqwest::Method::POST,
                &format!("/interactions/{id}/{token}/callback"),
                Body::Json(json!({"type": 6})),
            )
            .await;
        if let Err(e) = ack {
            self.status
                .error(format!("interaction acknowledgement: {e}"));
        }
        let Some(channel_id) = d["channel_id"].as_str().or(d["channel"]["id"].as_str()) else {
            return true;
        };
        if d["channel"].is_object() {
            self.memory.remember_channel(&d["channel"]);
        }
        let user = if d["member"]["user"].is_object() {
            &d["member"]["user"]
        } else {
            &d["user"]
        };
        let Some(user_id) = user["id"].as_str() else {
            return true;
        };
        let chat = if d["guild_id"].is_null() {
            ChatRef::new(PLATFORM, ChatType::Direct, channel_id)
        } else {
            match self.channel(channel_id).await {
                Some(c) if THREAD_TYPES.contains(&c.kind) => ChatRef::new(
                    PLATFORM,
                    ChatType::Group,
                    c.parent.unwrap_or_else(|| channel_id.to_string()),
                )
                .with_thread(Some(channel_id.to_string())),
                _ => ChatRef::new(PLATFORM, ChatType::Group, channel_id),
            }
        };
        let event = InboundEvent::Button {
            chat,
            user_id: user_id.to_string(),
            user_name: user["global_name"]
                .as_str()
                .or(user["username"].as_str())
                .map(str::to_string),
            message_id: d["message"]["id"].as_str().unwrap_or_default().to_string(),
            data: d["data"]["custom_id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        };
        self.push(event).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_and_thread_names() {
        assert_eq!(strip_mention("<@42> hi <@!42>", "42"), "hi");
        assert_eq!(thread_name("\n  fix the build\nplease"), "fix the build");
        assert_eq!(thread_name(""), "Hermes");
        assert_eq!(thread_name(&"x".repeat(500)).chars().count(), 90);
    }

    #[test]
    fn voice_messages_are_voice() {
        let d = json!({"flags": 8192, "attachments": [{"url": "u", "content_type": "audio/ogg", "filename": "voice-message.ogg", "size": 3}]});
        assert_eq!(attachments(&d)[0].kind, AttachmentKind::Voice);
    }
}
