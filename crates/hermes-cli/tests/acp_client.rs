//! `hermes acp` driven by the official ACP Python client library (PyPI `agent-client-protocol`,
//! module `acp`, in the venv `scripts/setup-acp` installs in the user's cache, or
//! `HERMES_ACP_PYTHON`) through the script `acp_client.py`: a session whose turn edits a file
//! through the editor's `fs/write_text_file` (the tool call's kind, title, location, and the
//! old/new diff), a read of an unsaved editor buffer through `fs/read_text_file`, a dangerous command denied
//! (it did not run) and then allowed once (it ran), a streamed answer cancelled (stop reason
//! `cancelled`), a mode switch, and a second `hermes acp` loading the stored session (its
//! history replayed) and continuing it. With the editor's terminal offered (the script's
//! `terminal` mode, whose client really runs the commands): a command run through
//! `terminal/create`, `wait_for_exit`, `output` and `release`, shown in its tool call, its
//! output and exit code reaching the model; a dangerous command denied before any terminal is
//! made; a command cancelled with its turn (killed in the editor); a turn's token usage in
//! the prompt response and the context's fill in `usage_update` (after a turn and after a
//! load). The mock model answers by what it is asked, and the test checks what it was sent.
//! Skips with a printed reason only when the venv is missing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use hermes_testkit::{MockServer, MockUsage, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

/// The venv's python with the `acp` package (installing it once), or why there is none.
fn python() -> Result<PathBuf, String> {
    common::venv::Venv {
        env_var: "HERMES_ACP_PYTHON",
        cache_dir: "acp",
        probe: "import acp",
        setup: "setup-acp",
    }
    .python()
}

fn last_message(req: &Value) -> &Value {
    req["messages"].as_array().unwrap().last().unwrap()
}

/// The user message the request answers (the last one).
fn last_user(req: &Value) -> String {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn model() -> MockServer {
    MockServer::start(Script::responding(|req| {
        let last = last_message(req);
        let asked = last_user(req);
        if last["role"] == "tool" {
            return Turn::text(format!("Done: {asked}"));
        }
        match asked.as_str() {
            "edit the notes" => Reply::tool_call(
                "write_file",
                json!({"path": "notes.txt", "content": "new text\n"}),
            )
            .with_reasoning("The notes need new text.")
            .into(),
            "read the draft" => Turn::tool("read_file", json!({"path": "draft.txt"})),
            "remove the victim" | "remove the victim again" => {
                Turn::tool("terminal", json!({"command": "rm -rf victim"}))
            }
            "tell a long story" => Reply::text("Once upon a time ".repeat(40))
                .with_chunk_size(8)
                .with_chunk_delay_ms(100)
                .into(),
            other => Turn::text(format!("You said: {other}")),
        }
    }))
}

fn of_kind<'a>(updates: &'a Value, kind: &str) -> Vec<&'a Value> {
    updates
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

fn text_of(updates: &Value, kind: &str) -> String {
    of_kind(updates, kind)
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect()
}

