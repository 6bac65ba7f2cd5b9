//! Doubles of the chat platforms the gateway talks to, each on 127.0.0.1 and faithful to the
//! platform's documented API: request capture, scripted users talking to the bot, and fault
//! injection. The gateway's adapter tests and the binary's end-to-end tests point the
//! adapters' base URLs at them.
//!
//! - [`telegram::TelegramMock`]: the Bot API (long polling with offsets, webhook mode,
//!   messages, buttons, files, MarkdownV2 validation, 429 `retry_after`).
//! - [`discord::DiscordMock`]: REST v10 with rate-limit headers and the gateway websocket
//!   (HELLO, IDENTIFY, heartbeats, DISPATCH with sequence numbers, RESUME replays, faults).
//! - [`slack::SlackMock`]: the Web API and Socket Mode (tickets, hello, envelopes that must
//!   be acknowledged and are redelivered when not, disconnect refreshes).
//! - [`mattermost::MattermostMock`]: REST API v4 and the WebSocket (authentication
//!   challenge, `hello` with a connection id, `posted` events with seq numbers, reliable
//!   reconnects replaying missed events, faults).
//! - [`prosody::Prosody`]: not a double but the real XMPP server (Debian's Prosody) in a temp
//!   directory, with [`prosody::XmppClient`], a tiny blocking client playing the human.
//! - [`signal::SignalMock`]: a `signal-cli daemon --http` (JSON-RPC on `/api/v1/rpc`, the
//!   Server-Sent Events of `/api/v1/events` with event ids and `Last-Event-ID` replays,
//!   `/api/v1/check`), scripted users and groups, attachments, dropped streams.
//! - [`webhook`]: signing helpers for the tests of our inbound webhook server, and a
//!   receiver for its callbacks.
//! - [`whatsapp_cloud::WhatsAppCloudMock`]: the WhatsApp Cloud API's Graph endpoints
//!   (messages, interactive buttons, media upload and download, the phone number, Graph
//!   error shapes) and [`whatsapp_cloud::WebhookSender`], Meta's signed webhook deliveries.
//! - [`homeassistant::HomeAssistantMock`]: Home Assistant's WebSocket API (auth, `subscribe_events`,
//!   `ping`, `state_changed` events, dropped connections) and REST API (config, persistent
//!   notifications).
//! - [`daytona::DaytonaMock`]: Daytona's sandbox REST API and per-sandbox toolbox (execute,
//!   file upload/download), idle auto-stop; commands run on this machine in the sandbox's home.
//! - [`modal_gateway::ModalGatewayMock`]: the Nous tool gateway's Modal sandbox API
//!   (create, execs started/polled/cancelled, terminate, idle hibernation).
//! - [`twilio::TwilioMock`]: Twilio's REST API for SMS (Messages.json with Twilio's error
//!   codes, the account) and [`twilio::TwilioWebhook`], Twilio's signed inbound requests.
//! - [`feishu::FeishuMock`]: the Feishu / Lark Open API (tenant tokens that expire, messages,
//!   replies, edits, recalls, resources, uploads, the bot's info, `{code, msg, data}` errors)
//!   and [`feishu::EventSender`], Feishu's encrypted and signed event deliveries.
//! - [`dingtalk::DingTalkMock`]: DingTalk's Stream gateway (connection tickets, the WebSocket
//!   with CALLBACK and SYSTEM frames and their acknowledgements, dropped connections), access
//!   tokens, the robot's send and file APIs, and the session webhooks it hands out.
//! - [`honcho::HonchoMock`]: the Honcho v3 memory API (get-or-create workspaces, peers and
//!   sessions, message batches, session and peer context, cards, the dialectic, search,
//!   conclusions), Honcho's own model outputs scripted by the test.
//! - [`wecom::WeComMock`]: WeCom's `gettoken` and `message/send` (errcodes as documented,
//!   expiring tokens) and [`wecom::CallbackSender`], WeCom's signed, encrypted callbacks.

pub mod daytona;
pub mod dingtalk;
pub mod discord;
pub mod feishu;
pub mod homeassistant;
pub mod honcho;
pub mod mattermost;
pub mod modal_gateway;
pub mod prosody;
mod sandbox_exec;
mod server;
pub mod signal;
pub mod slack;
pub mod telegram;
pub mod telegram_markdown;
pub mod twilio;
pub mod webhook;
pub mod wecom;
pub mod whatsapp_cloud;

pub use server::{MockRequest, MockResponse};
