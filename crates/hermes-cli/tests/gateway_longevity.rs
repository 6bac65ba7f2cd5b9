//! A long-lived gateway does not grow with its requests: 200 requests to one `hermes gateway`
//! with one stdio MCP server (each request calling one of its tools) spawn that server once,
//! and the process's resident memory after request 200 is within 2 MiB of what it was after
//! request 20 (once its caches, connections and allocator arenas are warm).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::Gateway;
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const REQUESTS: usize = 200;
const WARM: usize = 20;

/// Calls the MCP server's `echo` once per request, then answers.
fn model(body: &Value) -> Turn {
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null);
    if last["role"] == "tool" {
        Turn::text("done")
    } else {
        Turn::tool("mcp__probe__echo", json!({"text": "hi"}))
    }
}

/// Resident memory of `pid` in KiB (`VmRSS`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap()
}

#[test]
fn two_hundred_requests_spawn_the_mcp_server_once_and_keep_memory_flat() {
    let server = MockServer::start(Script::responding(model));
    let home = TestHome::new();
    let mock = common::bin().with_file_name("hermes-mcp-mock");
    assert!(mock.exists(), "{} is missing", mock.display());
    let spawns = home.root().join("spawns.log");
    let mut yaml = hermes_testkit::mock_config_yaml(&server);
    yaml.push_str(&format!(
        "mcp_servers:\n  probe:\n    command: sh\n    args: [\"-c\", \"echo spawned >> {}; exec {}\"]\n",
        spawns.display(),
        mock.display()
    ));
    home.write_config(&yaml);
    let gateway = Gateway::start(&home, &[]);
    let pid = gateway.child.id();

    let body = json!({"messages": [{"role": "user", "content": "use the tool"}]}).to_string();
    let mut warm = 0;
    for i in 1..=REQUESTS {
        let reply = hermes_testkit::http_client::http(
            &gateway.addr,
            "POST",
            "/v1/chat/completions",
            &[],
            &body,
        );
        assert_eq!(reply.status, 200, "request {i}: {}", reply.body);
        assert_eq!(reply.json()["choices"][0]["message"]["content"], "done");
        if i == WARM {
            warm = rss_kib(pid);
        }
    }
    let after = rss_kib(pid);
    let calls = server
        .chat_requests()
        .iter()
        .filter(|r| {
            r["messages"]
                .as_array()
                .and_then(|m| m.last())
                .is_some_and(|m| {
                    m["role"] == "tool" && m["content"].as_str().unwrap_or("").contains("hi")
                })
        })
        .count();
    assert_eq!(calls, REQUESTS, "every request ran the MCP tool");
    let (code, _) = gateway.terminate();
    assert_eq!(code, Some(0));

    let spawned = std::fs::read_to_string(&spawns).unwrap();
    assert_eq!(
        spawned.lines().count(),
        1,
        "the MCP server was spawned more than once"
    );
    eprintln!("resident after {WARM} requests: {warm} KiB; after {REQUESTS}: {after} KiB");
    assert!(
        after <= warm + 2048,
        "resident memory grew from {warm} KiB to {after} KiB"
    );
}
