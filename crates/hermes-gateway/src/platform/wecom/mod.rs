//! WeCom (企业微信) through a self-built app in callback mode, as the Python Hermes's
//! `wecom_callback`: WeCom posts signed, encrypted XML to our callback URL ([`callback`],
//! [`crypto`]), and answers go out through `cgi-bin/message/send` with an access token from
//! `cgi-bin/gettoken` (cached until a minute before it expires, fetched again when WeCom calls
//! it invalid or expired: errcode 40001, 40014, 42001).
//!
//! A self-built app talks to users one to one: every chat is a user, named as Python does,
//! `corp_id:user_id` (a bare user id works too for a home channel). Text messages reach the
//! core; entering the app and other events do not (nor pictures or voice, which Python drops
//! too). Answers are text messages, split at 2,048 bytes (WeCom's limit for a text's content;
//! Python cuts at 2,048 characters), which cannot be edited or deleted; there is no typing
//! indicator.
//!
//! Python's other WeCom platform, `wecom` (the Smart Robot over a WebSocket), is not built: a
//! configuration enabling it is refused with the way to this one.

mod callback;
mod crypto;
pub mod settings;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use self::callback::Callback;
use self::settings::PLATFORM;
pub use self::settings::WeComSettings;
use crate::platform::backoff::Backoff;
use crate::platform::error::{PlatformConfigError, PlatformError};
use crate::platform::listener::ListenerSlot;
use crate::platform::status::StatusCell;
use crate::platform::types::{
    AdapterStatus, Capabilities, ChatRef, ChatType, ConnectionState, Dialect, InboundEvent,
    InboundMessage, LengthUnit, OutboundMessage, SentMessage,
};
use crate::platform::{PlatformAdapter, http, split};

/// WeCom's limit on a text message's content, in bytes.
const MAX_TEXT_BYTES: usize = 2048;
/// A token is renewed this long before it expires (Python's margin).
const TOKEN_MARGIN: Duration = Duration::from_secs(60);
/// The errcodes of a token WeCom no longer takes.
const TOKEN_ERRORS: &[i64] = &[40001, 40014, 42001];

/// The refusal for Python's `wecom` (Smart Robot) platform.
pub fn smart_robot_refusal() -> PlatformConfigError {
    PlatformConfigError::Invalid {
        platform: "wecom",
        message: "the WeCom Smart Robot (WECOM_BOT_ID / WECOM_SECRET, a WebSocket) is not \
                  supported by this gateway; create a self-built app in the WeCom admin console \
                  and use callback mode instead: set WECOM_CALLBACK_CORP_ID, \
                  WECOM_CALLBACK_CORP_SECRET, WECOM_CALLBACK_AGENT_ID, WECOM_CALLBACK_TOKEN and \
                  WECOM_CALLBACK_ENCODING_AES_KEY, and unset WECOM_BOT_ID"
            .into(),
    }
}

/// The parts of an answer: at most [`MAX_TEXT_BYTES`] bytes each.
fn parts(text: &str) -> Vec<String> {
    let parts = split::render_parts(
        text,
        Dialect::Plain,
        MAX_TEXT_BYTES,
        LengthUnit::Chars,
        true,
    );
    if parts.iter().all(|p| p.len() <= MAX_TEXT_BYTES) {
        return parts;
    }
    // Wide characters: a quarter of the bytes in characters always fits (UTF-8 needs at most
    // four bytes for one).
    split::render_parts(
        text,
        Dialect::Plain,
        MAX_TEXT_BYTES / 4,
        LengthUnit::Chars,
        true,
    )
}

/// The WeCom callback-mode adapter.
pub struct WeComAdapter {
    settings: WeComSettings,
    client: reqwest::Client,
    token: Mutex<Option<(String, Instant)>>,
    status: Arc<StatusCell>,
    caps: Capabilities,
    listener: ListenerSlot,
}

impl std::fmt::Debug for WeComAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeComAdapter")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The core's event for a decrypted message, `None` for events and non-text messages.
fn to_event(corp_id: &str, c: Callback) -> Option<InboundEvent> {
    if c.msg_type != "text" || c.from.is_empty() || c.content.is_empty() {
        return None;
    }
    let corp = if c.to.is_empty() { corp_id } else { &c.to };
    let received_at = if c.create_time > 0 {
        UNIX_EPOCH + Duration::from_secs(c.create_time)
    } else {
        SystemTime::now()
    };
    let message_id = if c.msg_id.is_empty() {
        format!("{}:{}", c.from, c.create_time)
    } else {
        c.msg_id
    };
    Some(InboundEvent::Message(InboundMessage {
        chat: ChatRef::new(PLATFORM, ChatType::Direct, format!("{corp}:{}", c.from)),
        chat_name: Some(c.from.clone()),
        message_id,
        user_id: c.from,
        user_name: None,
        text: c.content,
        attachments: Vec::new(),
        reply_to: None,
        mentions_bot: false,
        replies_to_bot: false,
        from_bot: false,
        deliver_to: None,
        skills: Vec::new(),
        received_at,
    }))
}

