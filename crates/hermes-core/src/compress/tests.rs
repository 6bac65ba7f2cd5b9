use super::*;
use hermes_llm::{HttpTimeouts, ProviderSpec, WireFormat};
use hermes_protocol::ToolCall;
use hermes_testkit::{Fault, MockServer, Script, Turn};
use serde_json::json;

fn aux(server: &MockServer) -> ModelTarget {
    let spec = ProviderSpec {
        provider: "custom".into(),
        base_url: server.base_url(),
        api_key: None,
        model: "aux".into(),
        wire: WireFormat::OpenAiChat,
        chosen_by: "test".into(),
        key_source: None,
    };
    ModelTarget {
        provider: hermes_llm::build_provider(&spec, &HttpTimeouts::default()).unwrap(),
        model: "aux".into(),
    }
}

fn settings(window: u64) -> CompressionSettings {
    CompressionSettings {
        context_length: Some(window),
        ..CompressionSettings::default()
    }
}

/// A long working session: `turns` rounds of a terminal call with a large output.
fn long_session(turns: usize, output_chars: usize) -> Vec<Message> {
    let mut m = vec![Message::user(
        "Refactor the parser and keep the tests green.",
    )];
    for i in 0..turns {
        let id = format!("c{i}");
        m.push(Message::assistant_with_tools(
            format!("step {i}"),
            vec![ToolCall {
                id: id.clone(),
                name: "terminal".into(),
                arguments: json!({"command": format!("cargo test -p parser --test t{i}")})
                    .to_string(),
            }],
        ));
        let output = format!("test t{i} ... ok\n").repeat(output_chars / 16);
        m.push(Message::tool_result(
            id,
            "terminal",
            json!({"output": output, "exit_code": 0}).to_string(),
        ));
    }
    m.push(Message::assistant("All green so far."));
    m.push(Message::user("Now also rename Token to Lexeme everywhere."));
    m
}

fn assert_pairs_valid(messages: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.clone().unwrap();
                let pos = open
                    .iter()
                    .position(|o| *o == id)
                    .unwrap_or_else(|| panic!("orphan result {id}"));
                open.remove(pos);
            }
            _ => {
                assert!(open.is_empty(), "unanswered calls {open:?}");
                open.extend(m.tool_calls.iter().map(|c| c.id.clone()));
            }
        }
    }
    assert!(open.is_empty());
}

#[tokio::test]
async fn a_long_session_is_compressed_under_the_threshold_with_head_and_tail_intact() {
    let server = MockServer::start(Script::new(vec![Turn::text(
        "## Goal\nRefactor the parser.\n## Next steps\nRename Token.",
    )]));
    let c = Compressor::new(settings(128_000), "some-model", aux(&server));
    let session = long_session(300, 2_000);
    let before = tokens::rough_request("sys", &[], &session);
    assert!(
        before > c.threshold_tokens(),
        "the fixture must be over the threshold: {before}"
    );
    let out = c
        .compress("sys", &[], &session, None, &CancellationToken::new())
        .await;

    assert!(out.summarized && out.notice.is_none(), "{:?}", out.notice);
    assert!(
        out.tokens_after < c.threshold_tokens(),
        "{} >= {}",
        out.tokens_after,
        c.threshold_tokens()
    );
    assert_eq!(out.messages[..3], session[..3], "the head is untouched");
    assert_eq!(
        out.messages.last(),
        session.last(),
        "the latest user message is kept"
    );
    let summary = out
        .messages
        .iter()
        .find(|m| summary::is_summary(m))
        .expect("a summary message");
    assert!(summary.content.contains("Rename Token."));
    assert_pairs_valid(&out.messages);

    let req = &server.chat_requests()[0];
    let text = req["messages"][1]["content"].as_str().unwrap();
    assert!(
        text.contains("cargo test -p parser --test t10"),
        "the middle is in the summary request"
    );
    assert!(text.contains("## Critical context"));
    assert!(req.get("tools").is_none());
}

#[tokio::test]
async fn a_failed_summary_falls_back_to_pruning_and_cools_down() {
    let server = MockServer::start(Script::new(vec![
        Fault::http(500, "down").into(),
        Fault::http(500, "down").into(),
    ]));
    let c = Compressor::new(settings(128_000), "m", aux(&server));
    let session = long_session(200, 2_000);
    let out = c
        .compress("sys", &[], &session, None, &CancellationToken::new())
        .await;
    assert!(!out.summarized);
    assert!(out.pruned > 100, "{}", out.pruned);
    assert!(out.notice.unwrap().contains("next attempt in 60s"));
    assert!(out.tokens_after < out.tokens_before / 2);
    assert!(!c.should_compress(u64::MAX / 2), "cooling down");
    assert_pairs_valid(&out.messages);
    assert_eq!(
        out.messages.len(),
        session.len(),
        "pruning keeps every message"
    );
}

#[tokio::test]
async fn two_weak_passes_switch_automatic_compression_off_once() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("s"),
        Turn::text("s"),
        Turn::text("s"),
    ]));
    let c = Compressor::new(settings(128_000), "m", aux(&server));
    // Tiny messages: nothing worth pruning, a summary barely smaller than what it replaces.
    let session: Vec<Message> = (0..40)
        .map(|i| {
            if i % 2 == 0 {
                Message::user(format!("q{i}"))
            } else {
                Message::assistant(format!("a{i}"))
            }
        })
        .collect();
    let first = c
        .compress("", &[], &session, None, &CancellationToken::new())
        .await;
    assert!(first.notice.is_none());
    let second = c
        .compress("", &[], &first.messages, None, &CancellationToken::new())
        .await;
    assert!(
        second
            .notice
            .unwrap()
            .contains("automatic compression is off")
    );
    assert!(c.auto_disabled());
    assert!(!c.should_compress(u64::MAX / 2));
    let third = c
        .compress("", &[], &second.messages, None, &CancellationToken::new())
        .await;
    assert!(third.notice.is_none(), "the user is told once");
}

#[test]
fn thresholds_follow_window_size_and_overrides() {
    let server = MockServer::start(Script::new(vec![]));
    let small = Compressor::new(settings(200_000), "m", aux(&server));
    assert_eq!(
        small.threshold_tokens(),
        150_000,
        "windows under 512K trigger at 75%"
    );
    let large = Compressor::new(settings(1_000_000), "m", aux(&server));
    assert_eq!(large.threshold_tokens(), 500_000);
    let mut s = settings(1_000_000);
    s.model_thresholds.insert("gpt-5".into(), 0.8);
    assert_eq!(
        Compressor::new(s, "openai/gpt-5.1", aux(&server)).threshold_tokens(),
        800_000
    );
    assert_eq!(
        Compressor::new(
            CompressionSettings::default(),
            "claude-sonnet-4-5",
            aux(&server)
        )
        .window(),
        200_000
    );
    assert_eq!(large.tail_budget(), 25_000);
    assert_eq!(small.tail_budget(), 10_000);
    assert_eq!(
        Compressor::new(settings(32_768), "m", aux(&server)).tail_budget(),
        6_553,
        "never above 20% of the window"
    );
}

#[test]
fn the_tail_never_starts_with_a_tool_result() {
    let session = long_session(10, 4_000);
    let start = protect_tail(&session, 3, 1_500);
    assert_ne!(session[start].role, Role::Tool);
    assert!(start < session.len());
}
