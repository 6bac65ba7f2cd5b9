//! Provider faults: retries with backoff, Retry-After, giving up with a clear reason, mid-stream
//! drops (answers continued, tool calls re-requested), malformed streams.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use hermes_core::NoEvents;
use hermes_testkit::{Fault, MockServer, Reply, Script, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn run(script: Vec<Turn>) -> (MockServer, hermes_protocol::TurnResult) {
    let server = MockServer::start(Script::new(script));
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent(&server, tmp.path(), fast_options());
    let result = agent
        .run_turn("go", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    (server, result)
}

#[tokio::test]
async fn rate_limit_honours_retry_after() {
    let started = Instant::now();
    let (server, result) = run(vec![Fault::rate_limited(1).into(), Turn::text("after 429")]).await;
    assert_eq!(result.final_text, "after 429");
    assert_eq!(server.chat_requests().len(), 2);
    let reqs = server.requests();
    let gap = reqs[1].received_at.duration_since(reqs[0].received_at);
    assert!(
        gap >= Duration::from_millis(950),
        "Retry-After: 1 must be honoured, waited {gap:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let (_, result) = run(vec![Fault::http(500, "boom").into(), Turn::text("ok")]).await;
    assert_eq!(result.final_text, "ok");

    let e = || Turn::from(Fault::http(500, "Internal server error (mock)"));
    let (server, result) = run(vec![e(), e(), e(), e(), e()]).await;
    assert_eq!(
        server.chat_requests().len(),
        4,
        "one attempt and three retries"
    );
    let err = result.failure().unwrap().message.clone();
    assert_eq!(
        err,
        "API call failed after 3 retries: HTTP 500: Internal server error (mock)"
    );
    assert_eq!(result.final_text, "");
}

#[tokio::test]
async fn auth_errors_are_not_retried_and_name_the_key() {
    let (server, result) = run(vec![
        Fault::http(401, "Incorrect API key provided").into(),
        Turn::text("never"),
    ])
    .await;
    assert_eq!(server.chat_requests().len(), 1);
    let err = result.failure().unwrap().message.clone();
    assert!(
        err.contains("HTTP 401: Incorrect API key provided"),
        "{err}"
    );
    assert!(err.contains("TEST_API_KEY"), "{err}");
}

#[tokio::test]
async fn a_dropped_connection_is_retried() {
    let (server, result) = run(vec![Fault::Drop.into(), Turn::text("back")]).await;
    assert_eq!(result.final_text, "back");
    assert_eq!(server.chat_requests().len(), 2);
}

/// Runs a turn whose first answer, `full`, breaks off through `fault` after 3 events, and checks
/// that the shown part was kept: sent back as the assistant's text with the continue note, and
/// joined with the continuation (`rest`) in the final answer and a two-message history.
async fn assert_cut_answer_is_continued(fault: Fault, full: &str, rest: &str) {
    let (server, result) = run(vec![fault.into(), Turn::text(rest)]).await;
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 2);
    let msgs = messages(&reqs[1]);
    let partial = msgs[msgs.len() - 2]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !partial.is_empty() && full.starts_with(&partial),
        "{partial}"
    );
    assert_eq!(msgs[msgs.len() - 2]["role"], "assistant");
    assert!(
        msgs[msgs.len() - 1]["content"]
            .as_str()
            .unwrap()
            .contains("cut off")
    );
    assert_eq!(result.final_text, format!("{partial}{rest}").trim());
    // The stored history has one assistant message, not the recovery scaffolding.
    assert_eq!(result.messages.len(), 2);
}

#[tokio::test]
async fn an_answer_cut_mid_stream_is_continued_not_lost() {
    let full = "ALPHA-1 ALPHA-2 ALPHA-3 ALPHA-4";
    let fault = Fault::drop_mid_stream(3, Reply::text(full).with_chunk_size(4));
    assert_cut_answer_is_continued(fault, full, " ALPHA-4 done.").await;
}

/// Regression: an error the provider sent inside the stream (here OpenAI's `server_error`)
/// after some text discarded the text that had been shown.
#[tokio::test]
async fn an_answer_ended_by_an_in_stream_error_is_continued_not_lost() {
    let full = "BETA-1 BETA-2 BETA-3";
    let fault = Fault::error_mid_stream(
        3,
        Reply::text(full).with_chunk_size(4),
        "server_error",
        "The server had an error while processing your request.",
    );
    assert_cut_answer_is_continued(fault, full, " BETA-3 done.").await;
}

#[tokio::test]
async fn a_tool_call_cut_mid_stream_is_discarded_and_requested_again() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("count");
    let cmd = format!("echo x >> {}", marker.display());
    let (server, result) = run(vec![
        Fault::drop_mid_stream(3, Reply::tool_call("terminal", json!({"command": cmd}))).into(),
        Turn::tool("terminal", json!({"command": cmd})),
        Turn::text("final"),
    ])
    .await;
    assert_eq!(result.final_text, "final");
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        messages(&reqs[0]),
        messages(&reqs[1]),
        "identical request after a cut tool call"
    );
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "x\n",
        "run exactly once"
    );
}

#[tokio::test]
async fn a_malformed_stream_is_an_error_that_can_recover() {
    let (server, result) = run(vec![
        Fault::raw_sse(vec!["data: {not json"]).into(),
        Turn::text("clean"),
    ])
    .await;
    assert_eq!(result.final_text, "clean");
    assert_eq!(server.chat_requests().len(), 2);

    let junk = || {
        Turn::from(Fault::raw_sse(vec![
            "data: {\"choices\": [",
            "data: [DONE]",
        ]))
    };
    let (_, result) = run(vec![junk(), junk(), junk(), junk()]).await;
    let err = result.failure().unwrap().message.clone();
    assert!(err.contains("malformed response"), "{err}");
}

#[tokio::test]
async fn interrupting_a_hanging_model_call_returns_at_once_with_valid_history() {
    let server = MockServer::start(Script::new(vec![Fault::hang(30_000).into()]));
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent(&server, tmp.path(), fast_options());
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c.cancel();
    });
    let started = Instant::now();
    let result = agent.run_turn("go", Vec::new(), &NoEvents, cancel).await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(result.is_interrupted());
    assert_eq!(
        result.messages.last().unwrap().role,
        hermes_protocol::Role::Assistant
    );
}

#[tokio::test]
async fn interrupting_a_running_tool_kills_it_and_answers_the_call() {
    let server = MockServer::start(Script::new(vec![
        Reply::tool_calls(vec![
            ("terminal", json!({"command": "sleep 30"})),
            ("terminal", json!({"command": "echo never"})),
        ])
        .into(),
        Turn::text("unused"),
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent(&server, tmp.path(), fast_options());
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        c.cancel();
    });
    let started = Instant::now();
    let result = agent.run_turn("go", Vec::new(), &NoEvents, cancel).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(result.is_interrupted());
    assert_eq!(
        server.chat_requests().len(),
        1,
        "no model call after the interrupt"
    );
    let tools: Vec<&hermes_protocol::Message> = result
        .messages
        .iter()
        .filter(|m| m.role == hermes_protocol::Role::Tool)
        .collect();
    assert_eq!(tools.len(), 2);
    assert!(
        tools[0].content.contains("interrupted"),
        "{}",
        tools[0].content
    );
    assert!(tools[1].content.contains("skipped"), "{}", tools[1].content);
}
