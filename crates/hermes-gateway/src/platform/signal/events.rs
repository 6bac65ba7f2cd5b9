//! signal-cli's event stream (`GET /api/v1/events`, Server-Sent Events) into
//! [`InboundMessage`]s, the Python Hermes's way.
//!
//! [`SseParser`] cuts the stream into events (`id:`, `event: receive`, one `data:` line of
//! `{"envelope": …, "account": …}`), bounded: an over-long line or event is skipped, never
//! buffered. [`Converter`] reads an envelope: `dataMessage` (or an `editMessage`'s) from
//! another user; a `syncMessage.sentMessage` to the account itself (Note to Self) or into a
//! group, unless it is the echo of the bot's own send; stories dropped unless wanted; groups
//! only when listed (`group:<id>` chats); Signal's mention placeholders (U+FFFC) rendered as
//! `@number`, the bot's own mention removed; a `quote` of one of the bot's messages is a
//! reply to it; attachments as signal-cli ids fetched later with `getAttachment`; each
//! message (sender + timestamp) delivered once, since a resumed stream may replay.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::settings::{PLATFORM, SignalSettings};
use crate::platform::gate::{self, GateInput, RecentSet};
use crate::platform::types::{
    Attachment, AttachmentKind, ChatRef, ChatType, FileSource, InboundMessage,
};

/// Signal's own limit on attachments (Python's `SIGNAL_MAX_ATTACHMENT_SIZE`).
pub(crate) const MAX_ATTACHMENT: u64 = 100 * 1024 * 1024;
/// The longest SSE line or event kept (envelopes are small: attachments are not inline).
pub(crate) const MAX_EVENT: usize = 1024 * 1024;

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub id: Option<String>,
    pub event: String,
    pub data: String,
}

/// An incremental, bounded SSE parser (the WHATWG event-stream format).
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    /// Dropping the rest of an over-long line.
    skipping_line: bool,
    /// The event being built is over the cap and will not be dispatched.
    broken: bool,
    id: Option<String>,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feeds bytes; returns the events they complete. Comment lines (`:` keep-alives) only
    /// prove the stream is alive and produce nothing.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in chunk {
            if b == b'\n' {
                if self.skipping_line {
                    self.skipping_line = false;
                    self.broken = true;
                } else {
                    let mut line = std::mem::take(&mut self.line);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    if let Some(event) = self.line_done(&line) {
                        out.push(event);
                    }
                }
                continue;
            }
            if self.skipping_line {
                continue;
            }
            if self.line.len() >= MAX_EVENT {
                self.line.clear();
                self.skipping_line = true;
                continue;
            }
            self.line.push(b);
        }
        out
    }

    fn line_done(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            let event = (self.has_data && !self.broken).then(|| SseEvent {
                id: self.id.clone(),
                event: if self.event.is_empty() {
                    "message".into()
                } else {
                    std::mem::take(&mut self.event)
                },
                data: std::mem::take(&mut self.data),
            });
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            self.broken = false;
            return event;
        }
        if line[0] == b':' {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f.to_string(), v.strip_prefix(' ').unwrap_or(v).to_string()),
            None => (text.to_string(), String::new()),
        };
        match field.as_str() {
            "data" => {
                if self.data.len() + value.len() > MAX_EVENT {
                    self.broken = true;
                } else {
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(&value);
                }
                self.has_data = true;
            }
            "event" => self.event = value,
            // An id with NUL is ignored, as the specification says.
            "id" if !value.contains('\0') => self.id = Some(value),
            _ => {}
        }
        None
    }
}

/// What the adapter remembers across connections.
#[derive(Debug)]
pub(crate) struct Memory {
    /// The last event id seen: sent as `Last-Event-ID` so the daemon replays what a dropped
    /// stream missed.
    pub last_event_id: Mutex<Option<String>>,
    /// `sender:timestamp` of messages delivered.
    seen: Mutex<RecentSet>,
    /// Timestamps of the bot's own sends: quotes of them are replies to the bot, and their
    /// sync echoes (a linked device) are not new messages.
    sent: Mutex<RecentSet>,
}

impl Default for Memory {
    fn default() -> Self {
        Memory {
            last_event_id: Mutex::new(None),
            seen: Mutex::new(RecentSet::new(4096)),
            sent: Mutex::new(RecentSet::new(512)),
        }
    }
}

impl Memory {
    pub fn heard(&self, id: Option<&str>) {
        if let Some(id) = id {
            *self
                .last_event_id
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(id.to_string());
        }
    }

    pub fn last_event_id(&self) -> Option<String> {
        self.last_event_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn remember_sent(&self, timestamp: &str) {
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(timestamp);
    }

    fn is_sent(&self, timestamp: &str) -> bool {
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(timestamp)
    }

    fn first_time(&self, key: &str) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key)
    }
}

