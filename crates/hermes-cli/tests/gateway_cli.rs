//! `hermes gateway` end to end: the binary serves the OpenAI-compatible API on a free port with
//! the home's provider pointed at the mock model server; a plain HTTP client asks it questions
//! (JSON and streamed answers, a tool-using turn, the request's history reaching the model),
//! checks the key, the bind rule and that SIGTERM stops it with exit code 0; a stored session
//! continued through `X-Hermes-Session-Id`; Responses chained through `previous_response_id`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::Gateway;
use common::*;

use hermes_testkit::http_client::{HttpReply, sse_events};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

fn http(addr: &str, method: &str, path: &str, headers: &[&str], body: &str) -> HttpReply {
    hermes_testkit::http_client::http(addr, method, path, headers, body)
}

fn events(body: &str) -> Vec<(Option<String>, String)> {
    sse_events(body)
}

/// The answer text of a streamed reply, and its tool progress events.
fn reassemble(body: &str) -> (String, Vec<Value>) {
    let evs = events(body);
    assert_eq!(evs.last().map(|e| e.1.as_str()), Some("[DONE]"), "{body}");
    let mut text = String::new();
    let mut tools = Vec::new();
    for (name, data) in &evs[..evs.len() - 1] {
        let v: Value = serde_json::from_str(data).unwrap();
        match name.as_deref() {
            Some("hermes.tool.progress") => tools.push(v),
            _ => {
                assert_eq!(v["object"], "chat.completion.chunk");
                if let Some(t) = v["choices"][0]["delta"]["content"].as_str() {
                    text.push_str(t);
                }
            }
        }
    }
    (text, tools)
}

fn home_for(server: &MockServer) -> TestHome {
    let home = TestHome::new();
    home.write_mock_config(server);
    home
}

#[test]
fn answers_with_the_request_history_and_records_an_api_session() {
    let server = MockServer::start(Script::new(vec![Turn::text("Paris.")]));
    let home = home_for(&server);
    let gw = Gateway::start(&home, &[]);
    let body = json!({
        "model": "hermes-agent",
        "messages": [
            {"role": "system", "content": "Answer in one word."},
            {"role": "user", "content": "What is the capital of Italy?"},
            {"role": "assistant", "content": "Rome."},
            {"role": "user", "content": "And of France?"},
        ],
    })
    .to_string();
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &[], &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "hermes-agent");
    assert_eq!(
        v["choices"],
        json!([{"index": 0, "message": {"role": "assistant", "content": "Paris."}, "finish_reason": "stop"}])
    );
    assert!(v["usage"]["total_tokens"].as_u64().is_some());

    // The model saw the system message, the earlier exchange and the question, in order.
    let sent = server.last_chat_request().unwrap();
    let msgs: Vec<(String, String)> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    // The client's system message is part of our one system prompt, not a second message.
    assert_eq!(msgs[0].0, "system");
    assert!(
        msgs[0].1.ends_with("\n\nAnswer in one word."),
        "{}",
        msgs[0].1
    );
    assert!(msgs[0].1.len() > "Answer in one word.".len() + 2);
    let rest: Vec<(&str, &str)> = msgs[1..]
        .iter()
        .map(|(r, c)| (r.as_str(), c.as_str()))
        .collect();
    assert_eq!(
        rest,
        vec![
            ("user", "What is the capital of Italy?"),
            ("assistant", "Rome."),
            ("user", "And of France?"),
        ]
    );

    // Recorded as a session with source `api`, named in the response header.
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
    let store = hermes_store::Store::open(home.hermes_home().join("sessions.db")).unwrap();
    let sessions = store.list_sessions(10, None).unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].session.source, "api");
    let header = format!("x-hermes-session-id: {}", sessions[0].session.id);
    assert!(r.head.to_ascii_lowercase().contains(&header), "{}", r.head);
}

