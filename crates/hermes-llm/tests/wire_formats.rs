//! Every wire format against the mock server: text, reasoning, parallel tool calls, usage and
//! cache tokens arrive as the same provider-neutral events, and the request carries the
//! conversation in the format's own shape.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::StreamExt;
use hermes_llm::{
    AssistantResponse, ChatRequest, LlmError, ProviderOptions, ProviderSpec, ResponseAccumulator,
    WireFormat,
};
use hermes_protocol::{FinishReason, Message, ToolCall, ToolSchema};
use hermes_testkit::{Fault, MockServer, MockUsage, Reply, Script, Turn};
use serde_json::json;

fn spec(server: &MockServer, wire: WireFormat) -> ProviderSpec {
    let base_url = match wire {
        WireFormat::Anthropic => format!("http://127.0.0.1:{}", server.port()),
        _ => server.base_url(),
    };
    ProviderSpec {
        provider: "test".into(),
        base_url,
        api_key: Some("sk-test".into()),
        model: "claude-sonnet-4-5".into(),
        wire,
        chosen_by: "test".into(),
        key_source: None,
    }
}

fn tools() -> Vec<ToolSchema> {
    vec![ToolSchema {
        name: "terminal".into(),
        description: "Run".into(),
        parameters: json!({"type": "object"}),
    }]
}

async fn call(
    server: &MockServer,
    wire: WireFormat,
    messages: &[Message],
) -> Result<AssistantResponse, LlmError> {
    let options = ProviderOptions {
        cache_ttl: Some("1h".into()),
        ..ProviderOptions::default()
    };
    let provider = hermes_llm::build_provider_with(&spec(server, wire), &options).unwrap();
    let tools = tools();
    let req = ChatRequest {
        model: "claude-sonnet-4-5",
        system: "be brief",
        messages,
        tools: &tools,
        max_tokens: None,
        temperature: None,
        reasoning: None,
    };
    let mut stream = provider.stream(&req).await?;
    let mut acc = ResponseAccumulator::new();
    while let Some(ev) = stream.next().await {
        acc.push(&ev?);
    }
    Ok(acc.finish())
}

const WIRES: [WireFormat; 3] = [
    WireFormat::OpenAiChat,
    WireFormat::Anthropic,
    WireFormat::Responses,
];

#[tokio::test]
async fn text_reasoning_and_usage_in_every_format() {
    for wire in WIRES {
        let usage = MockUsage {
            prompt_tokens: 1000,
            completion_tokens: 20,
            cached_tokens: 600,
        };
        let server = MockServer::start(Script::new(vec![
            Reply::text("Hello from the mock.")
                .with_reasoning("thinking it over")
                .with_usage(usage)
                .into(),
        ]));
        let r = call(&server, wire, &[Message::user("hi")]).await.unwrap();
        assert_eq!(r.text, "Hello from the mock.", "{wire:?}");
        assert_eq!(r.reasoning, "thinking it over", "{wire:?}");
        assert_eq!(r.finish_reason, Some(FinishReason::Stop), "{wire:?}");
        let u = r.usage.unwrap();
        assert_eq!(
            (u.input_tokens, u.output_tokens, u.cache_read_tokens),
            (1000, 20, 600),
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn parallel_tool_calls_in_every_format() {
    for wire in WIRES {
        let server = MockServer::start(Script::new(vec![
            Reply::tool_calls(vec![
                ("terminal", json!({"command": "ls"})),
                ("terminal", json!({"command": "pwd"})),
            ])
            .into(),
        ]));
        let r = call(&server, wire, &[Message::user("go")]).await.unwrap();
        assert_eq!(r.finish_reason, Some(FinishReason::ToolCalls), "{wire:?}");
        let calls: Vec<(&str, serde_json::Value)> = r
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), serde_json::from_str(&c.arguments).unwrap()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("call_0_0", json!({"command": "ls"})),
                ("call_0_1", json!({"command": "pwd"}))
            ],
            "{wire:?}"
        );
    }
}

