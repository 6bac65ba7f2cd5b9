//! Feishu (open.feishu.cn) and Lark (open.larksuite.com) through the Open API: Feishu posts
//! events to our request URL ([`webhook`]: the `url_verification` challenge, encrypted and
//! signed deliveries, duplicates skipped), and answers go out through the IM API ([`api`],
//! with a cached tenant access token). The long-connection mode (protobuf frames over a
//! WebSocket, Python's default) is not built: `connection_mode` must be `webhook`.
//!
//! Chats are Feishu chats (`oc_…`), one-to-one (`p2p`) or groups; users are open ids
//! (`ou_…`). In groups the bot answers when @mentioned (`require_mention`, default on), when
//! a message replies to one of its own, or in free-response chats. Answers are `text`, or a
//! `post` with markdown when they contain any, split at Python's 8,000 characters, the first
//! part a reply to the user's message; buttons (approvals, clarify choices) make the last
//! part an interactive card whose button presses come back as `card.action.trigger`
//! callbacks. Edits replace a text or post (`PUT`) or a card, its buttons removed (`PATCH`);
//! deletes recall. Inbound images and files are fetched through the message resource API
//! when the core asks; outbound files are uploaded (`/im/v1/images`, `/im/v1/files`) and sent
//! by key. Feishu has no typing indicator. No reconnects: the listener runs until shutdown,
//! rebinding with backoff when it cannot bind.

mod api;
mod content;
mod crypto;
mod events;
pub mod settings;
mod webhook;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::api::{Body, Method, OpenApi};
use self::events::{Incoming, Message};
pub use self::settings::FeishuSettings;
use self::settings::PLATFORM;
use crate::platform::backoff::Backoff;
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::gate::{self, GateInput, RecentSet};
use crate::platform::http::{self, with_rate_limit};
use crate::platform::listener::ListenerSlot;
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, Capabilities, ChatRef, ChatType, ConnectionState, Dialect,
    FileSource, InboundEvent, InboundMessage, LengthUnit, OutboundFileKind, OutboundMessage,
    SentMessage,
};
use crate::platform::{PlatformAdapter, download, split};

/// Python's `MAX_MESSAGE_LENGTH` (a text message may be 150 KB, a card 30 KB).
const MAX_MESSAGE: usize = 8000;
/// The longest part sent as a card's markdown (its request is capped at 30 KB).
const MAX_CARD_TEXT_BYTES: usize = 24 * 1024;
/// Chats whose kind (p2p or group) is remembered, for button presses.
const CHATS: usize = 4096;
/// The bot's own message ids remembered (replies to the bot, card edits).
const SENT: usize = 2048;
/// Upload caps: images 10 MB, files 30 MB.
const MAX_IMAGE: u64 = 10 * 1024 * 1024;
const MAX_FILE: u64 = 30 * 1024 * 1024;
/// Reply targets withdrawn or gone: the answer goes to the chat instead (Python).
const REPLY_FALLBACK_CODES: &[&str] = &["code 230011 ", "code 231003 "];
/// How often an unknown bot identity is asked for again.
const IDENTITY_RETRY: Duration = Duration::from_secs(60);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether each chat seen is a group, bounded: the oldest chat is forgotten first.
#[derive(Debug, Default)]
struct ChatKinds {
    group: HashMap<String, bool>,
    order: VecDeque<String>,
}

impl ChatKinds {
    fn remember(&mut self, chat: &str, group: bool) {
        if self.group.insert(chat.to_string(), group).is_none() {
            self.order.push_back(chat.to_string());
            while self.order.len() > CHATS {
                if let Some(old) = self.order.pop_front() {
                    self.group.remove(&old);
                }
            }
        }
    }
}

/// What the webhook's conversion and the adapter share.
struct Shared {
    settings: FeishuSettings,
    api: OpenApi,
    status: Arc<StatusCell>,
    /// The bot's open id: configured, or asked from `/bot/v3/info`.
    bot_open_id: Mutex<Option<String>>,
    identity_asked: Mutex<Option<Instant>>,
    chats: Mutex<ChatKinds>,
    sent: Mutex<RecentSet>,
    cards: Mutex<RecentSet>,
}

