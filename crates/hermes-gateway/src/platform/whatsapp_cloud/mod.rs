//! WhatsApp through Meta's Cloud API (the official WhatsApp Business Platform): Meta posts
//! events to our webhook ([`webhook`]: the subscription handshake, signed POSTs, duplicates
//! skipped), and answers go out through the Graph API ([`graph`]). Chats are DMs: the chat id
//! is the user's wa_id (their number with country code, no `+`).
//!
//! Answers are converted to WhatsApp's formatting (`*bold*`, `_italic_`, `~strike~`,
//! ```` ``` ```` blocks) and split at WhatsApp's 4,096-character limit, the first part quoting
//! the user's message; WhatsApp has no edits, so the core sends each answer whole. Buttons
//! (approvals, clarify choices) become interactive reply buttons (three at most, titles cut
//! to 20 characters) or, with more choices, a list message (ten rows). Files are uploaded to
//! `/{phone-number-id}/media` and sent by media id; inbound media is fetched on demand,
//! `GET /{media-id}` → a short-lived URL → the bytes, with the token sent only to Meta's
//! hosts. "Typing…" marks the chat's last message read with a typing indicator, as Python
//! does. No reconnects: the listener runs until shutdown, rebinding with backoff when it
//! cannot bind.

mod events;
mod graph;
pub mod settings;
mod webhook;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::events::Incoming;
use self::graph::Graph;
use self::settings::PLATFORM;
pub use self::settings::WhatsAppCloudSettings;
use crate::platform::backoff::Backoff;
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::http::{self, with_rate_limit};
use crate::platform::listener::ListenerSlot;
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, Button, Capabilities, ChatRef, ChatType, ConnectionState, Dialect,
    FileSource, InboundEvent, InboundMessage, LengthUnit, OutboundFileKind, OutboundMessage,
    SentMessage,
};
use crate::platform::{PlatformAdapter, download, markdown, split};

/// WhatsApp's text message limit.
const MAX_MESSAGE: usize = 4096;
/// `interactive.body.text` limit.
const MAX_INTERACTIVE_BODY: usize = 1024;
/// Reply buttons per message.
const MAX_REPLY_BUTTONS: usize = 3;
/// Rows of a list message.
const MAX_LIST_ROWS: usize = 10;
/// Chats whose last inbound message id is remembered for the typing indicator.
const LAST_IDS: usize = 1000;
/// The Cloud API's upload caps per kind.
const MAX_IMAGE: u64 = 5 * 1024 * 1024;
const MAX_AUDIO: u64 = 16 * 1024 * 1024;
const MAX_DOCUMENT: u64 = 100 * 1024 * 1024;

/// The last inbound message id of each chat (the read receipt and typing indicator attach to
/// one), bounded: the oldest chat is forgotten first.
#[derive(Debug, Default)]
struct LastIds {
    by_chat: HashMap<String, String>,
    order: VecDeque<String>,
}

impl LastIds {
    fn remember(&mut self, chat: &str, wamid: &str) {
        if self
            .by_chat
            .insert(chat.to_string(), wamid.to_string())
            .is_none()
        {
            self.order.push_back(chat.to_string());
            while self.order.len() > LAST_IDS {
                if let Some(old) = self.order.pop_front() {
                    self.by_chat.remove(&old);
                }
            }
        }
    }
}

/// The WhatsApp Cloud API adapter.
pub struct WhatsAppCloudAdapter {
    settings: WhatsAppCloudSettings,
    graph: Graph,
    caps: Capabilities,
    status: Arc<StatusCell>,
    last_ids: Arc<Mutex<LastIds>>,
    listener: ListenerSlot,
}

impl std::fmt::Debug for WhatsAppCloudAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WhatsAppCloudAdapter")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The core's event for a parsed webhook item.
fn to_event(item: Incoming, last_ids: &Mutex<LastIds>) -> InboundEvent {
    match item {
        Incoming::Message(m) => {
            lock(last_ids).remember(&m.from, &m.wamid);
            let attachments = m
                .media
                .into_iter()
                .map(|media| Attachment {
                    kind: media.kind,
                    file_name: media.file_name,
                    mime: media.mime,
                    size: None,
                    source: FileSource::PlatformId(media.id),
                })
                .collect();
            InboundEvent::Message(InboundMessage {
                chat: ChatRef::new(PLATFORM, ChatType::Direct, m.from.clone()),
                chat_name: m.name.clone(),
                message_id: m.wamid,
                user_id: m.from,
                user_name: m.name,
                text: m.text,
                attachments,
                reply_to: m.reply_to,
                mentions_bot: false,
                replies_to_bot: false,
                from_bot: false,
                deliver_to: None,
                skills: Vec::new(),
                received_at: m.sent_at.unwrap_or_else(SystemTime::now),
            })
        }
        Incoming::Press {
            wamid,
            from,
            name,
            message_id,
            data,
        } => {
            lock(last_ids).remember(&from, &wamid);
            InboundEvent::Button {
                chat: ChatRef::new(PLATFORM, ChatType::Direct, from.clone()),
                user_id: from,
                user_name: name,
                message_id,
                data,
            }
        }
    }
}

