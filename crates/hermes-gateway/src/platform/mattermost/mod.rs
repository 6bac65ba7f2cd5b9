//! Mattermost: the WebSocket (`/api/v4/websocket`, [`socket`]) for `posted` events and the REST
//! API v4 ([`api`]) for posts (`POST /posts`, `PUT /posts/{id}/patch`, `DELETE /posts/{id}`),
//! threads through `root_id`, the typing indicator, file uploads (`POST /files`, up to five
//! per post) and downloads (`GET /files/{id}`, the token sent only to the server). Answers are
//! Markdown as written (Mattermost renders it; image links become plain URLs, which it
//! previews), split at 4,000 characters like the Python Hermes. Mattermost's message buttons
//! need a public callback URL, so approvals are answered in text here.

mod api;
mod events;
pub mod settings;
mod socket;

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, PoisonError};
use std::time::Duration;

use regex::Regex;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::api::RestApi;
use self::events::{Converter, Identity, Memory};
pub use self::settings::MattermostSettings;
use self::settings::PLATFORM;
use self::socket::End;
use crate::platform::backoff::{Backoff, FATAL_RETRY, sleep_or_shutdown};
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::http::{self, with_rate_limit};
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Attachment, Capabilities, ChatRef, ConnectionState, Dialect, FileSource,
    InboundEvent, LengthUnit, OutboundMessage, SentMessage,
};
use crate::platform::{PlatformAdapter, download, edit_text, split};

/// The Python Hermes's readable post limit (the server accepts 16,383).
const MAX_MESSAGE: usize = 4000;
/// Files one post may carry.
const FILES_PER_POST: usize = 5;
const MAX_UPLOAD: u64 = 100 * 1024 * 1024;

/// `![alt](url)` in model markdown: Mattermost previews a bare image URL.
static IMAGE_LINK: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"!\[([^\]]*)\]\(([^)\s]+)\)").ok());

fn format_message(text: &str) -> String {
    match IMAGE_LINK.as_ref() {
        Some(re) => re.replace_all(text, "$2").into_owned(),
        None => text.to_string(),
    }
}

/// The Mattermost adapter.
pub struct MattermostAdapter {
    settings: MattermostSettings,
    api: RestApi,
    caps: Capabilities,
    status: Arc<StatusCell>,
    memory: Arc<Memory>,
}

impl std::fmt::Debug for MattermostAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MattermostAdapter")
            .field("url", &self.settings.url)
            .finish_non_exhaustive()
    }
}

