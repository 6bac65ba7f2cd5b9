//! Provider error text is redacted before it is shown (`-z` on stderr) or relayed (the API
//! server's answer): a provider echoing the request's key, or any other credential, never
//! passes it on.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use hermes_testkit::{Fault, MockServer, Script, TestHome};
use serde_json::json;

/// The mock config's key, and another credential a proxy might quote.
const OWN_KEY: &str = "sk-mock-not-a-real-key";
const OTHER: &str = "ghp_abcdefghijklmnopqrstuvwxyz123456";

fn echoing_fault() -> Fault {
    Fault::http(
        401,
        format!("Incorrect API key provided: {OWN_KEY}. The upstream said: token={OTHER}"),
    )
}

#[test]
fn a_key_echoed_in_an_error_is_not_shown() {
    let server = MockServer::start(Script::new(vec![echoing_fault().into()]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("Incorrect API key provided: [REDACTED]"),
        "{err}"
    );
    assert!(!err.contains(OWN_KEY) && !err.contains(OTHER), "{err}");
}

#[test]
fn a_key_echoed_in_an_error_is_not_relayed_by_the_api_server() {
    let server = MockServer::start(Script::new(vec![echoing_fault().into()]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let mut child = home
        .command(bin())
        .args(["gateway", "run", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("API server listening on http://")
        .and_then(|r| r.strip_suffix("/v1"))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    let body = json!({"model": "hermes-agent", "messages": [{"role": "user", "content": "hi"}]});
    let reply = hermes_testkit::http_client::http(
        &addr,
        "POST",
        "/v1/chat/completions",
        &[],
        &body.to_string(),
    );
    let _ = child.kill();
    let _ = child.wait();
    assert!(reply.body.contains("[REDACTED]"), "{}", reply.body);
    assert!(
        !reply.body.contains(OWN_KEY) && !reply.body.contains(OTHER),
        "{}",
        reply.body
    );
}
