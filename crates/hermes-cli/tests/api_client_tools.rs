//! Tools the API client defines itself, through the binary (the SDK-driven happy path is in
//! `api_openai_sdk.rs`): a reply mixing one of our tools with the client's runs ours and hands
//! only the client's back; a stored session (`X-Hermes-Session-Id`) continues from the
//! client's result even though reloading it closed the call with a placeholder; a client tool
//! named like ours replaces ours; `tool_choice: "none"` offers none; malformed tools and tool
//! messages are 400s naming the field.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::Gateway;
use hermes_testkit::http_client::HttpReply;
use hermes_testkit::{MockServer, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

const AUTH: &str = "Authorization: Bearer k1";

fn post(addr: &str, path: &str, headers: &[&str], body: &Value) -> HttpReply {
    let mut all = vec![AUTH];
    all.extend_from_slice(headers);
    hermes_testkit::http_client::http(addr, "POST", path, &all, &body.to_string())
}

fn home_for(server: &MockServer) -> TestHome {
    let home = TestHome::new();
    home.write_mock_config(server);
    home.write_file(".env", "API_SERVER_KEY=k1\n");
    home
}

fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})
}

fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn header<'a>(reply: &'a HttpReply, name: &str) -> Option<&'a str> {
    reply.head.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[test]
fn a_mixed_reply_runs_ours_and_hands_back_only_the_clients() {
    let server = MockServer::start(Script::new(vec![
        Turn::Reply(
            Reply::default()
                .with_content("Noting it down, then checking.")
                .with_tool_call(
                    "todo",
                    json!({"todos": [{"id": "1", "content": "weather", "status": "pending"}]}),
                )
                .with_tool_call("get_weather", json!({"city": "Oslo"})),
        ),
        Turn::text("Snow in Oslo."),
    ]));
    let home = home_for(&server);
    let gw = Gateway::start(&home, &[]);
    let r = post(
        &gw.addr,
        "/v1/chat/completions",
        &[],
        &json!({"messages": [{"role": "user", "content": "Oslo?"}], "tools": [weather_tool()]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(
        choice["message"]["content"],
        "Noting it down, then checking."
    );
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "only the client's call: {v}");
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    assert_eq!(calls[0]["type"], "function");
    let id = calls[0]["id"].as_str().unwrap().to_string();
    // One model call: the turn stopped at the client's tool.
    assert_eq!(server.chat_request_count(), 1);

    // The client answers; the model sees its call and result and goes on.
    let r = post(
        &gw.addr,
        "/v1/chat/completions",
        &[],
        &json!({"messages": [
            {"role": "user", "content": "Oslo?"},
            choice["message"],
            {"role": "tool", "tool_call_id": id, "content": "snow, -3C"}
        ], "tools": [weather_tool()]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        "Snow in Oslo."
    );
    assert_eq!(r.json()["choices"][0]["finish_reason"], "stop");
    let sent = server.last_chat_request().unwrap();
    let messages = sent["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], id.as_str());
    assert_eq!(last["content"], "snow, -3C");
    assert_eq!(
        messages[messages.len() - 2]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn a_stored_session_continues_from_the_clients_result() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("get_weather", json!({"city": "Rome"})),
        Turn::text("Rome is warm."),
        Turn::text("You asked about Rome."),
    ]));
    let home = home_for(&server);
    let gw = Gateway::start(&home, &[]);
    let ask =
        json!({"messages": [{"role": "user", "content": "Rome?"}], "tools": [weather_tool()]});
    let r = post(&gw.addr, "/v1/chat/completions", &[], &ask);
    assert_eq!(r.status, 200, "{}", r.body);
    let session = header(&r, "x-hermes-session-id").unwrap().to_string();
    let id = r.json()["choices"][0]["message"]["tool_calls"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Only the result travels: the conversation comes from the stored session.
    let session_header = format!("X-Hermes-Session-Id: {session}");
    let r = post(
        &gw.addr,
        "/v1/chat/completions",
        &[&session_header],
        &json!({"messages": [{"role": "tool", "tool_call_id": id, "content": "warm, 28C"}],
                "tools": [weather_tool()]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        "Rome is warm."
    );
    let sent = server.last_chat_request().unwrap();
    let roles: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(sent["messages"][3]["content"], "warm, 28C");

    // A later turn of the session still has the real result, not the placeholder.
    let r = post(
        &gw.addr,
        "/v1/chat/completions",
        &[&session_header],
        &json!({"messages": [{"role": "user", "content": "What did I ask?"}]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let sent = server.last_chat_request().unwrap();
    let contents: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["warm, 28C"]);
    // Without client tools in that request, none are offered.
    assert!(!offered(&sent).contains(&"get_weather".to_string()));
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn a_client_tool_replaces_ours_and_tool_choice_none_offers_none() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "rm -rf /"})),
        Turn::text("plain answer"),
    ]));
    let home = home_for(&server);
    let gw = Gateway::start(&home, &[]);
    let own_terminal = json!({"type": "function", "function": {
        "name": "terminal", "description": "The client's sandboxed shell",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}});
    let r = post(
        &gw.addr,
        "/v1/chat/completions",
        &[],
        &json!({"messages": [{"role": "user", "content": "clean up"}], "tools": [own_terminal]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    // The call went to the client, nothing ran here.
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        "{\"command\":\"rm -rf /\"}"
    );
    let sent = server.last_chat_request().unwrap();
    let terminals: Vec<&Value> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["function"]["name"] == "terminal")
        .collect();
    assert_eq!(terminals.len(), 1);
    assert_eq!(
        terminals[0]["function"]["description"],
        "The client's sandboxed shell"
    );

    let r = post(
        &gw.addr,
        "/v1/chat/completions",
        &[],
        &json!({"messages": [{"role": "user", "content": "hi"}],
                "tools": [weather_tool()], "tool_choice": "none"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!offered(&server.last_chat_request().unwrap()).contains(&"get_weather".to_string()));
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn malformed_tools_and_tool_messages_are_400s_naming_the_field() {
    let server = MockServer::start(Script::new(vec![]));
    let home = home_for(&server);
    let gw = Gateway::start(&home, &[]);
    let user = json!({"role": "user", "content": "hi"});
    let cases = [
        (json!({"messages": [user], "tools": {}}), "tools"),
        (
            json!({"messages": [user], "tools": [{"type": "function", "function": {"name": "bad name"}}]}),
            "tools[0].name",
        ),
        (
            json!({"messages": [user], "tools": [{"type": "code_interpreter"}]}),
            "tools[0].type",
        ),
        (
            json!({"messages": [user, {"role": "tool", "content": "x"}]}),
            "messages[1].tool_call_id",
        ),
        (
            json!({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "c"}]}, user]}),
            "messages[0].tool_calls[0]",
        ),
        (
            json!({"input": [{"type": "function_call_output", "output": "x"}]}),
            "input[0]",
        ),
    ];
    for (body, param) in cases {
        let path = if body.get("input").is_some() {
            "/v1/responses"
        } else {
            "/v1/chat/completions"
        };
        let r = post(&gw.addr, path, &[], &body);
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert_eq!(r.json()["error"]["param"], param, "{body}: {}", r.body);
        assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    }
    assert_eq!(server.chat_request_count(), 0);
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}
