//! AWS Bedrock Converse end to end: the real binary (built with `--features bedrock`) against
//! the mock server speaking `converse-stream` in AWS event-stream frames. Bearer and SigV4
//! authentication, the Converse request shape with tools and tool results, retries on
//! throttling, access errors naming the credential, and answers cut mid-stream.

#![cfg(feature = "bedrock")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;

use common::*;

use hermes_testkit::{Fault, MockServer, MockUsage, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

const MODEL: &str = "anthropic.claude-3-5-sonnet-20240620-v1:0";
const PATH: &str = "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream";

/// A home whose config selects Bedrock at the mock server, with fast retries.
fn bedrock_home(server: &MockServer) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "model:\n  provider: bedrock\n  default: \"{MODEL}\"\n  base_url: http://127.0.0.1:{}\n\
         agent:\n  retry_base_delay: 0.01\n  retry_max_delay: 0.05\n",
        server.port()
    ));
    home
}

/// Runs `hermes ARGS` with these variables on top of the test home's clean environment (no
/// AWS variable is inherited from the machine running the tests).
fn run_with_env(home: &TestHome, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = home.command(bin());
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.args(args).output().unwrap()
}

const BEARER: &[(&str, &str)] = &[("AWS_BEARER_TOKEN_BEDROCK", "test-key")];

fn text_of(block: &Value) -> &str {
    block["text"].as_str().unwrap_or_default()
}

#[test]
fn a_tool_using_turn_with_a_bedrock_api_key() {
    let server = MockServer::start(Script::new(vec![
        Reply::tool_call("terminal", json!({"command": "echo hello"}))
            .with_reasoning("I should run it.")
            .into(),
        Turn::text("The terminal said hello."),
    ]));
    let home = bedrock_home(&server);
    let o = run_with_env(&home, BEARER, &["-z", "say hello"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "The terminal said hello.\n");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, PATH);
        assert_eq!(r.header("authorization"), Some("Bearer test-key"));
        assert_eq!(r.header("x-amz-date"), None, "no SigV4 with an API key");
        assert_eq!(r.header("content-type"), Some("application/json"));
    }

    // First request: system prompt, the user's turn, the tools.
    let first = &reqs[0].body;
    assert!(first.get("model").is_none(), "the model rides in the path");
    assert!(!text_of(&first["system"][0]).is_empty(), "{first}");
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["role"], "user");
    assert!(text_of(&messages[0]["content"][0]).contains("say hello"));
    assert!(first["inferenceConfig"]["maxTokens"].as_u64().unwrap() > 0);
    let tools = first["toolConfig"]["tools"].as_array().unwrap();
    let terminal = tools
        .iter()
        .map(|t| &t["toolSpec"])
        .find(|s| s["name"] == "terminal")
        .unwrap_or_else(|| panic!("no terminal tool in {tools:?}"));
    assert!(!terminal["description"].as_str().unwrap().is_empty());
    assert_eq!(terminal["inputSchema"]["json"]["type"], "object");
    assert!(
        terminal["inputSchema"]["json"]["properties"]["command"].is_object(),
        "{terminal}"
    );

    // Second request: the assistant's toolUse and the user's toolResult, then the same tools.
    let second = &reqs[1].body;
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{second}");
    assert_eq!(messages[0], first["messages"][0]);
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["content"],
        json!([{"toolUse": {"toolUseId": "call_0_0", "name": "terminal",
                            "input": {"command": "echo hello"}}}])
    );
    assert_eq!(messages[2]["role"], "user");
    let result = &messages[2]["content"][0]["toolResult"];
    assert_eq!(result["toolUseId"], "call_0_0");
    assert!(text_of(&result["content"][0]).contains("hello"), "{result}");
    assert_eq!(second["toolConfig"], first["toolConfig"]);
    assert_eq!(second["system"], first["system"]);
}

/// The captured request's `Authorization` split into credential scope, signed headers and
/// signature; panics when it is not a SigV4 header.
fn sigv4_parts(auth: &str) -> (String, String, String) {
    let rest = auth
        .strip_prefix("AWS4-HMAC-SHA256 Credential=")
        .unwrap_or_else(|| panic!("not SigV4: {auth}"));
    let (credential, rest) = rest.split_once(", SignedHeaders=").unwrap();
    let (signed, signature) = rest.split_once(", Signature=").unwrap();
    (credential.into(), signed.into(), signature.into())
}

