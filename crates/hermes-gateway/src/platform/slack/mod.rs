//! Slack: Socket Mode for events ([`socket`]: `apps.connections.open`, envelopes acknowledged
//! after delivery, `disconnect` refreshes, reconnects with backoff) and the Web API ([`web`])
//! for `chat.postMessage` / `chat.update` / `chat.delete`, threads through `thread_ts`, Block
//! Kit buttons (clicks arrive as `block_actions`), the "is thinking…" status in threads,
//! external file uploads and `url_private` downloads. Answers are mrkdwn, split at 39,000
//! characters like the Python Hermes.

mod events;
pub mod settings;
mod socket;
mod web;

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::events::{Converter, Memory};
use self::settings::PLATFORM;
pub use self::settings::SlackSettings;
use self::socket::End;
use self::web::{Token, WebApi};
use crate::platform::backoff::{Backoff, FATAL_RETRY, sleep_or_shutdown};
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::http::{self, network, with_rate_limit};
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, Button, ButtonStyle, Capabilities, ChatRef, ConnectionState,
    Dialect, FileSource, InboundEvent, LengthUnit, OutboundFile, OutboundMessage, SentMessage,
};
use crate::platform::{PlatformAdapter, download, edit_text, split};

/// Slack accepts 40,000 characters; the Python Hermes keeps a margin.
const MAX_MESSAGE: usize = 39_000;
/// A section block's text limit.
const MAX_SECTION: usize = 3000;
const MAX_UPLOAD: u64 = 1024 * 1024 * 1024;

/// The Slack adapter.
pub struct SlackAdapter {
    settings: SlackSettings,
    web: WebApi,
    caps: Capabilities,
    status: Arc<StatusCell>,
    memory: Arc<Memory>,
}

impl std::fmt::Debug for SlackAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackAdapter").finish_non_exhaustive()
    }
}

/// Block Kit for a text with buttons: the text in section blocks, the buttons in one actions
/// block (their `value` is the button's data).
fn blocks(text: &str, buttons: &[Button]) -> Result<Value, PlatformError> {
    if buttons.len() > 25 {
        return Err(PlatformError::Invalid {
            platform: PLATFORM,
            message: "at most 25 buttons".into(),
        });
    }
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    for chunk in chars.chunks(MAX_SECTION) {
        let t: String = chunk.iter().collect();
        if !t.trim().is_empty() {
            out.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": t}}));
        }
    }
    let mut elements = Vec::new();
    for (i, b) in buttons.iter().enumerate() {
        if b.label.trim().is_empty() || b.label.chars().count() > 75 {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: format!("button labels are 1-75 characters: {:?}", b.label),
            });
        }
        if b.data.chars().count() > 2000 {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "button data is at most 2000 characters".into(),
            });
        }
        let mut e = json!({
            "type": "button",
            "text": {"type": "plain_text", "text": b.label},
            "action_id": format!("hermes_button_{i}"),
            "value": b.data,
        });
        match b.style {
            ButtonStyle::Primary => e["style"] = json!("primary"),
            ButtonStyle::Danger => e["style"] = json!("danger"),
            ButtonStyle::Default => {}
        }
        elements.push(e);
    }
    out.push(json!({"type": "actions", "block_id": "hermes_actions", "elements": elements}));
    if out.len() > 50 {
        return Err(PlatformError::Invalid {
            platform: PLATFORM,
            message: "text too long to carry buttons".into(),
        });
    }
    Ok(Value::Array(out))
}

impl SlackAdapter {
    pub fn new(settings: SlackSettings) -> Result<SlackAdapter, PlatformConfigError> {
        let client = http::client(PLATFORM)?;
        Ok(SlackAdapter {
            web: WebApi {
                client,
                base_url: settings.base_url.clone(),
                bot_token: settings.bot_token.clone(),
                app_token: settings.app_token.clone(),
            },
            settings,
            caps: Capabilities {
                max_message_len: MAX_MESSAGE,
                length_unit: LengthUnit::Chars,
                markdown: Dialect::SlackMrkdwn,
                can_edit: true,
                can_delete: true,
                buttons: true,
                threads: true,
                typing: true,
                typing_interval: Duration::from_secs(30),
                // chat.update is a Tier 3 method (about 50 a minute).
                min_edit_interval: Duration::from_millis(1200),
                progress_messages: true,
            },
            status: Arc::new(StatusCell::default()),
            memory: Arc::new(Memory::default()),
        })
    }

