//! `hermes mcp serve` driven by the official Python MCP client (the `mcp` package that
//! `scripts/setup-mcp` installs into a venv in the user's cache, or `HERMES_MCP_PYTHON`):
//! over stdio and over Streamable HTTP with a bearer key, it lists the tools, reads a
//! conversation stored by an earlier `hermes -z`, and runs `hermes_chat` against the
//! scripted mock model. Skips with a printed reason when the venv is missing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::{run, stderr};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::Value;

/// The venv's python with the `mcp` package, or why there is none.
fn python() -> Result<PathBuf, String> {
    common::venv::Venv {
        env_var: "HERMES_MCP_PYTHON",
        cache_dir: "mcp",
        probe: "import mcp.client.stdio, mcp.client.streamable_http",
        setup: "setup-mcp",
    }
    .python()
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_serve_client.py")
}

/// A home with one stored conversation (from a real `-z` turn) and the model server.
fn seeded() -> (TestHome, MockServer) {
    let server = MockServer::start(Script::new(vec![
        Turn::text("the seeded answer"),
        Turn::text("the chat answer"),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "the first question"]);
    assert!(o.status.success(), "{}", stderr(&o));
    (home, server)
}

fn check(out: &Value, server: &MockServer) {
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        tools,
        [
            "conversations_list",
            "conversation_get",
            "messages_read",
            "attachments_fetch",
            "events_poll",
            "events_wait",
            "messages_send",
            "channels_list",
            "permissions_list_open",
            "permissions_respond",
            "hermes_chat"
        ]
    );
    let conversations = &out["conversations"]["conversations"];
    assert_eq!(out["conversations"]["count"], 1, "{out}");
    assert_eq!(conversations[0]["platform"], "cli");
    assert_eq!(
        out["conversation"]["session_id"],
        conversations[0]["session_id"]
    );
    let messages = out["messages"]["messages"].as_array().unwrap();
    let pairs: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("user", "the first question"),
            ("assistant", "the seeded answer")
        ]
    );
    assert_eq!(out["chat"]["response"], "the chat answer", "{out}");
    assert!(!out["chat"]["session_id"].as_str().unwrap().is_empty());
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 2);
    let last = reqs[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], "hi from an MCP client");
    assert_eq!(out["events"]["is_error"], true);
    assert!(
        out["events"]["body"]["error"]
            .as_str()
            .unwrap()
            .contains("gateway is not running"),
        "{out}"
    );
}

#[test]
fn the_python_client_over_stdio() {
    let py = match python() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    let (home, server) = seeded();
    let o = home
        .command(&py)
        .arg(script())
        .args(["stdio", common::bin().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let out: Value = serde_json::from_slice(&o.stdout).unwrap();
    check(&out, &server);
}

#[test]
fn the_python_client_over_http_with_a_key() {
    let py = match python() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
    let (home, server) = seeded();
    let mut child = home
        .command(common::bin())
        .args([
            "mcp",
            "serve",
            "--http",
            "--port",
            "0",
            "--key",
            "s3cret-key",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let url = format!("http://127.0.0.1:{}/mcp", line.trim());
    // Without the key: refused.
    let refused = home
        .command(&py)
        .args(["-c", &format!(
            "import urllib.request,sys\ntry:\n urllib.request.urlopen(urllib.request.Request('{url}', data=b'{{}}', headers={{'Content-Type':'application/json'}}))\nexcept urllib.error.HTTPError as e:\n print(e.code)"
        )])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&refused.stdout).trim(), "401");
    let o = home
        .command(&py)
        .arg(script())
        .args(["http", &url, "s3cret-key"])
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let out: Value = serde_json::from_slice(&o.stdout).unwrap();
    check(&out, &server);
}
