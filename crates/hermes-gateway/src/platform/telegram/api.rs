//! A thin typed client of the Telegram Bot API (<https://core.telegram.org/bots/api>): every
//! method is `POST <base><token>/<method>` with JSON (or multipart for uploads), answered by
//! `{"ok", "result" | "error_code", "description", "parameters": {"retry_after"}}`; our serde
//! types for the parts of `Update`, `Message` and `File` the gateway reads.

use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::settings::{PLATFORM, TelegramSettings};
use crate::platform::error::PlatformError;
use crate::platform::http::{MAX_API_BODY, network, read_limited};

/// Timeout of an ordinary method call.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Deserialize)]
struct Envelope {
    ok: bool,
    result: Option<Value>,
    error_code: Option<u16>,
    description: Option<String>,
    parameters: Option<ResponseParameters>,
}

#[derive(Debug, Deserialize)]
struct ResponseParameters {
    retry_after: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct User {
    pub id: i64,
    #[serde(default)]
    pub is_bot: bool,
    #[serde(default)]
    pub first_name: String,
    pub last_name: Option<String>,
    pub username: Option<String>,
}

impl User {
    pub fn display_name(&self) -> String {
        match (&self.last_name, &self.username) {
            (Some(last), _) if !self.first_name.is_empty() => format!("{} {last}", self.first_name),
            (_, _) if !self.first_name.is_empty() => self.first_name.clone(),
            (_, Some(u)) => u.clone(),
            _ => self.id.to_string(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Chat {
    pub id: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub title: Option<String>,
    pub username: Option<String>,
    pub first_name: Option<String>,
    #[serde(default)]
    pub is_forum: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct MessageEntity {
    #[serde(rename = "type")]
    pub kind: String,
    /// In UTF-16 code units.
    pub offset: usize,
    pub length: usize,
    pub user: Option<User>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct PhotoSize {
    pub file_id: String,
    pub file_size: Option<u64>,
    #[serde(default)]
    pub width: u32,
    #[serde(default)]
    pub height: u32,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct FileMeta {
    pub file_id: String,
    pub file_name: Option<String>,
    pub mime_type: Option<String>,
    pub file_size: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Message {
    pub message_id: i64,
    pub message_thread_id: Option<i64>,
    pub from: Option<User>,
    pub chat: Chat,
    #[serde(default)]
    pub date: i64,
    pub text: Option<String>,
    pub caption: Option<String>,
    #[serde(default)]
    pub entities: Vec<MessageEntity>,
    #[serde(default)]
    pub caption_entities: Vec<MessageEntity>,
    #[serde(default)]
    pub is_topic_message: bool,
    pub reply_to_message: Option<Box<Message>>,
    pub forum_topic_created: Option<Value>,
    #[serde(default)]
    pub photo: Vec<PhotoSize>,
    pub document: Option<FileMeta>,
    pub voice: Option<FileMeta>,
    pub audio: Option<FileMeta>,
    pub video: Option<FileMeta>,
    pub video_note: Option<FileMeta>,
    pub animation: Option<FileMeta>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct CallbackQuery {
    pub id: String,
    pub from: User,
    pub message: Option<Message>,
    pub data: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Update {
    pub message: Option<Message>,
    pub callback_query: Option<CallbackQuery>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct File {
    pub file_size: Option<u64>,
    pub file_path: Option<String>,
}

/// The Bot API over one HTTP client.
#[derive(Debug, Clone)]
pub(crate) struct BotApi {
    pub client: reqwest::Client,
    pub settings: TelegramSettings,
}

impl BotApi {
    /// Calls `method` with JSON `params`.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &Value,
        timeout: Duration,
    ) -> Result<T, PlatformError> {
        let response = self
            .client
            .post(self.settings.method_url(method))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(params.to_string())
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        Self::decode(method, response).await
    }

    /// Calls `method` with a multipart form (file uploads).
    pub async fn call_multipart<T: DeserializeOwned>(
        &self,
        method: &str,
        form: reqwest::multipart::Form,
    ) -> Result<T, PlatformError> {
        let response = self
            .client
            .post(self.settings.method_url(method))
            .multipart(form)
            .timeout(Duration::from_secs(300))
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        Self::decode(method, response).await
    }

    async fn decode<T: DeserializeOwned>(
        method: &str,
        response: reqwest::Response,
    ) -> Result<T, PlatformError> {
        let status = response.status().as_u16();
        let body = read_limited(PLATFORM, response, MAX_API_BODY).await?;
        let envelope: Envelope = match serde_json::from_slice(&body) {
            Ok(e) => e,
            Err(_) => {
                let text = String::from_utf8_lossy(&body);
                let snippet: String = text.chars().take(200).collect();
                return Err(match status {
                    401 | 404 if method.eq_ignore_ascii_case("getMe") => {
                        PlatformError::Unauthorized {
                            platform: PLATFORM,
                            hint: "TELEGRAM_BOT_TOKEN",
                            message: format!("HTTP {status}"),
                        }
                    }
                    _ => PlatformError::Api {
                        platform: PLATFORM,
                        status,
                        message: format!("HTTP {status} from {method}: {snippet}"),
                    },
                });
            }
        };
        if envelope.ok {
            let result = envelope.result.unwrap_or(Value::Null);
            return serde_json::from_value(result).map_err(|e| PlatformError::Protocol {
                platform: PLATFORM,
                message: format!("{method} result: {e}"),
            });
        }
        let code = envelope.error_code.unwrap_or(status);
        let description = envelope
            .description
            .unwrap_or_else(|| format!("error {code}"));
        if let Some(after) = envelope.parameters.and_then(|p| p.retry_after) {
            return Err(PlatformError::RateLimited {
                platform: PLATFORM,
                retry_after: Duration::from_secs(after),
            });
        }
        Err(match code {
            429 => PlatformError::RateLimited {
                platform: PLATFORM,
                retry_after: Duration::from_secs(1),
            },
            401 => PlatformError::Unauthorized {
                platform: PLATFORM,
                hint: "TELEGRAM_BOT_TOKEN",
                message: description,
            },
            404 if method.eq_ignore_ascii_case("getMe") => PlatformError::Unauthorized {
                platform: PLATFORM,
                hint: "TELEGRAM_BOT_TOKEN",
                message: description,
            },
            _ => PlatformError::Api {
                platform: PLATFORM,
                status: code,
                message: format!("{method}: {description}"),
            },
        })
    }
}

/// Whether an error is Telegram refusing the MarkdownV2 of a text.
pub(crate) fn is_parse_error(e: &PlatformError) -> bool {
    matches!(e, PlatformError::Api { status: 400, message, .. } if message.contains("can't parse entities"))
}

/// Whether an edit failed only because nothing changed.
pub(crate) fn is_not_modified(e: &PlatformError) -> bool {
    matches!(e, PlatformError::Api { status: 400, message, .. } if message.contains("message is not modified"))
}

/// Whether `getUpdates` is refused because a webhook is set or another poller runs.
pub(crate) fn is_conflict(e: &PlatformError) -> bool {
    matches!(e, PlatformError::Api { status: 409, .. })
}