impl WeComAdapter {
    pub fn new(settings: WeComSettings) -> Result<WeComAdapter, PlatformConfigError> {
        Ok(WeComAdapter {
            client: http::client(PLATFORM)?,
            settings,
            token: Mutex::new(None),
            status: Arc::new(StatusCell::default()),
            caps: Capabilities {
                max_message_len: MAX_TEXT_BYTES,
                length_unit: LengthUnit::Chars,
                // Text messages show markdown as written.
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
            listener: ListenerSlot::default(),
        })
    }

    /// Serves on an already bound listener instead of `host:port`.
    pub fn with_listener(self, listener: std::net::TcpListener) -> WeComAdapter {
        self.listener.preset(listener);
        self
    }

    /// Where the callback URL listens, once it does.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr()
    }

    /// Reads a WeCom answer: JSON with `errcode` 0, else an error naming it.
    async fn answer(
        &self,
        what: &str,
        response: reqwest::Response,
    ) -> Result<Value, PlatformError> {
        let status = response.status().as_u16();
        let bytes = http::read_limited(PLATFORM, response, http::MAX_API_BODY).await?;
        let v: Value = serde_json::from_slice(&bytes).map_err(|_| PlatformError::Protocol {
            platform: PLATFORM,
            message: format!("{what}: HTTP {status}, not JSON"),
        })?;
        let code = v["errcode"].as_i64().unwrap_or(-1);
        if code == 0 {
            return Ok(v);
        }
        let message = format!(
            "{what}: errcode {code} {}",
            v["errmsg"].as_str().unwrap_or_default()
        );
        Err(match code {
            // Invalid corp id or secret (40013, 40001 for gettoken), a disabled app (40091).
            40013 | 40091 | 40001 if what == "GET gettoken" => PlatformError::Unauthorized {
                platform: PLATFORM,
                hint: "WECOM_CALLBACK_CORP_ID / WECOM_CALLBACK_CORP_SECRET",
                message,
            },
            // The API frequency limits.
            45009 | 45033 => PlatformError::RateLimited {
                platform: PLATFORM,
                retry_after: Duration::from_secs(1),
            },
            -1 => PlatformError::Api {
                platform: PLATFORM,
                status: 503,
                message,
            },
            _ => PlatformError::Api {
                platform: PLATFORM,
                status: if status == 200 { 400 } else { status },
                message,
            },
        })
    }