    async fn call(&self, method: &str, body: Value) -> Result<Value, PlatformError> {
        with_rate_limit(self.settings.max_rate_limit_wait, || {
            self.web.call(method, &body, Token::Bot)
        })
        .await
    }

    /// Who the bot is (`auth.test`), once per connection.
    async fn identify(&self) -> Result<(), PlatformError> {
        let me = self.call("auth.test", json!({})).await?;
        let user = me["user_id"].as_str().map(str::to_string);
        let bot = me["bot_id"].as_str().map(str::to_string);
        *self
            .memory
            .bot_user_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = user;
        *self
            .memory
            .bot_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = bot;
        Ok(())
    }

    async fn upload(&self, chat: &ChatRef, file: &OutboundFile) -> Result<String, PlatformError> {
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
        let wait = self.settings.max_rate_limit_wait;
        let params = [
            ("filename", name.clone()),
            ("length", bytes.len().to_string()),
        ];
        let target = with_rate_limit(wait, || {
            self.web
                .call_form("files.getUploadURLExternal", &params, Token::Bot)
        })
        .await?;
        let (Some(url), Some(file_id)) =
            (target["upload_url"].as_str(), target["file_id"].as_str())
        else {
            return Err(PlatformError::Protocol {
                platform: PLATFORM,
                message: "files.getUploadURLExternal gave no upload_url".into(),
            });
        };
        let response = self
            .web
            .client
            .post(url)
            .body(bytes)
            .timeout(Duration::from_secs(300))
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        if !response.status().is_success() {
            return Err(PlatformError::Api {
                platform: PLATFORM,
                status: response.status().as_u16(),
                message: "file upload refused".into(),
            });
        }
        let mut done =
            json!({"files": [{"id": file_id, "title": name}], "channel_id": chat.chat_id});
        if let Some(t) = &chat.thread_id {
            done["thread_ts"] = json!(t);
        }
        let answer = self.call("files.completeUploadExternal", done).await?;
        // The message that shares the file, when Slack says; else the file id.
        let shared_ts = answer["files"][0]["shares"]
            .as_object()
            .and_then(|s| s.values().next())
            .and_then(|by_channel| by_channel[&chat.chat_id][0]["ts"].as_str())
            .map(str::to_string);
        Ok(shared_ts.unwrap_or_else(|| file_id.to_string()))
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for SlackAdapter {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken) {
        let mut backoff = Backoff::transient();
        let mut connected_once = false;
        while !shutdown.is_cancelled() {
            self.status.set_state(if connected_once {
                ConnectionState::Reconnecting
            } else {
                ConnectionState::Connecting
            });
            let end = match self.identify().await {
                Err(e @ PlatformError::Unauthorized { .. }) => End::Fatal(e),
                Err(e) => End::Lost(format!("auth.test: {e}")),
                Ok(()) => {
                    let conv = Converter {
                        web: &self.web,
                        settings: &self.settings,
                        memory: &self.memory,
                    };
                    socket::connect(&conv, &inbound, &self.status, &shutdown).await
                }
            };
            if self.status.state() == ConnectionState::Connected {
                connected_once = true;
                backoff.reset();
            }
            match end {
                End::Shutdown => break,
                End::Refresh(why) => {
                    // Slack is rotating the connection: a new one right away.
                    self.status.error(why);
                    self.status.set_state(ConnectionState::Reconnecting);
                }
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
            Dialect::SlackMrkdwn,
            MAX_MESSAGE,
            LengthUnit::Chars,
            true,
        );
        if parts.is_empty() && !message.buttons.is_empty() {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "buttons need a text".into(),
            });
        }
        let last = parts.len().saturating_sub(1);
        let mut ids = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let mut body = json!({"channel": chat.chat_id, "text": part, "mrkdwn": true});
            if let Some(t) = &chat.thread_id {
                body["thread_ts"] = json!(t);
                if self.settings.reply_broadcast && i == 0 {
                    body["reply_broadcast"] = json!(true);
                }
            }
            if i == last && !message.buttons.is_empty() {
                body["blocks"] = blocks(part, &message.buttons)?;
            }
            let answer = self.call("chat.postMessage", body).await?;
            let ts = answer["ts"]
                .as_str()
                .ok_or_else(|| PlatformError::Protocol {
                    platform: PLATFORM,
                    message: "chat.postMessage gave no ts".into(),
                })?;
            ids.push(ts.to_string());
            self.status.add_sent(1);
        }
        for file in &message.files {
            ids.push(self.upload(chat, file).await?);
            self.status.add_sent(1);
        }
        // Replies in this thread (or to these messages) are for the bot.
        match &chat.thread_id {
            Some(t) => self.memory.mark_bot_thread(t),
            None => ids.iter().for_each(|ts| self.memory.mark_bot_thread(ts)),
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
        // An empty `blocks` removes the buttons (without it Slack keeps the old blocks).
        self.call(
            "chat.update",
            json!({"channel": chat.chat_id, "ts": id, "text": text, "blocks": []}),
        )
        .await?;
        Ok(())
    }