impl MattermostAdapter {
    pub fn new(settings: MattermostSettings) -> Result<MattermostAdapter, PlatformConfigError> {
        let client = http::client(PLATFORM)?;
        Ok(MattermostAdapter {
            api: RestApi {
                client,
                url: settings.url.clone(),
                token: settings.token.clone(),
            },
            settings,
            caps: Capabilities {
                max_message_len: MAX_MESSAGE,
                length_unit: LengthUnit::Chars,
                markdown: Dialect::Plain,
                can_edit: true,
                can_delete: true,
                buttons: false,
                threads: true,
                typing: true,
                // Clients show "is typing" for about five seconds.
                typing_interval: Duration::from_secs(4),
                min_edit_interval: Duration::from_secs(1),
                progress_messages: true,
            },
            status: Arc::new(StatusCell::default()),
            memory: Arc::new(Memory::default()),
        })
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, PlatformError> {
        with_rate_limit(self.settings.max_rate_limit_wait, || {
            self.api.call(method.clone(), path, body.as_ref())
        })
        .await
    }

    /// Who the bot is (`GET /users/me`), once per connection.
    async fn identify(&self) -> Result<Identity, PlatformError> {
        let me = self.call(Method::GET, "users/me", None).await?;
        let identity = Identity {
            user_id: me["id"]
                .as_str()
                .ok_or_else(|| PlatformError::Protocol {
                    platform: PLATFORM,
                    message: "GET users/me gave no id".into(),
                })?
                .to_string(),
            username: me["username"].as_str().unwrap_or_default().to_string(),
        };
        *self
            .memory
            .me
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(identity.clone());
        Ok(identity)
    }

    async fn post(&self, body: Value) -> Result<String, PlatformError> {
        let answer = self.call(Method::POST, "posts", Some(body)).await?;
        let id = answer["id"]
            .as_str()
            .ok_or_else(|| PlatformError::Protocol {
                platform: PLATFORM,
                message: "POST posts gave no id".into(),
            })?
            .to_string();
        self.status.add_sent(1);
        Ok(id)
    }

    async fn upload(&self, chat: &ChatRef, path: &Path) -> Result<String, PlatformError> {
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
        self.api.upload(&chat.chat_id, &name, bytes).await
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for MattermostAdapter {
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
                Err(e) => End::Lost(format!("GET users/me: {e}")),
                Ok(_) => {
                    let conv = Converter {
                        settings: &self.settings,
                        memory: &self.memory,
                    };
                    socket::connect(
                        &conv,
                        &self.settings.token,
                        &inbound,
                        &self.status,
                        &shutdown,
                    )
                    .await
                }
            };
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
            &format_message(&message.text),
            Dialect::Plain,
            MAX_MESSAGE,
            LengthUnit::Chars,
            true,
        );
        let mut ids = Vec::new();
        for part in &parts {
            let mut body = json!({"channel_id": chat.chat_id, "message": part});
            if let Some(root) = &chat.thread_id {
                body["root_id"] = json!(root);
            }
            ids.push(self.post(body).await?);
        }
        let mut file_ids = Vec::new();
        for file in &message.files {
            file_ids.push(self.upload(chat, &file.path).await?);
        }
        for batch in file_ids.chunks(FILES_PER_POST) {
            let mut body = json!({"channel_id": chat.chat_id, "message": "", "file_ids": batch});
            if let Some(root) = &chat.thread_id {
                body["root_id"] = json!(root);
            }
            ids.push(self.post(body).await?);
        }
        // Replies in this thread (or under these posts) are for the bot.
        match &chat.thread_id {
            Some(t) => self.memory.mark_bot_thread(t),
            None => ids.iter().for_each(|id| self.memory.mark_bot_thread(id)),
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message has no text and no files".into(),
        })
    }

    async fn edit(&self, _chat: &ChatRef, id: &str, text: &str) -> Result<(), PlatformError> {
        let text = edit_text(&format_message(text), &self.caps).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "an edit needs a text".into(),
        })?;
        self.call(
            Method::PUT,
            &format!("posts/{id}/patch"),
            Some(json!({"message": text})),
        )
        .await?;
        Ok(())
    }

    async fn delete(&self, _chat: &ChatRef, id: &str) -> Result<(), PlatformError> {
        self.call(Method::DELETE, &format!("posts/{id}"), None)
            .await?;
        Ok(())
    }

    async fn typing(&self, chat: &ChatRef) -> Result<(), PlatformError> {
        let me = match self.memory.identity() {
            Some(me) => me,
            None => self.identify().await?,
        };
        let mut body = json!({"channel_id": chat.chat_id});
        if let Some(root) = &chat.thread_id {
            body["parent_id"] = json!(root);
        }
        self.call(
            Method::POST,
            &format!("users/{}/typing", me.user_id),
            Some(body),
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
                message: "not a Mattermost file".into(),
            });
        };
        // The token goes only to the server.
        if !self.settings.is_own_url(url) {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "file URL is not on the Mattermost server".into(),
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
            self.api.client.get(url).bearer_auth(&self.settings.token),
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
        let me = self.identify().await?;
        Ok(format!(
            "@{} on {}",
            me.username,
            crate::platform::url_host(&self.settings.url)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_links_become_bare_urls() {
        assert_eq!(
            format_message("see ![chart](https://x/c.png) and [doc](https://x/d)"),
            "see https://x/c.png and [doc](https://x/d)"
        );
    }
}
