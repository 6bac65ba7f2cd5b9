//! Telegram through the Bot API: long polling (`getUpdates` with the offset that confirms
//! what was received, so nothing is delivered twice) or webhook mode (`setWebhook` with a
//! secret token, our HTTP endpoint checking it); MarkdownV2 answers split at 4096 UTF-16
//! units, with a plain-text retry when Telegram still refuses the markup; inline keyboards
//! for buttons (presses are answered with `answerCallbackQuery`); topics as threads; files
//! with `getFile` and `sendPhoto`/`sendDocument`/`sendVoice`; `retry_after` honoured.

mod api;
mod inbound;
pub mod settings;
mod webhook;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::api::{
    BotApi, CALL_TIMEOUT, File, Message, Update, is_conflict, is_not_modified, is_parse_error,
};
use self::inbound::{BotIdentity, Converted, GENERAL_TOPIC};
use self::settings::PLATFORM;
pub use self::settings::TelegramSettings;
use crate::platform::backoff::{Backoff, FATAL_RETRY, sleep_or_shutdown};
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::http::{self, with_rate_limit};
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, Button, Capabilities, ChatRef, ConnectionState, Dialect, FileSource,
    InboundEvent, LengthUnit, OutboundFile, OutboundFileKind, OutboundMessage, SentMessage,
};
use crate::platform::{PlatformAdapter, deliver, download, edit_text, split};

/// Telegram's limits.
const MAX_MESSAGE: usize = 4096;
const MAX_CALLBACK_DATA: usize = 64;
/// Bots may upload up to 50 MB.
const MAX_UPLOAD: u64 = 50 * 1024 * 1024;
/// The updates the adapter asks for.
const UPDATE_TYPES: &[&str] = &["message", "callback_query"];

/// The Telegram adapter.
pub struct TelegramAdapter {
    api: BotApi,
    caps: Capabilities,
    status: Arc<StatusCell>,
    me: Arc<Mutex<Option<BotIdentity>>>,
    /// Webhook mode: a listener bound before start (tests bind port 0 and register its URL).
    webhook_listener: Mutex<Option<std::net::TcpListener>>,
}

impl std::fmt::Debug for TelegramAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramAdapter").finish_non_exhaustive()
    }
}

/// How one connection ended.
enum SessionEnd {
    Shutdown,
    /// Retrying cannot help (rejected token).
    Fatal(PlatformError),
    Retry(String),
}

/// Handles received updates (shared by polling and the webhook endpoint).
pub(crate) struct Dispatcher {
    api: BotApi,
    status: Arc<StatusCell>,
    me: BotIdentity,
    inbound: mpsc::Sender<InboundEvent>,
    shutdown: CancellationToken,
}

impl Dispatcher {
    /// Converts and delivers one raw update; false when shutdown interrupted delivery.
    async fn handle(&self, raw: Value) -> bool {
        let update: Update = match serde_json::from_value(raw) {
            Ok(u) => u,
            Err(e) => {
                self.status.error(format!("unreadable update skipped: {e}"));
                return true;
            }
        };
        match inbound::convert(&update, &self.me, &self.api.settings) {
            Converted::Ignored => true,
            Converted::Event(event) => self.push(event).await,
            Converted::Button { callback_id, event } => {
                // Stop the button's spinner first; a failure here must not lose the press.
                let answer = self
                    .api
                    .call::<Value>(
                        "answerCallbackQuery",
                        &json!({"callback_query_id": callback_id}),
                        CALL_TIMEOUT,
                    )
                    .await;
                if let Err(e) = answer {
                    self.status.error(format!("answerCallbackQuery: {e}"));
                }
                match event {
                    Some(event) => self.push(event).await,
                    None => true,
                }
            }
        }
    }

    async fn push(&self, event: InboundEvent) -> bool {
        let delivered = deliver(&self.inbound, event, &self.shutdown).await;
        if delivered {
            self.status.add_received();
        }
        delivered
    }
}

