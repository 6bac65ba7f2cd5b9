//! The gateway: one agent reachable from other places than the terminal. This crate has the
//! OpenAI-compatible API server ([`api_server`]) and the chat platform adapters
//! ([`platform`]: Telegram, Discord, Slack, webhooks). Neither knows how an agent is built:
//! the binary injects a [`api_server::TurnRunner`] and drives the adapters' events.

pub mod api_server;
pub mod platform;
pub mod wire;