/// A JSON number or numeric string as text (timestamps are milliseconds).
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// Replaces Signal's mention placeholders with `@number` (or `@uuid`). Positions are UTF-16
/// units, as the protocol counts; out-of-range mentions are ignored.
pub(crate) fn render_mentions(text: &str, mentions: &[Value]) -> String {
    if mentions.is_empty() || !text.contains('\u{FFFC}') {
        return text.to_string();
    }
    let units: Vec<u16> = text.encode_utf16().collect();
    let mut spans: Vec<(usize, usize, String)> = mentions
        .iter()
        .filter_map(|m| {
            let start = usize::try_from(m["start"].as_u64()?).ok()?;
            let length = usize::try_from(m["length"].as_u64().unwrap_or(1)).ok()?;
            let who = m["number"]
                .as_str()
                .filter(|s| !s.is_empty())
                .or_else(|| m["uuid"].as_str().filter(|s| !s.is_empty()))
                .unwrap_or("user");
            (start.checked_add(length)? <= units.len()).then(|| (start, length, format!("@{who}")))
        })
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut units = units;
    let mut last_start = usize::MAX;
    for (start, length, who) in spans {
        // Overlapping mentions from a hostile peer: keep the later one only.
        if start + length > last_start {
            continue;
        }
        units.splice(start..start + length, who.encode_utf16());
        last_start = start;
    }
    String::from_utf16_lossy(&units)
}

/// Turns envelopes into messages with the adapter's settings and memory.
pub(crate) struct Converter<'a> {
    pub settings: &'a SignalSettings,
    pub memory: &'a Memory,
}

