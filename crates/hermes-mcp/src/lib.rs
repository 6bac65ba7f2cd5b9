//! MCP for Hermes, on the official Rust SDK `rmcp`.
//!
//! Client: the servers of `mcp_servers` in config.yaml ([`config`]) connected in the
//! background by one shared [`Hub`] ([`hub`]) over stdio, Streamable HTTP or the legacy
//! HTTP+SSE transport ([`sse`]), with OAuth 2.1 for remote servers ([`oauth`]) and sampling
//! requests answered under a per-server policy ([`sampling`]; [`llm`] adapts a
//! `hermes_llm::Provider` behind the `llm` feature). Their tools, resources and prompts are
//! offered to the model as `mcp__<server>__<tool>` in toolset `mcp-<server>` ([`tools`]),
//! calls rendered as the Python Hermes does ([`text`]).
//!
//! Server (feature `serve`): [`serve`] is `hermes mcp serve`, Hermes's conversations,
//! messaging and a chat turn as MCP tools over stdio or Streamable HTTP.

pub mod config;
mod connection;
mod handler;
pub mod hub;
#[cfg(feature = "llm")]
pub mod llm;
pub mod oauth;
pub mod sampling;
#[cfg(feature = "serve")]
pub mod serve;
pub mod sse;
pub mod text;
pub mod tools;

pub use config::{ServerConfig, Transport, parse_servers};
pub use connection::{Listed, RemoteTool};
pub use hub::{Hub, HubOptions, ServerView, Status};
pub use oauth::{AuthPrompt, ConsolePrompt, OAuth, OAuthError, OAuthSettings};
pub use sampling::{
    SampledToolCall, SamplingBlock, SamplingError, SamplingHandler, SamplingMessage,
    SamplingPolicy, SamplingReply, SamplingRequest, SamplingRole, SamplingTool, StopReason,
};
pub use tools::McpTool;
