//! Event payloads (schema 2.0, already decrypted) into typed items. Feishu posts
//! `{"schema": "2.0", "header": {"event_id", "event_type", "token", "create_time", "app_id",
//! "tenant_key"}, "event": {…}}`:
//!
//! - `im.message.receive_v1`: `event.sender` (`sender_id.open_id`, `sender_type` `user` or
//!   `app`) and `event.message` (`message_id`, `chat_id`, `chat_type` `p2p` or `group`,
//!   `message_type`, `content` — a JSON *string* —, `mentions` `[{"key": "@_user_1", "id":
//!   {"open_id"}, "name"}]`, `parent_id`, `create_time` in milliseconds). Handled types:
//!   `text` (`{"text"}` with `@_user_N` placeholders), `post` (rich text: `{"title",
//!   "content": [[{"tag": "text"|"a"|"at"|"img"|"media"|"code_block"|"md"|"emotion", …}]]}`,
//!   flattened to text; its images become attachments), `image` (`{"image_key"}`), `file`
//!   (`{"file_key", "file_name"}`), `audio` and `media` (`{"file_key"}`): files are fetched
//!   later through the message resource API;
//! - `card.action.trigger`: a button of a card the bot sent was pressed: `event.operator`,
//!   `event.token`, `event.action.value`, `event.context.open_chat_id` /
//!   `open_message_id`.
//!
//! Everything else is ignored, and anything malformed skipped: the payload is hostile until
//! proven otherwise, so every field is checked and bounded.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::platform::types::AttachmentKind;

/// The longest id (event, message, chat, user, resource key) accepted.
const MAX_ID: usize = 256;
/// The longest inbound text kept.
const MAX_TEXT: usize = 65_536;
/// Mentions and resources read from one message.
const MAX_MENTIONS: usize = 50;
const MAX_RESOURCES: usize = 10;
/// Post elements read from one message.
const MAX_ELEMENTS: usize = 2000;

