//! Discord: the gateway websocket for events ([`gateway`]: heartbeats with jitter, IDENTIFY
//! with intents, RESUME with `session_id` + `seq` on `resume_gateway_url`, INVALID_SESSION,
//! RECONNECT) feeding a processor ([`events`]) that keeps its state across reconnects, and the
//! REST API ([`rest`], bucket-aware) for messages, edits, deletes, typing, buttons
//! (components, presses acknowledged) and threads. Answers split at 2000 characters; pings are
//! limited to users (`allowed_mentions`), so a model can never `@everyone`.

mod events;
mod gateway;
mod rest;
pub mod settings;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::events::{Memory, Processor};
use self::gateway::{Dispatch, End, Session};
use self::rest::{Body, Rest};
pub use self::settings::DiscordSettings;
use self::settings::PLATFORM;
use crate::platform::backoff::{Backoff, FATAL_RETRY, sleep_or_shutdown};
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::gate::RecentSet;
use crate::platform::http::{self, with_rate_limit};
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, Button, ButtonStyle, Capabilities, ChatRef, ConnectionState,
    Dialect, FileSource, InboundEvent, LengthUnit, OutboundMessage, SentMessage,
};
use crate::platform::{PlatformAdapter, download, edit_text, split};

const MAX_MESSAGE: usize = 2000;
const MAX_BUTTONS: usize = 25;
/// Discord's upload limit for bots without boosts.
const MAX_UPLOAD: u64 = 10 * 1024 * 1024;

/// The Discord adapter.
pub struct DiscordAdapter {
    settings: DiscordSettings,
    rest: Arc<Rest>,
    caps: Capabilities,
    status: Arc<StatusCell>,
    memory: Arc<Memory>,
}

impl std::fmt::Debug for DiscordAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscordAdapter").finish_non_exhaustive()
    }
}

fn allowed_mentions() -> Value {
    json!({"parse": ["users"], "replied_user": true})
}

fn components(buttons: &[Button]) -> Result<Value, PlatformError> {
    if buttons.len() > MAX_BUTTONS {
        return Err(PlatformError::Invalid {
            platform: PLATFORM,
            message: format!("at most {MAX_BUTTONS} buttons"),
        });
    }
    for b in buttons {
        if b.label.trim().is_empty() || b.label.chars().count() > 80 {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: format!("button labels are 1-80 characters: {:?}", b.label),
            });
        }
        if b.data.is_empty() || b.data.chars().count() > 100 {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: format!("button data is 1-100 characters: {:?}", b.data),
            });
        }
    }
    let rows: Vec<Value> = buttons
        .chunks(5)
        .map(|row| {
            let buttons: Vec<Value> = row
                .iter()
                .map(|b| {
                    let style = match b.style {
                        ButtonStyle::Primary => 1,
                        ButtonStyle::Default => 2,
                        ButtonStyle::Danger => 4,
                    };
                    json!({"type": 2, "style": style, "label": b.label, "custom_id": b.data})
                })
                .collect();
            json!({"type": 1, "components": buttons})
        })
        .collect();
    Ok(Value::Array(rows))
}

impl DiscordAdapter {
    pub fn new(settings: DiscordSettings) -> Result<DiscordAdapter, PlatformConfigError> {
        let client = http::client(PLATFORM)?;
        Ok(DiscordAdapter {
            rest: Arc::new(Rest::new(client, &settings)),
            settings,
            caps: Capabilities {
                max_message_len: MAX_MESSAGE,
                length_unit: LengthUnit::Chars,
                markdown: Dialect::Discord,
                can_edit: true,
                can_delete: true,
                buttons: true,
                threads: true,
                typing: true,
                typing_interval: Duration::from_secs(8),
                min_edit_interval: Duration::from_secs(1),
                progress_messages: true,
            },
            status: Arc::new(StatusCell::default()),
            memory: Arc::new(Memory::default()),
        })
    }

