//! Compression inside the turn loop: a conversation over the threshold is compressed before the
//! call, a context-overflow error is compressed away and retried, and the system prompt stays
//! byte-identical.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_core::compress::{CompressionSettings, Compressor};
use hermes_core::{ModelTarget, NoEvents};
use hermes_protocol::{AgentEvent, Message, ToolCall};
use hermes_testkit::{Fault, MockServer, Script, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn compressor(server: &MockServer, window: u64) -> Compressor {
    let provider =
        hermes_llm::build_provider(&spec(server), &hermes_llm::HttpTimeouts::default()).unwrap();
    Compressor::new(
        CompressionSettings {
            context_length: Some(window),
            ..CompressionSettings::default()
        },
        "mock-model",
        ModelTarget {
            provider,
            model: "aux-model".into(),
        },
    )
}

/// Varied text (repeated letters would tokenize far below their byte count).
fn prose(chars: usize, seed: usize) -> String {
    const WORDS: [&str; 12] = [
        "parser", "token", "lexeme", "span", "error", "recover", "grammar", "node", "visit",
        "emit", "buffer", "offset",
    ];
    let mut out = String::new();
    let mut i = seed;
    while out.len() < chars {
        i = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push_str(WORDS[(i >> 33) % WORDS.len()]);
        out.push_str(&format!("{} ", (i >> 40) % 997));
    }
    out
}

fn history(rounds: usize, chars: usize) -> Vec<Message> {
    let mut h = vec![Message::user("Port the parser to Rust.")];
    for i in 0..rounds {
        let id = format!("h{i}");
        h.push(Message::assistant_with_tools(
            "",
            vec![ToolCall {
                id: id.clone(),
                name: "terminal".into(),
                arguments: json!({"command": format!("step {i}")}).to_string(),
            }],
        ));
        h.push(Message::tool_result(
            id,
            "terminal",
            json!({"output": prose(chars, i), "exit_code": 0}).to_string(),
        ));
    }
    h.push(Message::assistant("Done with the first half."));
    h
}

#[tokio::test]
async fn a_conversation_over_the_threshold_is_compressed_before_the_call() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("## Goal\nPort the parser.\n## Next steps\nSecond half."),
        Turn::text("Continuing with the second half."),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let agent =
        agent(&server, tmp.path(), fast_options()).with_compressor(compressor(&server, 30_000));
    let rec = Recorder::default();
    let r = agent
        .run_turn("Go on.", history(60, 2_000), &rec, CancellationToken::new())
        .await;
    assert_eq!(r.final_text, "Continuing with the second half.");

    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[0]["model"], "aux-model",
        "the summary goes to the auxiliary model"
    );
    assert!(reqs[0].get("tools").is_none());
    let main = &reqs[1];
    assert_eq!(
        main["messages"][0]["content"], "You are a test agent.",
        "system prompt unchanged"
    );
    let msgs = main["messages"].as_array().unwrap();
    assert!(msgs.iter().any(|m| {
        m["content"]
            .as_str()
            .unwrap_or("")
            .contains("reference only")
    }));
    assert_eq!(msgs.last().unwrap()["content"], "Go on.");
    assert!(
        main.to_string().len() < 30_000 * 4 * 3 / 4,
        "the compressed request fits the budget"
    );
    assert!(
        rec.events()
            .iter()
            .any(|e| matches!(e, AgentEvent::ContextCompressed { .. }))
    );
}

#[tokio::test]
async fn a_context_overflow_is_compressed_and_retried_once() {
    let overflow = Fault::HttpRaw {
        status: 400,
        headers: vec![],
        body: r#"{"error":{"message":"This model's maximum context length is 32768 tokens.","code":"context_length_exceeded"}}"#.into(),
    };
    let server = MockServer::start(Script::new(vec![
        overflow.clone().into(),
        Turn::text("## Goal\nPort the parser."),
        Turn::text("Recovered."),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let agent =
        agent(&server, tmp.path(), fast_options()).with_compressor(compressor(&server, 1_000_000));
    let r = agent
        .run_turn(
            "Go on.",
            history(20, 2_000),
            &NoEvents,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(r.final_text, "Recovered.");
    assert!(!r.failed());
    assert_eq!(r.api_calls, 1);
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        reqs[0]["messages"][0], reqs[2]["messages"][0],
        "byte-identical system prompt"
    );
    assert!(reqs[2].to_string().len() < reqs[0].to_string().len() / 2);

    // Without a compressor the overflow is reported.
    let server = MockServer::start(Script::new(vec![overflow.into()]));
    let plain = agent_without(&server, tmp.path());
    let r = plain
        .run_turn(
            "Go on.",
            history(2, 10),
            &NoEvents,
            CancellationToken::new(),
        )
        .await;
    assert!(
        r.failure()
            .unwrap()
            .message
            .clone()
            .contains("context window")
    );
}

fn agent_without(server: &MockServer, cwd: &std::path::Path) -> hermes_core::Agent {
    agent(server, cwd, fast_options())
}