    async fn delete(&self, chat: &ChatRef, id: &str) -> Result<(), PlatformError> {
        self.call("chat.delete", json!({"channel": chat.chat_id, "ts": id}))
            .await?;
        Ok(())
    }

    async fn typing(&self, chat: &ChatRef) -> Result<(), PlatformError> {
        // Slack bots have a status line only inside threads (assistant.threads.setStatus).
        let Some(thread) = &chat.thread_id else {
            return Err(PlatformError::Unsupported {
                platform: PLATFORM,
                operation: "show typing outside a thread",
            });
        };
        self.web
            .call(
                "assistant.threads.setStatus",
                &json!({"channel_id": chat.chat_id, "thread_ts": thread, "status": self.settings.typing_status_text}),
                Token::Bot,
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
        let FileSource::Url(url) = &attachment.source else {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "not a Slack file".into(),
            });
        };
        // The bot token goes only to Slack.
        if !self.settings.trusts_file_host(url) {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "file URL is not on a Slack host".into(),
            });
        }
        if max_bytes > 0
            && let Some(size) = attachment.size
            && size > max_bytes
        {
            return Err(PlatformError::TooLarge {
                what: attachment
                    .file_name
                    .clone()
                    .unwrap_or_else(|| "file".into()),
                size,
                limit: max_bytes,
            });
        }
        download::fetch(
            PLATFORM,
            self.web
                .client
                .get(url)
                .bearer_auth(&self.settings.bot_token),
            "file",
            dir,
            attachment.file_name.as_deref(),
            max_bytes,
        )
        .await
    }

    fn status(&self) -> AdapterStatus {
        self.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        let me = self.call("auth.test", json!({})).await?;
        // The app-level token opens the Socket Mode connection: a URL asked for and not used
        // expires on its own.
        self.web
            .call("apps.connections.open", &json!({}), Token::App)
            .await?;
        Ok(format!(
            "{} in {} on {}, Socket Mode allowed",
            me["user"].as_str().unwrap_or("the bot"),
            me["team"].as_str().unwrap_or("the workspace"),
            crate::platform::url_host(&self.settings.base_url)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_kit_buttons() {
        let b = blocks(
            "Run it?",
            &[
                Button::new("Yes", "y").styled(ButtonStyle::Primary),
                Button::new("No", "n"),
            ],
        )
        .unwrap();
        assert_eq!(
            b[0],
            json!({"type": "section", "text": {"type": "mrkdwn", "text": "Run it?"}})
        );
        assert_eq!(b[1]["elements"][0]["style"], "primary");
        assert_eq!(b[1]["elements"][1]["value"], "n");
        assert!(b[1]["elements"][1].get("style").is_none());
        let long = "x".repeat(7000);
        assert_eq!(
            blocks(&long, &[Button::new("a", "b")])
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            4
        );
    }
}
