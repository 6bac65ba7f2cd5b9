//! The gateway: one agent reachable from other places than the terminal, in one long-lived
//! process over one `hermes_runtime::Runtime`: the OpenAI-compatible API server
//! ([`api_server`], with [`outcome`] mapping each turn's end to an HTTP answer), the chat
//! platform adapters ([`platform`]: Telegram, Discord, Slack, webhooks) and the chat gateway
//! on top of them ([`chat`]: authorisation and [`pairing`], one worker per chat, streamed
//! answers, approvals in the chat, slash commands, cron inside the gateway and delivery).

pub mod api_server;
pub mod chat;
pub mod client_tools;
pub mod outcome;
pub mod pairing;
pub mod platform;
pub mod wire;
