//! DingTalk (钉钉) in Stream mode, as the Python Hermes: the app registers a Stream connection
//! ([`api`]: client id and secret → endpoint and ticket), opens the WebSocket, acknowledges
//! every frame ([`stream`]: `ping` answered, `disconnect` followed by a new connection) and
//! takes the robot's messages from the `/v1.0/im/bot/messages/get` callbacks. Nothing needs a
//! public URL. The connection is re-registered with backoff whenever it drops; a connection
//! silent for a minute (our WebSocket pings unanswered) counts as dropped.
//!
//! Chats are conversations (`cid…`), one-to-one (`conversationType` 1) or groups (2); users are
//! staff ids (`senderStaffId`, lower-cased as Python compares them; the opaque `senderId` when
//! there is none). In groups the bot answers every message unless `require_mention` is set
//! (Python's default), then only when @mentioned (`isInAtList`), on a wake-word pattern, or in
//! a free-response chat; `allowed_chats` limits the groups it listens in at all.
//!
//! Answers are markdown messages (`{"msgtype": "markdown", "markdown": {"title": "Hermes",
//! "text"}}`) posted to the message's `sessionWebhook` while it is valid (DingTalk's own hosts
//! only, five minutes' margin before it expires, as Python), split at Python's 20,000
//! characters. A chat without a valid session webhook is reached through the robot API with
//! the app's access token (`oToMessages/batchSend` to the user of a one-to-one chat seen
//! before, `groupMessages/send` for any other conversation id), or when the robot API refuses,
//! through the static robot webhook (`DINGTALK_WEBHOOK_URL`, a text message, as Python's cron
//! delivery). DingTalk robots cannot edit or delete, have no
//! typing indicator, and Python's AI cards (a template configured in DingTalk) are not built:
//! approvals are asked as text. Pictures and files users send are fetched through the robot's
//! `messageFiles/download` when the core asks.

mod api;
pub mod settings;
mod stream;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_util::sync::CancellationToken;

use self::api::OpenApi;
pub use self::settings::DingTalkSettings;
use self::settings::PLATFORM;
use self::stream::{BotMessage, Frame};
use crate::platform::backoff::{self, Backoff};
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::gate::{self, GateInput, RecentSet};
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, AttachmentKind, Capabilities, ChatRef, ChatType, ConnectionState,
    Dialect, FileSource, InboundEvent, InboundMessage, LengthUnit, OutboundMessage, SentMessage,
};
use crate::platform::{PlatformAdapter, download, http, split, ws};

/// Python's `MAX_MESSAGE_LENGTH`.
const MAX_MESSAGE: usize = 20_000;
/// Chats whose reply route is remembered (Python keeps 500 session webhooks).
const CHATS: usize = 500;
/// Message ids remembered against redelivery (Python's deduplicator keeps 1,000).
const SEEN: usize = 1000;
/// A session webhook this close to its expiry is not used (Python's margin).
const WEBHOOK_MARGIN_MS: u64 = 5 * 60 * 1000;
/// Our WebSocket ping interval, and how long a silent connection is trusted.
const PING_EVERY: Duration = Duration::from_secs(20);
const SILENCE: Duration = Duration::from_secs(60);
/// Connect + TLS + upgrade deadline.
const CONNECT_DEADLINE: Duration = Duration::from_secs(30);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// How a chat is answered.
#[derive(Debug, Clone, Default)]
struct Route {
    group: bool,
    /// The last message's session webhook and its expiry (ms; 0 unknown).
    webhook: Option<(String, u64)>,
    /// The user of a one-to-one chat, for the robot API.
    staff_id: String,
}

/// The chats seen, bounded: the oldest is forgotten first.
#[derive(Debug, Default)]
struct Routes {
    map: HashMap<String, Route>,
    order: VecDeque<String>,
}

impl Routes {
    fn remember(&mut self, chat: &str, route: Route) {
        if self.map.insert(chat.to_string(), route).is_none() {
            self.order.push_back(chat.to_string());
            while self.order.len() > CHATS {
                if let Some(old) = self.order.pop_front() {
                    self.map.remove(&old);
                }
            }
        }
    }
}

/// Python's `_normalize_markdown`: a blank line before a numbered list (DingTalk's renderer
/// needs it) and fenced code blocks not indented.
fn normalize_markdown(text: &str) -> String {
    let numbered = |l: &str| {
        let l = l.trim();
        let digits = l.chars().take_while(char::is_ascii_digit).count();
        digits > 0
            && l[digits..].starts_with('.')
            && l[digits + 1..].starts_with(char::is_whitespace)
    };
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if i > 0 && numbered(line) {
            let prev = lines[i - 1];
            if !prev.trim().is_empty() && !numbered(prev) {
                out.push("");
            }
        }
        if line.trim_start().starts_with("```") {
            out.push(line.trim_start());
        } else {
            out.push(line);
        }
    }
    out.join("\n")
}