    /// The channel messages go to: the thread when there is one.
    fn target(chat: &ChatRef) -> &str {
        chat.thread_id.as_deref().unwrap_or(&chat.chat_id)
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Option<Value>, PlatformError> {
        with_rate_limit(self.settings.max_rate_limit_wait, || {
            let body = match &body {
                Some(v) => Body::Json(v.clone()),
                None => Body::None,
            };
            self.rest.request(method.clone(), path, body)
        })
        .await
    }

    async fn gateway_url(&self) -> Result<String, PlatformError> {
        if let Some(url) = &self.settings.gateway_url {
            return Ok(url.clone());
        }
        let answer = self
            .call(reqwest::Method::GET, "/gateway/bot", None)
            .await?;
        answer
            .as_ref()
            .and_then(|a| a["url"].as_str())
            .map(str::to_string)
            .ok_or_else(|| PlatformError::Protocol {
                platform: PLATFORM,
                message: "GET /gateway/bot gave no url".into(),
            })
    }

    async fn send_file(&self, target: &str, path: &Path) -> Result<String, PlatformError> {
        let meta = tokio::fs::metadata(path)
            .await
            .map_err(|e| PlatformError::io(path, e))?;
        if meta.len() > MAX_UPLOAD {
            return Err(PlatformError::TooLarge {
                what: path.display().to_string(),
                size: meta.len(),
                limit: MAX_UPLOAD,
            });
        }
        let bytes = tokio::fs::read(path)
            .await
            .map_err(|e| PlatformError::io(path, e))?;
        let name = download::safe_file_name(path.file_name().and_then(|n| n.to_str()));
        let payload = json!({"attachments": [{"id": 0, "filename": name}], "allowed_mentions": allowed_mentions()});
        let path = format!("/channels/{target}/messages");
        let answer = with_rate_limit(self.settings.max_rate_limit_wait, || {
            let form = reqwest::multipart::Form::new()
                .text("payload_json", payload.to_string())
                .part(
                    "files[0]",
                    reqwest::multipart::Part::bytes(bytes.clone()).file_name(name.clone()),
                );
            self.rest
                .request(reqwest::Method::POST, &path, Body::Multipart(form))
        })
        .await?;
        message_id(answer)
    }
}

fn message_id(answer: Option<Value>) -> Result<String, PlatformError> {
    answer
        .as_ref()
        .and_then(|m| m["id"].as_str())
        .map(str::to_string)
        .ok_or_else(|| PlatformError::Protocol {
            platform: PLATFORM,
            message: "message answer without id".into(),
        })
}

#[async_trait::async_trait]
impl PlatformAdapter for DiscordAdapter {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken) {
        let (dispatch_tx, mut dispatch_rx) = mpsc::channel::<Dispatch>(256);
        let mut processor = Processor {
            rest: Arc::clone(&self.rest),
            settings: self.settings.clone(),
            status: Arc::clone(&self.status),
            memory: Arc::clone(&self.memory),
            inbound,
            shutdown: shutdown.clone(),
            seen: RecentSet::new(4096),
        };
        let processing = tokio::spawn(async move {
            while let Some(Dispatch { t, d }) = dispatch_rx.recv().await {
                if !processor.handle(&t, d).await {
                    break;
                }
            }
        });

        let mut session: Option<Session> = None;
        let mut backoff = Backoff::transient();
        let mut gateway_url: Option<String> = None;
        while !shutdown.is_cancelled() {
            self.status.set_state(if session.is_some() {
                ConnectionState::Reconnecting
            } else {
                ConnectionState::Connecting
            });
            let url = match &gateway_url {
                Some(u) => u.clone(),
                None => match self.gateway_url().await {
                    Ok(u) => {
                        gateway_url = Some(u.clone());
                        u
                    }
                    Err(e @ PlatformError::Unauthorized { .. }) => {
                        self.status.set_state(ConnectionState::Failed);
                        self.status.error(e.to_string());
                        if !sleep_or_shutdown(FATAL_RETRY, &shutdown).await {
                            break;
                        }
                        continue;
                    }
                    Err(e) => {
                        self.status.error(format!("gateway URL: {e}"));
                        if !backoff.wait(&shutdown).await {
                            break;
                        }
                        continue;
                    }
                },
            };
            let end = gateway::connect(
                &url,
                &self.settings,
                &mut session,
                &dispatch_tx,
                &self.status,
                &shutdown,
            )
            .await;
            // A connection that got as far as READY/RESUMED worked: retry promptly.
            if self.status.state() == ConnectionState::Connected {
                backoff.reset();
            }
            match end {
                End::Shutdown => break,
                End::Resume(why) => {
                    self.status.set_state(ConnectionState::Reconnecting);
                    self.status.error(why);
                }
                End::Reidentify(why) => {
                    session = None;
                    self.status.set_state(ConnectionState::Reconnecting);
                    self.status.error(why);
                }
                End::Fatal(e) => {
                    session = None;
                    self.status.set_state(ConnectionState::Failed);
                    self.status.error(e.to_string());
                    if !sleep_or_shutdown(FATAL_RETRY, &shutdown).await {
                        break;
                    }
                    continue;
                }
            }
            if !backoff.wait(&shutdown).await {
                break;
            }
        }
        drop(dispatch_tx);
        let _ = processing.await;
        self.status.set_state(ConnectionState::Stopped);
    }