impl TelegramAdapter {
    pub fn new(settings: TelegramSettings) -> Result<TelegramAdapter, PlatformConfigError> {
        let client = http::client(PLATFORM)?;
        Ok(TelegramAdapter {
            api: BotApi { client, settings },
            caps: Capabilities {
                max_message_len: MAX_MESSAGE,
                length_unit: LengthUnit::Utf16,
                markdown: Dialect::TelegramV2,
                can_edit: true,
                can_delete: true,
                buttons: true,
                threads: true,
                typing: true,
                typing_interval: Duration::from_secs(4),
                min_edit_interval: Duration::from_secs(1),
                progress_messages: true,
            },
            status: Arc::new(StatusCell::default()),
            me: Arc::new(Mutex::new(None)),
            webhook_listener: Mutex::new(None),
        })
    }

    /// Webhook mode on an already bound listener (instead of binding `host:port`).
    pub fn with_webhook_listener(self, listener: std::net::TcpListener) -> TelegramAdapter {
        *self
            .webhook_listener
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(listener);
        self
    }

    fn settings(&self) -> &TelegramSettings {
        &self.api.settings
    }

    async fn identify(&self) -> Result<BotIdentity, PlatformError> {
        #[derive(serde::Deserialize)]
        struct Me {
            id: i64,
            username: Option<String>,
        }
        let me: Me = self.api.call("getMe", &json!({}), CALL_TIMEOUT).await?;
        let identity = BotIdentity {
            id: me.id,
            username: me.username.unwrap_or_default(),
        };
        *self.me.lock().unwrap_or_else(PoisonError::into_inner) = Some(identity.clone());
        Ok(identity)
    }

    fn dispatcher(
        &self,
        me: BotIdentity,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
    ) -> Dispatcher {
        Dispatcher {
            api: self.api.clone(),
            status: Arc::clone(&self.status),
            me,
            inbound: inbound.clone(),
            shutdown: shutdown.clone(),
        }
    }

    async fn polling_session(
        &self,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
        first: &mut bool,
        backoff: &mut Backoff,
    ) -> SessionEnd {
        let me = match self.identify().await {
            Ok(me) => me,
            Err(e @ PlatformError::Unauthorized { .. }) => return SessionEnd::Fatal(e),
            Err(e) => return SessionEnd::Retry(format!("getMe: {e}")),
        };
        // A webhook left behind would make getUpdates fail with 409.
        let drop = *first && self.settings().drop_pending_updates;
        if let Err(e) = self
            .api
            .call::<Value>(
                "deleteWebhook",
                &json!({"drop_pending_updates": drop}),
                CALL_TIMEOUT,
            )
            .await
        {
            return SessionEnd::Retry(format!("deleteWebhook: {e}"));
        }
        *first = false;
        self.status.set_state(ConnectionState::Connected);
        let dispatcher = self.dispatcher(me, inbound, shutdown);
        let poll = self.settings().poll_timeout;
        let mut offset: Option<i64> = None;
        loop {
            let mut params = json!({"timeout": poll.as_secs(), "allowed_updates": UPDATE_TYPES});
            if let Some(o) = offset {
                params["offset"] = json!(o);
            }
            let result = tokio::select! {
                _ = shutdown.cancelled() => return SessionEnd::Shutdown,
                r = self.api.call::<Vec<Value>>("getUpdates", &params, poll + Duration::from_secs(15)) => r,
            };
            match result {
                Ok(updates) => {
                    backoff.reset();
                    self.status.set_state(ConnectionState::Connected);
                    for raw in updates {
                        let Some(id) = raw.get("update_id").and_then(Value::as_i64) else {
                            self.status.error("update without update_id skipped");
                            continue;
                        };
                        if offset.is_some_and(|o| id < o) {
                            continue;
                        }
                        offset = Some(id + 1);
                        if !dispatcher.handle(raw).await {
                            return SessionEnd::Shutdown;
                        }
                    }
                }
                Err(PlatformError::RateLimited { retry_after, .. }) => {
                    self.status.error(format!(
                        "getUpdates rate limited for {}s",
                        retry_after.as_secs()
                    ));
                    if !sleep_or_shutdown(retry_after, shutdown).await {
                        return SessionEnd::Shutdown;
                    }
                }
                Err(e @ PlatformError::Unauthorized { .. }) => return SessionEnd::Fatal(e),
                Err(e) if is_conflict(&e) => return SessionEnd::Retry(e.to_string()),
                Err(e) => {
                    // Network trouble: keep the offset, try again after a pause.
                    self.status.set_state(ConnectionState::Reconnecting);
                    self.status.error(e.to_string());
                    if !backoff.wait(shutdown).await {
                        return SessionEnd::Shutdown;
                    }
                }
            }
        }
    }

