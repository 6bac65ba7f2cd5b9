//! `hermes acp` over raw JSON-RPC lines, as an editor writes them: initialize and the
//! capabilities it advertises, a malformed line and a line that is no request (JSON-RPC
//! errors, the agent keeps serving), an unknown method, bad working directories, a prompt to
//! a session that is not open, a new session whose turn streams its answer and is stored
//! (source `acp`), and a second process loading that session (its history replayed as
//! updates before the answer) and switching its model, or a session that does not exist. stdout carries only JSON.
//! With the editor's terminal offered: an editor that cannot create a terminal (the model gets
//! a clear error), and a command that outlives its timeout (killed through `terminal/kill`,
//! its truncated output and signal reaching the model in the built-in tool's shape, the
//! terminal released), and a background command, which stays ours (no `terminal/*` request).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use common::{bin, run, stdout};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

/// One `hermes acp` process and its protocol streams.
struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Agent {
    fn start(home: &TestHome) -> Agent {
        let mut child = home
            .command(bin())
            .arg("acp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Agent {
            child,
            stdin,
            lines,
        }
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line of stdout, which must be JSON.
    fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("a line from hermes acp");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {line}"))
    }

    /// Sends a request and returns its answer with the notifications that came before it.
    fn request(&mut self, id: u64, method: &str, params: Value) -> (Value, Vec<Value>) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&line.to_string());
        self.answer(&json!(id))
    }

    fn answer(&self, id: &Value) -> (Value, Vec<Value>) {
        let mut notes = Vec::new();
        loop {
            let msg = self.next();
            if msg.get("method").is_some() {
                notes.push(msg);
            } else if &msg["id"] == id {
                return (msg, notes);
            } else {
                panic!("unexpected message {msg}");
            }
        }
    }

    /// Like [`Agent::request`], answering the agent's own requests on the way with `respond`
    /// (`None`: left unanswered); the answer and every message that came before it.
    fn request_serving(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
        mut respond: impl FnMut(&str, &Value) -> Option<Result<Value, Value>>,
    ) -> (Value, Vec<Value>) {
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&line.to_string());
        let mut seen = Vec::new();
        loop {
            let msg = self.next();
            if msg["id"] == json!(id) && msg.get("method").is_none() {
                return (msg, seen);
            }
            if let (Some(m), Some(rid)) = (msg["method"].as_str(), msg.get("id")) {
                let reply = match respond(m, &msg["params"]) {
                    Some(Ok(result)) => {
                        Some(json!({"jsonrpc": "2.0", "id": rid, "result": result}))
                    }
                    Some(Err(error)) => Some(json!({"jsonrpc": "2.0", "id": rid, "error": error})),
                    None => None,
                };
                if let Some(reply) = reply {
                    self.send_line(&reply.to_string());
                }
            }
            seen.push(msg);
        }
    }

    fn initialize(&mut self) -> Value {
        self.request(
            0,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .0
    }

    /// Closes stdin and waits for the process: it ends by itself.
    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        for _ in 0..300 {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        panic!("hermes acp did not exit when its stdin closed");
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn updates<'a>(notes: &'a [Value], kind: &str) -> Vec<&'a Value> {
    notes
        .iter()
        .filter(|n| {
            n["method"] == "session/update" && n["params"]["update"]["sessionUpdate"] == kind
        })
        .collect()
}

fn text(notes: &[Value], kind: &str) -> String {
    updates(notes, kind)
        .iter()
        .map(|n| n["params"]["update"]["content"]["text"].as_str().unwrap())
        .collect()
}