#[test]
fn streams_chunks_and_tool_progress_of_a_tool_using_turn() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo gateway-tool-output"})),
        Turn::text("The command printed gateway-tool-output."),
    ]));
    let home = home_for(&server);
    let gw = Gateway::start(&home, &[]);
    let body = json!({
        "messages": [{"role": "user", "content": "run echo"}],
        "stream": true,
        "stream_options": {"include_usage": true},
    })
    .to_string();
    let r = http(
        &gw.addr,
        "POST",
        "/v1/chat/completions",
        &["X-Hermes-Tool-Progress: events"],
        &body,
    );
    assert_eq!(r.status, 200);
    let (text, tools) = reassemble(&r.body);
    assert_eq!(text, "The command printed gateway-tool-output.");
    assert_eq!(tools.len(), 2, "{tools:?}");
    assert_eq!(tools[0]["tool"], "terminal");
    assert_eq!(tools[0]["status"], "running");
    assert_eq!(tools[1]["status"], "completed");
    assert_eq!(tools[0]["toolCallId"], tools[1]["toolCallId"]);
    // The tool really ran: its output went back to the model.
    let sent = server.last_chat_request().unwrap().to_string();
    assert!(sent.contains("gateway-tool-output"), "{sent}");
    // The usage chunk comes last, before [DONE].
    let evs = events(&r.body);
    let usage: Value = serde_json::from_str(&evs[evs.len() - 2].1).unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert!(usage["usage"]["prompt_tokens"].as_u64().is_some());
}

#[test]
fn the_key_from_dotenv_is_required() {
    let server = MockServer::start(Script::new(vec![Turn::text("hi")]));
    let home = home_for(&server);
    home.write_file(".env", "API_SERVER_KEY=sekrit-key\n");
    let gw = Gateway::start(&home, &[]);
    let body = json!({"messages": [{"role": "user", "content": "hello"}]}).to_string();
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &[], &body);
    assert_eq!(r.status, 401);
    assert_eq!(
        serde_json::from_str::<Value>(&r.body).unwrap(),
        json!({"error": {"message": "Invalid API key", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}})
    );
    assert_eq!(server.chat_request_count(), 0);
    let r = http(
        &gw.addr,
        "GET",
        "/v1/models",
        &["Authorization: Bearer sekrit-key"],
        "",
    );
    assert_eq!(r.status, 200);
    let models: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(models["data"][0]["id"], "hermes-agent");
    let r = http(
        &gw.addr,
        "POST",
        "/v1/chat/completions",
        &["Authorization: Bearer sekrit-key"],
        &body,
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn provider_failure_is_a_502_in_openai_shape() {
    // An empty script answers HTTP 500 to every call.
    let server = MockServer::start(Script::new(vec![]));
    let home = home_for(&server);
    home.write_config(&format!(
        "{}agent:\n  api_max_retries: 0\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let gw = Gateway::start(&home, &[]);
    let body = json!({"messages": [{"role": "user", "content": "hello"}]}).to_string();
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &[], &body);
    assert_eq!(r.status, 502, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["error"]["type"], "upstream_error");
    assert_eq!(v["error"]["code"], "upstream_error");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("500"),
        "{v}"
    );
}

#[test]
fn a_public_bind_without_key_is_refused() {
    let server = MockServer::start(Script::new(vec![]));
    let home = home_for(&server);
    let o = run(&home, &["gateway", "--host", "0.0.0.0", "--port", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "hermes: refusing to serve the API on 0.0.0.0 without a key: set API_SERVER_KEY (environment or .env) or bind to 127.0.0.1\n"
    );
    assert_eq!(stdout(&o), "");
}

#[test]
fn sigterm_stops_it_and_other_platforms_are_named() {
    let server = MockServer::start(Script::new(vec![]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}platforms:\n  teams:\n    enabled: true\n    token: x\n  mattermost:\n    enabled: true\n    token: x\n  discord:\n    enabled: false\n  api_server:\n    enabled: true\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let gw = Gateway::start(&home, &[]);
    let r = http(&gw.addr, "GET", "/health", &[], "");
    assert_eq!(r.status, 200);
    let (code, err) = gw.terminate();
    assert_eq!(code, Some(0), "{err}");
    // A platform this build lacks, and one it has but cannot start, are both named; the
    // gateway runs on without them.
    let mut lines: Vec<&str> = err.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        vec![
            "hermes: gateway platform not started: platforms.mattermost is enabled but MATTERMOST_URL is not set",
            "hermes: platforms.teams is enabled, but this build has no teams adapter",
        ],
        "{err}"
    );
}

fn messages_of(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_session_header_continues_the_stored_conversation() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("Nice to meet you, Ada."),
        Turn::text("Your name is Ada."),
    ]));
    let home = home_for(&server);
    home.write_file(".env", "API_SERVER_KEY=k1\n");
    let gw = Gateway::start(&home, &[]);
    let auth = "Authorization: Bearer k1";
    let first = json!({"messages": [{"role": "user", "content": "I am Ada."}]}).to_string();
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &[auth], &first);
    assert_eq!(r.status, 200, "{}", r.body);
    let head = r.head.to_ascii_lowercase();
    let id = head
        .lines()
        .find_map(|l| l.strip_prefix("x-hermes-session-id: "))
        .unwrap()
        .trim()
        .to_string();
    // Only the new question is sent: the conversation comes from the store.
    let second =
        json!({"messages": [{"role": "user", "content": "What is my name?"}], "stream": true})
            .to_string();
    let header = format!("X-Hermes-Session-Id: {id}");
    let r = http(
        &gw.addr,
        "POST",
        "/v1/chat/completions",
        &[auth, &header],
        &second,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.head
            .to_ascii_lowercase()
            .contains(&format!("x-hermes-session-id: {id}"))
    );
    assert_eq!(reassemble(&r.body).0, "Your name is Ada.");
    let sent = messages_of(&server.last_chat_request().unwrap());
    let rest: Vec<(&str, &str)> = sent[1..]
        .iter()
        .map(|(r, c)| (r.as_str(), c.as_str()))
        .collect();
    assert_eq!(
        rest,
        vec![
            ("user", "I am Ada."),
            ("assistant", "Nice to meet you, Ada."),
            ("user", "What is my name?"),
        ]
    );
    // An unknown session: 404, or in a stream (already 200) an error chunk with the same code.
    let unknown = [
        "Authorization: Bearer k1",
        "X-Hermes-Session-Id: 19990101_000000_nope",
    ];
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &unknown, &first);
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "session_not_found");
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &unknown, &second);
    let evs = events(&r.body);
    let finish: Value = serde_json::from_str(&evs[evs.len() - 2].1).unwrap();
    assert_eq!(finish["error"]["code"], "session_not_found");
    assert_eq!(
        finish["error"]["message"],
        "Session not found: 19990101_000000_nope"
    );
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
    // One stored session holds both exchanges.
    let store = hermes_store::Store::open(home.hermes_home().join("sessions.db")).unwrap();
    let sessions = store.list_sessions(10, None).unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].session.id, id);
    assert_eq!(sessions[0].session.message_count, 4);
}

