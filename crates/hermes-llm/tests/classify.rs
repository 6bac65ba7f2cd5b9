//! The error classifier on real provider error bodies (as the providers send them), through the
//! same path a failed HTTP response takes: status + body -> message -> class.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{one_message, plain_request, provider_at};

use futures_util::StreamExt;
use hermes_llm::{ErrorClass, WireFormat};
use hermes_protocol::StreamEvent;
use hermes_testkit::{Fault, MockServer, Reply, Script};

use ErrorClass::*;

const CASES: &[(&str, u16, &str, ErrorClass)] = &[
    (
        "openai auth",
        401,
        r#"{"error":{"message":"Incorrect API key provided: sk-proj-****abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
        Auth,
    ),
    (
        "openai rate",
        429,
        r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#,
        RateLimit,
    ),
    (
        "openai quota",
        429,
        r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
        Billing,
    ),
    (
        "openai context",
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ContextOverflow,
    ),
    (
        "openai model",
        404,
        r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
        ModelNotFound,
    ),
    (
        "openai policy",
        400,
        r#"{"error":{"message":"Your request was rejected as a result of our safety system.","type":"invalid_request_error","code":"content_policy_violation"}}"#,
        ContentPolicy,
    ),
    (
        "openai 500",
        500,
        r#"{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error"}}"#,
        ServerError,
    ),
    (
        "openai overloaded",
        503,
        r#"{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}"#,
        Overloaded,
    ),
    (
        "openai bad param",
        400,
        r#"{"error":{"message":"Invalid value for 'tool_choice': 'maybe'.","type":"invalid_request_error","param":"tool_choice","code":null}}"#,
        FormatError,
    ),
    (
        "anthropic auth",
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        Auth,
    ),
    (
        "anthropic overloaded",
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        Overloaded,
    ),
    (
        "anthropic too long",
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215000 tokens > 200000 maximum"}}"#,
        ContextOverflow,
    ),
    (
        "anthropic credit",
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}"#,
        Billing,
    ),
    (
        "anthropic size",
        413,
        r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#,
        PayloadTooLarge,
    ),
    (
        "anthropic rate",
        429,
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50 requests per minute."}}"#,
        RateLimit,
    ),
    (
        "anthropic model",
        404,
        r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-9-opus"}}"#,
        ModelNotFound,
    ),
    (
        "openrouter credits",
        402,
        r#"{"error":{"message":"This request requires more credits, or fewer max_tokens. You requested up to 64000 tokens, but can only afford 1000. To increase, visit https://openrouter.ai/settings/credits and upgrade to a paid account","code":402}}"#,
        Billing,
    ),
    (
        "openrouter upstream context",
        400,
        r#"{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 250000 tokens > 200000 maximum\"}}","provider_name":"Anthropic"}}}"#,
        ContextOverflow,
    ),
    (
        "openrouter upstream rate",
        429,
        r#"{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"google/gemini-2.5-pro is temporarily rate-limited upstream. Please retry shortly.","provider_name":"Google"}}}"#,
        RateLimit,
    ),
    (
        "openrouter no endpoints",
        404,
        r#"{"error":{"message":"No endpoints found for openai/gpt-9.","code":404}}"#,
        ModelNotFound,
    ),
    (
        "openrouter auth",
        401,
        r#"{"error":{"message":"No auth credentials found","code":401}}"#,
        Auth,
    ),
    (
        "gemini key",
        400,
        r#"[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}]"#,
        Auth,
    ),
    (
        "gemini quota",
        429,
        r#"{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}"#,
        RateLimit,
    ),
    (
        "gemini context",
        400,
        r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
        ContextOverflow,
    ),
    (
        "ollama model",
        404,
        r#"{"error":"model \"llama9\" not found, try pulling it first"}"#,
        ModelNotFound,
    ),
    (
        "ollama crash",
        500,
        r#"{"error":"llama runner process has terminated: signal: killed"}"#,
        ServerError,
    ),
    (
        "deepseek balance",
        402,
        r#"{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}"#,
        Billing,
    ),
    (
        "vllm context",
        400,
        r#"{"object":"error","message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (39000 in the messages, 1000 in the completion).","type":"BadRequestError","param":null,"code":400}"#,
        ContextOverflow,
    ),
    (
        "html gateway",
        502,
        "<html><body><h1>502 Bad Gateway</h1></body></html>",
        ServerError,
    ),
    ("gateway timeout", 504, "", Timeout),
    // Regression: "too many tokens" was read as a context overflow.
    (
        "bedrock throttling",
        429,
        r#"{"message":"Too many tokens, please wait before trying again."}"#,
        RateLimit,
    ),
    (
        "bedrock context",
        400,
        r#"{"message":"Input is too long for requested model."}"#,
        ContextOverflow,
    ),
];