impl Converter<'_> {
    /// The message in one `receive` event's data, if it is one for the core.
    pub fn convert(&self, data: &Value) -> Option<InboundMessage> {
        let account = self.settings.account.as_str();
        let envelope = data.get("envelope").unwrap_or(data);
        let mut note_to_self = false;
        let mut data_message = envelope
            .get("dataMessage")
            .filter(|d| d.is_object())
            .or_else(|| {
                envelope
                    .get("editMessage")
                    .and_then(|e| e.get("dataMessage"))
                    .filter(|d| d.is_object())
            });
        if let Some(sync) = envelope.get("syncMessage") {
            let sent = sync.get("sentMessage").filter(|s| s.is_object())?;
            let destination = sent["destinationNumber"]
                .as_str()
                .or_else(|| sent["destination"].as_str());
            let to_group = sent["groupInfo"]["groupId"].as_str().is_some();
            if destination != Some(account) && !to_group {
                return None;
            }
            if id_text(&sent["timestamp"]).is_some_and(|ts| self.memory.is_sent(&ts)) {
                return None;
            }
            note_to_self = true;
            data_message = Some(sent);
        }
        let sender = ["sourceNumber", "sourceUuid", "source"]
            .iter()
            .find_map(|k| envelope[*k].as_str().filter(|s| !s.is_empty()))?
            .to_string();
        if sender == account && !note_to_self {
            return None;
        }
        if self.settings.ignore_stories && envelope.get("storyMessage").is_some() {
            return None;
        }
        let dm = data_message?;

        let group_id = dm["groupInfo"]["groupId"]
            .as_str()
            .filter(|g| !g.is_empty());
        if let Some(g) = group_id
            && !self.settings.group_allowed(g)
        {
            return None;
        }
        let (chat_type, chat_id) = match group_id {
            Some(g) => (ChatType::Group, format!("group:{g}")),
            None => (ChatType::Direct, sender.clone()),
        };

        let mentions = dm["mentions"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let mut text = render_mentions(dm["message"].as_str().unwrap_or_default(), mentions);
        let quote = dm.get("quote").filter(|q| q.is_object());
        let reply_to = quote.and_then(|q| id_text(&q["id"]));
        let quote_author = quote.and_then(|q| {
            ["author", "authorNumber", "authorUuid"]
                .iter()
                .find_map(|k| q[*k].as_str())
        });
        let replies_to_bot = reply_to
            .as_deref()
            .is_some_and(|id| self.memory.is_sent(id))
            || quote_author == Some(account);
        let mut mentions_bot = false;
        if chat_type == ChatType::Group {
            let own = format!("@{account}");
            mentions_bot = mentions.iter().any(|m| {
                m["number"].as_str() == Some(account) || m["uuid"].as_str() == Some(account)
            }) || text.contains(&own)
                || gate::matches_patterns(&self.settings.mentions, &text);
            let group = group_id.unwrap_or_default();
            let input = GateInput {
                chat_ids: vec![chat_id.as_str(), group],
                direct: false,
                mentioned: mentions_bot,
                replied_to_bot: replies_to_bot,
                in_bot_thread: false,
            };
            if !gate::admits(&self.settings.mentions, &input) {
                return None;
            }
            // "@+1555… say hello" reads to a model like an addressee, not the bot itself.
            if text.contains(&own) {
                text = text.replace(&own, "").replace("  ", " ").trim().to_string();
            }
        }

        let attachments: Vec<Attachment> = dm["attachments"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| {
                let id = a["id"].as_str().filter(|i| !i.is_empty())?;
                let size = a["size"].as_u64();
                if size.is_some_and(|s| s > MAX_ATTACHMENT) {
                    return None;
                }
                let mime = a["contentType"].as_str().map(str::to_string);
                let kind = match AttachmentKind::from_mime(mime.as_deref()) {
                    // Signal has no separate voice type; Python treats audio as a voice note.
                    AttachmentKind::Audio => AttachmentKind::Voice,
                    k => k,
                };
                Some(Attachment {
                    kind,
                    file_name: a["filename"].as_str().map(str::to_string),
                    mime,
                    size,
                    source: FileSource::PlatformId(id.to_string()),
                })
            })
            .collect();
        // Profile key updates and other metadata arrive as empty data messages.
        if text.trim().is_empty() && attachments.is_empty() {
            return None;
        }

        let timestamp = envelope["timestamp"]
            .as_u64()
            .or_else(|| dm["timestamp"].as_u64());
        let message_id = timestamp.map(|t| t.to_string()).unwrap_or_default();
        if !message_id.is_empty() && !self.memory.first_time(&format!("{sender}:{message_id}")) {
            return None;
        }
        let user_name = envelope["sourceName"]
            .as_str()
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        let chat_name = match group_id {
            Some(_) => dm["groupInfo"]["groupName"].as_str().map(str::to_string),
            None => user_name.clone(),
        };
        Some(InboundMessage {
            chat: ChatRef::new(PLATFORM, chat_type, chat_id),
            chat_name,
            message_id,
            user_id: sender,
            user_name,
            text,
            attachments,
            reply_to,
            mentions_bot,
            replies_to_bot,
            from_bot: false,
            deliver_to: None,
            skills: Vec::new(),
            received_at: timestamp
                .map(|t| UNIX_EPOCH + Duration::from_millis(t))
                .unwrap_or_else(SystemTime::now),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::MentionSettings;
    use serde_json::json;

    fn settings(groups: &[&str], require_mention: bool) -> SignalSettings {
        SignalSettings {
            http_url: "http://x".into(),
            account: "+15550000000".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ignore_stories: true,
            mentions: MentionSettings {
                require_mention,
                ..MentionSettings::default()
            },
        }
    }

    fn dm(ts: u64, text: &str) -> Value {
        json!({"envelope": {"source": "+15551112222", "sourceNumber": "+15551112222",
            "sourceUuid": "0b0c3a5e-1111-4222-8333-444455556666", "sourceName": "Ann",
            "sourceDevice": 1, "timestamp": ts,
            "dataMessage": {"timestamp": ts, "message": text, "expiresInSeconds": 0,
                "viewOnce": false}}, "account": "+15550000000"})
    }

    #[test]
    fn sse_events_are_cut_bounded_and_keep_their_ids() {
        let mut p = SseParser::default();
        let mut out = p.push(b":\n\nid:1-1\nevent:receive\ndata:{\"a\"");
        assert!(out.is_empty());
        out = p.push(b":1}\n\nid: 1-2\r\ndata:x\r\ndata:y\r\n\r\n");
        assert_eq!(
            out,
            vec![
                SseEvent {
                    id: Some("1-1".into()),
                    event: "receive".into(),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    id: Some("1-2".into()),
                    event: "message".into(),
                    data: "x\ny".into()
                },
            ]
        );
        // An over-long line is skipped with its event; the stream goes on.
        let mut big = b"id:1-3\ndata:".to_vec();
        big.extend(std::iter::repeat_n(b'z', MAX_EVENT + 10));
        big.extend_from_slice(b"\n\nid:1-4\ndata:ok\n\n");
        let out = p.push(&big);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data, "ok");
    }

    #[test]
    fn a_direct_message_becomes_a_dm_once() {
        let s = settings(&[], false);
        let memory = Memory::default();
        let conv = Converter {
            settings: &s,
            memory: &memory,
        };
        let m = conv.convert(&dm(1700000000000, "hi")).unwrap();
        assert_eq!(m.chat.chat_type, ChatType::Direct);
        assert_eq!(m.chat.chat_id, "+15551112222");
        assert_eq!(m.user_id, "+15551112222");
        assert_eq!(m.user_name.as_deref(), Some("Ann"));
        assert_eq!(m.message_id, "1700000000000");
        assert_eq!(m.text, "hi");
        assert!(conv.convert(&dm(1700000000000, "hi")).is_none(), "replayed");
        // Typing, receipts and empty data messages are not messages.
        assert!(conv.convert(&dm(1700000000001, "  ")).is_none());
        let typing = json!({"envelope": {"sourceNumber": "+15551112222", "timestamp": 5,
            "typingMessage": {"action": "STARTED", "timestamp": 5}}});
        assert!(conv.convert(&typing).is_none());
        assert!(conv.convert(&json!("not an object")).is_none());
        assert!(
            conv.convert(&json!({"envelope": {"dataMessage": 3}}))
                .is_none()
        );
    }

    #[test]
    fn groups_need_listing_and_mentions_are_rendered_and_stripped() {
        let group = |text: &str, ts: u64, mentions: Value| {
            json!({"envelope": {"sourceNumber": "+15551112222", "sourceName": "Ann",
                "timestamp": ts, "dataMessage": {"timestamp": ts, "message": text,
                "mentions": mentions,
                "groupInfo": {"groupId": "R3JvdXA=", "groupName": "Friends", "revision": 2,
                    "type": "DELIVER"}}}})
        };
        let memory = Memory::default();
        let closed = settings(&[], false);
        let conv = Converter {
            settings: &closed,
            memory: &memory,
        };
        assert!(conv.convert(&group("hello", 1, json!([]))).is_none());

        let open = settings(&["R3JvdXA="], true);
        let conv = Converter {
            settings: &open,
            memory: &memory,
        };
        assert!(conv.convert(&group("no mention", 2, json!([]))).is_none());
        let m = conv
            .convert(&group(
                "\u{FFFC} say hi to \u{FFFC}",
                3,
                json!([{"start": 0, "length": 1, "number": "+15550000000", "uuid": "u-bot"},
                       {"start": 12, "length": 1, "number": "+15553334444"}]),
            ))
            .unwrap();
        assert_eq!(m.chat.chat_id, "group:R3JvdXA=");
        assert_eq!(m.chat.chat_type, ChatType::Group);
        assert_eq!(m.chat_name.as_deref(), Some("Friends"));
        assert!(m.mentions_bot);
        assert_eq!(m.text, "say hi to @+15553334444");
        // Hostile mention offsets do not panic.
        let odd = render_mentions(
            "\u{FFFC}",
            &[json!({"start": 5, "length": 9}), json!({"start": u64::MAX})],
        );
        assert_eq!(odd, "\u{FFFC}");
    }

    #[test]
    fn note_to_self_counts_but_the_bots_own_echo_and_other_syncs_do_not() {
        let s = settings(&[], false);
        let memory = Memory::default();
        memory.remember_sent("77");
        let conv = Converter {
            settings: &s,
            memory: &memory,
        };
        let sync = |dest: &str, ts: u64| {
            json!({"envelope": {"sourceNumber": "+15550000000", "timestamp": ts,
                "syncMessage": {"sentMessage": {"destinationNumber": dest, "timestamp": ts,
                    "message": "note"}}}})
        };
        assert!(conv.convert(&sync("+15550000000", 77)).is_none(), "echo");
        assert!(conv.convert(&sync("+15559999999", 78)).is_none());
        let m = conv.convert(&sync("+15550000000", 79)).unwrap();
        assert_eq!(m.chat.chat_id, "+15550000000");
        assert_eq!(m.text, "note");
        // The account's own data messages are skipped.
        let mut own = dm(80, "me");
        own["envelope"]["sourceNumber"] = json!("+15550000000");
        assert!(conv.convert(&own).is_none());
        // A quote of the bot's message is a reply to the bot.
        let mut reply = dm(81, "and?");
        reply["envelope"]["dataMessage"]["quote"] =
            json!({"id": 77, "author": "+15550000000", "text": "earlier"});
        let m = conv.convert(&reply).unwrap();
        assert!(m.replies_to_bot);
        assert_eq!(m.reply_to.as_deref(), Some("77"));
    }

    #[test]
    fn attachments_are_ids_and_oversized_ones_are_dropped() {
        let s = settings(&[], false);
        let memory = Memory::default();
        let conv = Converter {
            settings: &s,
            memory: &memory,
        };
        let mut m = dm(90, "");
        m["envelope"]["dataMessage"]["attachments"] = json!([
            {"contentType": "image/png", "filename": "a.png", "id": "att1", "size": 10},
            {"contentType": "audio/aac", "id": "att2", "size": 20},
            {"contentType": "video/mp4", "id": "big", "size": MAX_ATTACHMENT + 1},
            {"contentType": "image/png"}
        ]);
        let msg = conv.convert(&m).unwrap();
        assert_eq!(msg.attachments.len(), 2);
        assert_eq!(msg.attachments[0].kind, AttachmentKind::Image);
        assert_eq!(
            msg.attachments[0].source,
            FileSource::PlatformId("att1".into())
        );
        assert_eq!(msg.attachments[1].kind, AttachmentKind::Voice);
    }
}
