//! Chat platforms: everything below "an adapter hands the core an [`InboundEvent`], and the
//! core asks an adapter to send, edit, delete, type or show buttons".
//!
//! - [`PlatformAdapter`] is the one trait every platform implements; [`types`] is the shared
//!   vocabulary (chats, messages, attachments, buttons, capabilities, status).
//! - [`settings`] reads the Python Hermes's configuration (`platforms.<name>`, the top-level
//!   `<name>:` blocks, `TELEGRAM_BOT_TOKEN`, ...); [`build_adapters`] turns it into running
//!   adapters.
//! - [`markdown`] converts model markdown to each dialect; [`split`] cuts long answers at the
//!   platform's limit with code blocks intact.
//! - One module per platform: [`telegram`] (Bot API, long polling or webhook), [`discord`]
//!   (gateway websocket + REST), [`slack`] (Socket Mode + Web API), [`webhook`] (inbound
//!   HTTP routes with HMAC signatures), [`matrix`] (client-server API `/sync`), [`irc`]
//!   (TCP/TLS line protocol), [`mattermost`] (WebSocket events + REST API v4), [`email`] (IMAP
//!   in with IDLE, SMTP out), [`xmpp`] (our own XMPP client: STARTTLS, SCRAM, MUC rooms),
//!   [`signal`] (a signal-cli daemon: Server-Sent Events in, JSON-RPC out),
//!   [`whatsapp_cloud`] (Meta's webhook in, the Graph API out), [`sms`] (Twilio's signed
//!   webhook in, its REST API out), [`homeassistant`] (state changes over its WebSocket API in,
//!   persistent notifications out), [`feishu`] (Feishu / Lark: encrypted, signed events to
//!   a request URL in, the Open API out), [`dingtalk`] (DingTalk's Stream mode WebSocket in,
//!   session webhooks and the robot API out), [`wecom`] (a WeCom self-built app: encrypted,
//!   signed XML callbacks in, `message/send` out).
//!
//! Adapters never take the process down: `run` reconnects with backoff until shutdown, and
//! every failure is an error value or a status entry.

pub mod backoff;
mod build;
pub mod dingtalk;
pub mod discord;
pub(crate) mod download;
pub mod email;
pub mod error;
pub mod feishu;
pub(crate) mod gate;
pub mod homeassistant;
pub(crate) mod http;
pub mod irc;
pub(crate) mod listener;
pub mod markdown;
pub mod matrix;
pub mod mattermost;
pub mod settings;
pub mod signal;
pub mod slack;
pub mod sms;
pub mod split;
pub mod status;
pub mod telegram;
pub mod types;
pub mod webhook;
pub mod wecom;
pub mod whatsapp_cloud;
pub(crate) mod ws;
pub mod xmpp;

use std::path::{Path, PathBuf};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use build::{BuiltAdapters, build_adapters};
pub use error::{PlatformConfigError, PlatformError};
pub use settings::{PlatformSettings, PlatformsConfig};
pub use types::*;

/// One chat platform.
///
/// The core starts [`run`](PlatformAdapter::run) once on its own task, reads
/// [`InboundEvent`]s from the channel, and calls the other methods from any task at any time
/// (they are safe to call concurrently, also while `run` is reconnecting: a send made while
/// the connection is down uses the platform's REST API, which needs no connection, or fails
/// with a transient error).
#[async_trait::async_trait]
pub trait PlatformAdapter: Send + Sync {
    /// `telegram`, `discord`, `slack`, `webhook`.
    fn name(&self) -> &'static str;

    fn capabilities(&self) -> &Capabilities;

    /// Connects and receives until `shutdown`: reconnects with backoff after every failure
    /// (never returns early, never panics), pushes each event into `inbound` (waiting when it
    /// is full, which slows the platform down instead of dropping events). Returns once
    /// `shutdown` is cancelled and the connection is closed.
    async fn run(&self, inbound: mpsc::Sender<InboundEvent>, shutdown: CancellationToken);

    /// Sends a message: `text` converted to the platform's dialect and split at its limit
    /// (buttons under the last part), then `files`.
    async fn send(
        &self,
        chat: &ChatRef,
        message: &OutboundMessage,
    ) -> Result<SentMessage, PlatformError>;

    /// Replaces the text of message `id` (converted to the dialect; cut to the limit: the
    /// core splits long streams itself with [`split::render_parts`]). Buttons the message
    /// had are removed.
    /// Platforms that cannot edit (IRC, SMS, ...) keep the default: `Unsupported`, and the
    /// core sends each answer whole instead of streaming it.
    async fn edit(&self, _chat: &ChatRef, _id: &str, _text: &str) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: self.name(),
            operation: "edit messages",
        })
    }

    async fn delete(&self, _chat: &ChatRef, _id: &str) -> Result<(), PlatformError> {
        Err(PlatformError::Unsupported {
            platform: self.name(),
            operation: "delete messages",
        })
    }

    /// Shows "typing…" once (it fades after [`Capabilities::typing_interval`]); the default is
    /// for platforms that have no such indicator.
    async fn typing(&self, _chat: &ChatRef) -> Result<(), PlatformError> {
        Ok(())
    }

    /// Saves an attachment's bytes under `dir` (created when missing) and returns the path;
    /// files over `max_bytes` (0: no cap) are refused before or while downloading. The
    /// default is for platforms whose messages carry no files.
    async fn download(
        &self,
        _attachment: &Attachment,
        _dir: &Path,
        _max_bytes: u64,
    ) -> Result<PathBuf, PlatformError> {
        Err(PlatformError::Unsupported {
            platform: self.name(),
            operation: "receive files",
        })
    }

    fn status(&self) -> AdapterStatus;

    /// `hermes doctor`'s check: reaches the platform's servers with the configured credentials
    /// (the identity call the adapter makes when it connects, or a login), receiving and
    /// sending nothing, and says in a few words who the bot is there (`@hermes_bot on
    /// api.telegram.org`). Bounded by the adapter's own call timeouts.
    async fn probe(&self) -> Result<String, PlatformError>;
}

/// Text for an edit: converted, then cut to the limit with the first part kept (an edit
/// replaces one message, which cannot become several).
pub(crate) fn edit_text(text: &str, caps: &Capabilities) -> Option<String> {
    split::render_parts(
        text,
        caps.markdown,
        caps.max_message_len,
        caps.length_unit,
        false,
    )
    .into_iter()
    .next()
}

/// Sends `event` into the core's channel, giving up when shutdown comes first or the core is
/// gone. Returns whether it was delivered.
pub(crate) async fn deliver(
    inbound: &mpsc::Sender<InboundEvent>,
    event: InboundEvent,
    shutdown: &CancellationToken,
) -> bool {
    tokio::select! {
        _ = shutdown.cancelled() => false,
        sent = inbound.send(event) => sent.is_ok(),
    }
}

/// `host[:port]` of a URL, for a line a user reads (the URL itself when it has no host).
pub(crate) fn url_host(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_string(),
            _ => url.to_string(),
        },
        Err(_) => url.to_string(),
    }
}