#[tokio::test]
async fn tool_results_are_sent_in_each_formats_shape() {
    let history = vec![
        Message::user("go"),
        Message::assistant_with_tools(
            "",
            vec![ToolCall {
                id: "c1".into(),
                name: "terminal".into(),
                arguments: "{\"command\":\"ls\"}".into(),
            }],
        ),
        Message::tool_result("c1", "terminal", "a.txt"),
    ];
    for wire in WIRES {
        let server = MockServer::start(Script::new(vec![Turn::text("done")]));
        call(&server, wire, &history).await.unwrap();
        let req = &server.requests()[0];
        let body = &req.body;
        match wire {
            WireFormat::Bedrock => {
                unreachable!("Bedrock is covered by recorded frames in src/bedrock")
            }
            WireFormat::OpenAiChat => {
                assert_eq!(body["messages"][3]["tool_call_id"], "c1");
                assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
            }
            WireFormat::Anthropic => {
                assert_eq!(req.path, "/v1/messages");
                assert_eq!(req.header("x-api-key"), Some("sk-test"));
                assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(body["system"][0]["text"], "be brief");
                assert_eq!(body["system"][0]["cache_control"]["ttl"], "1h");
                assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
                assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "c1");
                assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
            }
            WireFormat::Responses => {
                assert_eq!(req.path, "/v1/responses");
                assert_eq!(body["instructions"], "be brief");
                assert_eq!(body["input"][1]["type"], "function_call");
                assert_eq!(
                    body["input"][2],
                    json!({"type": "function_call_output", "call_id": "c1", "output": "a.txt"})
                );
                assert_eq!(body["tools"][0]["name"], "terminal");
            }
        }
    }
}

#[tokio::test]
async fn errors_and_cut_streams_in_every_format() {
    for wire in WIRES {
        let server = MockServer::start(Script::new(vec![Fault::http(529, "Overloaded").into()]));
        let err = call(&server, wire, &[Message::user("hi")])
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "HTTP 529: Overloaded", "{wire:?}");
        assert_eq!(err.class(), hermes_llm::ErrorClass::Overloaded);

        let server = MockServer::start(Script::new(vec![
            Fault::drop_mid_stream(
                4,
                Reply::text("a long answer that will be cut").with_chunk_size(3),
            )
            .into(),
        ]));
        let err = call(&server, wire, &[Message::user("hi")])
            .await
            .unwrap_err();
        assert!(err.is_stream_cut(), "{wire:?}: {err}");
    }
}

#[tokio::test]
async fn thinking_blocks_come_back_as_reasoning_details() {
    let server = MockServer::start(Script::new(vec![
        Reply::text("ok").with_reasoning("plan").into(),
    ]));
    let r = call(&server, WireFormat::Anthropic, &[Message::user("hi")])
        .await
        .unwrap();
    assert_eq!(
        r.reasoning_details,
        vec![json!({"type": "thinking", "thinking": "plan", "signature": "sig-mock"})]
    );
}

/// The request body a provider sends for `model` with `effort`.
async fn body_with_effort(
    wire: WireFormat,
    provider: &str,
    model: &str,
    effort: Option<hermes_llm::reasoning::ReasoningEffort>,
) -> serde_json::Value {
    let server = MockServer::start(Script::new(vec![Turn::text("ok")]));
    let mut spec = spec(&server, wire);
    spec.provider = provider.into();
    let provider = hermes_llm::build_provider_with(&spec, &ProviderOptions::default()).unwrap();
    let messages = [Message::user("think")];
    let req = ChatRequest {
        model,
        system: "",
        messages: &messages,
        tools: &[],
        max_tokens: None,
        temperature: Some(0.3),
        reasoning: effort,
    };
    let mut stream = provider.stream(&req).await.unwrap();
    while stream.next().await.is_some() {}
    server.requests()[0].body.clone()
}

