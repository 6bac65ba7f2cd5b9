//! Signal through a signal-cli daemon in HTTP mode (`signal-cli -a NUMBER daemon --http
//! HOST:PORT`), as the Python Hermes talks to it: Server-Sent Events from
//! `GET /api/v1/events` for incoming envelopes ([`events`]), JSON-RPC 2.0 on
//! `POST /api/v1/rpc` ([`rpc`]) for `send`, `sendTyping` and `getAttachment`. A dropped
//! stream comes back with backoff (2 s doubling to 60 s, as Python) and a `Last-Event-ID`
//! header, so the daemon replays the events it kept that the bot missed. Answers are
//! converted from markdown to Signal's text styles ([`format`]) and split at 8,000
//! characters; files go out as `attachments` (paths the daemon reads, so it must share the
//! gateway's file system). Signal has no edits here (like Python), so the core sends each
//! answer whole. Direct chats are the sender's number (or ACI); groups are `group:<id>`.

mod events;
mod format;
mod rpc;
pub mod settings;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::events::{Converter, MAX_ATTACHMENT, Memory, SseParser};
use self::rpc::Rpc;
use self::settings::PLATFORM;
pub use self::settings::SignalSettings;
use crate::platform::backoff::{Backoff, FATAL_RETRY, sleep_or_shutdown};
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::http::{self, MAX_API_BODY, network, with_rate_limit};
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, Capabilities, ChatRef, ConnectionState, Dialect, FileSource,
    InboundEvent, LengthUnit, OutboundMessage, SentMessage,
};
use crate::platform::{PlatformAdapter, deliver, download, split};

/// Python's `MAX_MESSAGE_LENGTH` for Signal.
const MAX_MESSAGE: usize = 8000;
/// Attachments in one `send` (Python's `SIGNAL_MAX_ATTACHMENTS_PER_MSG`).
const FILES_PER_MESSAGE: usize = 32;
/// Longest wait for a rate limit before the send fails instead.
const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// How one connection of the event stream ended.
enum End {
    Shutdown,
    Lost(String),
    Fatal(PlatformError),
}

/// `+15551234567` as a query value (`+` would read as a space).
fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A file extension from the first bytes (signal-cli gives no name for most attachments).
fn guess_extension(data: &[u8]) -> &'static str {
    match data {
        [0x89, b'P', b'N', b'G', ..] => ".png",
        [0xFF, 0xD8, ..] => ".jpg",
        [b'G', b'I', b'F', b'8', ..] => ".gif",
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => ".webp",
        [b'%', b'P', b'D', b'F', ..] => ".pdf",
        [_, _, _, _, b'f', b't', b'y', b'p', ..] => ".mp4",
        [b'O', b'g', b'g', b'S', ..] => ".ogg",
        // ADTS AAC (Android voice notes) and MP3 share the sync word; the layer bits differ.
        [0xFF, b, ..] if b & 0xE0 == 0xE0 => {
            if b & 0xF6 == 0xF0 {
                ".aac"
            } else {
                ".mp3"
            }
        }
        [b'P', b'K', ..] => ".zip",
        _ => ".bin",
    }
}

/// The Signal adapter.
pub struct SignalAdapter {
    settings: SignalSettings,
    rpc: Rpc,
    caps: Capabilities,
    status: Arc<StatusCell>,
    memory: Arc<Memory>,
}

impl std::fmt::Debug for SignalAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignalAdapter")
            .field("http_url", &self.settings.http_url)
            .finish_non_exhaustive()
    }
}

