//! Provider details through the binary: the loop guard, `<tool_call>` text run as calls, the
//! `/v1` fix-up of local server presets, the fast failure of a local server that is not
//! running, OpenRouter prompt-cache breakpoints, `reasoning_content` replay, and the hint for
//! endpoints that reject tools.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use hermes_testkit::{Fault, MockServer, MockUsage, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

fn messages(request: &Value) -> &Vec<Value> {
    request["messages"].as_array().unwrap()
}

/// The last tool message of a request.
fn last_tool_result(request: &Value) -> String {
    messages(request)
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn the_loop_guard_notes_the_third_failure_refuses_the_fourth_and_ends_the_turn_on_the_fifth() {
    let same = || Turn::tool("read_file", json!({"path": "missing.txt"}));
    let server = MockServer::start(Script::new(vec![
        same(),
        same(),
        same(),
        same(),
        same(),
        Turn::text("never asked"),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "list the files here", "-t", "file"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("read_file with the same arguments 5 times in a row")
            && err.contains("loop guard"),
        "{err}"
    );
    assert_eq!(stdout(&o), "", "no answer on stdout");
    let reqs = server.chat_requests();
    assert_eq!(
        reqs.len(),
        5,
        "the fifth call ends the turn: no sixth request"
    );
    // The first two results are the tool's error as it is.
    assert!(last_tool_result(&reqs[1]).contains("file not found"));
    assert!(!last_tool_result(&reqs[2]).contains("loop guard"));
    // The third carries the note; the fourth was not run.
    let third = last_tool_result(&reqs[3]);
    assert!(
        third.contains("file not found") && third.contains("will not be run again"),
        "{third}"
    );
    let fourth = last_tool_result(&reqs[4]);
    assert!(
        fourth.contains("[loop guard] not run") && !fourth.contains("file not found"),
        "{fourth}"
    );
}

#[test]
fn tool_calls_written_as_text_are_run_even_when_streamed_in_pieces() {
    let call = "Let me read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>";
    let server = MockServer::start(Script::new(vec![
        Reply::text(call).with_chunk_size(3).into(),
        Turn::text("The notes say hello."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    std::fs::write(home.workdir().join("notes.txt"), "hello from the notes\n").unwrap();
    let o = run(&home, &["-z", "what do the notes say?", "-t", "file"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "The notes say hello.\n");
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 2);
    let replay = messages(&reqs[1]);
    let assistant = &replay[replay.len() - 2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"], "Let me read it.\n",
        "the block is not part of the text"
    );
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        "{\"path\":\"notes.txt\"}"
    );
    assert!(last_tool_result(&reqs[1]).contains("1|hello from the notes"));
}

#[test]
fn text_that_only_mentions_the_tag_is_the_answer() {
    let answer = "Wrap calls in <tool_call> tags, like <tool_call>this</tool_call>.";
    let server = MockServer::start(Script::new(vec![
        Reply::text(answer).with_chunk_size(4).into(),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "how do I format calls?", "-t", "file"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("{answer}\n"));
}

#[test]
fn a_local_server_preset_given_without_v1_gets_it() {
    let server = MockServer::start(Script::new(vec![Turn::text("hi from vllm")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "model:\n  provider: vllm\n  base_url: http://127.0.0.1:{}\n  default: qwen\n",
        server.port()
    ));
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "hi from vllm\n");
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
    let listing = stdout(&run(&home, &["model"]));
    assert!(
        listing.contains(&format!("http://127.0.0.1:{}/v1", server.port())),
        "{listing}"
    );
}

#[test]
fn a_local_server_that_is_not_running_fails_at_once_with_a_hint() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let home = TestHome::new();
    home.write_config(&format!(
        "model:\n  provider: custom\n  base_url: http://127.0.0.1:{port}/v1\n  default: m\n"
    ));
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "cannot connect to http://127.0.0.1:{port}/v1/chat/completions"
        )) && err.contains("connection refused")
            && err.contains("is the server running?"),
        "{err}"
    );
    assert!(
        !err.contains("retrying"),
        "a refused local connection is not retried: {err}"
    );
}

#[test]
fn an_endpoint_rejecting_tools_suggests_prompted_tool_calling() {
    let server = MockServer::start(Script::new(vec![
        Fault::http(
            400,
            "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
        )
        .into(),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("model.tool_calling: prompt"),
        "{}",
        stderr(&o)
    );
    assert_eq!(server.chat_requests().len(), 1);
}

#[test]
fn openrouter_claude_requests_carry_cache_breakpoints_and_cache_reads_are_reported() {
    let usage = MockUsage {
        prompt_tokens: 5_000,
        completion_tokens: 20,
        cached_tokens: 4_000,
    };
    let server = MockServer::start(Script::new(vec![
        Reply::tool_call("read_file", json!({"path": "notes.txt"}))
            .with_content("Reading.")
            .with_usage(usage)
            .into(),
        Reply::tool_call("read_file", json!({"path": "notes.txt", "offset": 1}))
            .with_content("Again.")
            .with_usage(usage)
            .into(),
        Reply::text("Done.").with_usage(usage).into(),
    ]));
    let home = TestHome::new();
    home.write_config(&format!(
        "model:\n  provider: openrouter\n  base_url: {}\n  api_key: sk-or-test-key\n  default: anthropic/claude-sonnet-4.5\n",
        server.base_url()
    ));
    std::fs::write(home.workdir().join("notes.txt"), "hello").unwrap();
    let o = run(
        &home,
        &["-z", "read the notes twice", "-t", "file", "--usage"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("15,000 in (12,000 cached)"),
        "cache reads are reported: {}",
        stderr(&o)
    );

    let reqs = server.chat_requests();
    let last = &reqs[2];
    let system = last["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(!system.is_empty());
    let mark = json!({"type": "ephemeral"});
    let part = |text: &str| json!([{"type": "text", "text": text, "cache_control": mark}]);
    let result = json!({"content": "1|hello", "total_lines": 1, "file_size": 5}).to_string();
    let call = |id: &str, args: Value| json!([{"id": id, "type": "function", "function": {"name": "read_file", "arguments": args.to_string()}}]);
    assert_eq!(
        last["messages"],
        json!([
            {"role": "system", "content": part(system)},
            {"role": "user", "content": "read the notes twice"},
            {"role": "assistant", "content": "Reading.", "tool_calls": call("call_0_0", json!({"path": "notes.txt"}))},
            {"role": "tool", "content": part(&result), "tool_call_id": "call_0_0", "name": "read_file"},
            {"role": "assistant", "content": part("Again."), "tool_calls": call("call_1_0", json!({"path": "notes.txt", "offset": 1}))},
            {"role": "tool", "content": part(&result), "tool_call_id": "call_1_0", "name": "read_file"},
        ])
    );
    // The first request: the system prompt and the user's message.
    assert_eq!(
        reqs[0]["messages"][1]["content"],
        part("read the notes twice")
    );
}

#[test]
fn other_routes_send_plain_text_content() {
    let server = MockServer::start(Script::new(vec![Turn::text("ok")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "model:\n  provider: openrouter\n  base_url: {}\n  api_key: sk-or-test-key\n  default: openai/gpt-5\n",
        server.base_url()
    ));
    assert!(run(&home, &["-z", "hi"]).status.success());
    let req = &server.chat_requests()[0];
    assert!(req["messages"][0]["content"].is_string());
    assert_eq!(req["messages"][1]["content"], "hi");
}

#[test]
fn deepseek_gets_its_reasoning_back_and_others_do_not() {
    let script = || {
        Script::new(vec![
            Reply::tool_call("read_file", json!({"path": "notes.txt"}))
                .with_reasoning("I should read the notes first.")
                .into(),
            Turn::text("They say hello."),
        ])
    };
    let deepseek = MockServer::start(script());
    let home = TestHome::new();
    home.write_config(&format!(
        "model:\n  provider: deepseek\n  base_url: {}\n  api_key: sk-ds-test-key\n  default: deepseek-reasoner\n",
        deepseek.base_url()
    ));
    std::fs::write(home.workdir().join("notes.txt"), "hello").unwrap();
    let o = run(&home, &["-z", "read the notes", "-t", "file"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let replay = &deepseek.chat_requests()[1];
    let assistant = messages(replay)
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(
        assistant["reasoning_content"],
        "I should read the notes first."
    );

    let other = MockServer::start(script());
    home.write_mock_config(&other);
    let o = run(&home, &["-z", "read the notes", "-t", "file"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let replay = &other.chat_requests()[1];
    let assistant = messages(replay)
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert!(assistant.get("reasoning_content").is_none(), "{assistant}");
}