impl Shared {
    /// `GET /open-apis/bot/v3/info`: `{"bot": {"app_name", "open_id", …}}`.
    async fn bot_info(&self) -> Result<Value, PlatformError> {
        let answer = self
            .api
            .call(
                Method::Get,
                "/open-apis/bot/v3/info",
                Body::None,
                "GET bot info",
            )
            .await?;
        Ok(answer["bot"].clone())
    }

    /// The bot's open id, asked for at most once a minute while unknown.
    async fn bot_open_id(&self) -> Option<String> {
        if let Some(id) = lock(&self.bot_open_id).clone() {
            return Some(id);
        }
        {
            let mut asked = lock(&self.identity_asked);
            if asked.is_some_and(|t| t.elapsed() < IDENTITY_RETRY) {
                return None;
            }
            *asked = Some(Instant::now());
        }
        match self.bot_info().await {
            Ok(bot) => {
                let id = bot["open_id"]
                    .as_str()
                    .filter(|i| events::is_id(i))?
                    .to_string();
                *lock(&self.bot_open_id) = Some(id.clone());
                Some(id)
            }
            Err(e) => {
                self.status
                    .error(format!("cannot learn the bot's open id for @mentions: {e}"));
                None
            }
        }
    }

    /// Whether one of `m`'s mentions is the bot (ids first, the name only without ids).
    fn is_bot(&self, mention: &events::Mention, open_id: Option<&str>) -> bool {
        let s = &self.settings;
        if let (Some(a), Some(b)) = (mention.open_id.as_deref(), open_id) {
            return a == b;
        }
        if let Some(a) = mention.user_id.as_deref()
            && !s.bot_user_id.is_empty()
        {
            return a == s.bot_user_id;
        }
        !s.bot_name.is_empty() && mention.name.as_deref() == Some(s.bot_name.as_str())
    }

    /// The core's event for a message, or `None` when it is not for the bot.
    async fn message_event(&self, m: Message) -> Option<InboundEvent> {
        lock(&self.chats).remember(&m.chat_id, m.group);
        let open_id = if m.group || m.sender_is_bot {
            self.bot_open_id().await
        } else {
            lock(&self.bot_open_id).clone()
        };
        if open_id.as_deref() == Some(m.sender.as_str()) {
            return None;
        }
        // `@_all` is Feishu's @everyone, which Python counts as a mention.
        let mut mentioned = m.text.contains("@_all");
        let mut text = m.text.clone();
        for mention in &m.mentions {
            if self.is_bot(mention, open_id.as_deref()) {
                mentioned = true;
                text = text.replace(&mention.key, "");
            } else if let Some(name) = &mention.name {
                text = text.replace(&mention.key, &format!("@{name}"));
            }
        }
        let text = text.trim().to_string();
        let s = &self.settings;
        let mentioned = mentioned || gate::matches_patterns(&s.mentions, &text);
        if m.sender_is_bot && !gate::admits_bot(s.allow_bots, mentioned) {
            return None;
        }
        let replied_to_bot = m
            .parent_id
            .as_deref()
            .is_some_and(|p| lock(&self.sent).contains(p));
        let input = GateInput {
            chat_ids: vec![m.chat_id.as_str()],
            direct: !m.group,
            mentioned,
            replied_to_bot,
            in_bot_thread: false,
        };
        if !gate::admits(&s.mentions, &input) {
            return None;
        }
        let kind = if m.group {
            ChatType::Group
        } else {
            ChatType::Direct
        };
        let attachments = m
            .resources
            .into_iter()
            .map(|r| Attachment {
                kind: r.kind,
                file_name: r.file_name,
                mime: None,
                size: None,
                source: FileSource::PlatformId(format!(
                    "{}/{}/{}",
                    m.message_id, r.api_type, r.key
                )),
            })
            .collect();
        Some(InboundEvent::Message(InboundMessage {
            chat: ChatRef::new(PLATFORM, kind, m.chat_id.clone()),
            chat_name: None,
            message_id: m.message_id,
            user_id: m.sender,
            user_name: None,
            text,
            attachments,
            reply_to: m.parent_id,
            mentions_bot: mentioned,
            replies_to_bot: replied_to_bot,
            from_bot: m.sender_is_bot,
            deliver_to: None,
            skills: Vec::new(),
            received_at: m.sent_at.unwrap_or_else(SystemTime::now),
        }))
    }