    async fn webhook_session(
        &self,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
        first: &mut bool,
    ) -> SessionEnd {
        let Some(mode) = self.settings().webhook.clone() else {
            return SessionEnd::Retry("webhook mode without settings".into());
        };
        let me = match self.identify().await {
            Ok(me) => me,
            Err(e @ PlatformError::Unauthorized { .. }) => return SessionEnd::Fatal(e),
            Err(e) => return SessionEnd::Retry(format!("getMe: {e}")),
        };
        let listener = {
            let given = self
                .webhook_listener
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match given.as_ref().map(std::net::TcpListener::try_clone) {
                Some(Ok(l)) => Ok(l),
                Some(Err(e)) => Err(e.to_string()),
                None => std::net::TcpListener::bind((mode.host.as_str(), mode.port))
                    .map_err(|e| format!("cannot listen on {}:{}: {e}", mode.host, mode.port)),
            }
        };
        let listener = match listener.and_then(|l| {
            l.set_nonblocking(true).map_err(|e| e.to_string())?;
            tokio::net::TcpListener::from_std(l).map_err(|e| e.to_string())
        }) {
            Ok(l) => l,
            Err(e) => return SessionEnd::Retry(e),
        };
        let drop = *first && self.settings().drop_pending_updates;
        let params = json!({
            "url": mode.url,
            "secret_token": mode.secret,
            "allowed_updates": UPDATE_TYPES,
            "drop_pending_updates": drop,
        });
        let session = shutdown.child_token();
        let dispatcher = Arc::new(self.dispatcher(me, inbound, &session));
        let server = webhook::serve(
            listener,
            mode.path.clone(),
            mode.secret.clone(),
            dispatcher,
            session.clone(),
        );
        let server = tokio::spawn(server);
        // Register only once the endpoint listens: Telegram delivers right away.
        if let Err(e) = self
            .api
            .call::<Value>("setWebhook", &params, CALL_TIMEOUT)
            .await
        {
            session.cancel();
            let _ = server.await;
            return match e {
                PlatformError::Unauthorized { .. } => SessionEnd::Fatal(e),
                other => SessionEnd::Retry(format!("setWebhook: {other}")),
            };
        }
        *first = false;
        self.status.set_state(ConnectionState::Connected);
        let ended = server.await;
        session.cancel();
        if shutdown.is_cancelled() {
            return SessionEnd::Shutdown;
        }
        match ended {
            Ok(Ok(())) => SessionEnd::Retry("webhook server stopped".into()),
            Ok(Err(e)) => SessionEnd::Retry(e),
            Err(e) => SessionEnd::Retry(format!("webhook server failed: {e}")),
        }
    }

    fn chat_id(chat: &ChatRef) -> Value {
        match chat.chat_id.parse::<i64>() {
            Ok(n) => json!(n),
            // `@channelusername` is a valid chat id too.
            Err(_) => json!(chat.chat_id),
        }
    }

    fn thread(chat: &ChatRef) -> Option<i64> {
        chat.thread_id
            .as_deref()
            .filter(|t| *t != GENERAL_TOPIC)
            .and_then(|t| t.parse().ok())
    }