#[test]
fn the_acp_python_client_drives_edits_permissions_cancel_and_load() {
    let py = match python() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("skipping: {why}");
            return;
        }
    };
    let server = model();
    let home = TestHome::new();
    home.write_mock_config(&server);
    let work = home.workdir();
    std::fs::write(work.join("notes.txt"), "old text\n").unwrap();
    std::fs::create_dir(work.join("victim")).unwrap();
    std::fs::write(work.join("victim/file"), "x").unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/acp_client.py");
    let out = home
        .command(&py)
        .arg(&script)
        .arg(common::bin())
        .arg(&work)
        .output()
        .unwrap();
    let steps = common::venv::Steps::of(out);
    let step = |name: &str| steps.get(name);

    let init = step("initialize");
    assert_eq!(init["response"]["protocolVersion"], 1);
    assert_eq!(init["response"]["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["response"]["agentInfo"]["name"], "hermes");

    let new = step("new_session");
    let sid = new["response"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(new["response"]["modes"]["currentModeId"], "default");
    assert_eq!(
        new["response"]["configOptions"][0]["currentValue"],
        "custom:mock-model"
    );

    // The edit: thought and answer streamed, the call reported with kind, title and location,
    // its finish carrying the diff.
    let edit = step("edit");
    assert_eq!(edit["response"]["stopReason"], "end_turn");
    assert_eq!(edit["notes"], "new text\n");
    let updates = &edit["updates"];
    assert_eq!(
        text_of(updates, "agent_thought_chunk"),
        "The notes need new text."
    );
    assert_eq!(
        text_of(updates, "agent_message_chunk"),
        "Done: edit the notes"
    );
    let call = of_kind(updates, "tool_call")[0];
    assert_eq!(call["kind"], "edit");
    assert_eq!(call["title"], "write_file: notes.txt");
    assert_eq!(call["status"], "in_progress");
    let notes = work.join("notes.txt").to_string_lossy().to_string();
    assert_eq!(call["locations"], json!([{"path": notes}]));
    assert_eq!(
        call["rawInput"],
        json!({"path": "notes.txt", "content": "new text\n"})
    );
    let diff = of_kind(updates, "tool_call_update")
        .into_iter()
        .find(|u| u["status"] == "completed")
        .expect("the finished call")
        .clone();
    assert_eq!(diff["toolCallId"], call["toolCallId"]);
    assert_eq!(
        diff["content"],
        json!([{"type": "diff", "path": notes, "oldText": "old text\n", "newText": "new text\n"}])
    );

    // The write went through the editor's fs/write_text_file.
    assert_eq!(
        edit["fs"],
        json!([{"op": "write", "path": notes, "content": "new text\n"}])
    );

    // A read of an unsaved buffer: the editor's text reached the model, numbered.
    let read = step("read");
    let draft = work.join("draft.txt").to_string_lossy().to_string();
    assert_eq!(
        read["fs"],
        json!([{"op": "read", "path": draft, "line": 1, "limit": 500}])
    );
    assert!(!work.join("draft.txt").exists());
    let requests = server.chat_requests();
    let result = requests
        .iter()
        .find(|r| last_user(r) == "read the draft" && last_message(r)["role"] == "tool")
        .map(|r| last_message(r)["content"].as_str().unwrap().to_string())
        .expect("the read's result went to the model");
    let result: Value = serde_json::from_str(&result).unwrap();
    assert_eq!(result["content"], "1|unsaved line one\n2|unsaved line two");
    assert_eq!(of_kind(&read["updates"], "tool_call")[0]["kind"], "read");

    // Denied: asked with Hermes's choices, the command did not run.
    let denied = step("denied");
    assert_eq!(denied["victim_exists"], true);
    let asked = &denied["permissions"][0];
    assert_eq!(denied["permissions"].as_array().unwrap().len(), 1);
    assert_eq!(asked["tool_call"]["kind"], "execute");
    assert_eq!(
        asked["tool_call"]["title"],
        "recursive delete: rm -rf victim"
    );
    let option_ids: Vec<&str> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        option_ids,
        ["allow_once", "allow_session", "allow_always", "deny"]
    );
    let failed = of_kind(&denied["updates"], "tool_call_update")
        .into_iter()
        .any(|u| u["status"] == "failed");
    assert!(failed, "{}", denied["updates"]);

    // Allowed once: it ran.
    let allowed = step("allowed");
    assert_eq!(allowed["permissions"].as_array().unwrap().len(), 1);
    assert_eq!(allowed["victim_exists"], false);
    assert_eq!(allowed["response"]["stopReason"], "end_turn");

    // Cancelled mid-answer.
    let cancelled = step("cancelled");
    assert_eq!(cancelled["response"]["stopReason"], "cancelled");
    let streamed = text_of(&cancelled["updates"], "agent_message_chunk");
    assert!(!streamed.is_empty() && streamed.len() < "Once upon a time ".len() * 40);

    let mode = step("mode");
    assert_eq!(
        of_kind(&mode["updates"], "current_mode_update")[0]["currentModeId"],
        "yolo"
    );

    // A second `hermes acp` loads the stored session: the history replayed, then continued.
    let load = step("load");
    let replayed = &load["updates"];
    assert_eq!(
        of_kind(replayed, "user_message_chunk")
            .iter()
            .map(|u| u["content"]["text"].as_str().unwrap())
            .collect::<Vec<_>>(),
        [
            "edit the notes",
            "read the draft",
            "remove the victim",
            "remove the victim again",
            "tell a long story"
        ]
    );
    let replayed_edit = of_kind(replayed, "tool_call")[0];
    assert_eq!(replayed_edit["kind"], "edit");
    assert_eq!(replayed_edit["status"], "completed");
    let after = step("after_load");
    assert_eq!(
        text_of(&after["updates"], "agent_message_chunk"),
        "You said: after the load"
    );
    // The model got the loaded conversation with the new question.
    let requests = server.chat_requests();
    let last = requests.last().unwrap();
    assert_eq!(last_user(last), "after the load");
    let users: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users.first(), Some(&"edit the notes"));
    assert!(!sid.is_empty());
}

/// The command the model runs in the editor's terminal: its output proves the working
/// directory, its exit code is not 0.
const GREETING: &str = "echo hello from the editor; cat greeting.txt; exit 3";
/// The context window configured for the terminal test (`compression.context_length`).
const WINDOW: u64 = 64_000;

fn terminal_model() -> MockServer {
    MockServer::start(Script::responding(|req| {
        let last = last_message(req);
        let asked = last_user(req);
        if last["role"] == "tool" {
            return Turn::text(format!("Done: {asked}"));
        }
        match asked.as_str() {
            "run the greeting" => Turn::tool("terminal", json!({"command": GREETING})),
            "remove the victim" => Turn::tool("terminal", json!({"command": "rm -rf victim"})),
            "wait for a long time" => Turn::tool("terminal", json!({"command": "sleep 30"})),
            "count the tokens" => Reply::text("Counted.")
                .with_usage(MockUsage {
                    prompt_tokens: 1234,
                    completion_tokens: 56,
                    cached_tokens: 7,
                })
                .into(),
            other => Turn::text(format!("You said: {other}")),
        }
    }))
}

