//! The vocabulary shared by every adapter and the gateway core: where a message comes from
//! ([`ChatRef`]), what arrives ([`InboundEvent`], [`InboundMessage`], [`Attachment`]), what
//! goes out ([`OutboundMessage`], [`Button`], [`OutboundFile`]) and what a platform can do
//! ([`Capabilities`]). Plain data: no I/O here.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// The kind of conversation, in the Python Hermes's terms (`as_str` gives its names, which
/// the session keys use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChatType {
    /// One user and the bot.
    Direct,
    /// Several people (a Telegram group, a Discord or Slack channel, a group DM).
    Group,
    /// A broadcast channel (Telegram channels).
    Channel,
    /// One inbound webhook delivery (no person on the other side).
    Webhook,
}

impl ChatType {
    /// `dm`, `group`, `channel` or `webhook`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChatType::Direct => "dm",
            ChatType::Group => "group",
            ChatType::Channel => "channel",
            ChatType::Webhook => "webhook",
        }
    }
}

impl fmt::Display for ChatType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The address of a conversation: enough to send into it again, and the parts of a session
/// key (`{platform}:{chat_type}:{chat_id}[:{thread_id}]`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChatRef {
    /// The adapter's name (`telegram`, `discord`, `slack`, `webhook`).
    pub platform: String,
    pub chat_type: ChatType,
    /// Telegram chat id, Discord channel id, Slack channel id, webhook delivery key.
    pub chat_id: String,
    /// Telegram forum topic, Discord thread channel, Slack thread root `ts`.
    pub thread_id: Option<String>,
}

impl ChatRef {
    pub fn new(platform: &str, chat_type: ChatType, chat_id: impl Into<String>) -> ChatRef {
        ChatRef {
            platform: platform.to_string(),
            chat_type,
            chat_id: chat_id.into(),
            thread_id: None,
        }
    }

    pub fn with_thread(mut self, thread_id: Option<String>) -> ChatRef {
        self.thread_id = thread_id;
        self
    }

    /// `{platform}:{chat_type}:{chat_id}[:{thread_id}]`, the Python Hermes's session key shape
    /// (without the per-user part the core adds in groups).
    pub fn session_key(&self) -> String {
        let mut key = format!("{}:{}:{}", self.platform, self.chat_type, self.chat_id);
        if let Some(thread) = &self.thread_id {
            key.push(':');
            key.push_str(thread);
        }
        key
    }
}

/// Something that happened on a platform that the core must see.
#[derive(Debug, Clone, PartialEq)]
pub enum InboundEvent {
    Message(InboundMessage),
    /// A button of a message the bot sent was pressed (Telegram callback query, Discord
    /// component interaction, Slack `block_actions`). The adapter has already acknowledged
    /// the press to the platform.
    Button {
        chat: ChatRef,
        user_id: String,
        user_name: Option<String>,
        /// The message carrying the button.
        message_id: String,
        /// The `data` of the [`Button`] as it was sent.
        data: String,
    },
    /// Send `text` to `to` as it is, without the agent (webhook routes with
    /// `deliver_only`). An empty `to.chat_id` means that platform's home channel.
    Deliver {
        to: ChatRef,
        text: String,
    },
}

impl InboundEvent {
    pub fn chat(&self) -> &ChatRef {
        match self {
            InboundEvent::Message(m) => &m.chat,
            InboundEvent::Button { chat, .. } => chat,
            InboundEvent::Deliver { to, .. } => to,
        }
    }
}