    /// The access token, cached.
    async fn token(&self) -> Result<String, PlatformError> {
        let mut cached = self.token.lock().await;
        if let Some((token, until)) = cached.as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let s = &self.settings;
        let response = self
            .client
            .get(format!(
                "{}/cgi-bin/gettoken?{}",
                s.api_url,
                form_urlencoded::Serializer::new(String::new())
                    .append_pair("corpid", &s.corp_id)
                    .append_pair("corpsecret", &s.corp_secret)
                    .finish()
            ))
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .map_err(|e| http::network(PLATFORM, e))?;
        let v = self.answer("GET gettoken", response).await?;
        let token = v["access_token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or(PlatformError::Protocol {
                platform: PLATFORM,
                message: "gettoken gave no access_token".into(),
            })?
            .to_string();
        let life = Duration::from_secs(v["expires_in"].as_u64().unwrap_or(7200));
        *cached = Some((
            token.clone(),
            Instant::now() + life.saturating_sub(TOKEN_MARGIN),
        ));
        Ok(token)
    }

    /// `message/send` of one text to `user`; its `msgid`.
    async fn send_text(&self, user: &str, text: &str) -> Result<String, PlatformError> {
        let body = json!({
            "touser": user,
            "msgtype": "text",
            "agentid": self.settings.agent_id,
            "text": {"content": text},
            "safe": 0,
        });
        let mut refreshed = false;
        loop {
            let token = self.token().await?;
            let response = self
                .client
                .post(format!(
                    "{}/cgi-bin/message/send?{}",
                    self.settings.api_url,
                    form_urlencoded::Serializer::new(String::new())
                        .append_pair("access_token", &token)
                        .finish()
                ))
                .timeout(Duration::from_secs(20))
                .json(&body)
                .send()
                .await
                .map_err(|e| http::network(PLATFORM, e))?;
            match self.answer("POST message/send", response).await {
                Ok(v) => {
                    let id = v["msgid"].as_str().unwrap_or_default().to_string();
                    // WeCom answers 0 even when it delivered to nobody; it names them.
                    if v["invaliduser"].as_str().is_some_and(|u| !u.is_empty()) {
                        return Err(PlatformError::Invalid {
                            platform: PLATFORM,
                            message: format!("{user} is not a user of this app"),
                        });
                    }
                    return Ok(id);
                }
                Err(PlatformError::Api { message, .. })
                    if !refreshed
                        && TOKEN_ERRORS
                            .iter()
                            .any(|c| message.contains(&format!("errcode {c} "))) =>
                {
                    refreshed = true;
                    *self.token.lock().await = None;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[async_trait::async_trait]
impl PlatformAdapter for WeComAdapter {
    fn name(&self) -> &'static str {
        PLATFORM
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken) {
        let status = Arc::clone(&self.status);
        let mut backoff = Backoff::transient();
        while !shutdown.is_cancelled() {
            status.set_state(ConnectionState::Connecting);
            let Some(listener) = self
                .listener
                .bind_retrying(
                    &self.settings.host,
                    self.settings.port,
                    &status,
                    &mut backoff,
                    &shutdown,
                )
                .await
            else {
                break;
            };
            let corp_id = self.settings.corp_id.clone();
            let endpoint = Arc::new(callback::Endpoint::new(
                self.settings.clone(),
                inbound.clone(),
                shutdown.clone(),
                Arc::clone(&status),
                Box::new(move |c| to_event(&corp_id, c)),
            ));
            status.set_state(ConnectionState::Connected);
            backoff.reset();
            crate::api_server::listener::serve(
                listener,
                callback::router(endpoint),
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
        // `corp:user` (Python's scoped chat id) or a bare user id.
        let user = chat
            .chat_id
            .split_once(':')
            .map(|(_, u)| u)
            .unwrap_or(&chat.chat_id);
        if user.is_empty() || user.contains(['|', '/', '?']) {
            return Err(PlatformError::Invalid {
                platform: PLATFORM,
                message: format!("{:?} is not a WeCom user", chat.chat_id),
            });
        }
        let mut text = message.text.trim().to_string();
        if !message.files.is_empty() {
            // Files would need the media upload API, which Python does not use either.
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
            text.push_str(&format!(
                "\n\n(files cannot be sent to WeCom from here: {})",
                names.join(", ")
            ));
        }
        let mut ids = Vec::new();
        for part in parts(text.trim()) {
            ids.push(self.send_text(user, &part).await?);
            self.status.add_sent(1);
        }
        SentMessage::from_ids(ids).ok_or(PlatformError::Invalid {
            platform: PLATFORM,
            message: "nothing to send: the message has no text".into(),
        })
    }

    fn status(&self) -> AdapterStatus {
        self.status.snapshot()
    }

    async fn probe(&self) -> Result<String, PlatformError> {
        // The token is what every send needs: it proves the corp id and secret.
        self.token().await?;
        let s = &self.settings;
        Ok(format!(
            "agent {} of corp {} on {}",
            s.agent_id,
            s.corp_id,
            crate::platform::url_host(&s.api_url)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_fit_in_bytes() {
        let ascii = "a".repeat(5000);
        let p = parts(&ascii);
        assert!(
            p.len() >= 3 && p.iter().all(|x| x.len() <= MAX_TEXT_BYTES),
            "{}",
            p.len()
        );
        let wide = "好".repeat(1500);
        let p = parts(&wide);
        assert!(p.iter().all(|x| x.len() <= MAX_TEXT_BYTES));
        assert_eq!(p.concat().matches('好').count(), 1500);
    }

    #[test]
    fn only_text_messages_are_events() {
        let c = Callback {
            to: "ww1".into(),
            from: "zhangsan".into(),
            create_time: 1,
            msg_type: "text".into(),
            content: "hi".into(),
            msg_id: "9".into(),
            event: String::new(),
        };
        let Some(InboundEvent::Message(m)) = to_event("ww1", c.clone()) else {
            panic!()
        };
        assert_eq!(m.chat.chat_id, "ww1:zhangsan");
        assert_eq!(m.user_id, "zhangsan");
        let event = Callback {
            msg_type: "event".into(),
            event: "enter_agent".into(),
            content: String::new(),
            ..c
        };
        assert!(to_event("ww1", event).is_none());
    }
}