#[test]
fn responses_chain_through_previous_response_id_with_the_tool_turn() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo chained-tool-output"})),
        Turn::text("It printed chained-tool-output."),
        Turn::text("You asked me to run echo."),
    ]));
    let home = home_for(&server);
    let gw = Gateway::start(&home, &[]);
    let body = json!({"input": "run echo", "instructions": "Be terse."}).to_string();
    let r = http(&gw.addr, "POST", "/v1/responses", &[], &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let first = r.json();
    let kinds: Vec<&str> = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec!["function_call", "function_call_output", "message"]
    );
    assert_eq!(first["output"][0]["name"], "terminal");
    assert!(
        first["output"][1]["output"]
            .as_str()
            .unwrap()
            .contains("chained-tool-output")
    );
    assert_eq!(
        first["output"][2]["content"][0]["text"],
        "It printed chained-tool-output."
    );

    let body = json!({"input": "what did I ask?", "previous_response_id": first["id"]}).to_string();
    let r = http(&gw.addr, "POST", "/v1/responses", &[], &body);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["output"][0]["content"][0]["text"],
        "You asked me to run echo."
    );
    // The model saw one system message with the carried instructions, and the whole first
    // turn: the question, the tool call, its result, the answer.
    let sent = server.last_chat_request().unwrap();
    let msgs = messages_of(&sent);
    assert_eq!(msgs.iter().filter(|(r, _)| r == "system").count(), 1);
    assert!(msgs[0].1.ends_with("\n\nBe terse."), "{}", msgs[0].1);
    let roles: Vec<&str> = msgs[1..].iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles,
        vec!["user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(msgs[1].1, "run echo");
    assert_eq!(
        sent["messages"][2]["tool_calls"][0]["function"]["name"],
        "terminal"
    );
    assert!(msgs[3].1.contains("chained-tool-output"));
    assert_eq!(msgs[5].1, "what did I ask?");
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
    // Both turns are in one stored session; the response store survives in the home.
    let store = hermes_store::Store::open(home.hermes_home().join("sessions.db")).unwrap();
    assert_eq!(store.list_sessions(10, None).unwrap().len(), 1);
    assert!(home.hermes_home().join("api_responses.db").is_file());
}