#[test]
fn commands_run_in_the_editors_terminal_and_usage_is_reported() {
    let py = match python() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("skipping: {why}");
            return;
        }
    };
    let server = terminal_model();
    let home = TestHome::new();
    home.write_config(&format!(
        "{}compression:\n  context_length: {WINDOW}\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let work = home.workdir();
    std::fs::write(work.join("greeting.txt"), "from greeting.txt\n").unwrap();
    std::fs::create_dir(work.join("victim")).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/acp_client.py");
    let out = home
        .command(&py)
        .arg(&script)
        .arg(common::bin())
        .arg(&work)
        .arg("terminal")
        .output()
        .unwrap();
    let steps = common::venv::Steps::of(out);
    let step = |name: &str| steps.get(name);

    // The command went to the editor: created (our shell, the session's directory, our output
    // cap), waited for, read, released, in that order.
    let ran = step("terminal");
    assert_eq!(ran["response"]["stopReason"], "end_turn");
    let calls = ran["terminal"].as_array().unwrap();
    let ops: Vec<&str> = calls.iter().map(|c| c["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["create", "wait", "output", "release"], "{calls:?}");
    let create = &calls[0];
    assert_eq!(create["command"], "/bin/bash");
    assert_eq!(create["args"], json!(["-c", GREETING]));
    assert_eq!(create["cwd"], work.to_string_lossy().as_ref());
    assert_eq!(create["output_byte_limit"], 50_000);
    for c in &calls[1..] {
        assert_eq!(c["terminal_id"], "term-1");
    }

    // The terminal was embedded in the call while it ran, and stays beside its result.
    let updates = &ran["updates"];
    let call = of_kind(updates, "tool_call")[0];
    assert_eq!(call["kind"], "execute");
    assert_eq!(call["title"], format!("terminal: {GREETING}"));
    let call_updates = of_kind(updates, "tool_call_update");
    assert!(
        call_updates
            .iter()
            .any(|u| u["toolCallId"] == call["toolCallId"]
                && u["content"] == json!([{"type": "terminal", "terminalId": "term-1"}])),
        "{updates}"
    );
    let shown = call_updates
        .iter()
        .find(|u| u["content"].as_array().is_some_and(|c| c.len() == 2))
        .expect("the result shown with the terminal");
    assert_eq!(
        shown["content"][0],
        json!({"type": "terminal", "terminalId": "term-1"})
    );

    // The model got the output and exit code in the built-in tool's shape.
    let requests = server.chat_requests();
    let result = requests
        .iter()
        .find(|r| last_user(r) == "run the greeting" && last_message(r)["role"] == "tool")
        .map(|r| last_message(r)["content"].as_str().unwrap().to_string())
        .expect("the command's result went to the model");
    let result: Value = serde_json::from_str(&result).unwrap();
    assert_eq!(
        result,
        json!({"output": "hello from the editor\nfrom greeting.txt", "exit_code": 3})
    );

    // A dangerous command: asked first, denied, and the editor never got a terminal.
    let denied = step("terminal_denied");
    assert_eq!(denied["permissions"].as_array().unwrap().len(), 1);
    assert_eq!(denied["terminal"], json!([]));
    assert_eq!(denied["victim_exists"], true);

    // Usage: the turn's tokens as the model reported them; the context against the window.
    let usage = step("usage");
    assert_eq!(
        usage["response"]["usage"],
        json!({
            "inputTokens": 1234,
            "outputTokens": 56,
            "totalTokens": 1290,
            "thoughtTokens": 0,
            "cachedReadTokens": 7,
            "cachedWriteTokens": 0
        })
    );
    let fill = of_kind(&usage["updates"], "usage_update");
    assert_eq!(fill.len(), 1, "{}", usage["updates"]);
    assert_eq!(fill[0]["size"], WINDOW);
    let used = fill[0]["used"].as_u64().unwrap();
    assert!(used > 0 && used < WINDOW, "{used}");
    // Every turn tells it, the context growing with the conversation.
    let first = of_kind(&ran["updates"], "usage_update")[0]["used"]
        .as_u64()
        .unwrap();
    assert!(first < used, "{first} then {used}");

    // Cancelled while the command runs: killed in the editor, read, released.
    let cancelled = step("terminal_cancelled");
    assert_eq!(cancelled["response"]["stopReason"], "cancelled");
    let ops: Vec<&str> = cancelled["terminal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["op"].as_str().unwrap())
        .collect();
    assert_eq!(
        ops,
        ["create", "wait", "kill", "wait", "output", "release"],
        "{}",
        cancelled["terminal"]
    );

    // A load tells how full the loaded session's context is.
    let load = step("load");
    let fill = of_kind(&load["updates"], "usage_update");
    assert_eq!(fill.len(), 1, "{}", load["updates"]);
    assert_eq!(fill[0]["size"], WINDOW);
    assert!(fill[0]["used"].as_u64().unwrap() > 0);
}