/// One message from a user, already past the platform's own filters (the bot's own messages,
/// other bots unless allowed, channels outside `allowed_channels`, and group messages that do
/// not address the bot when `require_mention` is on are dropped by the adapter).
#[derive(Debug, Clone, PartialEq)]
pub struct InboundMessage {
    pub chat: ChatRef,
    /// Human-readable chat name when the platform gives one (group title, `#channel`).
    pub chat_name: Option<String>,
    pub message_id: String,
    pub user_id: String,
    pub user_name: Option<String>,
    /// The text with the bot's own mention removed; a caption for media.
    pub text: String,
    pub attachments: Vec<Attachment>,
    /// The message this one replies to.
    pub reply_to: Option<String>,
    /// The bot was @-mentioned (or matched a mention pattern, or addressed by `/cmd@bot`).
    pub mentions_bot: bool,
    /// The message replies to one of the bot's messages.
    pub replies_to_bot: bool,
    /// Sent by another bot (only delivered when the platform's `allow_bots` admits it).
    pub from_bot: bool,
    /// Where the answer must go instead of this chat (webhook routes with `deliver:
    /// <platform>`; an empty `chat_id` means that platform's home channel); `None`: answer
    /// here.
    pub deliver_to: Option<ChatRef>,
    /// Skills to run this message with (webhook routes' `skills`): the first one found runs
    /// as `/skill` would, with `text` as the request.
    pub skills: Vec<String>,
    /// When the platform says the message was sent (the adapter's clock when it does not).
    pub received_at: SystemTime,
}

/// What kind of file an attachment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttachmentKind {
    Image,
    Audio,
    /// A voice note (Telegram voice, Discord voice message).
    Voice,
    Video,
    Document,
}

impl AttachmentKind {
    /// The kind a MIME type suggests (documents when unknown).
    pub fn from_mime(mime: Option<&str>) -> AttachmentKind {
        match mime.map(|m| m.split('/').next().unwrap_or_default()) {
            Some("image") => AttachmentKind::Image,
            Some("audio") => AttachmentKind::Audio,
            Some("video") => AttachmentKind::Video,
            _ => AttachmentKind::Document,
        }
    }
}

/// A file that came with a message; its bytes are fetched only when the core asks
/// ([`crate::platform::PlatformAdapter::download`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    pub kind: AttachmentKind,
    pub file_name: Option<String>,
    pub mime: Option<String>,
    /// Size in bytes when the platform tells it in advance.
    pub size: Option<u64>,
    pub source: FileSource,
}

/// Where an attachment's bytes live, in the platform's own terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileSource {
    /// A Telegram `file_id` (resolved with `getFile`).
    TelegramFile { file_id: String },
    /// A URL the adapter may fetch (with the bot's credentials when the platform requires
    /// them: Slack's `url_private`).
    Url(String),
    /// The bytes themselves, which came inside the message (email attachments).
    Inline(InlineBytes),
    /// An id the adapter resolves through its own API (a signal-cli attachment id, fetched
    /// with `getAttachment`; a WhatsApp Cloud API media id, resolved to a short-lived URL with
    /// `GET /{media-id}` when downloaded).
    PlatformId(String),
}

/// Bytes carried with an attachment; shared, and shown by size only (never dumped in logs).
#[derive(Clone, PartialEq, Eq)]
pub struct InlineBytes(pub std::sync::Arc<[u8]>);

impl fmt::Debug for InlineBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InlineBytes({} bytes)", self.0.len())
    }
}

/// A button under a message; pressing it sends `data` back as [`InboundEvent::Button`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub label: String,
    /// Opaque to the platform. Telegram allows at most 64 bytes, Discord 100 characters.
    pub data: String,
    pub style: ButtonStyle,
}

impl Button {
    pub fn new(label: impl Into<String>, data: impl Into<String>) -> Button {
        Button {
            label: label.into(),
            data: data.into(),
            style: ButtonStyle::Default,
        }
    }

    pub fn styled(mut self, style: ButtonStyle) -> Button {
        self.style = style;
        self
    }
}

/// How a button is drawn where the platform has styles (Discord, Slack).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ButtonStyle {
    #[default]
    Default,
    Primary,
    Danger,
}

/// How a file is presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboundFileKind {
    Photo,
    Document,
    Voice,
}

/// A local file to send with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundFile {
    pub kind: OutboundFileKind,
    pub path: PathBuf,
}

/// A message to send. `text` is markdown; the adapter converts it to the platform's dialect
/// and splits it at the platform's limit (buttons go under the last part).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OutboundMessage {
    pub text: String,
    pub buttons: Vec<Button>,
    /// Reply to this message (honouring the platform's `reply_to_mode`).
    pub reply_to: Option<String>,
    pub files: Vec<OutboundFile>,
}

impl OutboundMessage {
    pub fn text(text: impl Into<String>) -> OutboundMessage {
        OutboundMessage {
            text: text.into(),
            ..OutboundMessage::default()
        }
    }