/// `text` cut to `max` characters, an ellipsis marking the cut (WhatsApp counts it).
fn cut(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The `interactive` object for `body` with `buttons`: reply buttons up to three, else a
/// list of up to ten rows (the full label as the row's description when the title is cut).
fn interactive(body: &str, buttons: &[Button]) -> Value {
    if buttons.len() <= MAX_REPLY_BUTTONS {
        let buttons: Vec<Value> = buttons
            .iter()
            .map(|b| json!({"type": "reply", "reply": {"id": b.data, "title": cut(&b.label, 20)}}))
            .collect();
        return json!({"type": "button", "body": {"text": body}, "action": {"buttons": buttons}});
    }
    let rows: Vec<Value> = buttons
        .iter()
        .take(MAX_LIST_ROWS)
        .map(|b| {
            let mut row = json!({"id": b.data, "title": cut(&b.label, 24)});
            if b.label.trim().chars().count() > 24 {
                row["description"] = json!(cut(&b.label, 72));
            }
            row
        })
        .collect();
    json!({
        "type": "list",
        "body": {"text": body},
        "action": {"button": "Choose", "sections": [{"title": "Options", "rows": rows}]},
    })
}

/// A MIME type for an outbound file, from its extension.
fn mime_of(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "webp" => "image/webp",
        "ogg" | "oga" | "opus" => "audio/ogg",
        "mp3" => "audio/mpeg",
        "m4a" => "audio/mp4",
        "aac" => "audio/aac",
        "amr" => "audio/amr",
        "mp4" => "video/mp4",
        "pdf" => "application/pdf",
        "txt" | "md" | "log" => "text/plain",
        "csv" => "text/csv",
        "json" => "application/json",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

/// The extension an inbound file gets from its MIME type (so the model's image loader and the
/// transcriber recognise it).
fn ext_of(mime: Option<&str>) -> &'static str {
    let primary = mime
        .and_then(|m| m.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match primary.as_str() {
        "image/jpeg" => "jpg",
        "image/png" => "png",
        "image/webp" => "webp",
        "audio/ogg" | "audio/opus" => "ogg",
        "audio/mpeg" => "mp3",
        "audio/mp4" | "audio/x-m4a" => "m4a",
        "audio/aac" => "aac",
        "audio/amr" => "amr",
        "video/mp4" => "mp4",
        "video/3gpp" => "3gp",
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        _ => "bin",
    }
}

impl WhatsAppCloudAdapter {
    pub fn new(
        settings: WhatsAppCloudSettings,
    ) -> Result<WhatsAppCloudAdapter, PlatformConfigError> {
        let client = http::client(PLATFORM)?;
        Ok(WhatsAppCloudAdapter {
            graph: Graph::new(client, &settings),
            settings,
            caps: Capabilities {
                max_message_len: MAX_MESSAGE,
                length_unit: LengthUnit::Chars,
                // The adapter converts to WhatsApp's formatting itself.
                markdown: Dialect::Plain,
                can_edit: false,
                can_delete: false,
                buttons: true,
                threads: false,
                typing: true,
                // The indicator lasts 25 seconds or until the answer arrives.
                typing_interval: Duration::from_secs(20),
                min_edit_interval: Duration::ZERO,
                progress_messages: true,
            },
            status: Arc::new(StatusCell::default()),
            last_ids: Arc::new(Mutex::new(LastIds::default())),
            listener: ListenerSlot::default(),
        })
    }

    /// Serves on an already bound listener instead of `webhook_host:webhook_port`.
    pub fn with_listener(self, listener: std::net::TcpListener) -> WhatsAppCloudAdapter {
        self.listener.preset(listener);
        self
    }

    /// Where the webhook listens, once it does.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr()
    }

    /// One message, rate limits waited out within the configured cap.
    async fn post(&self, body: Value) -> Result<String, PlatformError> {
        let id =
            with_rate_limit(self.settings.max_rate_limit_wait, || self.graph.send(&body)).await?;
        self.status.add_sent(1);
        Ok(id)
    }

    fn envelope(chat: &ChatRef, kind: &str, object: Value, reply_to: Option<&str>) -> Value {
        let mut body = json!({
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": chat.chat_id,
            "type": kind,
            kind: object,
        });
        if let Some(id) = reply_to {
            body["context"] = json!({"message_id": id});
        }
        body
    }

    /// Uploads `path` and sends it as `kind` (`image`, `audio`, `document`).
    async fn send_file(
        &self,
        chat: &ChatRef,
        kind: OutboundFileKind,
        path: &Path,
    ) -> Result<String, PlatformError> {
        let meta = tokio::fs::metadata(path)
            .await
            .map_err(|e| PlatformError::io(path, e))?;
        let mime = mime_of(path);
        // A photo WhatsApp cannot show as an image (too big, not JPEG/PNG) goes as a document.
        let wa_kind = match kind {
            OutboundFileKind::Photo
                if meta.len() <= MAX_IMAGE && matches!(mime, "image/jpeg" | "image/png") =>
            {
                "image"
            }
            OutboundFileKind::Voice if meta.len() <= MAX_AUDIO && mime.starts_with("audio/") => {
                "audio"
            }
            _ => "document",
        };
        let limit = match wa_kind {
            "image" => MAX_IMAGE,
            "audio" => MAX_AUDIO,
            _ => MAX_DOCUMENT,
        };
        if meta.len() > limit {
            return Err(PlatformError::TooLarge {
                what: path.display().to_string(),
                size: meta.len(),
                limit,
            });
        }
        let bytes = tokio::fs::read(path)
            .await
            .map_err(|e| PlatformError::io(path, e))?;
        let name = download::safe_file_name(path.file_name().and_then(|n| n.to_str()));
        let media_id = self.graph.upload(&name, mime, bytes).await?;
        let mut object = json!({"id": media_id});
        if wa_kind == "document" {
            object["filename"] = json!(name);
        }
        self.post(Self::envelope(chat, wa_kind, object, None)).await
    }

    /// Whether the access token may be sent to `url`: Meta's media hosts over HTTPS, or the
    /// configured Graph server itself.
    fn token_may_go_to(&self, url: &str) -> bool {
        if url.starts_with(&format!("{}/", self.settings.graph_url)) {
            return true;
        }
        let Ok(parsed) = reqwest::Url::parse(url) else {
            return false;
        };
        parsed.scheme() == "https"
            && parsed.host_str().is_some_and(|h| {
                let h = h.to_ascii_lowercase();
                [".fbsbx.com", ".facebook.com", ".fbcdn.net", ".whatsapp.net"]
                    .iter()
                    .any(|d| h.ends_with(d))
            })
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for WhatsAppCloudAdapter {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken) {
        let mut backoff = Backoff::transient();
        while !shutdown.is_cancelled() {
            self.status.set_state(ConnectionState::Connecting);
            let Some(listener) = self
                .listener
                .bind_retrying(
                    &self.settings.host,
                    self.settings.port,
                    &self.status,
                    &mut backoff,
                    &shutdown,
                )
                .await
            else {
                break;
            };
            let last_ids = Arc::clone(&self.last_ids);
            let endpoint = Arc::new(webhook::Endpoint::new(
                self.settings.clone(),
                inbound.clone(),
                shutdown.clone(),
                Arc::clone(&self.status),
                Box::new(move |item| to_event(item, &last_ids)),
            ));
            self.status.set_state(ConnectionState::Connected);
            // Said once per start, so `hermes gateway status` shows why nothing arrives.
            if self.settings.app_secret.is_empty() {
                self.status
                    .error("WHATSAPP_CLOUD_APP_SECRET is not set: webhook POSTs are refused (503)");
            } else if self.settings.verify_token.is_empty() {
                self.status.error(
                    "WHATSAPP_CLOUD_VERIFY_TOKEN is not set: Meta's subscription handshake fails",
                );
            }
            backoff.reset();
            // The API server's connection handling (header deadline, connection cap): returns
            // at shutdown.
            crate::api_server::listener::serve(
                listener,
                webhook::router(endpoint),
                Default::default(),
                shutdown.clone(),
            )
            .await;
        }
        self.status.set_state(ConnectionState::Stopped);
    }

    async fn send(
        &self,
        chat: &ChatRef,
        message: &OutboundMessage,
    ) -> Result<SentMessage, PlatformError> {
        let parts = split::render_parts(
            &markdown::render_whatsapp(&message.text),
            Dialect::Plain,
            MAX_MESSAGE,
            LengthUnit::Chars,
            true,
        );
        let mut ids = Vec::new();
        let last = parts.len().saturating_sub(1);
        for (i, part) in parts.iter().enumerate() {
            let reply_to = if i == 0 {
                message.reply_to.as_deref()
            } else {
                None
            };
            let with_buttons = i == last && !message.buttons.is_empty();
            if with_buttons && part.chars().count() <= MAX_INTERACTIVE_BODY {
                let object = interactive(part, &message.buttons);
                ids.push(
                    self.post(Self::envelope(chat, "interactive", object, reply_to))
                        .await?,
                );
                continue;
            }
            let text = json!({"body": part, "preview_url": true});
            ids.push(
                self.post(Self::envelope(chat, "text", text, reply_to))
                    .await?,
            );
            if with_buttons {
                // The question was too long for a button message's body.
                let object = interactive("Choose:", &message.buttons);
                ids.push(
                    self.post(Self::envelope(chat, "interactive", object, None))
                        .await?,
                );
            }
        }
        if parts.is_empty() && !message.buttons.is_empty() {
            let object = interactive("Choose:", &message.buttons);
            ids.push(
                self.post(Self::envelope(chat, "interactive", object, None))
                    .await?,
            );
        }
        for file in &message.files {
            ids.push(self.send_file(chat, file.kind, &file.path).await?);
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message has no text and no files".into(),
        })
    }

    async fn typing(&self, chat: &ChatRef) -> Result<(), PlatformError> {
        let Some(wamid) = lock(&self.last_ids).by_chat.get(&chat.chat_id).cloned() else {
            // Nothing from this chat yet (or forgotten): nothing to attach the indicator to.
            return Ok(());
        };
        self.graph
            .messages(&json!({
                "messaging_product": "whatsapp",
                "status": "read",
                "message_id": wamid,
                "typing_indicator": {"type": "text"},
            }))
            .await?;
        Ok(())
    }

    async fn download(
        &self,
        attachment: &Attachment,
        dir: &Path,
        max_bytes: u64,
    ) -> Result<PathBuf, PlatformError> {
        let FileSource::PlatformId(media_id) = &attachment.source else {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "not a WhatsApp media id".into(),
            });
        };
        if !events::is_media_id(media_id) {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "malformed media id".into(),
            });
        }
        let info = self.graph.media_info(media_id).await?;
        let name = attachment.file_name.clone().unwrap_or_else(|| {
            format!(
                "{media_id}.{}",
                ext_of(info.mime.as_deref().or(attachment.mime.as_deref()))
            )
        });
        if max_bytes > 0
            && let Some(size) = info.size
            && size > max_bytes
        {
            return Err(PlatformError::TooLarge {
                what: name,
                size,
                limit: max_bytes,
            });
        }
        if !self.token_may_go_to(&info.url) {
            return Err(PlatformError::Protocol {
                platform: PLATFORM,
                message: "the media URL is not on a Meta host; not sending the token there".into(),
            });
        }
        download::fetch(
            PLATFORM,
            self.graph
                .client
                .get(&info.url)
                .bearer_auth(&self.settings.access_token),
            "media",
            dir,
            Some(&name),
            max_bytes,
        )
        .await
    }

    fn status(&self) -> AdapterStatus {
        self.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        let number = self.graph.phone_number().await?;
        let display = number["display_phone_number"]
            .as_str()
            .unwrap_or(&self.settings.phone_number_id);
        let mut line = display.to_string();
        if let Some(name) = number["verified_name"].as_str().filter(|n| !n.is_empty()) {
            line.push_str(&format!(" ({name})"));
        }
        line.push_str(&format!(
            " on {}",
            crate::platform::url_host(&self.settings.graph_url)
        ));
        Ok(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buttons_become_reply_buttons_or_a_list() {
        let three = vec![
            Button::new("Approve once", "g:a:1:once"),
            Button::new("A label far longer than twenty", "g:a:1:x"),
            Button::new("Deny", "g:a:1:deny"),
        ];
        let v = interactive("Run it?", &three);
        assert_eq!(v["type"], "button");
        assert_eq!(v["action"]["buttons"][0]["reply"]["id"], "g:a:1:once");
        let title = v["action"]["buttons"][1]["reply"]["title"]
            .as_str()
            .unwrap();
        assert_eq!(title.chars().count(), 20);
        assert!(title.ends_with('…'));
        let mut four = three.clone();
        four.push(Button::new("Always", "g:a:1:always"));
        let v = interactive("Run it?", &four);
        assert_eq!(v["type"], "list");
        let rows = v["action"]["sections"][0]["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[3]["id"], "g:a:1:always");
        assert_eq!(rows[1]["description"], "A label far longer than twenty");
    }

    #[test]
    fn the_last_ids_are_bounded() {
        let mut ids = LastIds::default();
        for i in 0..(LAST_IDS + 10) {
            ids.remember(&i.to_string(), "w");
        }
        ids.remember("5000", "w2");
        assert_eq!(ids.by_chat.len(), LAST_IDS);
        assert!(!ids.by_chat.contains_key("0"));
    }

    #[test]
    fn file_types() {
        assert_eq!(mime_of(Path::new("/t/a.PNG")), "image/png");
        assert_eq!(mime_of(Path::new("/t/a")), "application/octet-stream");
        assert_eq!(ext_of(Some("audio/ogg; codecs=opus")), "ogg");
        assert_eq!(ext_of(None), "bin");
    }
}