fn sigv4_run(extra: &[(&str, &str)]) -> (MockServer, Output) {
    let usage = MockUsage {
        prompt_tokens: 2_000,
        completion_tokens: 40,
        cached_tokens: 1_500,
    };
    let server = MockServer::start(Script::new(vec![
        Reply::text("Signed and answered.").with_usage(usage).into(),
    ]));
    let home = bedrock_home(&server);
    let mut env = vec![
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        (
            "AWS_SECRET_ACCESS_KEY",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        ),
        ("AWS_REGION", "eu-west-3"),
    ];
    env.extend_from_slice(extra);
    let o = run_with_env(&home, &env, &["-z", "hi", "--usage"]);
    (server, o)
}

#[test]
fn sigv4_signs_the_request_with_the_aws_credentials() {
    let (server, o) = sigv4_run(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Signed and answered.\n");
    assert!(
        stderr(&o).contains("usage: 1 call · 2,000 in (1,500 cached) · 40 out"),
        "metadata usage reaches --usage: {}",
        stderr(&o)
    );

    let req = &server.requests()[0];
    assert_eq!(req.path, PATH);
    let amz_date = req.header("x-amz-date").unwrap();
    assert_eq!(amz_date.len(), 16, "{amz_date}");
    assert!(
        amz_date[..8].bytes().all(|b| b.is_ascii_digit())
            && &amz_date[8..9] == "T"
            && amz_date[9..15].bytes().all(|b| b.is_ascii_digit())
            && amz_date.ends_with('Z'),
        "{amz_date}"
    );
    let auth = req.header("authorization").unwrap();
    let (credential, signed, signature) = sigv4_parts(auth);
    assert_eq!(
        credential,
        format!(
            "AKIDEXAMPLE/{}/eu-west-3/bedrock/aws4_request",
            &amz_date[..8]
        )
    );
    assert_eq!(signed, "host;x-amz-date");
    assert_eq!(signature.len(), 64, "{auth}");
    assert!(
        signature
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{auth}"
    );
    assert_eq!(req.header("x-amz-security-token"), None);

    // The signature covers exactly what arrived: host, date, the (twice-encoded) path, body.
    let expected = hermes_llm::bedrock::sigv4::authorization(
        &hermes_llm::bedrock::sigv4::SigningScope {
            access_key: "AKIDEXAMPLE",
            secret_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            region: "eu-west-3",
            service: "bedrock",
            amz_date,
        },
        &hermes_llm::bedrock::sigv4::CanonicalRequest {
            method: "POST",
            uri: "/model/anthropic.claude-3-5-sonnet-20240620-v1%253A0/converse-stream",
            query: "",
            headers: vec![
                ("host", req.header("host").unwrap().to_string()),
                ("x-amz-date", amz_date.to_string()),
            ],
            payload: req.raw_body.as_bytes(),
        },
    );
    assert_eq!(auth, expected);
}

#[test]
fn sigv4_with_a_session_token_signs_the_token_too() {
    let (server, o) = sigv4_run(&[("AWS_SESSION_TOKEN", "session-token-example")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let req = &server.requests()[0];
    assert_eq!(
        req.header("x-amz-security-token"),
        Some("session-token-example")
    );
    let (_, signed, _) = sigv4_parts(req.header("authorization").unwrap());
    assert_eq!(signed, "host;x-amz-date;x-amz-security-token");
}

#[test]
fn a_bearer_token_wins_over_sigv4_credentials() {
    let server = MockServer::start(Script::new(vec![Turn::text("ok")]));
    let home = bedrock_home(&server);
    let o = run_with_env(
        &home,
        &[
            ("AWS_BEARER_TOKEN_BEDROCK", "test-key"),
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
        ],
        &["-z", "hi"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let req = &server.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer test-key"));
}

#[test]
fn no_credentials_is_a_configuration_error_before_any_request() {
    let server = MockServer::start(Script::new(vec![Turn::text("never")]));
    let home = bedrock_home(&server);
    let o = run_with_env(&home, &[], &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert!(
        stderr(&o).contains("AWS_BEARER_TOKEN_BEDROCK"),
        "{}",
        stderr(&o)
    );
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn throttling_is_retried_then_answered() {
    let server = MockServer::start(Script::new(vec![
        Fault::http(429, "Too many requests, please wait before trying again.").into(),
        Turn::text("After the throttle."),
    ]));
    let home = bedrock_home(&server);
    let o = run_with_env(&home, BEARER, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "After the throttle.\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].raw_body, reqs[1].raw_body, "the same request again");
}

#[test]
fn access_denied_exits_1_naming_the_credential() {
    let server = MockServer::start(Script::new(vec![
        Fault::http(
            403,
            "You don't have access to the model with the specified model ID.",
        )
        .into(),
        Turn::text("never"),
    ]));
    let home = bedrock_home(&server);
    let o = run_with_env(&home, BEARER, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "",
        "no error text printed as if it were the answer"
    );
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("403")
            && err.contains("You don't have access to the model")
            && err.contains("AWS_BEARER_TOKEN_BEDROCK"),
        "{err}"
    );
    assert!(
        !err.contains("test-key"),
        "the key itself is never printed: {err}"
    );
    assert_eq!(server.requests().len(), 1, "auth errors are not retried");
}

/// Regression: a rejected SigV4 signature was reported as "no API key was sent".
#[test]
fn rejected_sigv4_credentials_are_named() {
    let server = MockServer::start(Script::new(vec![
        Fault::http(
            403,
            "The security token included in the request is invalid.",
        )
        .into(),
    ]));
    let home = bedrock_home(&server);
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "not-the-right-secret"),
        ("AWS_REGION", "eu-west-3"),
    ];
    let o = run_with_env(&home, &env, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "the credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (SigV4) were rejected"
        ),
        "{err}"
    );
    assert!(!err.contains("not-the-right-secret"), "{err}");
    let listing = stdout(&run_with_env(&home, &env, &["model"]));
    assert!(
        listing.contains("key from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (SigV4)"),
        "{listing}"
    );
}

#[test]
fn an_answer_cut_mid_stream_is_kept_and_continued() {
    let server = MockServer::start(Script::new(vec![
        // messageStart, "ALPH", "A-1 ", then the connection closes.
        Fault::drop_mid_stream(3, Reply::text("ALPHA-1 ALPHA-2 ALPHA-3").with_chunk_size(4)).into(),
        Turn::text("ALPHA-2 ALPHA-3 done."),
    ]));
    let home = bedrock_home(&server);
    let o = run_with_env(&home, BEARER, &["-z", "count"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "ALPHA-1 ALPHA-2 ALPHA-3 done.\n");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let messages = reqs[1].body["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "assistant");
    assert_eq!(
        messages[n - 2]["content"],
        json!([{"text": "ALPHA-1 "}]),
        "the partial answer is sent back as it arrived"
    );
    assert_eq!(messages[n - 1]["role"], "user");
    assert!(
        text_of(&messages[n - 1]["content"][0]).contains("cut off"),
        "{}",
        messages[n - 1]
    );
}

/// A throttling exception frame in the middle of an answer: the text so far is kept, the call
/// is retried after the backoff, and the model continues from where it was.
#[test]
fn a_throttling_exception_mid_answer_is_retried_and_the_text_kept() {
    let server = MockServer::start(Script::new(vec![
        Fault::error_mid_stream(
            3,
            Reply::text("ALPHA-1 ALPHA-2 ALPHA-3").with_chunk_size(4),
            "throttlingException",
            "Too many tokens, please wait before trying again.",
        )
        .into(),
        Turn::text("ALPHA-2 ALPHA-3 done."),
    ]));
    let home = bedrock_home(&server);
    let o = run_with_env(&home, BEARER, &["-z", "count"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "ALPHA-1 ALPHA-2 ALPHA-3 done.\n");
    let err = stderr(&o);
    assert!(
        err.contains("throttlingException") && err.contains("retrying in"),
        "{err}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let messages = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(
        messages[messages.len() - 2]["content"],
        json!([{"text": "ALPHA-1 "}])
    );
}