#[tokio::test]
async fn real_provider_error_bodies_classify() {
    let mut failures = Vec::new();
    for (name, status, body, expected) in CASES {
        let server = MockServer::start(Script::new(vec![
            Fault::HttpRaw {
                status: *status,
                headers: vec![],
                body: body.to_string(),
            }
            .into(),
        ]));
        let provider = provider_at(&server, WireFormat::OpenAiChat);
        let messages = one_message();
        let req = plain_request(&messages);
        let err = match provider.stream(&req).await {
            Ok(mut s) => s.next().await.unwrap().unwrap_err(),
            Err(e) => e,
        };
        if err.class() != *expected {
            failures.push(format!("{name}: {:?} != {expected:?} ({err})", err.class()));
        }
        assert!(
            !err.to_string().contains('{') || *name == "openrouter upstream context",
            "{name}: message should be readable: {err}"
        );
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Errors a provider reports inside a 200 stream, in each wire format's own shape, after some
/// text has arrived: the text is delivered, then the error, classified by the kind the provider
/// gave it.
#[tokio::test]
async fn errors_inside_a_stream_classify_in_every_wire_format() {
    let mut cases: Vec<(WireFormat, &str, &str, ErrorClass)> = vec![
        (
            WireFormat::OpenAiChat,
            "rate_limit_exceeded",
            "Rate limit reached for requests",
            RateLimit,
        ),
        (
            WireFormat::OpenAiChat,
            "server_error",
            "The server had an error while processing your request. Sorry about that!",
            ServerError,
        ),
        (
            WireFormat::OpenAiChat,
            "context_length_exceeded",
            "This model's maximum context length is 128000 tokens.",
            ContextOverflow,
        ),
        (
            WireFormat::Anthropic,
            "overloaded_error",
            "Overloaded",
            Overloaded,
        ),
        (
            WireFormat::Anthropic,
            "api_error",
            "Internal server error",
            ServerError,
        ),
        (
            WireFormat::Responses,
            "rate_limit_exceeded",
            "Rate limit reached for gpt-5.1",
            RateLimit,
        ),
        (
            WireFormat::Responses,
            "server_error",
            "An error occurred while processing your request.",
            ServerError,
        ),
    ];
    if cfg!(feature = "bedrock") {
        cases.extend([
            (
                WireFormat::Bedrock,
                "throttlingException",
                "Please wait before trying again.",
                RateLimit,
            ),
            (
                WireFormat::Bedrock,
                "modelStreamErrorException",
                "The model stream was interrupted.",
                ServerError,
            ),
            (
                WireFormat::Bedrock,
                "serviceUnavailableException",
                "The service is unavailable. Try again later.",
                Overloaded,
            ),
            (
                WireFormat::Bedrock,
                "modelTimeoutException",
                "The model took too long.",
                Timeout,
            ),
            (
                WireFormat::Bedrock,
                "validationException",
                "Input is too long for requested model.",
                ContextOverflow,
            ),
        ]);
    }
    let mut failures = Vec::new();
    for (wire, kind, message, expected) in cases {
        let server = MockServer::start(Script::new(vec![
            Fault::error_mid_stream(
                5,
                Reply::text("partial answer that keeps going").with_chunk_size(4),
                kind,
                message,
            )
            .into(),
        ]));
        let provider = provider_at(&server, wire);
        let messages = one_message();
        let req = plain_request(&messages);
        let mut stream = provider.stream(&req).await.unwrap();
        let mut text = String::new();
        let err = loop {
            match stream.next().await {
                Some(Ok(StreamEvent::TextDelta(t))) => text.push_str(&t),
                Some(Ok(_)) => {}
                Some(Err(e)) => break Some(e),
                None => break None,
            }
        };
        let Some(err) = err else {
            failures.push(format!(
                "{wire:?} {kind}: the stream ended without the error"
            ));
            continue;
        };
        if text.is_empty() {
            failures.push(format!("{wire:?} {kind}: no text before the error"));
        }
        if err.class() != expected || !err.to_string().contains(message) {
            failures.push(format!(
                "{wire:?} {kind}: {:?} != {expected:?} ({err})",
                err.class()
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
