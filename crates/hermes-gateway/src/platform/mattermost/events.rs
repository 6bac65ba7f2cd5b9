//! WebSocket `posted` events into [`InboundEvent`]s, the Python Hermes's way: the post is a
//! JSON string inside the event; the bot's own posts and system posts (`type` set) are
//! skipped, each post id is delivered once, DMs (`channel_type` `D`) always reach the core,
//! other channels pass the mention gate (`@botname`, wake words, a thread the bot is in),
//! and the mention is removed from the text. A reply's thread is its `root_id`; with
//! `reply_mode: thread` a top-level channel post starts a thread under itself. Files come
//! from `metadata.files` (name, type, size) and are downloaded from the server later.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::settings::{MattermostSettings, PLATFORM};
use crate::platform::gate::{self, GateInput, RecentSet};
use crate::platform::types::{
    Attachment, AttachmentKind, ChatRef, ChatType, FileSource, InboundEvent, InboundMessage,
};

/// Who the bot is, and what it remembers across connections.
#[derive(Debug)]
pub(crate) struct Memory {
    pub me: Mutex<Option<Identity>>,
    /// Thread roots the bot posted in or was called into.
    bot_threads: Mutex<RecentSet>,
    /// Post ids already delivered (a reconnect may replay).
    seen: Mutex<RecentSet>,
    /// The WebSocket's `connection_id` and the last `seq` received: a reconnect asks the
    /// server to replay what was missed since.
    pub resume: Mutex<Option<(String, u64)>>,
}

#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub user_id: String,
    pub username: String,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            me: Mutex::new(None),
            bot_threads: Mutex::new(RecentSet::new(4096)),
            seen: Mutex::new(RecentSet::new(4096)),
            resume: Mutex::new(None),
        }
    }
}

impl Memory {
    pub fn identity(&self) -> Option<Identity> {
        self.me
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn mark_bot_thread(&self, root: &str) {
        self.bot_threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(root);
    }

    fn is_bot_thread(&self, root: &str) -> bool {
        self.bot_threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(root)
    }

    /// Notes the seq of an event (and the connection id of a `hello`).
    pub fn heard(&self, event: &Value) {
        let Some(seq) = event["seq"].as_u64() else {
            return;
        };
        let mut resume = self.resume.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(id) = event["data"]["connection_id"]
            .as_str()
            .filter(|_| event["event"] == "hello")
        {
            *resume = Some((id.to_string(), seq));
        } else if let Some((_, last)) = resume.as_mut() {
            *last = (*last).max(seq);
        }
    }

    /// The query that resumes the last connection, if there was one.
    pub fn resume_query(&self) -> Option<String> {
        self.resume
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|(id, seq)| format!("connection_id={id}&sequence_number={}", seq + 1))
    }

    fn first_time(&self, post_id: &str) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(post_id)
    }
}

/// Mattermost's channel types: `D` direct, `G` group message, `P` private, `O` open.
fn chat_type(channel_type: &str) -> ChatType {
    if channel_type == "D" {
        ChatType::Direct
    } else {
        ChatType::Group
    }
}

fn files(url: &str, post: &Value) -> Vec<Attachment> {
    let described = post["metadata"]["files"].as_array();
    let ids = post["file_ids"].as_array();
    let mut out = Vec::new();
    for id in ids.into_iter().flatten().filter_map(Value::as_str) {
        let info = described
            .into_iter()
            .flatten()
            .find(|f| f["id"].as_str() == Some(id));
        let mime = info
            .and_then(|f| f["mime_type"].as_str())
            .map(str::to_string);
        out.push(Attachment {
            kind: AttachmentKind::from_mime(mime.as_deref()),
            file_name: info.and_then(|f| f["name"].as_str()).map(str::to_string),
            mime,
            size: info.and_then(|f| f["size"].as_u64()),
            source: FileSource::Url(format!("{url}/api/v4/files/{id}")),
        });
    }
    out
}

/// Removes `@name` (any case) where it stands as a word.
fn strip_mention(text: &str, name: &str) -> String {
    let handle = format!("@{}", name.to_ascii_lowercase());
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(found) = lower[i..].find(&handle) {
        let start = i + found;
        let end = start + handle.len();
        let word_ends = lower[end..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-')));
        out.push_str(&text[i..start]);
        if !word_ends {
            out.push_str(&text[start..end]);
        }
        i = end;
    }
    out.push_str(&text[i..]);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) struct Converter<'a> {
    pub settings: &'a MattermostSettings,
    pub memory: &'a Memory,
}