    async fn to_event(&self, item: Incoming) -> Option<InboundEvent> {
        match item {
            Incoming::Message(m) => self.message_event(m).await,
            Incoming::Press {
                operator,
                chat_id,
                message_id,
                data,
                ..
            } => {
                // The callback does not say the chat's kind; the messages seen from it do.
                let group = lock(&self.chats).group.get(&chat_id).copied();
                let kind = if group == Some(true) {
                    ChatType::Group
                } else {
                    ChatType::Direct
                };
                Some(InboundEvent::Button {
                    chat: ChatRef::new(PLATFORM, kind, chat_id),
                    user_id: operator,
                    user_name: None,
                    message_id,
                    data,
                })
            }
        }
    }
}

/// The Feishu / Lark adapter.
pub struct FeishuAdapter {
    shared: Arc<Shared>,
    caps: Capabilities,
    listener: ListenerSlot,
}

impl std::fmt::Debug for FeishuAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeishuAdapter")
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

/// A fresh idempotency key: Feishu sends a message once per `uuid` within an hour.
fn request_uuid() -> String {
    format!(
        "hermes-{:016x}{:016x}",
        fastrand::u64(..),
        fastrand::u64(..)
    )
}

/// The extension a downloaded file gets from its MIME type.
fn ext_of(mime: &str) -> &'static str {
    match mime.split(';').next().unwrap_or_default().trim() {
        "image/jpeg" => "jpg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "audio/ogg" | "audio/opus" => "ogg",
        "audio/mpeg" => "mp3",
        "video/mp4" => "mp4",
        "application/pdf" => "pdf",
        "text/plain" => "txt",
        _ => "bin",
    }
}

/// The `file_type` of an upload, by extension (Python's table).
fn file_type(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "ogg" | "opus" => "opus",
        "mp4" | "mov" | "avi" | "m4v" => "mp4",
        "pdf" => "pdf",
        "doc" | "docx" => "doc",
        "xls" | "xlsx" => "xls",
        "ppt" | "pptx" => "ppt",
        _ => "stream",
    }
}

fn is_image(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    matches!(
        ext.as_str(),
        "jpg" | "jpeg" | "png" | "gif" | "webp" | "bmp"
    )
}

impl FeishuAdapter {
    pub fn new(settings: FeishuSettings) -> Result<FeishuAdapter, PlatformConfigError> {
        let client = http::client(PLATFORM)?;
        let bot_open_id = Some(settings.bot_open_id.clone()).filter(|i| !i.is_empty());
        Ok(FeishuAdapter {
            shared: Arc::new(Shared {
                api: OpenApi::new(client, &settings),
                settings,
                status: Arc::new(StatusCell::default()),
                bot_open_id: Mutex::new(bot_open_id),
                identity_asked: Mutex::new(None),
                chats: Mutex::new(ChatKinds::default()),
                sent: Mutex::new(RecentSet::new(SENT)),
                cards: Mutex::new(RecentSet::new(SENT)),
            }),
            caps: Capabilities {
                max_message_len: MAX_MESSAGE,
                length_unit: LengthUnit::Chars,
                // `post` messages render markdown as written.
                markdown: Dialect::Plain,
                can_edit: true,
                can_delete: true,
                buttons: true,
                threads: false,
                typing: false,
                typing_interval: Duration::from_secs(5),
                min_edit_interval: Duration::from_secs(1),
                progress_messages: true,
            },
            listener: ListenerSlot::default(),
        })
    }