#[test]
fn initialize_errors_and_bad_input_never_stop_the_agent() {
    let server = MockServer::start(Script::new(vec![]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let mut agent = Agent::start(&home);
    let init = agent.initialize();
    assert_eq!(
        init["result"],
        json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                "mcpCapabilities": {"http": false, "sse": false},
                "sessionCapabilities": {},
                "auth": {}
            },
            "authMethods": [],
            "agentInfo": {"name": "hermes", "title": "Hermes", "version": env!("CARGO_PKG_VERSION")}
        })
    );

    agent.send_line("this is not json");
    let bad = agent.next();
    assert_eq!(bad["error"]["code"], -32700);
    assert_eq!(bad["id"], Value::Null);

    let (unknown, _) = agent.request(1, "session/fly", json!({}));
    assert_eq!(unknown["error"]["code"], -32601);
    assert_eq!(unknown["error"]["data"], "session/fly");

    let (relative, _) = agent.request(
        2,
        "session/new",
        json!({"cwd": "relative/dir", "mcpServers": []}),
    );
    assert_eq!(relative["error"]["code"], -32602);
    assert_eq!(
        relative["error"]["message"],
        "cwd must be an absolute path, got relative/dir"
    );
    let missing = home.root().join("no-such-dir");
    let (absent, _) = agent.request(3, "session/new", json!({"cwd": missing, "mcpServers": []}));
    assert_eq!(absent["error"]["code"], -32602);
    assert!(
        absent["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no-such-dir"),
        "{absent}"
    );

    let (closed, _) = agent.request(
        4,
        "session/prompt",
        json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(closed["error"]["code"], -32002);

    let (params, _) = agent.request(5, "session/new", json!({"cwd": 42}));
    assert_eq!(params["error"]["code"], -32602);

    // Still serving after all that.
    let (again, _) = agent.request(
        6,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert_eq!(again["result"]["protocolVersion"], 1);
    assert!(agent.finish().success());
    assert!(server.chat_requests().is_empty());
}

#[test]
fn a_session_is_stored_and_loads_with_its_history_replayed() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("Hello from Hermes."),
        Turn::text("Still here."),
        Turn::text("The other one."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let cwd = home.workdir();

    let mut agent = Agent::start(&home);
    agent.initialize();
    let (new, _) = agent.request(1, "session/new", json!({"cwd": cwd, "mcpServers": []}));
    let sid = new["result"]["sessionId"].as_str().unwrap().to_string();
    assert_eq!(
        new["result"]["modes"]["availableModes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["default", "yolo"]
    );
    let (answer, notes) = agent.request(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(text(&notes, "agent_message_chunk"), "Hello from Hermes.");
    assert!(
        notes
            .iter()
            .all(|n| n["params"]["sessionId"] == sid.as_str())
    );
    assert!(agent.finish().success());

    // Stored like any session, with its source.
    let listed = stdout(&run(&home, &["sessions", "list", "--json"]));
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let stored = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == sid.as_str())
        .unwrap_or_else(|| panic!("{sid} not in {listed}"));
    assert_eq!(stored["source"], "acp");

    // Another process loads it: the conversation comes back as updates before the answer.
    let mut agent = Agent::start(&home);
    agent.initialize();
    let (loaded, notes) = agent.request(
        1,
        "session/load",
        json!({"sessionId": sid, "cwd": cwd, "mcpServers": []}),
    );
    assert_eq!(loaded["result"]["modes"]["currentModeId"], "default");
    assert_eq!(text(&notes, "user_message_chunk"), "hello");
    assert_eq!(text(&notes, "agent_message_chunk"), "Hello from Hermes.");
    let (answer, notes) = agent.request(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "again"}]}),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(text(&notes, "agent_message_chunk"), "Still here.");
    let last = server.chat_requests().pop().unwrap();
    assert_eq!(last["model"], "mock-model");
    let said: Vec<(&str, &str)> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        said,
        [
            ("user", "hello"),
            ("assistant", "Hello from Hermes."),
            ("user", "again")
        ]
    );

    // The model selector: another model of the same provider from the next turn on.
    let (switched, _) = agent.request(
        4,
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "model", "value": "custom:other-model"}),
    );
    assert_eq!(
        switched["result"]["configOptions"][0]["currentValue"], "custom:other-model",
        "{switched}"
    );
    let (bad, _) = agent.request(
        5,
        "session/set_config_option",
        json!({"sessionId": sid, "configId": "colour", "value": "red"}),
    );
    assert_eq!(bad["error"]["code"], -32602);
    let (answer, _) = agent.request(
        6,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "which model?"}]}),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(
        server.chat_requests().pop().unwrap()["model"],
        "other-model"
    );

    let (unknown, _) = agent.request(
        3,
        "session/load",
        json!({"sessionId": "20990101_000000_nothere", "cwd": cwd, "mcpServers": []}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(agent.finish().success());
}

/// The result of the call the model made, as the model got it in its next request.
fn tool_result_sent(server: &MockServer) -> Value {
    let requests = server.chat_requests();
    let last = requests.last().unwrap();
    let msg = last["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(msg["role"], "tool", "{last}");
    serde_json::from_str(msg["content"].as_str().unwrap()).unwrap()
}

/// An agent with a new session, initialized by an editor offering its terminal.
fn terminal_session(home: &TestHome) -> (Agent, String) {
    let mut agent = Agent::start(home);
    let (init, _) = agent.request(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"terminal": true}}),
    );
    assert_eq!(init["result"]["protocolVersion"], 1);
    let (new, _) = agent.request(
        1,
        "session/new",
        json!({"cwd": home.workdir(), "mcpServers": []}),
    );
    let sid = new["result"]["sessionId"].as_str().unwrap().to_string();
    (agent, sid)
}