    async fn send(
        &self,
        chat: &ChatRef,
        message: &OutboundMessage,
    ) -> Result<SentMessage, PlatformError> {
        let buttons = if message.buttons.is_empty() {
            None
        } else {
            Some(components(&message.buttons)?)
        };
        let parts = split::render_parts(
            &message.text,
            Dialect::Discord,
            MAX_MESSAGE,
            LengthUnit::Chars,
            true,
        );
        if parts.is_empty() && buttons.is_some() {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "buttons need a text".into(),
            });
        }
        let target = Self::target(chat);
        let path = format!("/channels/{target}/messages");
        let mode = self.settings.reply_to_mode;
        let last = parts.len().saturating_sub(1);
        let mut ids = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let mut body = json!({"content": part, "allowed_mentions": allowed_mentions()});
            if let Some(r) = message.reply_to.as_deref().filter(|_| mode.applies_to(i)) {
                body["message_reference"] = json!({"message_id": r, "fail_if_not_exists": false});
            }
            if i == last
                && let Some(b) = &buttons
            {
                body["components"] = b.clone();
            }
            let answer = self.call(reqwest::Method::POST, &path, Some(body)).await?;
            ids.push(message_id(answer)?);
            self.status.add_sent(1);
        }
        for file in &message.files {
            ids.push(self.send_file(target, &file.path).await?);
            self.status.add_sent(1);
        }
        if let Some(thread) = &chat.thread_id {
            self.memory.mark_bot_thread(thread);
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message has no text and no files".into(),
        })
    }

    async fn edit(&self, chat: &ChatRef, id: &str, text: &str) -> Result<(), PlatformError> {
        let content = edit_text(text, &self.caps).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "an edit needs a text".into(),
        })?;
        let path = format!("/channels/{}/messages/{id}", Self::target(chat));
        self.call(
            reqwest::Method::PATCH,
            &path,
            Some(json!({"content": content, "components": []})),
        )
        .await?;
        Ok(())
    }

    async fn delete(&self, chat: &ChatRef, id: &str) -> Result<(), PlatformError> {
        let path = format!("/channels/{}/messages/{id}", Self::target(chat));
        self.call(reqwest::Method::DELETE, &path, None).await?;
        Ok(())
    }

    async fn typing(&self, chat: &ChatRef) -> Result<(), PlatformError> {
        let path = format!("/channels/{}/typing", Self::target(chat));
        self.call(reqwest::Method::POST, &path, None).await?;
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
                message: "not a Discord attachment".into(),
            });
        };
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "attachment URL is not http(s)".into(),
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
                    .unwrap_or_else(|| "attachment".into()),
                size,
                limit: max_bytes,
            });
        }
        // CDN URLs are signed: no bot token goes with them.
        download::fetch(
            PLATFORM,
            self.rest.client().get(url),
            "attachment",
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
        let me = self
            .call(reqwest::Method::GET, "/users/@me", None)
            .await?
            .unwrap_or_default();
        Ok(format!(
            "{} on {}",
            me["username"].as_str().unwrap_or("the bot"),
            crate::platform::url_host(&self.settings.base_url)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buttons_become_action_rows() {
        let b: Vec<Button> = (0..7)
            .map(|i| Button::new(format!("b{i}"), format!("d{i}")))
            .collect();
        let rows = components(&b).unwrap();
        assert_eq!(rows.as_array().unwrap().len(), 2);
        assert_eq!(rows[0]["components"].as_array().unwrap().len(), 5);
        assert_eq!(
            rows[0]["components"][0],
            json!({"type": 2, "style": 2, "label": "b0", "custom_id": "d0"})
        );
        let danger = components(&[Button::new("Deny", "no").styled(ButtonStyle::Danger)]).unwrap();
        assert_eq!(danger[0]["components"][0]["style"], 4);
        assert!(components(&[Button::new("x", "y".repeat(101))]).is_err());
    }
}
