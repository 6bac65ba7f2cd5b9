//! Webhook payloads into events. Meta posts
//! `{"object": "whatsapp_business_account", "entry": [{"id", "changes": [{"field":
//! "messages", "value": {"metadata", "contacts": [{"wa_id", "profile": {"name"}}],
//! "messages": [...], "statuses": [...]}}]}]}`; each message has `from` (the sender's wa_id,
//! which is also the chat: the Cloud API has DMs only), `id` (the `wamid`), `timestamp`
//! (Unix seconds as a string), `type`, the type's object, and `context.id` when it quotes
//! another message.
//!
//! Handled: `text`, `image`/`sticker`, `video`, `audio` (a voice note when `audio.voice`),
//! `document` (captions as the text, the file as an attachment fetched by media id later),
//! `interactive` `button_reply`/`list_reply` (a press of a button the gateway sent: its id is
//! the button's data), template `button` replies (their text), and `location` (as text).
//! Statuses (sent/delivered/read) are ignored, group-shaped messages (`group_id` or `chat`)
//! dropped as Python does, and anything malformed skipped: the payload is hostile until
//! proven otherwise, so every field is checked and bounded.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::platform::types::AttachmentKind;

/// The longest id (wamid, wa_id, media id, button id) accepted; Meta's wamids are at most
/// 128 characters, button ids 256.
const MAX_ID: usize = 256;
/// The longest inbound text kept (WhatsApp itself caps a message at 4,096 characters).
const MAX_WA_TEXT: usize = 65_536;
/// Messages read from one payload (Meta batches a handful at most).
const MAX_MESSAGES: usize = 100;

/// One inbound thing from a payload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
    Message(Message),
    /// A reply button or list row was tapped.
    Press {
        wamid: String,
        from: String,
        name: Option<String>,
        /// The message carrying the buttons (`context.id`).
        message_id: String,
        /// The button's id as the gateway sent it.
        data: String,
    },
}

