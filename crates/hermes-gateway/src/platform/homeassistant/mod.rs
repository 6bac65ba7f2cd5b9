//! Home Assistant, as the Python Hermes's plugin connects it: the WebSocket API's
//! `state_changed` events ([`socket`]) pass the configured filters and a per-entity cooldown
//! ([`events`]) and reach the agent as messages in one channel (`ha_events`, from
//! `homeassistant`, always authorized: the token authenticated the connection); the agent's
//! answers (and cron deliveries) become persistent notifications in Home Assistant's UI
//! (`POST /api/services/persistent_notification/create`, cut to 4,096 characters). The agent
//! acts on the home through Home Assistant's own MCP server or REST API as tools; Home
//! Assistant talks to Hermes through the API server (README). Reconnects with backoff; a
//! refused token is retried only after five minutes.

mod events;
pub mod settings;
mod socket;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::events::EventGate;
pub use self::settings::HomeAssistantSettings;
use self::settings::PLATFORM;
use self::socket::{End, Link};
use crate::platform::backoff::{Backoff, FATAL_RETRY, sleep_or_shutdown};
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::http::{self, network};
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Capabilities, ChatRef, ChatType, ConnectionState, Dialect, InboundEvent,
    InboundMessage, LengthUnit, OutboundMessage, SentMessage,
};
use crate::platform::{PlatformAdapter, markdown};

/// The Python adapter's cap on a notification.
const MAX_MESSAGE: usize = 4096;
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_ANSWER: usize = 256 * 1024;
/// The one chat events arrive in.
pub const EVENTS_CHAT: &str = "ha_events";

/// The core's event for a state change.
fn to_event(entity: String, text: String) -> InboundEvent {
    let now = SystemTime::now();
    let secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    InboundEvent::Message(InboundMessage {
        chat: ChatRef::new(PLATFORM, ChatType::Channel, EVENTS_CHAT),
        chat_name: Some("Home Assistant Events".into()),
        message_id: format!("ha_{entity}_{secs}"),
        user_id: "homeassistant".into(),
        user_name: Some("Home Assistant".into()),
        text,
        attachments: Vec::new(),
        reply_to: None,
        // Every event is meant for the agent: no mention needed.
        mentions_bot: true,
        replies_to_bot: false,
        from_bot: false,
        deliver_to: None,
        skills: Vec::new(),
        received_at: now,
    })
}

/// The Home Assistant adapter.
pub struct HomeAssistantAdapter {
    settings: HomeAssistantSettings,
    client: reqwest::Client,
    caps: Capabilities,
    status: Arc<StatusCell>,
    gate: Mutex<EventGate>,
}

impl std::fmt::Debug for HomeAssistantAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HomeAssistantAdapter")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl HomeAssistantAdapter {
    pub fn new(
        settings: HomeAssistantSettings,
    ) -> Result<HomeAssistantAdapter, PlatformConfigError> {
        Ok(HomeAssistantAdapter {
            client: http::client(PLATFORM)?,
            settings,
            caps: Capabilities {
                max_message_len: MAX_MESSAGE,
                length_unit: LengthUnit::Chars,
                // Notifications render markdown; the adapter keeps the model's text.
                markdown: Dialect::Plain,
                can_edit: false,
                can_delete: false,
                buttons: false,
                threads: false,
                typing: false,
                typing_interval: Duration::from_secs(30),
                min_edit_interval: Duration::ZERO,
                progress_messages: false,
            },
            status: Arc::new(StatusCell::default()),
            gate: Mutex::new(EventGate::default()),
        })
    }

    /// A REST call with the token; the JSON answer or the error typed.
    async fn call(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Value, PlatformError> {
        let response = request
            .bearer_auth(&self.settings.token)
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        let status = response.status().as_u16();
        let body = http::read_limited(PLATFORM, response, MAX_ANSWER).await?;
        if (200..300).contains(&status) {
            return Ok(serde_json::from_slice(&body).unwrap_or(Value::Null));
        }
        let text = String::from_utf8_lossy(&body);
        let message = format!(
            "{what}: HTTP {status} {}",
            text.chars().take(300).collect::<String>()
        );
        Err(match status {
            401 | 403 => PlatformError::Unauthorized {
                platform: PLATFORM,
                hint: "HASS_TOKEN",
                message,
            },
            _ => PlatformError::Api {
                platform: PLATFORM,
                status,
                message,
            },
        })
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for HomeAssistantAdapter {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken) {
        if self.settings.forwards_nothing() {
            // Said once, as Python warns: the connection is useful for notifications only.
            self.status.error(
                "no watch_domains, watch_entities or watch_all: every state change is dropped",
            );
        }
        let mut backoff = Backoff::new(Duration::from_secs(5), Duration::from_secs(60));
        let mut connected_once = false;
        while !shutdown.is_cancelled() {
            self.status.set_state(if connected_once {
                ConnectionState::Reconnecting
            } else {
                ConnectionState::Connecting
            });
            let link = Link {
                settings: &self.settings,
                gate: &self.gate,
                convert: &to_event,
                inbound: &inbound,
                status: &self.status,
                shutdown: &shutdown,
            };
            let end = socket::connect(&link).await;
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
        _chat: &ChatRef,
        message: &OutboundMessage,
    ) -> Result<SentMessage, PlatformError> {
        let mut text = markdown::render_text(&message.text);
        for file in &message.files {
            let name = file
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            text.push_str(&format!("\n[file not shown: {name}]"));
        }
        let text: String = text.trim().chars().take(MAX_MESSAGE).collect();
        if text.is_empty() {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: "nothing to send: the message is empty".into(),
            });
        }
        // A fresh id per notification: a notification with a known id replaces it.
        let id = format!("hermes_{}", fastrand::u64(..));
        self.call(
            "persistent_notification.create",
            self.client
                .post(format!(
                    "{}/api/services/persistent_notification/create",
                    self.settings.url
                ))
                .json(&json!({
                    "title": self.settings.notification_title,
                    "message": text,
                    "notification_id": id,
                })),
        )
        .await?;
        self.status.add_sent(1);
        SentMessage::from_ids(vec![id]).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "no notification id".into(),
        })
    }

    async fn edit(&self, _chat: &ChatRef, _id: &str, _text: &str) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: PLATFORM,
            operation: "edit notifications",
        })
    }

    async fn delete(&self, _chat: &ChatRef, id: &str) -> Result<(), PlatformError> {
        self.call(
            "persistent_notification.dismiss",
            self.client
                .post(format!(
                    "{}/api/services/persistent_notification/dismiss",
                    self.settings.url
                ))
                .json(&json!({"notification_id": id})),
        )
        .await?;
        Ok(())
    }

    fn status(&self) -> AdapterStatus {
        self.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        let config = self
            .call(
                "GET /api/config",
                self.client.get(format!("{}/api/config", self.settings.url)),
            )
            .await?;
        Ok(format!(
            "{} (Home Assistant {}) at {}",
            config["location_name"].as_str().unwrap_or("Home"),
            config["version"].as_str().unwrap_or("?"),
            crate::platform::url_host(&self.settings.url)
        ))
    }
}