    /// Serves on an already bound listener instead of `webhook_host:webhook_port`.
    pub fn with_listener(self, listener: std::net::TcpListener) -> FeishuAdapter {
        self.listener.preset(listener);
        self
    }

    /// Where the webhook listens, once it does.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr()
    }

    /// Sends one message, as a reply when `reply_to` is given (falling back to the chat when
    /// the message replied to is gone); its id.
    async fn create(
        &self,
        chat: &ChatRef,
        msg_type: &str,
        content: String,
        reply_to: Option<&str>,
    ) -> Result<String, PlatformError> {
        let api = &self.shared.api;
        let wait = self.shared.settings.max_rate_limit_wait;
        let uuid = request_uuid();
        let mut answer = None;
        if let Some(parent) = reply_to.filter(|p| events::is_id(p)) {
            let body = json!({"msg_type": msg_type, "content": content, "uuid": uuid});
            let path = format!("/open-apis/im/v1/messages/{parent}/reply");
            match with_rate_limit(wait, || {
                api.call(Method::Post, &path, Body::Json(body.clone()), "POST reply")
            })
            .await
            {
                Ok(a) => answer = Some(a),
                Err(PlatformError::Api { message, .. })
                    if REPLY_FALLBACK_CODES.iter().any(|c| message.contains(c)) => {}
                Err(e) => return Err(e),
            }
        }
        let answer = match answer {
            Some(a) => a,
            None => {
                if !events::is_id(&chat.chat_id) {
                    return Err(PlatformError::Invalid {
                        platform: PLATFORM,
                        message: format!("{:?} is not a Feishu chat id", chat.chat_id),
                    });
                }
                let body = json!({
                    "receive_id": chat.chat_id,
                    "msg_type": msg_type,
                    "content": content,
                    "uuid": uuid,
                });
                with_rate_limit(wait, || {
                    api.call(
                        Method::Post,
                        "/open-apis/im/v1/messages?receive_id_type=chat_id",
                        Body::Json(body.clone()),
                        "POST messages",
                    )
                })
                .await?
            }
        };
        let id = answer["message_id"]
            .as_str()
            .filter(|i| events::is_id(i))
            .ok_or(PlatformError::Protocol {
                platform: PLATFORM,
                message: "the send gave no message_id".into(),
            })?
            .to_string();
        lock(&self.shared.sent).insert(&id);
        if msg_type == "interactive" {
            lock(&self.shared.cards).insert(&id);
        }
        self.shared.status.add_sent(1);
        Ok(id)
    }

    /// Uploads `path` and sends it as an image or a file.
    async fn send_file(
        &self,
        chat: &ChatRef,
        kind: OutboundFileKind,
        path: &Path,
    ) -> Result<String, PlatformError> {
        let meta = tokio::fs::metadata(path)
            .await
            .map_err(|e| PlatformError::io(path, e))?;
        let as_image = is_image(path) && meta.len() <= MAX_IMAGE && kind != OutboundFileKind::Voice;
        if meta.len() > MAX_FILE {
            return Err(PlatformError::TooLarge {
                what: path.display().to_string(),
                size: meta.len(),
                limit: MAX_FILE,
            });
        }
        let bytes = tokio::fs::read(path)
            .await
            .map_err(|e| PlatformError::io(path, e))?;
        let name = download::safe_file_name(path.file_name().and_then(|n| n.to_str()));
        let api = &self.shared.api;
        if as_image {
            let form = move || {
                let part = reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone());
                reqwest::multipart::Form::new()
                    .text("image_type", "message")
                    .part("image", part)
            };
            let data = api
                .call(
                    Method::Post,
                    "/open-apis/im/v1/images",
                    Body::Form(Box::new(form)),
                    "POST images",
                )
                .await?;
            let key = data["image_key"].as_str().unwrap_or_default();
            return self
                .create(chat, "image", json!({"image_key": key}).to_string(), None)
                .await;
        }
        let file_type = file_type(path);
        let form = move || {
            let part = reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone());
            reqwest::multipart::Form::new()
                .text("file_type", file_type)
                .text("file_name", name.clone())
                .part("file", part)
        };
        let data = api
            .call(
                Method::Post,
                "/open-apis/im/v1/files",
                Body::Form(Box::new(form)),
                "POST files",
            )
            .await?;
        let key = data["file_key"].as_str().unwrap_or_default();
        let msg_type = if file_type == "opus" { "audio" } else { "file" };
        self.create(chat, msg_type, json!({"file_key": key}).to_string(), None)
            .await
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for FeishuAdapter {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken) {
        let status = Arc::clone(&self.shared.status);
        let mut backoff = Backoff::transient();
        while !shutdown.is_cancelled() {
            status.set_state(ConnectionState::Connecting);
            let Some(listener) = self
                .listener
                .bind_retrying(
                    &self.shared.settings.host,
                    self.shared.settings.port,
                    &status,
                    &mut backoff,
                    &shutdown,
                )
                .await
            else {
                break;
            };
            let shared = Arc::clone(&self.shared);
            let endpoint = Arc::new(webhook::Endpoint::new(
                self.shared.settings.clone(),
                inbound.clone(),
                shutdown.clone(),
                Arc::clone(&status),
                Box::new(move |item| {
                    let shared = Arc::clone(&shared);
                    Box::pin(async move { shared.to_event(item).await })
                }),
            ));
            status.set_state(ConnectionState::Connected);
            backoff.reset();
            // Learned now so the first group message is not held up by it.
            let shared = Arc::clone(&self.shared);
            tokio::spawn(async move {
                shared.bot_open_id().await;
            });
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
        status.set_state(ConnectionState::Stopped);
    }

    async fn send(
        &self,
        chat: &ChatRef,
        message: &OutboundMessage,
    ) -> Result<SentMessage, PlatformError> {
        let text = message.text.trim();
        let parts = split::render_parts(text, Dialect::Plain, MAX_MESSAGE, LengthUnit::Chars, true);
        // Decided once, so every part of a split answer renders alike (Python #26841).
        let as_post = content::is_markdown(text);
        let mut ids = Vec::new();
        let last = parts.len().saturating_sub(1);
        for (i, part) in parts.iter().enumerate() {
            let reply_to = if i == 0 {
                message.reply_to.as_deref()
            } else {
                None
            };
            let with_buttons = i == last && !message.buttons.is_empty();
            if with_buttons && part.len() <= MAX_CARD_TEXT_BYTES {
                let card = content::card(part, &message.buttons).to_string();
                ids.push(self.create(chat, "interactive", card, reply_to).await?);
                continue;
            }
            let (msg_type, body) = content::text_or_post(part, as_post);
            ids.push(self.create(chat, msg_type, body, reply_to).await?);
            if with_buttons {
                // The question was too long for a card.
                let card = content::card("Choose:", &message.buttons).to_string();
                ids.push(self.create(chat, "interactive", card, None).await?);
            }
        }
        if parts.is_empty() && !message.buttons.is_empty() {
            let card = content::card("Choose:", &message.buttons).to_string();
            ids.push(self.create(chat, "interactive", card, None).await?);
        }
        for file in &message.files {
            ids.push(self.send_file(chat, file.kind, &file.path).await?);
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message has no text and no files".into(),
        })
    }

    async fn edit(&self, _chat: &ChatRef, id: &str, text: &str) -> Result<(), PlatformError> {
        if !events::is_id(id) {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "malformed message id".into(),
            });
        }
        let Some(text) = crate::platform::edit_text(text.trim(), &self.caps) else {
            return Ok(());
        };
        let path = format!("/open-apis/im/v1/messages/{id}");
        let api = &self.shared.api;
        if lock(&self.shared.cards).contains(id) {
            let card = content::card(&text, &[]).to_string();
            api.call(
                Method::Patch,
                &path,
                Body::Json(json!({"content": card})),
                "PATCH message",
            )
            .await?;
            return Ok(());
        }
        let (msg_type, body) = content::text_or_post(&text, content::is_markdown(&text));
        api.call(
            Method::Put,
            &path,
            Body::Json(json!({"msg_type": msg_type, "content": body})),
            "PUT message",
        )
        .await?;
        Ok(())
    }

    async fn delete(&self, _chat: &ChatRef, id: &str) -> Result<(), PlatformError> {
        if !events::is_id(id) {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "malformed message id".into(),
            });
        }
        self.shared
            .api
            .call(
                Method::Delete,
                &format!("/open-apis/im/v1/messages/{id}"),
                Body::None,
                "DELETE message",
            )
            .await?;
        Ok(())
    }

    async fn download(
        &self,
        attachment: &Attachment,
        dir: &Path,
        max_bytes: u64,
    ) -> Result<PathBuf, PlatformError> {
        let FileSource::PlatformId(source) = &attachment.source else {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "not a Feishu resource".into(),
            });
        };
        let mut pieces = source.splitn(3, '/');
        let (Some(message_id), Some(api_type), Some(key)) =
            (pieces.next(), pieces.next(), pieces.next())
        else {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "malformed resource reference".into(),
            });
        };
        if !events::is_id(message_id)
            || !events::is_id(key)
            || !matches!(api_type, "image" | "file")
        {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "malformed resource reference".into(),
            });
        }
        let request = self
            .shared
            .api
            .file_request(&format!(
                "/open-apis/im/v1/messages/{message_id}/resources/{key}?type={api_type}"
            ))
            .await?;
        let response = request
            .timeout(Duration::from_secs(300))
            .send()
            .await
            .map_err(|e| http::network(PLATFORM, e))?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let headers = response.headers().clone();
            let body = http::read_limited(PLATFORM, response, 64 * 1024).await?;
            api::classify("GET resource", status, &headers, &body)?;
            return Err(PlatformError::Api {
                platform: PLATFORM,
                status,
                message: "GET resource refused".into(),
            });
        }
        let mime = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let name = attachment
            .file_name
            .clone()
            .unwrap_or_else(|| format!("{key}.{}", ext_of(&mime)));
        download::save(PLATFORM, response, dir, Some(&name), max_bytes).await
    }

    fn status(&self) -> AdapterStatus {
        self.shared.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        let bot = self.shared.bot_info().await?;
        let name = bot["app_name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .unwrap_or(&self.shared.settings.app_id);
        let mut line = name.to_string();
        if let Some(id) = bot["open_id"].as_str().filter(|i| !i.is_empty()) {
            line.push_str(&format!(" ({id})"));
        }
        line.push_str(&format!(
            " on {}",
            crate::platform::url_host(&self.shared.settings.base_url)
        ));
        Ok(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_kinds_are_bounded() {
        let mut kinds = ChatKinds::default();
        for i in 0..(CHATS + 10) {
            kinds.remember(&format!("oc_{i}"), i % 2 == 0);
        }
        assert_eq!(kinds.group.len(), CHATS);
        assert!(!kinds.group.contains_key("oc_0"));
        assert_eq!(kinds.group.get(&format!("oc_{}", CHATS + 8)), Some(&true));
    }

    #[test]
    fn file_kinds() {
        assert_eq!(file_type(Path::new("/t/a.OGG")), "opus");
        assert_eq!(file_type(Path::new("/t/a.docx")), "doc");
        assert_eq!(file_type(Path::new("/t/a")), "stream");
        assert!(is_image(Path::new("/t/a.PNG")));
        assert_eq!(ext_of("image/png"), "png");
        assert_eq!(ext_of("image/jpeg; q=1"), "jpg");
        assert_eq!(ext_of(""), "bin");
        assert!(request_uuid().len() <= 50);
    }
}