    fn keyboard(buttons: &[Button]) -> Result<Value, PlatformError> {
        for b in buttons {
            if b.label.trim().is_empty() {
                return Err(PlatformError::Invalid {
                    platform: PLATFORM,
                    message: "a button needs a label".into(),
                });
            }
            if b.data.is_empty() || b.data.len() > MAX_CALLBACK_DATA {
                return Err(PlatformError::Invalid {
                    platform: PLATFORM,
                    message: format!(
                        "button data must be 1-{MAX_CALLBACK_DATA} bytes: {:?}",
                        b.data
                    ),
                });
            }
        }
        // Short labels share a row; long ones get their own.
        let per_row = if buttons.iter().any(|b| b.label.chars().count() > 24) {
            1
        } else if buttons.iter().all(|b| b.label.chars().count() <= 10) {
            3
        } else {
            2
        };
        let rows: Vec<Value> = buttons
            .chunks(per_row)
            .map(|row| {
                Value::Array(
                    row.iter()
                        .map(|b| json!({"text": b.label, "callback_data": b.data}))
                        .collect(),
                )
            })
            .collect();
        Ok(json!({"inline_keyboard": rows}))
    }

    /// Sends or edits with MarkdownV2; when Telegram still refuses the markup, once more as
    /// plain text.
    async fn call_markdown(&self, method: &str, mut params: Value) -> Result<Value, PlatformError> {
        let wait = self.settings().max_rate_limit_wait;
        let first = with_rate_limit(wait, || {
            self.api.call::<Value>(method, &params, CALL_TIMEOUT)
        })
        .await;
        match first {
            Err(e) if is_parse_error(&e) => {
                self.status
                    .error(format!("{method}: {e}; sent as plain text"));
                let plain = unescape_v2(params["text"].as_str().unwrap_or_default());
                params["text"] = json!(plain);
                if let Some(obj) = params.as_object_mut() {
                    obj.remove("parse_mode");
                }
                with_rate_limit(wait, || {
                    self.api.call::<Value>(method, &params, CALL_TIMEOUT)
                })
                .await
            }
            other => other,
        }
    }

    async fn send_file(
        &self,
        chat: &ChatRef,
        file: &OutboundFile,
        reply_to: Option<i64>,
    ) -> Result<i64, PlatformError> {
        let (method, field) = match file.kind {
            OutboundFileKind::Photo => ("sendPhoto", "photo"),
            OutboundFileKind::Document => ("sendDocument", "document"),
            OutboundFileKind::Voice => ("sendVoice", "voice"),
        };
        let meta = tokio::fs::metadata(&file.path)
            .await
            .map_err(|e| PlatformError::io(&file.path, e))?;
        if meta.len() > MAX_UPLOAD {
            return Err(PlatformError::TooLarge {
                what: file.path.display().to_string(),
                size: meta.len(),
                limit: MAX_UPLOAD,
            });
        }
        let bytes = tokio::fs::read(&file.path)
            .await
            .map_err(|e| PlatformError::io(&file.path, e))?;
        let name = download::safe_file_name(file.path.file_name().and_then(|n| n.to_str()));
        let wait = self.settings().max_rate_limit_wait;
        let message: Message = with_rate_limit(wait, || {
            let mut form = reqwest::multipart::Form::new()
                .text("chat_id", chat.chat_id.clone())
                .part(
                    field,
                    reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone()),
                );
            if let Some(t) = Self::thread(chat) {
                form = form.text("message_thread_id", t.to_string());
            }
            if let Some(r) = reply_to {
                form = form.text(
                    "reply_parameters",
                    json!({"message_id": r, "allow_sending_without_reply": true}).to_string(),
                );
            }
            self.api.call_multipart::<Message>(method, form)
        })
        .await?;
        Ok(message.message_id)
    }
}

