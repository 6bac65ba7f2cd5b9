//! Telegram updates into [`InboundEvent`]s: chat types, forum topics as threads, mentions
//! (entities are in UTF-16 offsets), replies to the bot, attachments, and the group rules of
//! [`gate`](crate::platform::gate).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::api::{Message, MessageEntity, Update};
use super::settings::{PLATFORM, TelegramSettings};
use crate::platform::gate::{self, GateInput};
use crate::platform::types::{
    Attachment, AttachmentKind, ChatRef, ChatType, FileSource, InboundEvent, InboundMessage,
};

/// Who the bot is (from `getMe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BotIdentity {
    pub id: i64,
    pub username: String,
}

/// The General topic of a forum (addressed without a thread id when sending).
pub(crate) const GENERAL_TOPIC: &str = "1";

/// What an update means for the core.
#[derive(Debug)]
pub(crate) enum Converted {
    Event(InboundEvent),
    /// A button press: answer the callback query (`id`), then deliver the event.
    Button {
        callback_id: String,
        event: Option<InboundEvent>,
    },
    Ignored,
}

fn chat_ref(message: &Message) -> ChatRef {
    let chat_type = match message.chat.kind.as_str() {
        "private" => ChatType::Direct,
        "channel" => ChatType::Channel,
        _ => ChatType::Group,
    };
    ChatRef::new(PLATFORM, chat_type, message.chat.id.to_string()).with_thread(thread_id(message))
}

/// The topic a message belongs to: forum topics and private-chat topics only (a plain reply
/// also carries `message_thread_id`, which is not a topic).
fn thread_id(message: &Message) -> Option<String> {
    let group = matches!(message.chat.kind.as_str(), "group" | "supergroup");
    match message.message_thread_id {
        Some(id)
            if (group && (message.chat.is_forum || message.is_topic_message))
                || (message.chat.kind == "private" && message.is_topic_message) =>
        {
            Some(id.to_string())
        }
        Some(_) => None,
        None if group && message.chat.is_forum => Some(GENERAL_TOPIC.to_string()),
        None => None,
    }
}

/// The slice of `text` an entity covers (offsets in UTF-16 units).
fn entity_text(text: &str, e: &MessageEntity) -> Option<String> {
    let units: Vec<u16> = text.encode_utf16().collect();
    let end = e.offset.checked_add(e.length)?;
    units.get(e.offset..end).map(String::from_utf16_lossy)
}

fn mentions(text: &str, entities: &[MessageEntity], me: &BotIdentity) -> bool {
    let handle = format!("@{}", me.username).to_lowercase();
    entities.iter().any(|e| match e.kind.as_str() {
        "mention" => entity_text(text, e).is_some_and(|t| t.to_lowercase() == handle),
        "text_mention" => e.user.as_ref().is_some_and(|u| u.id == me.id),
        "bot_command" => entity_text(text, e).is_some_and(|t| t.to_lowercase().ends_with(&handle)),
        _ => false,
    })
}

