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