impl SignalAdapter {
    pub fn new(settings: SignalSettings) -> Result<SignalAdapter, PlatformConfigError> {
        let client = http::client(PLATFORM)?;
        Ok(SignalAdapter {
            rpc: Rpc::new(client, &settings.http_url),
            settings,
            caps: Capabilities {
                max_message_len: MAX_MESSAGE,
                length_unit: LengthUnit::Chars,
                markdown: Dialect::Plain,
                can_edit: false,
                can_delete: false,
                buttons: false,
                threads: false,
                typing: true,
                // Python refreshes every 8 s; Signal clients show it for about 15.
                typing_interval: Duration::from_secs(8),
                min_edit_interval: Duration::from_secs(1),
                progress_messages: true,
            },
            status: Arc::new(StatusCell::default()),
            memory: Arc::new(Memory::default()),
        })
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, PlatformError> {
        with_rate_limit(MAX_RATE_LIMIT_WAIT, || {
            self.rpc.call(method, params.clone(), MAX_API_BODY)
        })
        .await
    }

    /// `params` with the account and the chat's address: `groupId` or `recipient`.
    fn address(&self, chat: &ChatRef, mut params: Value) -> Value {
        params["account"] = json!(self.settings.account);
        match chat.chat_id.strip_prefix("group:") {
            Some(group) => params["groupId"] = json!(group),
            None => params["recipient"] = json!([chat.chat_id]),
        }
        params
    }

    /// One `send`; the message's timestamp, its id on Signal.
    async fn send_one(&self, chat: &ChatRef, params: Value) -> Result<String, PlatformError> {
        let result = self.call("send", self.address(chat, params)).await?;
        let timestamp = result["timestamp"]
            .as_u64()
            .map(|t| t.to_string())
            .ok_or_else(|| PlatformError::Protocol {
                platform: PLATFORM,
                message: "send gave no timestamp".into(),
            })?;
        self.memory.remember_sent(&timestamp);
        self.status.add_sent(1);
        Ok(timestamp)
    }

    /// One connection of the event stream, read until it ends.
    async fn stream(
        &self,
        inbound: &mpsc::Sender<InboundEvent>,
        shutdown: &CancellationToken,
    ) -> End {
        let url = format!(
            "{}/api/v1/events?account={}",
            self.settings.http_url,
            query_escape(&self.settings.account)
        );
        let mut request = self
            .rpc
            .client
            .get(&url)
            .header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(id) = self.memory.last_event_id() {
            request = request.header("Last-Event-ID", id);
        }
        let response = tokio::select! {
            _ = shutdown.cancelled() => return End::Shutdown,
            r = request.send() => r,
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => return End::Lost(format!("GET /api/v1/events: {}", network(PLATFORM, e))),
        };
        let status = response.status().as_u16();
        if status == 400 || status == 404 {
            // 400: the daemon has no such account (multi-account mode).
            return End::Fatal(PlatformError::Unauthorized {
                platform: PLATFORM,
                hint: "SIGNAL_ACCOUNT",
                message: format!("GET /api/v1/events answered HTTP {status}"),
            });
        }
        if status != 200 {
            return End::Lost(format!("GET /api/v1/events answered HTTP {status}"));
        }
        self.status.set_state(ConnectionState::Connected);
        let conv = Converter {
            settings: &self.settings,
            memory: &self.memory,
        };
        let mut parser = SseParser::default();
        let mut body = response.bytes_stream();
        loop {
            let chunk = tokio::select! {
                _ = shutdown.cancelled() => return End::Shutdown,
                c = body.next() => c,
            };
            let chunk = match chunk {
                None => return End::Lost("the event stream ended".into()),
                Some(Err(e)) => {
                    return End::Lost(format!("event stream: {}", network(PLATFORM, e)));
                }
                Some(Ok(c)) => c,
            };
            for event in parser.push(&chunk) {
                if event.event != "receive" {
                    continue;
                }
                let message = serde_json::from_str::<Value>(&event.data)
                    .ok()
                    .and_then(|data| conv.convert(&data));
                if let Some(message) = message {
                    self.status.add_received();
                    if !deliver(inbound, InboundEvent::Message(message), shutdown).await {
                        return End::Shutdown;
                    }
                }
                // Remembered once handed over: a drop before that replays the event.
                self.memory.heard(event.id.as_deref());
            }
        }
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for SignalAdapter {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken) {
        let mut backoff = Backoff::new(Duration::from_secs(2), Duration::from_secs(60));
        let mut connected_once = false;
        while !shutdown.is_cancelled() {
            self.status.set_state(if connected_once {
                ConnectionState::Reconnecting
            } else {
                ConnectionState::Connecting
            });
            let end = self.stream(&inbound, &shutdown).await;
            if self.status.state() == ConnectionState::Connected {
                connected_once = true;
                backoff.reset();
            }
            match end {
                End::Shutdown => break,
                End::Lost(why) => {
                    self.status.set_state(ConnectionState::Reconnecting);
                    self.status.error(why);
                    if !backoff.wait(&shutdown).await {
                        break;
                    }
                }
                End::Fatal(e) => {
                    self.status.set_state(ConnectionState::Failed);
                    self.status.error(e.to_string());
                    if !sleep_or_shutdown(FATAL_RETRY, &shutdown).await {
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
        let parts = split::render_parts(
            &message.text,
            Dialect::Plain,
            MAX_MESSAGE,
            LengthUnit::Chars,
            true,
        );
        let mut ids = Vec::new();
        for part in &parts {
            let (text, styles) = format::to_signal(part);
            if text.is_empty() {
                continue;
            }
            let mut params = json!({"message": text});
            if !styles.is_empty() {
                params["textStyle"] = json!(styles);
            }
            ids.push(self.send_one(chat, params).await?);
        }
        let mut paths = Vec::new();
        for file in &message.files {
            let meta = tokio::fs::metadata(&file.path)
                .await
                .map_err(|e| PlatformError::io(&file.path, e))?;
            if meta.len() > MAX_ATTACHMENT {
                return Err(PlatformError::TooLarge {
                    what: file.path.display().to_string(),
                    size: meta.len(),
                    limit: MAX_ATTACHMENT,
                });
            }
            // The daemon opens the file itself: give it a path that does not depend on
            // the gateway's working directory.
            let path = tokio::fs::canonicalize(&file.path)
                .await
                .map_err(|e| PlatformError::io(&file.path, e))?;
            paths.push(path.display().to_string());
        }
        for batch in paths.chunks(FILES_PER_MESSAGE) {
            ids.push(
                self.send_one(chat, json!({"message": "", "attachments": batch}))
                    .await?,
            );
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message has no text and no files".into(),
        })
    }

    async fn typing(&self, chat: &ChatRef) -> Result<(), PlatformError> {
        self.call("sendTyping", self.address(chat, json!({})))
            .await?;
        Ok(())
    }

    async fn download(
        &self,
        attachment: &Attachment,
        dir: &Path,
        max_bytes: u64,
    ) -> Result<PathBuf, PlatformError> {
        let FileSource::PlatformId(id) = &attachment.source else {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "not a Signal attachment".into(),
            });
        };
        let limit = if max_bytes == 0 {
            MAX_ATTACHMENT
        } else {
            max_bytes.min(MAX_ATTACHMENT)
        };
        let what = || {
            attachment
                .file_name
                .clone()
                .unwrap_or_else(|| "attachment".into())
        };
        if let Some(size) = attachment.size
            && size > limit
        {
            return Err(PlatformError::TooLarge {
                what: what(),
                size,
                limit,
            });
        }
        // Base64 is 4 bytes per 3, plus the JSON around it.
        let max_body = usize::try_from(limit.div_ceil(3) * 4 + 4096).unwrap_or(usize::MAX);
        let result = self
            .rpc
            .call(
                "getAttachment",
                json!({"account": self.settings.account, "id": id}),
                max_body,
            )
            .await?;
        let encoded = result["data"]
            .as_str()
            .or_else(|| result.as_str())
            .ok_or_else(|| PlatformError::Protocol {
                platform: PLATFORM,
                message: "getAttachment gave no data".into(),
            })?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|e| PlatformError::Protocol {
                platform: PLATFORM,
                message: format!("getAttachment data is not base64: {e}"),
            })?;
        if bytes.len() as u64 > limit {
            return Err(PlatformError::TooLarge {
                what: what(),
                size: bytes.len() as u64,
                limit,
            });
        }
        let name = attachment.file_name.clone().unwrap_or_else(|| {
            format!(
                "{}{}",
                download::safe_file_name(Some(id)),
                guess_extension(&bytes)
            )
        });
        download::write_bytes(dir, Some(&name), &bytes).await
    }

    fn status(&self) -> AdapterStatus {
        self.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        // A read the daemon answers only for an account it has: the URL and the account
        // both proven, nothing sent.
        let groups = self
            .call("listGroups", json!({"account": self.settings.account}))
            .await?;
        Ok(format!(
            "{} on the signal-cli daemon at {} ({} groups)",
            self.settings.account,
            crate::platform::url_host(&self.settings.http_url),
            groups.as_array().map_or(0, Vec::len)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_are_escaped_and_extensions_guessed() {
        assert_eq!(query_escape("+1555 0/1"), "%2B1555%200%2F1");
        assert_eq!(guess_extension(b"\x89PNG\r\n"), ".png");
        assert_eq!(guess_extension(&[0xFF, 0xF1, 0x50]), ".aac");
        assert_eq!(guess_extension(&[0xFF, 0xFB, 0x90]), ".mp3");
        assert_eq!(guess_extension(b""), ".bin");
    }
}
