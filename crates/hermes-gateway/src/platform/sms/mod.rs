//! SMS through Twilio, as the Python Hermes's plugin does it: Twilio posts each inbound text
//! to our webhook ([`webhook`]: signature checked, duplicates skipped), and answers go out
//! through the REST API (`POST /Accounts/{sid}/Messages.json`, HTTP Basic with the account SID
//! and auth token). Every chat is a DM keyed by the sender's number. Markdown is flattened to
//! plain text (SMS shows it literally) and answers are split at 1,600 characters (Twilio's
//! ten-segment limit); SMS has no edits, buttons or typing, so the core sends each answer
//! whole and asks approvals as `/approve` / `/deny` text. Files cannot be sent over SMS: each
//! is named in the text instead. No reconnects: the listener runs until shutdown, rebinding
//! with backoff when it cannot bind.

pub mod settings;
mod webhook;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use self::settings::PLATFORM;
pub use self::settings::SmsSettings;
use self::webhook::Incoming;
use crate::platform::backoff::Backoff;
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::http::{self, network, with_rate_limit};
use crate::platform::listener::ListenerSlot;
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Capabilities, ChatRef, ChatType, ConnectionState, Dialect, InboundEvent,
    InboundMessage, LengthUnit, OutboundMessage, SentMessage,
};
use crate::platform::{PlatformAdapter, markdown, split};

/// Twilio's limit for one message (ten segments).
const MAX_MESSAGE: usize = 1600;
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest REST answer read.
const MAX_ANSWER: usize = 256 * 1024;

/// The core's event for an inbound SMS.
fn to_event(sms: Incoming) -> InboundEvent {
    InboundEvent::Message(InboundMessage {
        chat: ChatRef::new(PLATFORM, ChatType::Direct, sms.from.clone()),
        chat_name: Some(sms.from.clone()),
        message_id: sms.sid,
        user_id: sms.from.clone(),
        user_name: Some(sms.from),
        text: sms.text,
        attachments: Vec::new(),
        reply_to: None,
        mentions_bot: false,
        replies_to_bot: false,
        from_bot: false,
        deliver_to: None,
        skills: Vec::new(),
        received_at: SystemTime::now(),
    })
}

/// The SMS (Twilio) adapter.
pub struct SmsAdapter {
    settings: SmsSettings,
    client: reqwest::Client,
    caps: Capabilities,
    status: Arc<StatusCell>,
    listener: ListenerSlot,
}

impl std::fmt::Debug for SmsAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmsAdapter")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl SmsAdapter {
    pub fn new(settings: SmsSettings) -> Result<SmsAdapter, PlatformConfigError> {
        Ok(SmsAdapter {
            client: http::client(PLATFORM)?,
            settings,
            caps: Capabilities {
                max_message_len: MAX_MESSAGE,
                length_unit: LengthUnit::Chars,
                // The adapter flattens markdown itself.
                markdown: Dialect::Plain,
                can_edit: false,
                can_delete: false,
                buttons: false,
                threads: false,
                typing: false,
                typing_interval: Duration::from_secs(30),
                min_edit_interval: Duration::ZERO,
                // Every message costs the user: no tool progress lines.
                progress_messages: false,
            },
            status: Arc::new(StatusCell::default()),
            listener: ListenerSlot::default(),
        })
    }

    /// Serves on an already bound listener instead of `webhook_host:webhook_port`.
    pub fn with_listener(self, listener: std::net::TcpListener) -> SmsAdapter {
        self.listener.preset(listener);
        self
    }

    /// Where the webhook listens, once it does.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr()
    }

    fn account_url(&self, rest: &str) -> String {
        format!(
            "{}/Accounts/{}{rest}",
            self.settings.api_base, self.settings.account_sid
        )
    }

    /// A REST call's JSON answer, or Twilio's error (`{code, message, more_info, status}`)
    /// typed.
    async fn call(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<Value, PlatformError> {
        let response = request
            .basic_auth(&self.settings.account_sid, Some(&self.settings.auth_token))
            .timeout(CALL_TIMEOUT)
            .send()
            .await
            .map_err(|e| network(PLATFORM, e))?;
        let status = response.status().as_u16();
        let retry_after = http::retry_after(response.headers());
        let body = http::read_limited(PLATFORM, response, MAX_ANSWER).await?;
        let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            return Ok(json);
        }
        let message = json["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("HTTP {status}"));
        let message = match json["code"].as_i64() {
            Some(code) => format!("{what}: {message} (Twilio error {code})"),
            None => format!("{what}: {message}"),
        };
        Err(match status {
            401 | 403 => PlatformError::Unauthorized {
                platform: PLATFORM,
                hint: "TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN",
                message,
            },
            429 => PlatformError::RateLimited {
                platform: PLATFORM,
                retry_after: retry_after.unwrap_or(Duration::from_secs(1)),
            },
            _ => PlatformError::Api {
                platform: PLATFORM,
                status,
                message,
            },
        })
    }

    /// Sends one SMS to `to`; its SID.
    async fn send_one(&self, to: &str, body: &str) -> Result<String, PlatformError> {
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("From", &self.settings.phone_number)
            .append_pair("To", to)
            .append_pair("Body", body)
            .finish();
        let answer = with_rate_limit(self.settings.max_rate_limit_wait, || {
            self.call(
                "POST Messages",
                self.client
                    .post(self.account_url("/Messages.json"))
                    .header(
                        reqwest::header::CONTENT_TYPE,
                        "application/x-www-form-urlencoded",
                    )
                    .body(form.clone()),
            )
        })
        .await?;
        self.status.add_sent(1);
        Ok(answer["sid"].as_str().unwrap_or_default().to_string())
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for SmsAdapter {
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
            let endpoint = Arc::new(webhook::Endpoint::new(
                self.settings.clone(),
                inbound.clone(),
                shutdown.clone(),
                Arc::clone(&self.status),
                Box::new(to_event),
            ));
            self.status.set_state(ConnectionState::Connected);
            if self.settings.webhook_url.is_none() {
                // Said once per start, so `hermes gateway status` shows it.
                self.status.error(
                    "SMS_INSECURE_NO_SIGNATURE=true: Twilio signatures are not checked; anyone who reaches the port can send as any number",
                );
            }
            backoff.reset();
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
        let mut text = markdown::render_text(&message.text);
        for file in &message.files {
            let name = file
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            text.push_str(&format!("\n[{name}: SMS cannot carry files]"));
        }
        let parts = split::render_parts(
            text.trim(),
            Dialect::Plain,
            MAX_MESSAGE,
            LengthUnit::Chars,
            true,
        );
        let mut ids = Vec::new();
        for part in &parts {
            ids.push(self.send_one(&chat.chat_id, part).await?);
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message is empty".into(),
        })
    }

    fn status(&self) -> AdapterStatus {
        self.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        let account = self
            .call("GET Account", self.client.get(self.account_url(".json")))
            .await?;
        Ok(format!(
            "{} on {} (account {}, {})",
            self.settings.phone_number,
            crate::platform::url_host(&self.settings.api_base),
            account["friendly_name"]
                .as_str()
                .unwrap_or(&self.settings.account_sid),
            account["status"].as_str().unwrap_or("status unknown"),
        ))
    }
}