/// Removes the bot's `@username` (also from `/cmd@username`), case-insensitively.
fn strip_mention(text: &str, me: &BotIdentity) -> String {
    let handle = format!("@{}", me.username);
    let lower = text.to_lowercase();
    let needle = handle.to_lowercase();
    if me.username.is_empty() || !lower.contains(&needle) || lower.len() != text.len() {
        return text.trim().to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    while let Some(pos) = lower[rest..].find(&needle) {
        let at = rest + pos;
        let end = at + needle.len();
        // Only whole handles (not @hermes_bot_two).
        let boundary = lower[end..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        out.push_str(&text[rest..at]);
        if !boundary {
            out.push_str(&text[at..end]);
        }
        rest = end;
    }
    out.push_str(&text[rest..]);
    out.trim().to_string()
}

fn attachments(m: &Message) -> Vec<Attachment> {
    let mut out = Vec::new();
    if let Some(largest) = m.photo.iter().max_by_key(|p| {
        (
            p.file_size.unwrap_or(0),
            u64::from(p.width) * u64::from(p.height),
        )
    }) {
        out.push(Attachment {
            kind: AttachmentKind::Image,
            file_name: None,
            mime: Some("image/jpeg".into()),
            size: largest.file_size,
            source: FileSource::TelegramFile {
                file_id: largest.file_id.clone(),
            },
        });
    }
    let metas = [
        (&m.document, None),
        (&m.voice, Some(AttachmentKind::Voice)),
        (&m.audio, Some(AttachmentKind::Audio)),
        (&m.video, Some(AttachmentKind::Video)),
        (&m.video_note, Some(AttachmentKind::Video)),
        (&m.animation, Some(AttachmentKind::Video)),
    ];
    for (meta, kind) in metas {
        if let Some(f) = meta {
            out.push(Attachment {
                kind: kind.unwrap_or_else(|| AttachmentKind::from_mime(f.mime_type.as_deref())),
                file_name: f.file_name.clone(),
                mime: f.mime_type.clone(),
                size: f.file_size,
                source: FileSource::TelegramFile {
                    file_id: f.file_id.clone(),
                },
            });
        }
    }
    out
}

fn timestamp(date: i64) -> SystemTime {
    if date > 0 {
        UNIX_EPOCH + Duration::from_secs(date as u64)
    } else {
        SystemTime::now()
    }
}

fn convert_message(
    m: &Message,
    me: &BotIdentity,
    settings: &TelegramSettings,
) -> Option<InboundEvent> {
    let from = m.from.as_ref()?;
    if from.id == me.id {
        return None;
    }
    let (raw_text, entities) = match (&m.text, &m.caption) {
        (Some(t), _) => (t.as_str(), m.entities.as_slice()),
        (None, Some(c)) => (c.as_str(), m.caption_entities.as_slice()),
        (None, None) => ("", &[][..]),
    };
    let files = attachments(m);
    if raw_text.trim().is_empty() && files.is_empty() {
        return None;
    }
    let chat = chat_ref(m);
    let mentioned =
        mentions(raw_text, entities, me) || gate::matches_patterns(&settings.mentions, raw_text);
    let reply = m
        .reply_to_message
        .as_deref()
        .filter(|r| r.forum_topic_created.is_none());
    let replies_to_bot = reply
        .and_then(|r| r.from.as_ref())
        .is_some_and(|u| u.id == me.id);
    if from.is_bot && !gate::admits_bot(settings.allow_bots, mentioned) {
        return None;
    }
    let chat_id = chat.chat_id.clone();
    let admitted = gate::admits(
        &settings.mentions,
        &GateInput {
            chat_ids: vec![chat_id.as_str()],
            direct: chat.chat_type == ChatType::Direct,
            mentioned,
            replied_to_bot: replies_to_bot,
            in_bot_thread: false,
        },
    );
    if !admitted {
        return None;
    }
    let chat_name = m
        .chat
        .title
        .clone()
        .or_else(|| m.chat.username.clone())
        .or_else(|| m.chat.first_name.clone());
    Some(InboundEvent::Message(InboundMessage {
        chat,
        chat_name,
        message_id: m.message_id.to_string(),
        user_id: from.id.to_string(),
        user_name: Some(from.display_name()),
        text: strip_mention(raw_text, me),
        attachments: files,
        reply_to: reply.map(|r| r.message_id.to_string()),
        mentions_bot: mentioned,
        replies_to_bot,
        from_bot: from.is_bot,
        deliver_to: None,
        skills: Vec::new(),
        received_at: timestamp(m.date),
    }))
}

/// Converts one update.
pub(crate) fn convert(update: &Update, me: &BotIdentity, settings: &TelegramSettings) -> Converted {
    if let Some(m) = &update.message {
        return match convert_message(m, me, settings) {
            Some(e) => Converted::Event(e),
            None => Converted::Ignored,
        };
    }
    if let Some(q) = &update.callback_query {
        let event = match (&q.message, &q.data) {
            (Some(m), Some(data)) => Some(InboundEvent::Button {
                chat: chat_ref(m),
                user_id: q.from.id.to_string(),
                user_name: Some(q.from.display_name()),
                message_id: m.message_id.to_string(),
                data: data.clone(),
            }),
            _ => None,
        };
        return Converted::Button {
            callback_id: q.id.clone(),
            event,
        };
    }
    Converted::Ignored
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> BotIdentity {
        BotIdentity {
            id: 9,
            username: "hermes_bot".into(),
        }
    }

    #[test]
    fn entities_use_utf16_offsets() {
        let text = "😀 @hermes_bot hi";
        let e = MessageEntity {
            kind: "mention".into(),
            offset: 3,
            length: 11,
            user: None,
        };
        assert_eq!(entity_text(text, &e).as_deref(), Some("@hermes_bot"));
        assert!(mentions(text, &[e], &me()));
    }

    #[test]
    fn the_bots_handle_is_removed() {
        assert_eq!(strip_mention("/new@hermes_bot", &me()), "/new");
        assert_eq!(
            strip_mention("@Hermes_Bot what time is it", &me()),
            "what time is it"
        );
        assert_eq!(
            strip_mention("ask @hermes_bot_two", &me()),
            "ask @hermes_bot_two"
        );
        assert_eq!(strip_mention("plain", &me()), "plain");
    }
}