struct Shared {
    settings: DingTalkSettings,
    api: OpenApi,
    status: Arc<StatusCell>,
    routes: Mutex<Routes>,
    seen: Mutex<RecentSet>,
}

impl Shared {
    /// The core's event for a robot message, or `None` when it is not for the bot.
    fn to_event(&self, m: BotMessage) -> Option<InboundEvent> {
        if !lock(&self.seen).insert(&m.msg_id) {
            return None;
        }
        let chat_id = m.conversation_id.clone();
        let staff = m.sender_staff_id.to_lowercase();
        let mut route = Route {
            group: m.group,
            webhook: None,
            staff_id: m.sender_staff_id.clone(),
        };
        if self.settings.trusts_webhook(&m.session_webhook) {
            route.webhook = Some((m.session_webhook.clone(), m.session_webhook_expires));
        }
        let s = &self.settings;
        let mentioned = m.in_at_list || gate::matches_patterns(&s.mentions, &m.text);
        let input = GateInput {
            chat_ids: vec![chat_id.as_str()],
            direct: !m.group,
            mentioned,
            replied_to_bot: false,
            in_bot_thread: false,
        };
        if !gate::admits(&s.mentions, &input) {
            return None;
        }
        // Remembered only for messages the bot answers: the route is what it answers through.
        lock(&self.routes).remember(&chat_id, route);
        let attachments: Vec<Attachment> = m
            .media
            .iter()
            .map(|media| Attachment {
                kind: match media.kind.as_str() {
                    "picture" | "image" => AttachmentKind::Image,
                    "audio" => AttachmentKind::Voice,
                    "video" => AttachmentKind::Video,
                    _ => AttachmentKind::Document,
                },
                file_name: media.file_name.clone(),
                mime: None,
                size: None,
                source: FileSource::PlatformId(media.download_code.clone()),
            })
            .collect();
        if m.text.is_empty() && attachments.is_empty() {
            return None;
        }
        let received_at = if m.create_at > 0 {
            UNIX_EPOCH + Duration::from_millis(m.create_at)
        } else {
            SystemTime::now()
        };
        let kind = if m.group {
            ChatType::Group
        } else {
            ChatType::Direct
        };
        Some(InboundEvent::Message(InboundMessage {
            chat: ChatRef::new(PLATFORM, kind, chat_id),
            chat_name: m.conversation_title,
            message_id: m.msg_id,
            user_id: if staff.is_empty() { m.sender_id } else { staff },
            user_name: Some(m.sender_nick).filter(|n| !n.is_empty()),
            text: m.text,
            attachments,
            reply_to: None,
            mentions_bot: mentioned,
            replies_to_bot: false,
            from_bot: false,
            deliver_to: None,
            skills: Vec::new(),
            received_at,
        }))
    }

    /// One Stream connection, from registration to its end; `Ok` when the server asked for a
    /// new connection or shutdown came, `Err` when it failed or dropped.
    async fn connection(
        &self,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
        backoff: &mut Backoff,
    ) -> Result<(), PlatformError> {
        let ticket = self.api.open_connection().await?;
        let mut socket = ws::connect(&ticket.url(), CONNECT_DEADLINE)
            .await
            .map_err(|message| PlatformError::Network {
                platform: PLATFORM,
                message,
            })?;
        self.status.set_state(ConnectionState::Connected);
        backoff.reset();
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.tick().await;
        let mut last_heard = tokio::time::Instant::now();
        let dropped = |message: String| PlatformError::Network {
            platform: PLATFORM,
            message,
        };
        loop {
            let frame = tokio::select! {
                _ = shutdown.cancelled() => {
                    let _ = socket.close(None).await;
                    return Ok(());
                }
                _ = ping.tick() => {
                    if last_heard.elapsed() > SILENCE {
                        return Err(dropped(format!("no frame for {}s", SILENCE.as_secs())));
                    }
                    socket
                        .send(WsMessage::Ping(Vec::new().into()))
                        .await
                        .map_err(|e| dropped(format!("stream: {e}")))?;
                    continue;
                }
                frame = socket.next() => frame,
            };
            last_heard = tokio::time::Instant::now();
            let text = match frame {
                Some(Ok(WsMessage::Text(t))) => t,
                Some(Ok(WsMessage::Close(_))) | None => {
                    return Err(dropped("the stream was closed".into()));
                }
                Some(Err(e)) => return Err(dropped(format!("stream: {e}"))),
                Some(Ok(_)) => continue,
            };
            let (ack, message, disconnect) = match stream::parse(&text) {
                Frame::Ack { ack } => (ack, None, false),
                Frame::Disconnect { ack } => (ack, None, true),
                Frame::Message { ack, message } => (ack, Some(message), false),
                Frame::Invalid => {
                    self.status
                        .error("ignored a stream frame that is not DingTalk's shape");
                    continue;
                }
            };
            // Acknowledged first: DingTalk redelivers what is not acknowledged in time, and
            // the answer may take minutes.
            socket
                .send(WsMessage::Text(ack.into()))
                .await
                .map_err(|e| dropped(format!("stream: {e}")))?;
            if disconnect {
                let _ = socket.close(None).await;
                return Ok(());
            }
            if let Some(message) = message
                && let Some(event) = self.to_event(*message)
            {
                if !crate::platform::deliver(inbound, event, shutdown).await {
                    return Ok(());
                }
                self.status.add_received();
            }
        }
    }
}

