//! How each way a turn can end reaches an OpenAI client of `hermes gateway`: the status, error
//! type and code an OpenAI SDK turns into the right exception. The provider's 401 is the
//! upstream's problem (502, its reason kept); a context overflow is the request's (400
//! `context_length_exceeded`); a rate limit is 429 with the provider's `Retry-After`; a spent
//! iteration budget still answers, with `finish_reason: "length"`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::gateway::Gateway;
use hermes_testkit::http_client::{HttpReply, http};
use hermes_testkit::{Fault, MockServer, Script, TestHome, Turn};
use serde_json::json;

/// One request to a gateway whose model follows `script`, with `extra` config and flags.
fn ask(script: Script, extra_config: &str, flags: &[&str]) -> HttpReply {
    let server = MockServer::start(script);
    let home = TestHome::new();
    let mut yaml = hermes_testkit::mock_config_yaml(&server);
    yaml.push_str(extra_config);
    home.write_config(&yaml);
    let gateway = Gateway::start(&home, flags);
    let body = json!({"messages": [{"role": "user", "content": "hello"}]}).to_string();
    let reply = http(&gateway.addr, "POST", "/v1/chat/completions", &[], &body);
    let (code, _) = gateway.terminate();
    assert_eq!(code, Some(0));
    reply
}

/// No retries: each fault is final at once.
const NO_RETRIES: &str = "agent:\n  api_max_retries: 0\n";

#[test]
fn a_provider_auth_failure_is_a_bad_gateway_with_the_reason() {
    let reply = ask(
        Script::new(vec![Turn::Fault(Fault::http(
            401,
            "Incorrect API key provided",
        ))]),
        NO_RETRIES,
        &[],
    );
    assert_eq!(reply.status, 502, "{}", reply.body);
    let error = &reply.json()["error"];
    assert_eq!(error["type"], "upstream_error");
    assert_eq!(error["code"], "upstream_auth_error");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("Incorrect API key provided"),
        "{error}"
    );
}

#[test]
fn a_context_overflow_is_the_requests_fault() {
    let reply = ask(
        Script::new(vec![Turn::Fault(Fault::http(
            400,
            "This model's maximum context length is 16384 tokens. However, your messages resulted in 40000 tokens.",
        ))]),
        "compression:\n  enabled: false\n",
        &[],
    );
    assert_eq!(reply.status, 400, "{}", reply.body);
    let error = &reply.json()["error"];
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["code"], "context_length_exceeded");
}

#[test]
fn a_rate_limit_is_429_with_the_providers_retry_after() {
    let reply = ask(
        Script::new(vec![Turn::Fault(Fault::rate_limited(7))]),
        NO_RETRIES,
        &[],
    );
    assert_eq!(reply.status, 429, "{}", reply.body);
    assert!(
        reply.head.to_ascii_lowercase().contains("retry-after: 7"),
        "{}",
        reply.head
    );
    let error = &reply.json()["error"];
    assert_eq!(error["type"], "rate_limit_error");
    assert_eq!(error["code"], "rate_limit_exceeded");
}

#[test]
fn a_spent_budget_answers_with_finish_reason_length() {
    let reply = ask(
        Script::new(vec![
            Turn::tool(
                "todo",
                json!({"todos": [{"id": "1", "content": "x", "status": "pending"}]}),
            ),
            Turn::text("wrapped up"),
        ]),
        "",
        &["--max-turns", "1"],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let choice = &reply.json()["choices"][0];
    assert_eq!(choice["finish_reason"], "length");
    assert_eq!(choice["message"]["content"], "wrapped up");
}

#[test]
fn a_completed_turn_stops() {
    let reply = ask(Script::new(vec![Turn::text("hi there")]), "", &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let choice = &reply.json()["choices"][0];
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(choice["message"]["content"], "hi there");
}