/// MarkdownV2 text back to what it says: escapes removed (the plain-text fallback).
fn unescape_v2(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && next.is_ascii_punctuation()
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

fn parse_message_id(id: &str) -> Result<i64, PlatformError> {
    id.parse().map_err(|_| PlatformError::Invalid {
        platform: PLATFORM,
        message: format!("{id:?} is not a Telegram message id"),
    })
}

#[async_trait::async_trait]
impl PlatformAdapter for TelegramAdapter {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken) {
        let mut backoff = Backoff::transient();
        let mut first = true;
        while !shutdown.is_cancelled() {
            self.status.set_state(ConnectionState::Connecting);
            let end = if self.settings().webhook.is_some() {
                self.webhook_session(&inbound, &shutdown, &mut first).await
            } else {
                self.polling_session(&inbound, &shutdown, &mut first, &mut backoff)
                    .await
            };
            match end {
                SessionEnd::Shutdown => break,
                SessionEnd::Fatal(e) => {
                    self.status.set_state(ConnectionState::Failed);
                    self.status.error(e.to_string());
                    if !sleep_or_shutdown(FATAL_RETRY, &shutdown).await {
                        break;
                    }
                }
                SessionEnd::Retry(e) => {
                    self.status.set_state(ConnectionState::Reconnecting);
                    self.status.error(e);
                    if !backoff.wait(&shutdown).await {
                        break;
                    }
                }
            }
        }
        self.status.set_state(ConnectionState::Stopped);
    }

    async fn send(
        &self,
        chat: &ChatRef,
        message: &OutboundMessage,
    ) -> Result<SentMessage, PlatformError> {
        let keyboard = if message.buttons.is_empty() {
            None
        } else {
            Some(Self::keyboard(&message.buttons)?)
        };
        let parts = split::render_parts(
            &message.text,
            Dialect::TelegramV2,
            MAX_MESSAGE,
            LengthUnit::Utf16,
            true,
        );
        if parts.is_empty() && keyboard.is_some() {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "buttons need a text".into(),
            });
        }
        let reply_to = message
            .reply_to
            .as_deref()
            .map(parse_message_id)
            .transpose()?;
        let mode = self.settings().reply_to_mode;
        let mut ids = Vec::new();
        let last = parts.len().saturating_sub(1);
        for (i, part) in parts.iter().enumerate() {
            let mut params = json!({
                "chat_id": Self::chat_id(chat),
                "text": part,
                "parse_mode": "MarkdownV2",
            });
            if let Some(r) = reply_to.filter(|_| mode.applies_to(i)) {
                params["reply_parameters"] =
                    json!({"message_id": r, "allow_sending_without_reply": true});
            }
            if let Some(t) = Self::thread(chat) {
                params["message_thread_id"] = json!(t);
            }
            if self.settings().disable_link_previews {
                params["link_preview_options"] = json!({"is_disabled": true});
            }
            if i == last
                && let Some(k) = &keyboard
            {
                params["reply_markup"] = k.clone();
            }
            let sent = self.call_markdown("sendMessage", params).await?;
            let id = sent["message_id"]
                .as_i64()
                .ok_or_else(|| PlatformError::Protocol {
                    platform: PLATFORM,
                    message: "sendMessage result without message_id".into(),
                })?;
            ids.push(id.to_string());
            self.status.add_sent(1);
        }
        for (i, file) in message.files.iter().enumerate() {
            let reply = reply_to.filter(|_| ids.is_empty() && mode.applies_to(i));
            let id = self.send_file(chat, file, reply).await?;
            ids.push(id.to_string());
            self.status.add_sent(1);
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message has no text and no files".into(),
        })
    }

    async fn edit(&self, chat: &ChatRef, id: &str, text: &str) -> Result<(), PlatformError> {
        let text = edit_text(text, &self.caps).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "an edit needs a text".into(),
        })?;
        let params = json!({
            "chat_id": Self::chat_id(chat),
            "message_id": parse_message_id(id)?,
            "text": text,
            "parse_mode": "MarkdownV2",
        });
        match self.call_markdown("editMessageText", params).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_modified(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn delete(&self, chat: &ChatRef, id: &str) -> Result<(), PlatformError> {
        let params = json!({"chat_id": Self::chat_id(chat), "message_id": parse_message_id(id)?});
        let wait = self.settings().max_rate_limit_wait;
        with_rate_limit(wait, || {
            self.api
                .call::<Value>("deleteMessage", &params, CALL_TIMEOUT)
        })
        .await?;
        Ok(())
    }

    async fn typing(&self, chat: &ChatRef) -> Result<(), PlatformError> {
        let mut params = json!({"chat_id": Self::chat_id(chat), "action": "typing"});
        if let Some(t) = Self::thread(chat) {
            params["message_thread_id"] = json!(t);
        }
        self.api
            .call::<Value>("sendChatAction", &params, CALL_TIMEOUT)
            .await?;
        Ok(())
    }

    async fn download(
        &self,
        attachment: &Attachment,
        dir: &Path,
        max_bytes: u64,
    ) -> Result<PathBuf, PlatformError> {
        let FileSource::TelegramFile { file_id } = &attachment.source else {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "not a Telegram file".into(),
            });
        };
        let file: File = self
            .api
            .call("getFile", &json!({"file_id": file_id}), CALL_TIMEOUT)
            .await?;
        let size = file.file_size.or(attachment.size);
        let name = attachment.file_name.clone();
        if max_bytes > 0
            && let Some(size) = size
            && size > max_bytes
        {
            return Err(PlatformError::TooLarge {
                what: name.unwrap_or_else(|| "attachment".into()),
                size,
                limit: max_bytes,
            });
        }
        let path = file.file_path.ok_or_else(|| PlatformError::Api {
            platform: PLATFORM,
            status: 400,
            message: "getFile gave no file_path (the file may be over the 20 MB download limit)"
                .into(),
        })?;
        let hint = name.unwrap_or_else(|| path.rsplit('/').next().unwrap_or("file").to_string());
        if self.settings().local_mode && Path::new(&path).is_absolute() {
            // A local Bot API server hands out paths on this machine.
            let meta = tokio::fs::metadata(&path)
                .await
                .map_err(|e| PlatformError::io(&path, e))?;
            if max_bytes > 0 && meta.len() > max_bytes {
                return Err(PlatformError::TooLarge {
                    what: hint,
                    size: meta.len(),
                    limit: max_bytes,
                });
            }
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|e| PlatformError::io(dir, e))?;
            let target = dir.join(format!(
                "{file_id}_{}",
                download::safe_file_name(Some(&hint))
            ));
            tokio::fs::copy(&path, &target)
                .await
                .map_err(|e| PlatformError::io(&target, e))?;
            return Ok(target);
        }
        download::fetch(
            PLATFORM,
            self.api.client.get(self.settings().file_url(&path)),
            "file",
            dir,
            Some(&hint),
            max_bytes,
        )
        .await
    }

    fn status(&self) -> AdapterStatus {
        self.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        let me = self.identify().await?;
        Ok(format!(
            "@{} on {}",
            me.username,
            crate::platform::url_host(&self.api.settings.base_url)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_fallback_removes_escapes_only() {
        assert_eq!(unescape_v2(r"Hello\. \(a\) *b* \\x"), r"Hello. (a) *b* \x");
    }

    #[test]
    fn keyboard_rows_and_limits() {
        let k = TelegramAdapter::keyboard(&[
            Button::new("Yes", "y"),
            Button::new("No", "n"),
            Button::new("Maybe", "m"),
            Button::new("Later", "l"),
        ])
        .unwrap();
        assert_eq!(k["inline_keyboard"].as_array().unwrap().len(), 2);
        assert_eq!(k["inline_keyboard"][0][2]["callback_data"], "m");
        assert!(TelegramAdapter::keyboard(&[Button::new("x", "d".repeat(65))]).is_err());
        assert!(TelegramAdapter::keyboard(&[Button::new(" ", "d")]).is_err());
    }
}
