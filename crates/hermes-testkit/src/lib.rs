//! Dev-only test kit for the Hermes workspace: a scripted mock LLM server
//! (OpenAI Chat Completions, Anthropic Messages, OpenAI Responses and AWS
//! Bedrock Converse) with fault injection (including endless and trickling
//! streams) and request capture, canned answers for other paths (an OAuth
//! device-code / token server), isolated temp homes for running the `hermes`
//! binary, measuring a child's peak memory, doubles of the chat platforms
//! ([`platforms`]) and real chat servers started for a test ([`peers`]: Synapse, ngircd,
//! Dovecot; [`platforms::prosody`]: Prosody for XMPP).
//!
//! ```no_run
//! use hermes_testkit::{MockServer, Script, Turn};
//! let server = MockServer::start(Script::new(vec![Turn::text("hello")]));
//! let base_url = server.base_url(); // http://127.0.0.1:PORT/v1
//! # let _ = base_url;
//! ```

mod anthropic_sse;
pub mod apptainer;
pub mod bedrock_stream;
mod child_server;
pub mod docker;
mod home;
mod http;
pub mod http_client;
mod measure;
mod mock_server;
pub mod openai_sse;
pub mod peers;
pub mod platforms;
pub mod postgres;
mod props;
mod respond;
mod responses_sse;
mod script;
pub mod sshd;

pub use child_server::ChildServer;
pub use home::{TestHome, mock_config_yaml, test_gguf};
pub use measure::{Measured, own_peak_rss_kib, run_measured};
pub use mock_server::{CapturedRequest, MockServer};
pub use props::proptest_config;
pub use respond::Api;
pub use script::{
    Canned, Exhausted, Fault, MockToolCall, MockUsage, Reply, Responder, Route, Script, Turn,
};
