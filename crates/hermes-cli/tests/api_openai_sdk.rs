//! The official `openai` Python SDK as a real client of `hermes gateway` (the script
//! `api_openai_client.py`, run with the venv `scripts/setup-openai` installs in the user's cache,
//! or `HERMES_OPENAI_PYTHON`): the streaming loop of the SDK's README across a turn that runs a
//! tool (tool progress must not break it), chat completions streamed and not, Responses chained
//! through `previous_response_id` over three turns, retrieved, and streamed with typed events,
//! tools the client defines itself (the SDK's function-calling loop in chat completions, streamed
//! and not, and in Responses), and a wrong key raising `openai.AuthenticationError`. The mock
//! model answers by what it is asked, and the test checks what it was sent. Skips with a printed
//! reason only when the venv cannot be created.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::gateway::Gateway;
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

/// The venv's python with the `openai` package (installing it once), or why there is none.
fn python() -> Result<PathBuf, String> {
    common::venv::Venv {
        env_var: "HERMES_OPENAI_PYTHON",
        cache_dir: "openai",
        probe: "import openai",
        setup: "setup-openai",
    }
    .python()
}

/// The chat requests the model received that match `pick`.
fn requests_where(server: &MockServer, pick: impl Fn(&Value) -> bool) -> Vec<Value> {
    server
        .chat_requests()
        .into_iter()
        .filter(|r| pick(r))
        .collect()
}

/// The last message of a chat request.
fn last_message(req: &Value) -> &Value {
    req["messages"].as_array().unwrap().last().unwrap()
}

