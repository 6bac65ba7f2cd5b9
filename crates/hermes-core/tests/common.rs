//! Shared setup for agent tests: a real OpenAI-chat provider pointed at the mock server, the
//! built-in tools, fast retries.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_core::{Agent, AgentOptions};
use hermes_llm::{HttpTimeouts, ProviderSpec, RetryPolicy, WireFormat};
use hermes_protocol::AgentEvent;
use hermes_testkit::MockServer;
use hermes_tools::{Registry, ToolContext};
use serde_json::Value;

pub fn spec(server: &MockServer) -> ProviderSpec {
    ProviderSpec {
        provider: "custom".into(),
        base_url: server.base_url(),
        api_key: Some("sk-test".into()),
        model: "mock-model".into(),
        wire: WireFormat::OpenAiChat,
        chosen_by: "test".into(),
        key_source: Some("TEST_API_KEY".into()),
    }
}

pub fn fast_options() -> AgentOptions {
    AgentOptions {
        model: "mock-model".into(),
        key_hint: Some("TEST_API_KEY".into()),
        retry: RetryPolicy {
            max_retries: 3,
            base: Duration::from_millis(10),
            cap: Duration::from_millis(50),
            jitter: 0.5,
        },
        ..AgentOptions::default()
    }
}

pub fn agent(server: &MockServer, cwd: &Path, options: AgentOptions) -> Agent {
    let timeouts = HttpTimeouts {
        connect: Duration::from_secs(5),
        idle: Duration::from_secs(5),
    };
    let provider = hermes_llm::build_provider(&spec(server), &timeouts).unwrap();
    Agent::new(
        provider,
        Registry::builtin(),
        "You are a test agent.".into(),
        options,
        ToolContext::new(cwd.to_path_buf()),
    )
}

/// Collects every event for later assertions.
#[derive(Default, Clone)]
pub struct Recorder(pub Arc<Mutex<Vec<AgentEvent>>>);

impl Recorder {
    pub fn events(&self) -> Vec<AgentEvent> {
        self.0.lock().unwrap().clone()
    }
}

impl hermes_core::EventSink for Recorder {
    fn emit(&self, event: AgentEvent) {
        self.0.lock().unwrap().push(event);
    }
}

/// The messages array of a captured request.
pub fn messages(request: &Value) -> &Vec<Value> {
    request["messages"].as_array().unwrap()
}

/// The content of the tool message answering `call_id` in a request.
pub fn tool_result<'a>(request: &'a Value, call_id: &str) -> Option<&'a str> {
    messages(request)
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
}
