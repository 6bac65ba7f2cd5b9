//! The API server's catalogue through the binary: `/v1/skills` (installed skills by category and
//! name, disabled ones left out), `/v1/toolsets` (enabled as `platform_toolsets.api` says),
//! `/health/detailed`, the new routes in `/v1/capabilities` and the 404 list, and `model_routes`:
//! aliases listed by `/v1/models` and `/v1/models/{id}`, a request naming one sent to its model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::Gateway;
use hermes_testkit::http_client::HttpReply;
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const AUTH: &str = "Authorization: Bearer k1";

fn http(addr: &str, method: &str, path: &str, body: &str) -> HttpReply {
    hermes_testkit::http_client::http(addr, method, path, &[AUTH], body)
}

fn home_with(server: &MockServer, extra_yaml: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}{extra_yaml}",
        hermes_testkit::mock_config_yaml(server)
    ));
    home.write_file(".env", "API_SERVER_KEY=k1\n");
    home
}

fn skill(home: &TestHome, dir: &str, name: &str, description: &str) {
    home.write_file(
        &format!("skills/{dir}/SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\n\nDo it well.\n"),
    );
}

#[test]
fn skills_toolsets_and_detailed_health_are_listed() {
    let server = MockServer::start(Script::new(vec![Turn::text("unused")]));
    let home = home_with(
        &server,
        "platform_toolsets:\n  api: [terminal, file]\nskills:\n  disabled: [old-notes]\n",
    );
    skill(&home, "devops/git-release", "git-release", "Cut a release.");
    skill(&home, "devops/deploy", "deploy", "Ship it.");
    skill(&home, "summarize", "summarize", "Summarize a text.");
    skill(&home, "old-notes", "old-notes", "Disabled.");
    let gw = Gateway::start(&home, &[]);

    for path in [
        "/v1/skills",
        "/v1/toolsets",
        "/health/detailed",
        "/api/jobs",
    ] {
        let r = hermes_testkit::http_client::http(&gw.addr, "GET", path, &[], "");
        assert_eq!(r.status, 401, "{path}: {}", r.body);
    }

    let r = http(&gw.addr, "GET", "/v1/skills", "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"object": "list", "data": [
            {"name": "summarize", "description": "Summarize a text.", "category": null},
            {"name": "deploy", "description": "Ship it.", "category": "devops"},
            {"name": "git-release", "description": "Cut a release.", "category": "devops"},
        ]})
    );

    let r = http(&gw.addr, "GET", "/v1/toolsets", "");
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["object"], "list");
    assert_eq!(v["platform"], "api_server");
    let by_name = |name: &str| -> Value {
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no toolset {name}: {v}"))
    };
    let terminal = by_name("terminal");
    assert_eq!(terminal["enabled"], true);
    assert!(
        terminal["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("terminal"))
    );
    let file = by_name("file");
    assert_eq!(file["enabled"], true);
    let tools: Vec<&str> = file["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let mut sorted = tools.clone();
    sorted.sort_unstable();
    assert_eq!(tools, sorted);
    assert!(tools.contains(&"read_file"), "{tools:?}");
    assert_eq!(by_name("web")["enabled"], false);
    for t in v["data"].as_array().unwrap() {
        assert!(
            t["configured"].is_boolean() && t["label"].is_string(),
            "{t}"
        );
    }

    let r = http(&gw.addr, "GET", "/health/detailed", "");
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["platform"], "hermes-agent");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["gateway_state"], "running");
    assert_eq!(
        v["platforms"],
        json!({"api_server": {"state": "connected"}})
    );
    assert_eq!(v["active_agents"], 0);
    assert_eq!(v["active_runs"], 0);
    assert_eq!(v["gateway_busy"], false);
    assert_eq!(v["pid"], gw.child.id());
    assert!(v["uptime_seconds"].as_f64().unwrap() >= 0.0);

    let r = http(&gw.addr, "GET", "/v1/capabilities", "");
    let v = r.json();
    for feature in [
        "session_resources",
        "session_chat",
        "session_chat_streaming",
        "session_fork",
        "skills_api",
        "jobs_admin",
        "client_tools",
    ] {
        assert_eq!(v["features"][feature], true, "{feature}");
    }
    assert_eq!(
        v["endpoints"]["session_chat_stream"],
        json!({"method": "POST", "path": "/api/sessions/{session_id}/chat/stream"})
    );
    assert_eq!(
        v["endpoints"]["health_detailed"],
        json!({"method": "GET", "path": "/health/detailed"})
    );
    let r = http(&gw.addr, "GET", "/api/nothing", "");
    assert_eq!(r.status, 404);
    let message = r.json()["error"]["message"].as_str().unwrap().to_string();
    for route in [
        "GET /api/sessions",
        "POST /api/sessions/{session_id}/fork",
        "POST /api/jobs/{job_id}/run",
        "GET /v1/toolsets",
    ] {
        assert!(message.contains(route), "{message}");
    }
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn model_routes_are_listed_and_send_requests_to_their_model() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("From the routed model."),
        Turn::text("From the default model."),
        Turn::text("A routed response."),
    ]));
    let home = home_with(
        &server,
        "platforms:\n  api_server:\n    extra:\n      model_routes:\n        fast:\n          model: other-model\n        broken:\n          provider: custom\n",
    );
    let gw = Gateway::start(&home, &[]);

    let r = http(&gw.addr, "GET", "/v1/models", "");
    assert_eq!(r.status, 200, "{}", r.body);
    let data = r.json()["data"].clone();
    let ids: Vec<&str> = data
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["hermes-agent", "fast"]);
    assert_eq!(data[1]["root"], "other-model");
    assert_eq!(data[1]["parent"], "hermes-agent");
    assert_eq!(data[1]["owned_by"], "hermes");
    let r = http(&gw.addr, "GET", "/v1/models/fast", "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["root"], "other-model");
    let r = http(&gw.addr, "GET", "/v1/models/broken", "");
    assert_eq!(r.status, 404, "{}", r.body);

    let body = json!({"model": "fast", "messages": [{"role": "user", "content": "hi"}]});
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["model"], "fast");
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        "From the routed model."
    );
    assert_eq!(server.last_chat_request().unwrap()["model"], "other-model");
    let body = json!({"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}]});
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(server.last_chat_request().unwrap()["model"], "mock-model");
    // The Responses API follows the route too.
    let body = json!({"model": "fast", "input": "hi"});
    let r = http(&gw.addr, "POST", "/v1/responses", &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["model"], "fast");
    assert_eq!(server.last_chat_request().unwrap()["model"], "other-model");
    let (code, stderr) = gw.terminate();
    assert_eq!(code, Some(0));
    assert!(stderr.contains("route `broken` has no 'model'"), "{stderr}");
}