impl Incoming {
    pub fn wamid(&self) -> &str {
        match self {
            Incoming::Message(m) => &m.wamid,
            Incoming::Press { wamid, .. } => wamid,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Message {
    pub wamid: String,
    pub from: String,
    pub name: Option<String>,
    pub text: String,
    pub media: Option<Media>,
    pub reply_to: Option<String>,
    pub sent_at: Option<SystemTime>,
}

/// An inbound file, fetched by id when the core asks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Media {
    pub kind: AttachmentKind,
    pub id: String,
    pub mime: Option<String>,
    pub file_name: Option<String>,
}

fn id_field(v: &Value) -> Option<String> {
    let s = v.as_str()?.trim();
    (!s.is_empty() && s.len() <= MAX_ID && !s.chars().any(char::is_control)).then(|| s.to_string())
}

/// A media id as a Graph path segment allows: letters, digits, `.`, `_`, `-` (Python's
/// check; a hostile id must not reach another path).
pub(crate) fn is_media_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A sender's wa_id: digits only (a phone number with its country code).
fn wa_id(v: &Value) -> Option<String> {
    let s = id_field(v)?;
    (s.len() <= 32 && s.bytes().all(|b| b.is_ascii_digit())).then_some(s)
}

fn bounded_text(v: &Value) -> String {
    v.as_str()
        .map(|t| t.chars().take(MAX_WA_TEXT).collect())
        .unwrap_or_default()
}

fn short_text(v: &Value, max: usize) -> Option<String> {
    let t: String = v.as_str()?.trim().chars().take(max).collect();
    (!t.is_empty()).then_some(t)
}

/// Every message and button press of a payload, in order.
pub(crate) fn parse(payload: &Value) -> Vec<Incoming> {
    let mut out = Vec::new();
    if payload["object"] != "whatsapp_business_account" {
        return out;
    }
    for entry in payload["entry"].as_array().into_iter().flatten() {
        for change in entry["changes"].as_array().into_iter().flatten() {
            if change["field"] != "messages" {
                continue;
            }
            let value = &change["value"];
            let contact_name = |from: &str| {
                value["contacts"]
                    .as_array()?
                    .iter()
                    .find(|c| c["wa_id"].as_str() == Some(from))
                    .and_then(|c| short_text(&c["profile"]["name"], 128))
            };
            for raw in value["messages"].as_array().into_iter().flatten() {
                if out.len() >= MAX_MESSAGES {
                    return out;
                }
                if let Some(item) = message(raw, &contact_name) {
                    out.push(item);
                }
            }
        }
    }
    out
}

fn message(raw: &Value, contact_name: &dyn Fn(&str) -> Option<String>) -> Option<Incoming> {
    let wamid = id_field(&raw["id"])?;
    let from = wa_id(&raw["from"])?;
    // Group messages carry the group; the Cloud adapter serves DMs only (as Python).
    if !raw["group_id"].is_null() || !raw["chat"].is_null() {
        return None;
    }
    let name = contact_name(&from);
    let kind = raw["type"].as_str().unwrap_or("text");
    let reply_to = id_field(&raw["context"]["id"]);
    let sent_at = raw["timestamp"]
        .as_str()
        .and_then(|t| t.parse::<u64>().ok())
        .or_else(|| raw["timestamp"].as_u64())
        .and_then(|secs| UNIX_EPOCH.checked_add(Duration::from_secs(secs)));
    let mut text: String;
    let mut media = None;
    match kind {
        "text" => text = bounded_text(&raw["text"]["body"]),
        "interactive" => {
            let inter = &raw["interactive"];
            let reply = match inter["type"].as_str() {
                Some("button_reply") => &inter["button_reply"],
                Some("list_reply") => &inter["list_reply"],
                _ => return None,
            };
            let data = id_field(&reply["id"])?;
            return Some(Incoming::Press {
                wamid,
                from,
                name,
                message_id: reply_to.unwrap_or_default(),
                data,
            });
        }
        // A template's quick-reply button: its text is the answer.
        "button" => text = bounded_text(&raw["button"]["text"]),
        "image" | "sticker" | "video" | "audio" | "voice" | "document" => {
            let inner = &raw[kind];
            let id = inner["id"].as_str().filter(|id| is_media_id(id))?;
            text = bounded_text(&inner["caption"]);
            let attachment_kind = match kind {
                "image" | "sticker" => AttachmentKind::Image,
                "video" => AttachmentKind::Video,
                "voice" => AttachmentKind::Voice,
                "audio" if inner["voice"].as_bool() == Some(true) => AttachmentKind::Voice,
                "audio" => AttachmentKind::Audio,
                _ => AttachmentKind::Document,
            };
            media = Some(Media {
                kind: attachment_kind,
                id: id.to_string(),
                mime: short_text(&inner["mime_type"], 128),
                file_name: short_text(&inner["filename"], 255),
            });
        }
        "location" => {
            let loc = &raw["location"];
            let (Some(lat), Some(lon)) = (loc["latitude"].as_f64(), loc["longitude"].as_f64())
            else {
                return None;
            };
            text = format!("[Location: {lat}, {lon}]");
            for key in ["name", "address"] {
                if let Some(v) = short_text(&loc[key], 256) {
                    text.push(' ');
                    text.push_str(&v);
                }
            }
        }
        // Reactions, unsupported and system messages carry nothing to answer.
        _ => return None,
    }
    if text.trim().is_empty() && media.is_none() {
        return None;
    }
    Some(Incoming::Message(Message {
        wamid,
        from,
        name,
        text,
        media,
        reply_to,
        sent_at,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload(messages: Value) -> Value {
        json!({"object": "whatsapp_business_account", "entry": [{"id": "WABA", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550001111", "phone_number_id": "42"},
            "contacts": [{"profile": {"name": "Ann"}, "wa_id": "447700900123"}],
            "messages": messages,
        }}]}]})
    }

    #[test]
    fn text_media_and_presses_are_read() {
        let items = parse(&payload(json!([
            {"from": "447700900123", "id": "wamid.A", "timestamp": "1700000000", "type": "text", "text": {"body": "hi"}},
            {"from": "447700900123", "id": "wamid.B", "timestamp": "1700000001", "type": "image",
             "image": {"caption": "look", "mime_type": "image/jpeg", "sha256": "x", "id": "1234"}},
            {"from": "447700900123", "id": "wamid.C", "type": "audio", "audio": {"mime_type": "audio/ogg; codecs=opus", "id": "55", "voice": true}},
            {"from": "447700900123", "id": "wamid.D", "type": "document", "document": {"filename": "a.pdf", "mime_type": "application/pdf", "id": "56"}},
            {"context": {"from": "15550001111", "id": "wamid.OUT"}, "from": "447700900123", "id": "wamid.E", "type": "interactive",
             "interactive": {"type": "button_reply", "button_reply": {"id": "hermes:approve:1:once", "title": "Approve once"}}},
        ])));
        assert_eq!(items.len(), 5);
        let Incoming::Message(m) = &items[0] else {
            panic!()
        };
        assert_eq!(
            (m.text.as_str(), m.from.as_str(), m.name.as_deref()),
            ("hi", "447700900123", Some("Ann"))
        );
        assert_eq!(
            m.sent_at,
            Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        );
        let Incoming::Message(m) = &items[1] else {
            panic!()
        };
        assert_eq!(m.text, "look");
        let media = m.media.as_ref().unwrap();
        assert_eq!(
            (media.kind, media.id.as_str()),
            (AttachmentKind::Image, "1234")
        );
        let Incoming::Message(m) = &items[2] else {
            panic!()
        };
        assert_eq!(m.media.as_ref().unwrap().kind, AttachmentKind::Voice);
        let Incoming::Message(m) = &items[3] else {
            panic!()
        };
        assert_eq!(
            m.media.as_ref().unwrap().file_name.as_deref(),
            Some("a.pdf")
        );
        assert_eq!(
            items[4],
            Incoming::Press {
                wamid: "wamid.E".into(),
                from: "447700900123".into(),
                name: Some("Ann".into()),
                message_id: "wamid.OUT".into(),
                data: "hermes:approve:1:once".into(),
            }
        );
    }

    #[test]
    fn statuses_groups_and_other_objects_are_ignored() {
        let mut p = payload(json!([
            {"from": "1", "id": "wamid.G", "group_id": "G1", "type": "text", "text": {"body": "group"}},
            {"from": "1", "id": "wamid.R", "type": "reaction", "reaction": {"message_id": "x", "emoji": "👍"}},
        ]));
        p["entry"][0]["changes"][0]["value"]["statuses"] =
            json!([{"id": "wamid.S", "status": "delivered"}]);
        assert!(parse(&p).is_empty());
        let mut other =
            payload(json!([{"from": "1", "id": "w", "type": "text", "text": {"body": "x"}}]));
        other["object"] = json!("page");
        assert!(parse(&other).is_empty());
    }

    #[test]
    fn hostile_payloads_never_panic_and_yield_nothing_bad() {
        for p in [
            json!(null),
            json!([]),
            json!({"object": "whatsapp_business_account", "entry": "x"}),
            json!({"object": "whatsapp_business_account", "entry": [{"changes": [{"field": "messages", "value": {"messages": [1, null, "x", {}]}}]}]}),
            json!({"object": "whatsapp_business_account", "entry": [{"changes": [{"field": "messages", "value": []}]}]}),
        ] {
            assert!(parse(&p).is_empty(), "{p}");
        }
        let items = parse(&payload(json!([
            // A path in the media id, a non-numeric sender, an over-long id, empty text.
            {"from": "1", "id": "wamid.1", "type": "image", "image": {"id": "../../etc/passwd"}},
            {"from": "+1 evil", "id": "wamid.2", "type": "text", "text": {"body": "x"}},
            {"from": "1", "id": "w".repeat(300), "type": "text", "text": {"body": "x"}},
            {"from": "1", "id": "wamid.3", "type": "text", "text": {"body": "   "}},
            {"from": "1", "id": "wamid.4", "type": "text", "text": {"body": "x".repeat(MAX_WA_TEXT * 3)}},
            {"from": "1", "id": "wamid.5", "type": "interactive", "interactive": {"type": "nfm_reply"}},
            {"from": "1", "id": "wamid.6", "type": "location", "location": {"latitude": "x"}},
        ])));
        assert_eq!(items.len(), 1);
        let Incoming::Message(m) = &items[0] else {
            panic!()
        };
        assert_eq!(m.text.chars().count(), MAX_WA_TEXT);
        let many: Vec<Value> = (0..500)
            .map(|i| json!({"from": "1", "id": format!("w{i}"), "type": "text", "text": {"body": "x"}}))
            .collect();
        assert_eq!(parse(&payload(Value::Array(many))).len(), MAX_MESSAGES);
    }
}
