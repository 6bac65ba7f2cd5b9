//! MCP client for Hermes: the servers of `mcp_servers` in config.yaml ([`config`]) connected
//! concurrently over stdio or Streamable HTTP ([`client::Hub`]), their tools offered to the
//! model as `mcp__<server>__<tool>` in toolset `mcp-<server>`, calls rendered as the Python
//! Hermes does ([`text`]). Built on the official Rust SDK, `rmcp` (client side only).

pub mod client;
pub mod config;
pub mod text;

pub use client::{Hub, McpTool, RemoteTool, Server, Status};
pub use config::{ServerConfig, Transport, parse_servers};
