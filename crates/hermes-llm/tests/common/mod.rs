//! Helpers shared by hermes-llm's integration tests: a provider of one wire format pointed at
//! the scripted mock server, and the one-message request the table tests send.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use hermes_llm::{ChatRequest, HttpTimeouts, Provider, ProviderSpec, WireFormat};
use hermes_protocol::Message;
use hermes_testkit::MockServer;

/// A provider speaking `wire` to `server` (Anthropic's base URL has no `/v1`), model `m`.
pub fn provider_at(server: &MockServer, wire: WireFormat) -> Arc<dyn Provider> {
    let base_url = match wire {
        WireFormat::Anthropic => format!("http://127.0.0.1:{}", server.port()),
        _ => server.base_url(),
    };
    let spec = ProviderSpec {
        provider: "test".into(),
        base_url,
        api_key: Some("sk-test".into()),
        model: "m".into(),
        wire,
        chosen_by: "test".into(),
        key_source: None,
    };
    hermes_llm::build_provider(&spec, &HttpTimeouts::default()).unwrap()
}

/// `[user: "x"]`, for requests whose content does not matter.
pub fn one_message() -> [Message; 1] {
    [Message::user("x")]
}

/// A request for model `m` with `messages`, no system prompt, tools or options.
pub fn plain_request(messages: &[Message]) -> ChatRequest<'_> {
    ChatRequest {
        model: "m",
        system: "",
        messages,
        tools: &[],
        max_tokens: None,
        temperature: None,
        reasoning: None,
    }
}