#[tokio::test]
async fn reasoning_effort_in_each_wire_format() {
    use hermes_llm::reasoning::ReasoningEffort::*;
    let chat =
        |provider, effort| body_with_effort(WireFormat::OpenAiChat, provider, "gpt-5.1", effort);
    let b = chat("openai", Some(High)).await;
    assert_eq!(
        (b["reasoning_effort"].clone(), b.get("reasoning")),
        (json!("high"), None)
    );
    assert_eq!(chat("custom", Some(Max)).await["reasoning_effort"], "xhigh");
    assert_eq!(chat("openai", Some(Off)).await["reasoning_effort"], "none");
    let b = chat("openrouter", Some(Low)).await;
    assert_eq!(b["reasoning"], json!({"enabled": true, "effort": "low"}));
    assert_eq!(b.get("reasoning_effort"), None);
    assert_eq!(
        chat("nous", Some(Off)).await["reasoning"],
        json!({"enabled": false})
    );
    let b = chat("openrouter", None).await;
    assert!(
        b.get("reasoning").is_none() && b.get("reasoning_effort").is_none(),
        "{b}"
    );

    let responses =
        |effort| body_with_effort(WireFormat::Responses, "openai", "gpt-5.1-codex", effort);
    assert_eq!(
        responses(Some(High)).await["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(responses(Some(Minimal)).await["reasoning"]["effort"], "low");
    assert_eq!(
        responses(Some(Off)).await["reasoning"],
        json!({"effort": "none"})
    );
    assert!(responses(None).await.get("reasoning").is_none());

    let anthropic =
        |model, effort| body_with_effort(WireFormat::Anthropic, "anthropic", model, effort);
    // An older Claude: a token budget, room for it, and no temperature.
    let b = anthropic("claude-sonnet-4-5", Some(High)).await;
    assert_eq!(
        b["thinking"],
        json!({"type": "enabled", "budget_tokens": 16000})
    );
    assert!(b["max_tokens"].as_u64().unwrap() >= 20_096, "{b}");
    assert!(b.get("temperature").is_none(), "{b}");
    // Current Claude models: adaptive thinking with an effort level (no xhigh before 4.7).
    let b = anthropic("claude-opus-4-6", Some(XHigh)).await;
    assert_eq!(
        b["thinking"],
        json!({"type": "adaptive", "display": "summarized"})
    );
    assert_eq!(b["output_config"], json!({"effort": "max"}));
    assert_eq!(b["temperature"], json!(0.3));
    let b = anthropic("claude-opus-4-7", Some(XHigh)).await;
    assert_eq!(b["output_config"], json!({"effort": "xhigh"}));
    assert!(
        anthropic("claude-haiku-4-5", Some(High))
            .await
            .get("thinking")
            .is_none()
    );
    assert_eq!(
        anthropic("claude-opus-4-7", Some(Off)).await["thinking"],
        json!({"type": "disabled"})
    );
    assert!(
        anthropic("claude-opus-4-7", None)
            .await
            .get("thinking")
            .is_none()
    );

    #[cfg(feature = "bedrock")]
    {
        let bedrock =
            |model, effort| body_with_effort(WireFormat::Bedrock, "bedrock", model, effort);
        let b = bedrock("us.anthropic.claude-sonnet-4-5-20250929-v1:0", Some(Medium)).await;
        assert_eq!(
            b["additionalModelRequestFields"],
            json!({"thinking": {"type": "enabled", "budget_tokens": 8000}})
        );
        assert!(b["inferenceConfig"].get("temperature").is_none(), "{b}");
        assert!(b["inferenceConfig"]["maxTokens"].as_u64().unwrap() >= 12_096);
        let b = bedrock("amazon.nova-pro-v1:0", Some(High)).await;
        assert!(b.get("additionalModelRequestFields").is_none(), "{b}");
    }
}