    pub fn with_buttons(mut self, buttons: Vec<Button>) -> OutboundMessage {
        self.buttons = buttons;
        self
    }

    pub fn replying_to(mut self, message_id: impl Into<String>) -> OutboundMessage {
        self.reply_to = Some(message_id.into());
        self
    }

    pub fn with_file(
        mut self,
        kind: OutboundFileKind,
        path: impl Into<PathBuf>,
    ) -> OutboundMessage {
        self.files.push(OutboundFile {
            kind,
            path: path.into(),
        });
        self
    }
}

/// What a send produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentMessage {
    /// The first message sent (the one to edit when streaming).
    pub message_id: String,
    /// Every message sent, in order (several when the text was split or files were sent).
    pub message_ids: Vec<String>,
}

impl SentMessage {
    pub(crate) fn from_ids(message_ids: Vec<String>) -> Option<SentMessage> {
        let first = message_ids.first()?.clone();
        Some(SentMessage {
            message_id: first,
            message_ids,
        })
    }
}

/// The markdown dialect a platform renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Telegram MarkdownV2 (every special character outside entities escaped).
    TelegramV2,
    /// Slack mrkdwn (`*bold*`, `_italic_`, `<url|label>`, `&amp;` escapes).
    SlackMrkdwn,
    /// Discord's markdown (CommonMark-like; tables become bullet groups).
    Discord,
    /// No formatting: the text as written.
    Plain,
}

/// How lengths are counted against the platform's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthUnit {
    /// Unicode scalar values (Discord, Slack).
    Chars,
    /// UTF-16 code units (Telegram).
    Utf16,
}

impl LengthUnit {
    pub fn len(self, s: &str) -> usize {
        match self {
            LengthUnit::Chars => s.chars().count(),
            LengthUnit::Utf16 => s.encode_utf16().count(),
        }
    }

    pub fn char_len(self, c: char) -> usize {
        match self {
            LengthUnit::Chars => 1,
            LengthUnit::Utf16 => c.len_utf16(),
        }
    }
}

/// What a platform can do, so the core streams, splits and shows buttons accordingly.
#[derive(Debug, Clone, PartialEq)]
pub struct Capabilities {
    /// Longest message, after conversion to the dialect, in `length_unit`s.
    pub max_message_len: usize,
    pub length_unit: LengthUnit,
    pub markdown: Dialect,
    pub can_edit: bool,
    pub can_delete: bool,
    pub buttons: bool,
    pub threads: bool,
    /// Whether a typing indicator exists (see `typing_interval`).
    pub typing: bool,
    /// How long one typing call lasts; the core repeats it this often while it works.
    pub typing_interval: Duration,
    /// The shortest interval between two edits of one message that stays clear of the
    /// platform's rate limits (streaming by edits).
    pub min_edit_interval: Duration,
    /// Whether short progress lines (tool calls) belong in this chat; false where every send
    /// is a delivery to a machine (webhooks).
    pub progress_messages: bool,
}

/// Connection state of an adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectionState {
    /// Not started, or stopped by shutdown.
    Stopped,
    Connecting,
    Connected,
    /// Lost the connection (or failed to make it) and waiting to try again.
    Reconnecting,
    /// A problem retrying will not fix (bad token, missing intent); retried slowly anyway in
    /// case the platform was wrong.
    Failed,
}

impl ConnectionState {
    pub fn as_str(&self) -> &'static str {
        match self {
            ConnectionState::Stopped => "stopped",
            ConnectionState::Connecting => "connecting",
            ConnectionState::Connected => "connected",
            ConnectionState::Reconnecting => "reconnecting",
            ConnectionState::Failed => "failed",
        }
    }
}

/// A snapshot of an adapter's health for `hermes gateway status`.
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterStatus {
    pub state: ConnectionState,
    /// Since when the adapter is in `state`.
    pub since: SystemTime,
    /// The last error and when it happened.
    pub last_error: Option<(SystemTime, String)>,
    /// Events pushed to the core.
    pub received: u64,
    /// Messages sent (each part of a split message counts).
    pub sent: u64,
    /// Connections made after the first.
    pub reconnects: u64,
}