/// The DingTalk adapter.
pub struct DingTalkAdapter {
    shared: Arc<Shared>,
    caps: Capabilities,
}

impl std::fmt::Debug for DingTalkAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DingTalkAdapter")
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

/// An id for a message sent through a webhook, which gives none (Python makes one up too).
fn local_id() -> String {
    format!("dt-{:012x}", fastrand::u64(..) & 0xffff_ffff_ffff)
}

impl DingTalkAdapter {
    pub fn new(settings: DingTalkSettings) -> Result<DingTalkAdapter, PlatformConfigError> {
        let client = http::client(PLATFORM)?;
        Ok(DingTalkAdapter {
            shared: Arc::new(Shared {
                api: OpenApi::new(client, &settings),
                settings,
                status: Arc::new(StatusCell::default()),
                routes: Mutex::new(Routes::default()),
                seen: Mutex::new(RecentSet::new(SEEN)),
            }),
            caps: Capabilities {
                max_message_len: MAX_MESSAGE,
                length_unit: LengthUnit::Chars,
                // DingTalk's markdown messages render the model's markdown as written.
                markdown: Dialect::Plain,
                can_edit: false,
                can_delete: false,
                buttons: false,
                threads: false,
                typing: false,
                typing_interval: Duration::from_secs(5),
                min_edit_interval: Duration::ZERO,
                progress_messages: true,
            },
        })
    }

    /// Posts to a robot webhook (session or static); `{"errcode": 0}` is success.
    async fn post_webhook(&self, url: &str, body: &Value) -> Result<(), PlatformError> {
        let answer = self
            .shared
            .api
            .post("POST robot webhook", url, None, body)
            .await?;
        match answer["errcode"].as_i64() {
            None | Some(0) => Ok(()),
            Some(code) => Err(PlatformError::Api {
                platform: PLATFORM,
                status: 200,
                message: format!(
                    "robot webhook: errcode {code} {}",
                    answer["errmsg"].as_str().unwrap_or_default()
                ),
            }),
        }
    }

