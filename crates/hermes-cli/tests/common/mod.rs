//! Helpers shared by the binary's integration tests: the binary, running it in a test home
//! (with or without stdin), its output as text, waiting for a condition, a free loopback port.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use hermes_testkit::{MockServer, TestHome};
use serde_json::Value;

pub mod dashboard;
pub mod gateway;
pub mod requests;
pub mod tmux;
pub mod venv;

/// The `hermes` binary under test.
pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_hermes"))
}

/// Runs `hermes ARGS` in the home and waits for it.
pub fn run(home: &TestHome, args: &[&str]) -> Output {
    home.command(bin()).args(args).output().unwrap()
}

/// Runs `hermes ARGS` with `input` on stdin (then closed) and waits for it.
pub fn run_with_stdin(home: &TestHome, args: &[&str], input: &str) -> Output {
    let mut child = home
        .command(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Waits up to 30 s for `cond`, polling every 20 ms; fails the test naming `what`.
pub fn wait(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback port free right now (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The JSON result of the `n`-th tool call in the last request `server` received, as the model
/// was sent it (text that is not JSON as a string).
pub fn tool_result(server: &MockServer, n: usize) -> Value {
    let request = server.last_chat_request().unwrap();
    let content = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .nth(n)
        .and_then(|m| m["content"].as_str())
        .expect("a tool result")
        .to_string();
    serde_json::from_str(&content).unwrap_or(Value::String(content))
}
