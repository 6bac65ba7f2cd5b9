//! `hermes gateway` end to end: the binary serves the OpenAI-compatible API on a free port with
//! the home's provider pointed at the mock model server; a plain HTTP client asks it questions
//! (JSON and streamed answers, a tool-using turn, the request's history reaching the model),
//! checks the key, the bind rule and that SIGTERM stops it with exit code 0.

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
    assert_eq!(msgs[0].0, "system");
    let rest: Vec<(&str, &str)> = msgs[1..]
        .iter()
        .map(|(r, c)| (r.as_str(), c.as_str()))
        .collect();
    assert_eq!(
        rest,
        vec![
            ("system", "Answer in one word."),
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
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &[], &body);
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
        "{}platforms:\n  telegram:\n    enabled: true\n    token: x\n  discord:\n    enabled: false\n  api_server:\n    enabled: true\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let gw = Gateway::start(&home, &[]);
    let r = http(&gw.addr, "GET", "/health", &[], "");
    assert_eq!(r.status, 200);
    let (code, err) = gw.terminate();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        err,
        "hermes: gateway platform `telegram` is configured but not in this build\n"
    );
}