    /// Sends one part to `chat`; its id.
    async fn send_part(&self, chat: &ChatRef, text: &str) -> Result<String, PlatformError> {
        let route = lock(&self.shared.routes).map.get(&chat.chat_id).cloned();
        let markdown =
            json!({"msgtype": "markdown", "markdown": {"title": "Hermes", "text": text}});
        if let Some((url, expires)) = route.as_ref().and_then(|r| r.webhook.clone())
            && (expires == 0 || now_ms() + WEBHOOK_MARGIN_MS < expires)
        {
            self.post_webhook(&url, &markdown).await?;
            return Ok(local_id());
        }
        let s = &self.shared.settings;
        let param = json!({"title": "Hermes", "text": text}).to_string();
        let robot_id = |answer: Value| {
            answer["processQueryKey"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(local_id)
        };
        if let Some(route) = route
            .as_ref()
            .filter(|r| !r.group && !r.staff_id.is_empty())
        {
            let answer = self
                .shared
                .api
                .call(
                    "POST robot/oToMessages/batchSend",
                    "/v1.0/robot/oToMessages/batchSend",
                    &json!({"robotCode": s.robot_code, "userIds": [route.staff_id],
                            "msgKey": "sampleMarkdown", "msgParam": param}),
                )
                .await?;
            return Ok(robot_id(answer));
        }
        // A group, or a conversation not seen since the start (cron, `send_message`): only a
        // group can be reached by its id alone.
        let sent = self
            .shared
            .api
            .call(
                "POST robot/groupMessages/send",
                "/v1.0/robot/groupMessages/send",
                &json!({"msgParam": param, "msgKey": "sampleMarkdown",
                        "openConversationId": chat.chat_id, "robotCode": s.robot_code}),
            )
            .await;
        match sent {
            Ok(answer) => Ok(robot_id(answer)),
            // Python's out-of-process delivery: the static robot webhook, as text.
            Err(e) if !s.webhook_url.is_empty() && !e.is_transient() => {
                self.post_webhook(
                    &s.webhook_url,
                    &json!({"msgtype": "text", "text": {"content": text}}),
                )
                .await?;
                Ok(local_id())
            }
            Err(e) => Err(e),
        }
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for DingTalkAdapter {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken) {
        let shared = &self.shared;
        let status = &shared.status;
        let mut backoff = Backoff::transient();
        while !shutdown.is_cancelled() {
            status.set_state(ConnectionState::Connecting);
            match shared.connection(&inbound, &shutdown, &mut backoff).await {
                // Asked to reconnect (or shutting down): at once.
                Ok(()) => continue,
                Err(PlatformError::Unauthorized { message, .. }) => {
                    status.set_state(ConnectionState::Failed);
                    status.error(format!(
                        "DingTalk refused the app's credentials (check DINGTALK_CLIENT_ID and \
                         DINGTALK_CLIENT_SECRET): {message}"
                    ));
                    if !backoff::sleep_or_shutdown(backoff::FATAL_RETRY, &shutdown).await {
                        break;
                    }
                }
                Err(e) => {
                    status.set_state(ConnectionState::Reconnecting);
                    status.error(e.to_string());
                    if !backoff.wait(&shutdown).await {
                        break;
                    }
                }
            }
        }
        status.set_state(ConnectionState::Stopped);
    }

    async fn send(
        &self,
        chat: &ChatRef,
        message: &OutboundMessage,
    ) -> Result<SentMessage, PlatformError> {
        let text = normalize_markdown(message.text.trim());
        let parts =
            split::render_parts(&text, Dialect::Plain, MAX_MESSAGE, LengthUnit::Chars, true);
        let mut ids = Vec::new();
        for part in &parts {
            ids.push(self.send_part(chat, part).await?);
            self.shared.status.add_sent(1);
        }
        if !message.files.is_empty() {
            // Python's robot cannot send local files either; the text says what was meant.
            let names: Vec<String> = message
                .files
                .iter()
                .map(|f| {
                    f.path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                })
                .collect();
            let note = format!(
                "(files cannot be sent to DingTalk from here: {})",
                names.join(", ")
            );
            ids.push(self.send_part(chat, &note).await?);
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message has no text".into(),
        })
    }

    async fn download(
        &self,
        attachment: &Attachment,
        dir: &Path,
        max_bytes: u64,
    ) -> Result<PathBuf, PlatformError> {
        let FileSource::PlatformId(code) = &attachment.source else {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "not a DingTalk download code".into(),
            });
        };
        let answer = self
            .shared
            .api
            .call(
                "POST robot/messageFiles/download",
                "/v1.0/robot/messageFiles/download",
                &json!({"downloadCode": code, "robotCode": self.shared.settings.robot_code}),
            )
            .await?;
        let url = answer["downloadUrl"]
            .as_str()
            .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
            .ok_or(PlatformError::Protocol {
                platform: PLATFORM,
                message: "messageFiles/download gave no downloadUrl".into(),
            })?;
        let response = self
            .shared
            .api
            .client()
            .get(url)
            .timeout(Duration::from_secs(300))
            .send()
            .await
            .map_err(|e| http::network(PLATFORM, e))?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(PlatformError::Api {
                platform: PLATFORM,
                status,
                message: "the file download was refused".into(),
            });
        }
        let mime = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let ext = match mime.split(';').next().unwrap_or_default().trim() {
            "image/jpeg" => "jpg",
            "image/png" => "png",
            "image/gif" => "gif",
            "audio/amr" => "amr",
            "video/mp4" => "mp4",
            _ => "bin",
        };
        let name = attachment
            .file_name
            .clone()
            .unwrap_or_else(|| format!("dingtalk-file.{ext}"));
        download::save(PLATFORM, response, dir, Some(&name), max_bytes).await
    }

    fn status(&self) -> AdapterStatus {
        self.shared.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        // The access token is what every robot call needs: it proves the id and secret.
        self.shared.api.token().await?;
        let s = &self.shared.settings;
        Ok(format!(
            "app {} (robot {}) on {}",
            s.client_id,
            s.robot_code,
            crate::platform::url_host(&s.api_url)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_is_normalized_as_python_does() {
        assert_eq!(
            normalize_markdown("Steps:\n1. one\n2. two\n  ```sh\nls\n  ```"),
            "Steps:\n\n1. one\n2. two\n```sh\nls\n```"
        );
        assert_eq!(normalize_markdown("1. a\n\n2. b"), "1. a\n\n2. b");
        assert_eq!(
            normalize_markdown("version 1.5 is out"),
            "version 1.5 is out"
        );
    }

    #[test]
    fn routes_are_bounded() {
        let mut routes = Routes::default();
        for i in 0..(CHATS + 5) {
            routes.remember(&format!("cid{i}"), Route::default());
        }
        assert_eq!(routes.map.len(), CHATS);
        assert!(!routes.map.contains_key("cid0"));
    }
}
