//! Dev-only test kit for the Hermes workspace: a scripted mock LLM server
//! (OpenAI Chat Completions, Anthropic Messages, OpenAI Responses and AWS
//! Bedrock Converse) with fault injection and request capture,
//! and isolated temp homes for running the `hermes` binary; doubles of the chat platforms
//! ([`platforms`]).
//!
//! ```no_run
//! use hermes_testkit::{MockServer, Script, Turn};
//! let server = MockServer::start(Script::new(vec![Turn::text("hello")]));
//! let base_url = server.base_url(); // http://127.0.0.1:PORT/v1
//! # let _ = base_url;
//! ```

mod anthropic_sse;
pub mod bedrock_stream;
mod child_server;
mod home;
mod http;
pub mod http_client;
mod mock_server;
pub mod openai_sse;
pub mod platforms;
mod props;
mod respond;
mod responses_sse;
mod script;

pub use child_server::ChildServer;
pub use home::{TestHome, mock_config_yaml, test_gguf};
pub use mock_server::{CapturedRequest, MockServer};
pub use props::proptest_config;
pub use respond::Api;
pub use script::{Exhausted, Fault, MockToolCall, MockUsage, Reply, Responder, Script, Turn};
