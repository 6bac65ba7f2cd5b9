//! The gateway: one agent reachable from other places than the terminal. This build has the
//! OpenAI-compatible API server ([`api_server`]); the chat-platform adapters of the Python
//! Hermes (Telegram, Discord, ...) are not in it. The server knows nothing of how an agent is
//! built: the binary injects a [`api_server::TurnRunner`].

pub mod api_server;
pub mod outcome;
pub mod wire;