/// Answers by the question: "run the tool" calls the terminal, "weather in Paris?" calls the
/// client's own `get_weather` (when offered), a tool result is summed up, anything else is
/// echoed.
fn model() -> MockServer {
    MockServer::start(Script::responding(|req| {
        let last = last_message(req);
        let content = last["content"].as_str().unwrap_or_default();
        if last["role"] == "tool" {
            if content.contains("sunny") {
                return Turn::text("It is sunny in Paris.");
            }
            return Turn::text("The tool ran.");
        }
        let offered = |name: &str| {
            req["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == name))
        };
        match content {
            "weather in Paris?" if offered("get_weather") => {
                Turn::tool("get_weather", json!({"city": "Paris"}))
            }
            "run the tool" => Turn::tool("terminal", json!({"command": "echo sdk-tool-output"})),
            other => Turn::text(format!("You said: {other}")),
        }
    }))
}

#[test]
fn the_openai_sdk_drives_chat_completions_and_responses() {
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
    home.write_file(".env", "API_SERVER_KEY=sdk-key\n");
    let gw = Gateway::start(&home, &[]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/api_openai_client.py");
    let out = Command::new(&py)
        .arg(&script)
        .arg(format!("http://{}/v1", gw.addr))
        .arg("sdk-key")
        .output()
        .unwrap();
    let steps = common::venv::Steps::of(out);
    let step = |name: &str| steps.get(name);

    // The README loop survived the tool turn and printed exactly the answer.
    assert_eq!(step("readme_stream")["text"], "The tool ran.");
    let requests = server.chat_requests();
    let tool_result = requests
        .iter()
        .find(|r| last_message(r)["role"] == "tool")
        .expect("the tool result went back to the model");
    assert!(
        last_message(tool_result)["content"]
            .as_str()
            .unwrap()
            .contains("sdk-tool-output")
    );

    let chat = step("chat");
    assert_eq!(chat["content"], "You said: plain question");
    assert_eq!(chat["finish_reason"], "stop");
    assert_eq!(chat["object"], "chat.completion");
    // The client's system message joined our system prompt: one system message.
    let pirate = requests
        .iter()
        .find(|r| last_message(r)["content"] == "plain question")
        .unwrap();
    let systems: Vec<&Value> = pirate["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .collect();
    assert_eq!(systems.len(), 1, "{pirate}");
    assert!(
        systems[0]["content"]
            .as_str()
            .unwrap()
            .ends_with("\n\nAnswer like a pirate.")
    );

    let responses = step("responses");
    assert_eq!(
        responses["texts"],
        json!([
            "You said: first turn",
            "You said: second turn",
            "You said: third turn"
        ])
    );
    assert_eq!(
        responses["previous"],
        json!([responses["ids"][0], responses["ids"][1]])
    );
    assert_eq!(responses["status"], "completed");
    // The third turn carried the whole chain and the first turn's instructions.
    let third = requests
        .iter()
        .find(|r| last_message(r)["content"] == "third turn")
        .unwrap();
    let convo: Vec<(String, String)> = third["messages"]
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
    assert_eq!(convo[0].0, "system");
    assert!(convo[0].1.ends_with("\n\nBe terse."));
    let rest: Vec<(&str, &str)> = convo[1..]
        .iter()
        .map(|(r, c)| (r.as_str(), c.as_str()))
        .collect();
    assert_eq!(
        rest,
        vec![
            ("user", "first turn"),
            ("assistant", "You said: first turn"),
            ("user", "second turn"),
            ("assistant", "You said: second turn"),
            ("user", "third turn"),
        ]
    );
    let fetched = step("retrieve");
    assert_eq!(fetched["id"], responses["ids"][2]);
    assert_eq!(fetched["text"], "You said: third turn");

    let streamed = step("responses_stream");
    assert_eq!(streamed["text"], "You said: stream me");
    assert_eq!(streamed["final"], "You said: stream me");
    let kinds: Vec<&str> = streamed["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"response.created"));
    assert_eq!(kinds.last(), Some(&"response.completed"));
    assert!(kinds.contains(&"response.output_text.delta"));
    assert!(kinds.contains(&"response.output_text.done"));

    // The client's own tool: handed back, run by the client, its result sent to the model.
    let tools = step("client_tools");
    assert_eq!(tools["finish"], json!(["tool_calls", "stop"]));
    assert_eq!(tools["name"], "get_weather");
    assert_eq!(tools["arguments"], json!({"city": "Paris"}));
    assert_eq!(tools["answer"], "It is sunny in Paris.");
    let asked = requests_where(&server, |r| {
        last_message(r)["content"] == "weather in Paris?"
    });
    let offered: Vec<&str> = asked[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"get_weather"), "{offered:?}");
    assert!(
        offered.contains(&"terminal"),
        "ours are offered beside it: {offered:?}"
    );
    let get_weather = asked[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "get_weather")
        .unwrap();
    assert_eq!(
        get_weather["function"]["description"],
        "Current weather in a city"
    );
    assert_eq!(
        get_weather["function"]["parameters"]["required"],
        json!(["city"])
    );
    let answered = requests_where(&server, |r| {
        last_message(r)["role"] == "tool"
            && last_message(r)["content"]
                .as_str()
                .is_some_and(|c| c.contains("\"city\": \"Paris\""))
    });
    assert_eq!(answered.len(), 1);
    let messages = answered[0]["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 3]["content"], "weather in Paris?");
    assert_eq!(
        messages[n - 2]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    assert_eq!(
        messages[n - 1]["tool_call_id"],
        messages[n - 2]["tool_calls"][0]["id"]
    );
    assert_eq!(messages.iter().filter(|m| m["role"] == "system").count(), 1);

    let streamed_tools = step("client_tools_stream");
    assert_eq!(streamed_tools["finish"], "tool_calls");
    assert_eq!(streamed_tools["calls"].as_array().unwrap().len(), 1);
    assert_eq!(streamed_tools["calls"][0]["name"], "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(streamed_tools["calls"][0]["arguments"].as_str().unwrap())
            .unwrap(),
        json!({"city": "Paris"})
    );
    assert!(streamed_tools["calls"][0]["id"].as_str().is_some());

    let responses_tools = step("responses_tools");
    assert_eq!(responses_tools["name"], "get_weather");
    assert_eq!(responses_tools["arguments"], json!({"city": "Paris"}));
    assert_eq!(responses_tools["answer"], "It is sunny in Paris.");
    assert_eq!(responses_tools["status"], "completed");

    assert_eq!(
        step("wrong_key"),
        json!({"step": "wrong_key", "raised": "AuthenticationError", "status": 401, "code": "invalid_api_key"})
    );
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}