fn methods(seen: &[Value]) -> Vec<&str> {
    seen.iter()
        .filter(|m| m.get("id").is_some())
        .filter_map(|m| m["method"].as_str())
        .collect()
}

#[test]
fn an_editor_that_cannot_make_a_terminal_gives_the_model_a_clear_error() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo hi"})),
        Turn::text("It failed."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let (mut agent, sid) = terminal_session(&home);
    let (answer, seen) = agent.request_serving(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "say hi"}]}),
        |method, _| {
            assert_eq!(method, "terminal/create");
            Some(Err(
                json!({"code": -32603, "message": "no terminals in this editor"}),
            ))
        },
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(methods(&seen), ["terminal/create"]);
    assert_eq!(
        tool_result_sent(&server)["error"],
        "the editor could not start the command in its terminal: no terminals in this editor"
    );
    let failed = updates(&seen, "tool_call_update")
        .iter()
        .any(|u| u["params"]["update"]["status"] == "failed");
    assert!(failed, "{seen:?}");
    assert!(agent.finish().success());
}

#[test]
fn a_command_past_its_timeout_is_killed_in_the_editors_terminal() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "sleep 30", "timeout": 1})),
        Turn::text("It timed out."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let (mut agent, sid) = terminal_session(&home);
    let mut killed = false;
    let (answer, seen) = agent.request_serving(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "wait"}]}),
        |method, params| {
            if method != "terminal/create" {
                assert_eq!(params["terminalId"], "t1", "{method} {params}");
            }
            match method {
                "terminal/create" => Some(Ok(json!({"terminalId": "t1"}))),
                // Still running until killed.
                "terminal/wait_for_exit" if !killed => None,
                "terminal/kill" => {
                    killed = true;
                    Some(Ok(json!({})))
                }
                "terminal/wait_for_exit" => {
                    Some(Ok(json!({"exitCode": null, "signal": "SIGKILL"})))
                }
                "terminal/output" => Some(Ok(json!({"output": "partial\n", "truncated": true}))),
                "terminal/release" => Some(Ok(json!({}))),
                other => panic!("unexpected request {other}"),
            }
        },
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert_eq!(
        methods(&seen),
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    let result = tool_result_sent(&server);
    assert_eq!(
        result,
        json!({
            "output": "... [earlier output dropped: the editor keeps the last 50000 bytes] ...\npartial",
            "exit_code": 137,
            "error": "command timed out after 1s and was killed; run long jobs with a larger timeout"
        })
    );
    assert!(agent.finish().success());
}

#[test]
fn background_commands_stay_in_our_process_registry() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": "echo started > bg.txt", "background": true}),
        ),
        Turn::text("Started."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let (mut agent, sid) = terminal_session(&home);
    let (answer, seen) = agent.request_serving(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "start it"}]}),
        |method, _| panic!("the editor was asked {method}"),
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(methods(&seen).is_empty(), "{seen:?}");
    let result = tool_result_sent(&server);
    assert_eq!(result["status"], "running", "{result}");
    assert!(result["id"].is_string(), "{result}");
    assert!(agent.finish().success());
}
