//! Overflow recovery inside the agent: a context overflow that the ordinary pass cannot fix
//! (two large results in the protected head and tail) is recovered by learning the window the
//! provider named, cutting the results to fit it (full texts spilled under the home's cache)
//! and retrying; the learned window stays for the rest of the session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use hermes_core::compress::{CompressionSettings, Compressor, overflow};
use hermes_core::{ModelTarget, NoEvents};
use hermes_protocol::{ErrorClass, TurnEnd};
use hermes_testkit::{Fault, MockServer, Script, Turn};
use hermes_tools::protect::ProtectedPaths;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn big_file(tag: &str) -> String {
    (1..=500)
        .map(|i| format!("{tag} {i} {}\n", "lorem ipsum dolor sit amet ".repeat(5)))
        .collect()
}

fn overflow_fault(window: u64) -> Fault {
    Fault::HttpRaw {
        status: 400,
        headers: vec![],
        body: json!({"error": {"message": format!("This model's maximum context length is {window} tokens. However, your messages resulted in 41000 tokens."),
                               "code": "context_length_exceeded"}})
        .to_string(),
    }
}

#[tokio::test]
async fn the_window_named_by_the_error_is_learned_fitted_and_kept() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("read_file", json!({"path": "a.txt"})),
        Turn::tool("read_file", json!({"path": "b.txt"})),
        overflow_fault(16_384).into(),
        Turn::text("done"),
    ]));
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), big_file("alpha")).unwrap();
    std::fs::write(work.path().join("b.txt"), big_file("beta")).unwrap();
    let aux = ModelTarget {
        provider: hermes_llm::build_provider(&spec(&server), &hermes_llm::HttpTimeouts::default())
            .unwrap(),
        model: "aux".into(),
    };
    let compressor = Compressor::new(
        CompressionSettings {
            context_length: Some(1_000_000),
            ..CompressionSettings::default()
        },
        "mock-model",
        aux,
    );
    let mut tool_ctx = hermes_tools::ToolContext::new(work.path().to_path_buf());
    tool_ctx.protected = Arc::new(ProtectedPaths::new(None, Some(home.path().to_path_buf())));
    let agent = hermes_core::Agent::new(
        hermes_llm::build_provider(&spec(&server), &hermes_llm::HttpTimeouts::default()).unwrap(),
        hermes_tools::Registry::builtin(),
        "You are a test agent.".into(),
        fast_options(),
        tool_ctx,
    )
    .with_compressor(compressor);

    let r = agent
        .run_turn(
            "compare a.txt and b.txt",
            Vec::new(),
            &NoEvents,
            CancellationToken::new(),
        )
        .await;
    assert_eq!(r.end, TurnEnd::Completed);
    assert_eq!(r.final_text, "done");
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 4);

    let c = agent.compressor().unwrap();
    assert_eq!(
        c.window(),
        16_384,
        "the window is remembered for the session"
    );
    assert_eq!(c.threshold_tokens(), 12_288, "later turns compress earlier");
    let retried_tokens = overflow::request_tokens(
        agent.system_prompt(),
        agent.tool_schemas(),
        &r.messages[..r.messages.len() - 1],
    );
    assert!(
        retried_tokens <= overflow::prompt_budget(16_384),
        "{retried_tokens}"
    );
    let spilled: Vec<_> = std::fs::read_dir(home.path().join("cache/tool_results"))
        .unwrap()
        .collect();
    assert_eq!(spilled.len(), 2);
    // A larger window named later does not undo what was learned.
    assert_eq!(
        c.learn_window("maximum context length is 32768 tokens"),
        None
    );
    assert_eq!(c.window(), 16_384);
}

#[tokio::test]
async fn when_nothing_can_shrink_the_turn_fails_with_the_reason() {
    // The system prompt alone is larger than the window the provider names.
    let server = MockServer::start(Script::new(vec![overflow_fault(2_048).into()]));
    let tmp = tempfile::tempdir().unwrap();
    let aux = ModelTarget {
        provider: hermes_llm::build_provider(&spec(&server), &hermes_llm::HttpTimeouts::default())
            .unwrap(),
        model: "aux".into(),
    };
    let agent = hermes_core::Agent::new(
        hermes_llm::build_provider(&spec(&server), &hermes_llm::HttpTimeouts::default()).unwrap(),
        hermes_tools::Registry::builtin(),
        "policy ".repeat(4_000),
        fast_options(),
        hermes_tools::ToolContext::new(tmp.path().to_path_buf()),
    )
    .with_compressor(Compressor::new(
        CompressionSettings::default(),
        "mock-model",
        aux,
    ));
    let r = agent
        .run_turn("hi", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    let failure = r.failure().unwrap();
    assert_eq!(failure.class, ErrorClass::ContextOverflow);
    let err = &failure.message;
    assert!(
        err.contains("maximum context length is 2048 tokens"),
        "{err}"
    );
    assert_eq!(server.chat_requests().len(), 1);
}
