//! Prompted tool calling against an OpenAI-compatible server without tool support: the real
//! Agent, the real OpenAI-chat provider wrapped in `PromptedTools`, and the scripted mock
//! server, asserting on exactly what was sent and what came back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_core::{Agent, AgentOptions, EventSink};
use hermes_llm::{HttpTimeouts, ProviderSpec, WireFormat};
use hermes_local::PromptedTools;
use hermes_protocol::{AgentEvent, Role};
use hermes_testkit::{MockServer, Reply, Script, Turn};
use hermes_tools::{Registry, ToolContext};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

#[derive(Default, Clone)]
struct Recorder(Arc<Mutex<Vec<AgentEvent>>>);

impl EventSink for Recorder {
    fn emit(&self, event: AgentEvent) {
        self.0.lock().unwrap().push(event);
    }
}

fn agent(server: &MockServer, cwd: &std::path::Path) -> Agent {
    let spec = ProviderSpec {
        provider: "custom".into(),
        base_url: server.base_url(),
        api_key: None,
        model: "no-tools-model".into(),
        wire: WireFormat::OpenAiChat,
        chosen_by: "test".into(),
        key_source: None,
    };
    let timeouts = HttpTimeouts {
        connect: Duration::from_secs(5),
        idle: Duration::from_secs(5),
    };
    let inner = hermes_llm::build_provider(&spec, &timeouts).unwrap();
    Agent::new(
        Arc::new(PromptedTools::new(inner)),
        Registry::builtin(),
        "You are a test agent.".into(),
        AgentOptions {
            model: "no-tools-model".into(),
            ..AgentOptions::default()
        },
        ToolContext::new(cwd.to_path_buf()),
    )
}

fn messages(request: &Value) -> &Vec<Value> {
    request["messages"].as_array().unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_tool_call_written_as_text_is_run_and_its_result_sent_back_as_text() {
    let server = MockServer::start(Script::new(vec![
        Turn::text(r#"{"tool": "terminal", "arguments": {"command": "echo prompted-ok"}}"#),
        Turn::text("The command printed prompted-ok."),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let sink = Recorder::default();
    let result = agent(&server, dir.path())
        .run_turn("run echo", Vec::new(), &sink, CancellationToken::new())
        .await;
    assert!(!result.failed(), "{:?}", result.end);
    assert_eq!(result.final_text, "The command printed prompted-ok.");

    let call = result
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant && m.has_tool_calls())
        .unwrap();
    assert_eq!(call.tool_calls[0].name, "terminal");
    assert_eq!(
        call.tool_calls[0].arguments,
        r#"{"command":"echo prompted-ok"}"#
    );

    let requests = server.chat_requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert!(request.get("tools").is_none(), "no native tools: {request}");
        for m in messages(request) {
            assert!(m["role"] != "tool" && m.get("tool_calls").is_none(), "{m}");
        }
    }
    let system = messages(&requests[0])[0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You are a test agent.\n\n# Tools"),
        "{system}"
    );
    assert!(system.contains("- terminal: "), "{system}");
    let second = messages(&requests[1]);
    let roles: Vec<&str> = second.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(
        second[2]["content"],
        r#"{"tool": "terminal", "arguments": {"command":"echo prompted-ok"}}"#
    );
    let fed_back = second[3]["content"].as_str().unwrap();
    assert!(fed_back.starts_with("[Result of terminal]\n"), "{fed_back}");
    assert!(fed_back.contains("prompted-ok"), "{fed_back}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_plain_answer_streams_through_unchanged() {
    let server = MockServer::start(Script::new(vec![
        Reply::text("Plain words, streamed in pieces.")
            .with_chunk_size(5)
            .into(),
    ]));
    let dir = tempfile::tempdir().unwrap();
    let sink = Recorder::default();
    let result = agent(&server, dir.path())
        .run_turn("hi", Vec::new(), &sink, CancellationToken::new())
        .await;
    assert_eq!(result.final_text, "Plain words, streamed in pieces.");
    let deltas = sink
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, AgentEvent::TextDelta(_)))
        .count();
    assert!(deltas > 1, "the answer streamed in {deltas} pieces");
}