impl Converter<'_> {
    /// One WebSocket event; `None` when nothing goes to the core.
    pub fn convert(&self, event: &Value) -> Option<InboundEvent> {
        if event["event"].as_str() != Some("posted") {
            return None;
        }
        let me = self.memory.identity()?;
        let data = &event["data"];
        let post: Value = serde_json::from_str(data["post"].as_str()?).ok()?;
        let post_id = post["id"].as_str()?;
        let channel = post["channel_id"].as_str()?;
        let user = post["user_id"].as_str().unwrap_or_default();
        if user.is_empty() || user == me.user_id {
            return None;
        }
        // System posts (joins, header changes, ...) carry a type.
        if post["type"].as_str().is_some_and(|t| !t.is_empty()) {
            return None;
        }
        if !self.memory.first_time(post_id) {
            return None;
        }
        let text = post["message"].as_str().unwrap_or_default();
        let attachments = files(&self.settings.url, &post);
        if text.trim().is_empty() && attachments.is_empty() {
            return None;
        }
        let channel_type = data["channel_type"].as_str().unwrap_or("O");
        let chat_type = chat_type(channel_type);
        let from_bot = post["props"]["from_bot"].as_str() == Some("true")
            || post["props"]["from_bot"].as_bool() == Some(true);
        let mentioned = text
            .to_ascii_lowercase()
            .contains(&format!("@{}", me.username.to_ascii_lowercase()))
            || gate::matches_patterns(&self.settings.mentions, text);
        if from_bot && !gate::admits_bot(self.settings.allow_bots, mentioned) {
            return None;
        }
        let root = post["root_id"].as_str().filter(|r| !r.is_empty());
        let in_bot_thread = root.is_some_and(|r| self.memory.is_bot_thread(r));
        let admitted = gate::admits(
            &self.settings.mentions,
            &GateInput {
                chat_ids: vec![channel],
                direct: chat_type == ChatType::Direct,
                mentioned,
                replied_to_bot: in_bot_thread,
                in_bot_thread,
            },
        );
        if !admitted {
            return None;
        }
        let thread = match root {
            Some(r) => Some(r.to_string()),
            None if chat_type != ChatType::Direct && self.settings.reply_in_thread => {
                Some(post_id.to_string())
            }
            None => None,
        };
        if mentioned
            && !self.settings.mentions.thread_require_mention
            && let Some(t) = &thread
        {
            // Later messages of a thread the bot was called into need no mention.
            self.memory.mark_bot_thread(t);
        }
        let sender = data["sender_name"]
            .as_str()
            .map(|n| n.trim_start_matches('@').to_string())
            .filter(|n| !n.is_empty());
        let received_at = post["create_at"]
            .as_u64()
            .map_or_else(SystemTime::now, |ms| UNIX_EPOCH + Duration::from_millis(ms));
        let chat_name = data["channel_display_name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        Some(InboundEvent::Message(InboundMessage {
            chat: ChatRef::new(PLATFORM, chat_type, channel).with_thread(thread),
            chat_name,
            message_id: post_id.to_string(),
            user_id: user.to_string(),
            user_name: sender,
            text: strip_mention(text, &me.username),
            attachments,
            reply_to: root.map(str::to_string),
            mentions_bot: mentioned,
            replies_to_bot: in_bot_thread,
            from_bot,
            deliver_to: None,
            skills: Vec::new(),
            received_at,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mentions_are_removed_as_words_only() {
        assert_eq!(
            strip_mention("@hermes what time is it", "hermes"),
            "what time is it"
        );
        assert_eq!(strip_mention("hi @Hermes, there", "hermes"), "hi , there");
        assert_eq!(
            strip_mention("mail @hermes.bot", "hermes"),
            "mail @hermes.bot"
        );
    }

    #[test]
    fn files_come_with_their_metadata_and_a_server_url() {
        let post = json!({
            "file_ids": ["f1"],
            "metadata": {"files": [{"id": "f1", "name": "a.png", "mime_type": "image/png", "size": 12}]}
        });
        let got = files("https://mm.example.com", &post);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].kind, AttachmentKind::Image);
        assert_eq!(got[0].file_name.as_deref(), Some("a.png"));
        assert_eq!(got[0].size, Some(12));
        assert_eq!(
            got[0].source,
            FileSource::Url("https://mm.example.com/api/v4/files/f1".into())
        );
    }
}