#[test]
fn a_run_asks_for_approval_through_the_api_and_its_events_tell_the_story() {
    let home = TestHome::new();
    let victim = home.workdir().join("victim-dir");
    std::fs::create_dir_all(&victim).unwrap();
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": format!("rm -rf {}", victim.display())}),
        ),
        Turn::text("Deleted."),
    ]));
    home.write_mock_config(&server);
    let gw = Gateway::start(&home, &[]);
    let r = http(
        &gw.addr,
        "POST",
        "/v1/runs",
        &[],
        r#"{"input": "delete it"}"#,
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let id = r.json()["run_id"].as_str().unwrap().to_string();
    let status_path = format!("/v1/runs/{id}");
    let wait_for = |want: &str| {
        for _ in 0..1000 {
            let v = http(&gw.addr, "GET", &status_path, &[], "").json();
            if v["status"] == want {
                return v;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("run never reached {want}");
    };
    wait_for("waiting_for_approval");
    assert!(victim.exists(), "ran before approval");
    let r = http(
        &gw.addr,
        "POST",
        &format!("/v1/runs/{id}/approval"),
        &[],
        r#"{"choice": "once"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let done = wait_for("completed");
    assert_eq!(done["output"], "Deleted.");
    assert!(!victim.exists(), "the approved command did not run");
    let r = http(&gw.addr, "GET", &format!("/v1/runs/{id}/events"), &[], "");
    let evs: Vec<Value> = events(&r.body)
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    let kinds: Vec<&str> = evs.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"run.started"));
    let asked = evs
        .iter()
        .find(|e| e["event"] == "approval.request")
        .unwrap();
    assert!(
        asked["command"].as_str().unwrap().starts_with("rm -rf "),
        "{asked}"
    );
    let order: Vec<&str> = kinds
        .iter()
        .copied()
        .filter(|k| *k != "message.delta")
        .collect();
    assert_eq!(
        order,
        vec![
            "run.started",
            "tool.started",
            "approval.request",
            "approval.responded",
            "tool.completed",
            "run.completed",
        ]
    );
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn image_parts_reach_the_model_through_both_apis_and_bad_ones_are_refused() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("A cat."),
        Turn::text("Still a cat."),
    ]));
    let home = home_for(&server);
    let gw = Gateway::start(&home, &[]);
    let data = "data:image/png;base64,iVBORw0KGgo=";
    let body = json!({
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": data}},
        ]}],
    })
    .to_string();
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &[], &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let sent = server.last_chat_request().unwrap();
    let user = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(
        user["content"],
        json!([
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": data}},
        ])
    );

    // The Responses API's `input_image` parts, by URL.
    let body = json!({"input": [{"role": "user", "content": [
        {"type": "input_text", "text": "And this?"},
        {"type": "input_image", "image_url": "https://images.example.org/cat.jpg"},
    ]}], "store": false})
    .to_string();
    let r = http(&gw.addr, "POST", "/v1/responses", &[], &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let sent = server.last_chat_request().unwrap();
    let user = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(
        user["content"][1],
        json!({"type": "image_url", "image_url": {"url": "https://images.example.org/cat.jpg"}})
    );

    // A file URL is not an image the model may be given.
    let body = json!({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "file:///etc/passwd"}},
    ]}]})
    .to_string();
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &[], &body);
    assert_eq!(r.status, 400, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["error"]["param"], "messages[0].content");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("an image must be an http(s) URL or a data:image/...;base64, URL"),
        "{v}"
    );
    assert_eq!(server.chat_request_count(), 2);
}
