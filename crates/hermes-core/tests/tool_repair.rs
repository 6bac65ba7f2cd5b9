//! Tool calls the model gets wrong: repaired when safe, reported back when not, never executed
//! when cut off.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_core::NoEvents;
use hermes_testkit::{MockServer, Reply, Script, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn run(script: Vec<Turn>) -> (MockServer, hermes_protocol::TurnResult, tempfile::TempDir) {
    let server = MockServer::start(Script::new(script));
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent(&server, tmp.path(), fast_options());
    let result = agent
        .run_turn("go", Vec::new(), &NoEvents, CancellationToken::new())
        .await;
    (server, result, tmp)
}

#[tokio::test]
async fn repairable_arguments_are_repaired_and_run() {
    let (server, result, _tmp) = run(vec![
        Reply::default()
            .with_raw_tool_call("terminal", "{\"command\": \"echo repaired\"")
            .into(),
        Turn::text("ok"),
    ])
    .await;
    assert_eq!(result.final_text, "ok");
    let second = &server.chat_requests()[1];
    assert!(
        tool_result(second, "call_0_0")
            .unwrap()
            .contains("\"output\":\"repaired\"")
    );
    // The history carries the repaired arguments, which providers accept.
    assert_eq!(
        messages(second)[2]["tool_calls"][0]["function"]["arguments"],
        "{\"command\":\"echo repaired\"}"
    );
}

#[tokio::test]
async fn truncated_arguments_are_never_run() {
    let tmp_marker = tempfile::tempdir().unwrap();
    let marker = tmp_marker.path().join("ran");
    let raw = format!("{{\"command\": \"touch {} && echo hel", marker.display());
    let (server, result, _tmp) = run(vec![
        Reply::default().with_raw_tool_call("terminal", raw).into(),
        Turn::text("recovered"),
    ])
    .await;
    assert_eq!(result.final_text, "recovered");
    assert!(!marker.exists(), "a cut-off command must not run");
    let err = tool_result(&server.chat_requests()[1], "call_0_0")
        .unwrap()
        .to_string();
    assert!(err.contains("cut off"), "{err}");
}

#[tokio::test]
async fn finish_reason_length_blocks_execution() {
    let tmp_marker = tempfile::tempdir().unwrap();
    let marker = tmp_marker.path().join("ran");
    let (server, _result, _tmp) = run(vec![
        Reply::tool_call(
            "terminal",
            json!({"command": format!("touch {}", marker.display())}),
        )
        .with_finish_reason("length")
        .into(),
        Turn::text("fine"),
    ])
    .await;
    assert!(!marker.exists());
    let err = tool_result(&server.chat_requests()[1], "call_0_0")
        .unwrap()
        .to_string();
    assert!(err.contains("output token limit"), "{err}");
}

#[tokio::test]
async fn a_misspelled_tool_is_corrected_and_an_unknown_one_explained() {
    let (server, result, _tmp) = run(vec![
        Turn::tool("termnal", json!({"command": "echo hello"})),
        Turn::tool("frobnicate", json!({"x": 1})),
        Turn::text("ok"),
    ])
    .await;
    assert_eq!(result.final_text, "ok");
    let reqs = server.chat_requests();
    assert_eq!(
        messages(&reqs[1])[2]["tool_calls"][0]["function"]["name"],
        "terminal"
    );
    assert!(tool_result(&reqs[1], "call_0_0").unwrap().contains("hello"));
    assert_eq!(
        tool_result(&reqs[2], "call_1_0").unwrap(),
        r#"{"error":"Tool 'frobnicate' does not exist. Available tools: terminal, process, read_file, write_file, patch, search_files, todo, clarify"}"#
    );
}

#[tokio::test]
async fn three_invalid_turns_in_a_row_end_the_turn_with_an_error() {
    let bad = || Turn::tool("frobnicate", json!({}));
    let (server, result, _tmp) = run(vec![bad(), bad(), bad(), Turn::text("never")]).await;
    assert_eq!(server.chat_requests().len(), 3);
    let err = result.failure().unwrap().message.clone();
    assert!(
        err.contains("Model generated invalid tool call: frobnicate"),
        "{err}"
    );
    // Every call still has its result: the history stays valid for a resume.
    let calls = result
        .messages
        .iter()
        .filter(|m| m.has_tool_calls())
        .count();
    let results = result
        .messages
        .iter()
        .filter(|m| m.role == hermes_protocol::Role::Tool)
        .count();
    assert_eq!(calls, results);
}

#[tokio::test]
async fn empty_arguments_mean_an_empty_object() {
    let (server, _result, _tmp) = run(vec![
        Reply::default().with_raw_tool_call("read_file", "").into(),
        Turn::text("ok"),
    ])
    .await;
    let err = tool_result(&server.chat_requests()[1], "call_0_0")
        .unwrap()
        .to_string();
    assert!(err.contains("missing field `path`"), "{err}");
}