/// One inbound thing from an event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
    Message(Message),
    /// A button of a card the bot sent was pressed.
    Press {
        /// The callback's token: one per press, so a retried delivery is recognised.
        token: String,
        operator: String,
        chat_id: String,
        message_id: String,
        /// The button's data as the gateway sent it.
        data: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Message {
    pub message_id: String,
    pub chat_id: String,
    pub group: bool,
    pub sender: String,
    pub sender_is_bot: bool,
    /// With the `@_user_N` placeholders as Feishu sent them.
    pub text: String,
    pub mentions: Vec<Mention>,
    pub resources: Vec<Resource>,
    pub parent_id: Option<String>,
    pub sent_at: Option<SystemTime>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Mention {
    /// `@_user_1`, `@_all`.
    pub key: String,
    pub open_id: Option<String>,
    pub user_id: Option<String>,
    pub name: Option<String>,
}

/// An inbound file, fetched through `GET /im/v1/messages/{id}/resources/{key}?type=…`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resource {
    pub kind: AttachmentKind,
    pub key: String,
    /// `image` or `file`, the resource API's `type`.
    pub api_type: &'static str,
    pub file_name: Option<String>,
}

/// An id as the Open API spells them (`om_…`, `oc_…`, `ou_…`, `img_v2_…`, `file_v3_…`):
/// letters, digits, `_` and `-`; anything else could change the path it goes into.
pub(crate) fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

fn id_field(v: &Value) -> Option<String> {
    let s = v.as_str()?.trim();
    is_id(s).then(|| s.to_string())
}

fn short_text(v: &Value, max: usize) -> Option<String> {
    let t: String = v
        .as_str()?
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(max)
        .collect();
    (!t.is_empty()).then_some(t)
}

fn push_bounded(out: &mut String, s: &str) {
    let room = MAX_TEXT.saturating_sub(out.chars().count());
    out.extend(s.chars().take(room));
}

/// The event's id (`header.event_id`), used against redeliveries.
pub(crate) fn event_id(payload: &Value) -> Option<String> {
    id_field(&payload["header"]["event_id"]).or_else(|| id_field(&payload["uuid"]))
}

/// The event's token (`header.token`, or `token` of the older schema).
pub(crate) fn token(payload: &Value) -> &str {
    payload["header"]["token"]
        .as_str()
        .or(payload["token"].as_str())
        .unwrap_or_default()
}

/// The item an event carries, if it is one the gateway handles.
pub(crate) fn parse(payload: &Value) -> Option<Incoming> {
    match payload["header"]["event_type"].as_str()? {
        "im.message.receive_v1" => message(&payload["event"]).map(Incoming::Message),
        "card.action.trigger" => press(&payload["event"]),
        _ => None,
    }
}

fn press(event: &Value) -> Option<Incoming> {
    let data = event["action"]["value"]["hermes_data"].as_str()?;
    if data.is_empty() || data.len() > 1024 {
        return None;
    }
    Some(Incoming::Press {
        token: short_text(&event["token"], MAX_ID).unwrap_or_default(),
        operator: id_field(&event["operator"]["open_id"])?,
        chat_id: id_field(&event["context"]["open_chat_id"])?,
        message_id: id_field(&event["context"]["open_message_id"]).unwrap_or_default(),
        data: data.to_string(),
    })
}

fn mention(v: &Value) -> Option<Mention> {
    Some(Mention {
        key: short_text(&v["key"], 64)?,
        open_id: id_field(&v["id"]["open_id"]),
        user_id: id_field(&v["id"]["user_id"]),
        name: short_text(&v["name"], 128),
    })
}

fn message(event: &Value) -> Option<Message> {
    let m = &event["message"];
    let message_id = id_field(&m["message_id"])?;
    let chat_id = id_field(&m["chat_id"])?;
    let group = match m["chat_type"].as_str()? {
        "p2p" => false,
        "group" | "topic_group" => true,
        _ => return None,
    };
    let sender = id_field(&event["sender"]["sender_id"]["open_id"])?;
    let sender_is_bot = event["sender"]["sender_type"].as_str() != Some("user");
    // `content` is a JSON document in a string.
    let content_str = m["content"].as_str()?;
    if content_str.len() > 4 * MAX_TEXT {
        return None;
    }
    let content: Value = serde_json::from_str(content_str).ok()?;
    let mut text = String::new();
    let mut resources = Vec::new();
    let resource = |kind, key: &Value, api_type, name: &Value| {
        Some(Resource {
            kind,
            key: id_field(key)?,
            api_type,
            file_name: short_text(name, 255),
        })
    };
    match m["message_type"].as_str()? {
        "text" => push_bounded(&mut text, content["text"].as_str()?),
        "post" => post(&content, &mut text, &mut resources),
        "image" => resources.extend(resource(
            AttachmentKind::Image,
            &content["image_key"],
            "image",
            &Value::Null,
        )),
        "file" => resources.extend(resource(
            AttachmentKind::Document,
            &content["file_key"],
            "file",
            &content["file_name"],
        )),
        "audio" => resources.extend(resource(
            AttachmentKind::Voice,
            &content["file_key"],
            "file",
            &Value::Null,
        )),
        "media" => resources.extend(resource(
            AttachmentKind::Video,
            &content["file_key"],
            "file",
            &content["file_name"],
        )),
        _ => return None,
    }
    if text.trim().is_empty() && resources.is_empty() {
        return None;
    }
    let mentions = m["mentions"]
        .as_array()
        .into_iter()
        .flatten()
        .take(MAX_MENTIONS)
        .filter_map(mention)
        .collect();
    let sent_at = m["create_time"]
        .as_str()
        .and_then(|t| t.parse::<u64>().ok())
        .and_then(|ms| UNIX_EPOCH.checked_add(Duration::from_millis(ms)));
    Some(Message {
        message_id,
        chat_id,
        group,
        sender,
        sender_is_bot,
        text,
        mentions,
        resources,
        parent_id: id_field(&m["parent_id"]),
        sent_at,
    })
}

/// A post flattened to text: the title, then each paragraph on its line; `at` elements keep
/// their placeholder key (resolved with the mentions later), links keep their target, code
/// blocks their fences; images and media become resources.
fn post(content: &Value, text: &mut String, resources: &mut Vec<Resource>) {
    // Received posts are `{"title", "content"}`; sent ones wrap that in a locale.
    let body = if content.get("content").is_some() {
        content
    } else {
        match content
            .as_object()
            .and_then(|o| o.values().find(|v| v.get("content").is_some()))
        {
            Some(b) => b,
            None => return,
        }
    };
    if let Some(title) = short_text(&body["title"], 512) {
        push_bounded(text, &title);
        push_bounded(text, "\n");
    }
    let mut seen = 0;
    for paragraph in body["content"].as_array().into_iter().flatten() {
        let mut line = String::new();
        for el in paragraph.as_array().into_iter().flatten() {
            seen += 1;
            if seen > MAX_ELEMENTS {
                break;
            }
            let s = |k: &str| el[k].as_str().unwrap_or_default();
            match s("tag") {
                "text" | "md" => line.push_str(s("text")),
                "a" => match (s("text"), s("href")) {
                    ("", href) => line.push_str(href),
                    (label, "") => line.push_str(label),
                    (label, href) => line.push_str(&format!("[{label}]({href})")),
                },
                "at" => {
                    let key = s("user_id");
                    if key.starts_with('@') {
                        line.push_str(key);
                    } else if !s("user_name").is_empty() {
                        line.push('@');
                        line.push_str(s("user_name"));
                    }
                }
                "code_block" => {
                    line.push_str(&format!("\n```{}\n{}\n```\n", s("language"), s("text")))
                }
                "emotion" => line.push_str(&format!(":{}:", s("emoji_type"))),
                "img" if resources.len() < MAX_RESOURCES => {
                    if let Some(key) = id_field(&el["image_key"]) {
                        resources.push(Resource {
                            kind: AttachmentKind::Image,
                            key,
                            api_type: "image",
                            file_name: None,
                        });
                    }
                }
                "media" if resources.len() < MAX_RESOURCES => {
                    if let Some(key) = id_field(&el["file_key"]) {
                        resources.push(Resource {
                            kind: AttachmentKind::Video,
                            key,
                            api_type: "file",
                            file_name: None,
                        });
                    }
                }
                _ => {}
            }
            if line.len() > 4 * MAX_TEXT {
                break;
            }
        }
        push_bounded(text, line.trim_end());
        push_bounded(text, "\n");
    }
    let trimmed = text.trim_end().len();
    text.truncate(trimmed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn receive(message: Value) -> Value {
        json!({
            "schema": "2.0",
            "header": {"event_id": "5e3702a84e847582be8db7fb73283c02", "event_type": "im.message.receive_v1",
                       "create_time": "1608725989000", "token": "vt", "app_id": "cli_a", "tenant_key": "t"},
            "event": {
                "sender": {"sender_id": {"union_id": "on_1", "user_id": "e33ggbyz", "open_id": "ou_ann"},
                           "sender_type": "user", "tenant_key": "t"},
                "message": message,
            },
        })
    }

    #[test]
    fn a_group_text_with_a_mention() {
        let p = receive(json!({
            "message_id": "om_1", "chat_id": "oc_g", "chat_type": "group", "message_type": "text",
            "create_time": "1609073151345",
            "content": "{\"text\":\"@_user_1 hello\"}",
            "mentions": [{"key": "@_user_1", "id": {"open_id": "ou_bot", "user_id": null}, "name": "Hermes"}],
        }));
        assert_eq!(
            event_id(&p).as_deref(),
            Some("5e3702a84e847582be8db7fb73283c02")
        );
        assert_eq!(token(&p), "vt");
        let Some(Incoming::Message(m)) = parse(&p) else {
            panic!()
        };
        assert!(m.group && !m.sender_is_bot);
        assert_eq!((m.sender.as_str(), m.chat_id.as_str()), ("ou_ann", "oc_g"));
        assert_eq!(m.text, "@_user_1 hello");
        assert_eq!(m.mentions[0].open_id.as_deref(), Some("ou_bot"));
        assert_eq!(
            m.sent_at,
            Some(UNIX_EPOCH + Duration::from_millis(1_609_073_151_345))
        );
    }

    #[test]
    fn posts_images_and_files() {
        let content = json!({"title": "Report", "content": [
            [{"tag": "at", "user_id": "@_user_1", "user_name": "Hermes"}, {"tag": "text", "text": " see "},
             {"tag": "a", "text": "this", "href": "https://example.com"}],
            [{"tag": "img", "image_key": "img_v2_abc"}],
            [{"tag": "code_block", "language": "rust", "text": "fn main() {}"}],
        ]});
        let p = receive(
            json!({"message_id": "om_2", "chat_id": "oc_p", "chat_type": "p2p",
            "message_type": "post", "content": content.to_string()}),
        );
        let Some(Incoming::Message(m)) = parse(&p) else {
            panic!()
        };
        assert!(!m.group);
        assert!(
            m.text
                .starts_with("Report\n@_user_1 see [this](https://example.com)"),
            "{}",
            m.text
        );
        assert!(m.text.contains("```rust\nfn main() {}\n```"), "{}", m.text);
        assert_eq!(m.resources.len(), 1);
        assert_eq!(
            (m.resources[0].key.as_str(), m.resources[0].api_type),
            ("img_v2_abc", "image")
        );

        let p = receive(
            json!({"message_id": "om_3", "chat_id": "oc_p", "chat_type": "p2p",
            "message_type": "file", "content": "{\"file_key\":\"file_v3_x\",\"file_name\":\"a.pdf\"}"}),
        );
        let Some(Incoming::Message(m)) = parse(&p) else {
            panic!()
        };
        assert_eq!(m.resources[0].file_name.as_deref(), Some("a.pdf"));
        assert_eq!(m.resources[0].kind, AttachmentKind::Document);
    }

    #[test]
    fn card_presses() {
        let p = json!({"schema": "2.0", "header": {"event_id": "e1", "event_type": "card.action.trigger", "token": "vt"},
            "event": {"operator": {"open_id": "ou_ann"}, "token": "c-123",
                      "action": {"value": {"hermes_data": "g:a:1:once"}, "tag": "button"},
                      "context": {"open_message_id": "om_9", "open_chat_id": "oc_p"}}});
        assert_eq!(
            parse(&p),
            Some(Incoming::Press {
                token: "c-123".into(),
                operator: "ou_ann".into(),
                chat_id: "oc_p".into(),
                message_id: "om_9".into(),
                data: "g:a:1:once".into(),
            })
        );
    }

    #[test]
    fn hostile_events_are_skipped() {
        let bad_ids = ["om_../x", "", "om 1", &"a".repeat(300)];
        for id in bad_ids {
            let p = receive(
                json!({"message_id": id, "chat_id": "oc_p", "chat_type": "p2p",
                "message_type": "text", "content": "{\"text\":\"x\"}"}),
            );
            assert_eq!(parse(&p), None, "{id}");
        }
        for content in [
            json!("not json"),
            json!({"text": "x"}),
            json!(null),
            json!("{\"text\": 5}"),
        ] {
            let p = receive(
                json!({"message_id": "om_1", "chat_id": "oc_p", "chat_type": "p2p",
                "message_type": "text", "content": content}),
            );
            assert_eq!(parse(&p), None);
        }
        for p in [
            json!(null),
            json!([]),
            json!({"header": {"event_type": 5}}),
            json!({"header": {"event_type": "im.message.receive_v1"}}),
        ] {
            assert_eq!(parse(&p), None);
        }
        // A path in a resource key never reaches the URL.
        let p = receive(
            json!({"message_id": "om_1", "chat_id": "oc_p", "chat_type": "p2p",
            "message_type": "image", "content": "{\"image_key\":\"../../auth\"}"}),
        );
        assert_eq!(parse(&p), None);
        // Huge texts are bounded.
        let big = json!({"text": "x".repeat(300_000)}).to_string();
        let p = receive(
            json!({"message_id": "om_1", "chat_id": "oc_p", "chat_type": "p2p",
            "message_type": "text", "content": big}),
        );
        assert_eq!(parse(&p), None);
        let big = json!({"text": "x".repeat(100_000)}).to_string();
        let p = receive(
            json!({"message_id": "om_1", "chat_id": "oc_p", "chat_type": "p2p",
            "message_type": "text", "content": big}),
        );
        let Some(Incoming::Message(m)) = parse(&p) else {
            panic!()
        };
        assert_eq!(m.text.len(), MAX_TEXT);
    }
}
