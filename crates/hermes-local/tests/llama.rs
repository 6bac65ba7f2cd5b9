//! The in-process provider on a real GGUF (the default model, found through
//! `HERMES_TEST_GGUF`, which scripts/test exports after fetching it): the real Agent, real
//! tools, and assertions on what the model was sent and what came back.

#![cfg(feature = "llama")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use hermes_config::ModelSettings;
use hermes_core::{Agent, AgentOptions, EventSink};
use hermes_llm::{ChatRequest, EventStream, LlmError, Provider};
use hermes_local::{LocalProvider, LocalSettings};
use hermes_protocol::{AgentEvent, FinishReason, Message, Role, StreamEvent, ToolSchema};
use hermes_tools::{Registry, ToolContext};
use tokio_util::sync::CancellationToken;

/// The test model; a missing one fails the test (the feature is on, so it must run).
fn model_path() -> PathBuf {
    hermes_testkit::test_gguf()
}

/// Small context and short replies keep the tests quick; greedy sampling keeps them stable;
/// one thread, because tests run side by side and llama.cpp's threads spin while they wait.
fn settings() -> LocalSettings {
    let config = ModelSettings {
        threads: Some(1),
        context_length: Some(2048),
        max_tokens: Some(24),
        temperature: Some(0.0),
        ..ModelSettings::default()
    };
    let mut settings =
        LocalSettings::from_config(&config, Some(&model_path()), Path::new("/nonexistent"));
    // Nothing saved between tests (the CLI tests cover the saved prefixes).
    settings.kv_cache_dir = None;
    settings
}

/// Records every request's messages, then delegates.
struct Recording {
    inner: LocalProvider,
    seen: Mutex<Vec<Vec<Message>>>,
}

#[async_trait::async_trait]
impl Provider for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }
    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError> {
        self.seen.lock().unwrap().push(request.messages.to_vec());
        self.inner.stream(request).await
    }
}

#[derive(Default, Clone)]
struct Events(Arc<Mutex<Vec<AgentEvent>>>);

impl EventSink for Events {
    fn emit(&self, event: AgentEvent) {
        self.0.lock().unwrap().push(event);
    }
}

fn request<'a>(
    messages: &'a [Message],
    tools: &'a [ToolSchema],
    max_tokens: u32,
) -> ChatRequest<'a> {
    ChatRequest {
        model: "qwen2.5-coder-1.5b",
        system: "You are a helpful assistant.",
        messages,
        tools,
        max_tokens: Some(max_tokens),
        temperature: Some(0.0),
        reasoning: None,
    }
}

async fn collect(provider: &LocalProvider, request: &ChatRequest<'_>) -> Vec<StreamEvent> {
    let stream = provider.stream(request).await.unwrap();
    stream.map(|e| e.unwrap()).collect().await
}

#[tokio::test(flavor = "current_thread")]
async fn an_answer_streams_token_by_token_and_reports_usage() {
    // Its own context size, so no other test shares (and changes) this engine's cache.
    let mut s = settings();
    s.context_length = 1536;
    let provider = LocalProvider::new(s).unwrap();
    let messages = [Message::user("What is the capital of France?")];
    let events = collect(&provider, &request(&messages, &[], 16)).await;
    let pieces: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(pieces.len() > 1, "streamed in pieces: {events:?}");
    assert!(!pieces.concat().trim().is_empty(), "{events:?}");
    assert!(
        matches!(
            events.iter().find(|e| matches!(e, StreamEvent::Finish(_))),
            Some(StreamEvent::Finish(
                FinishReason::Stop | FinishReason::Length
            ))
        ),
        "{events:?}"
    );
    let Some(StreamEvent::Usage(usage)) = events.last() else {
        panic!("usage comes last: {events:?}");
    };
    assert!(usage.input_tokens > 5 && usage.output_tokens as usize >= pieces.len());
    assert!(usage.output_tokens <= 16);

    // Same prompt again: the cached prefix is reused, the answer is the same (greedy).
    let again = collect(&provider, &request(&messages, &[], 16)).await;
    let Some(StreamEvent::Usage(second)) = again.last() else {
        panic!("{again:?}");
    };
    assert_eq!(
        second.cache_read_tokens,
        second.input_tokens - 1,
        "{second:?}"
    );
    let text = |evs: &[StreamEvent]| {
        evs.iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.clone()),
                _ => None,
            })
            .collect::<String>()
    };
    assert_eq!(text(&again), text(&events));
}

#[tokio::test(flavor = "current_thread")]
async fn with_tools_the_grammar_yields_a_valid_call_in_the_models_own_format() {
    // The default model's template has a `<tool_call>` section: the native path.
    grammar_constrained_call_runs_and_is_fed_back(None).await;
}

#[tokio::test(flavor = "current_thread")]
async fn with_a_built_in_template_the_generic_json_prompt_still_calls_tools() {
    // A llama.cpp built-in template name: the generic JSON prompt and grammar.
    grammar_constrained_call_runs_and_is_fed_back(Some("chatml")).await;
}

async fn grammar_constrained_call_runs_and_is_fed_back(chat_template: Option<&str>) {
    // `tool_choice: required` makes the grammar demand a call, and the wrap-up call after
    // `max_turns` (without tools) answers in text.
    let mut s = settings();
    s.require_tool_call = true;
    s.chat_template = chat_template.map(str::to_string);
    let provider = Arc::new(Recording {
        inner: LocalProvider::new(s).unwrap(),
        seen: Mutex::new(Vec::new()),
    });
    let (tools, _) = Registry::builtin().select(&["todo".to_string()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::new(
        provider.clone(),
        tools,
        "You are an agent. You act by calling tools.".into(),
        AgentOptions {
            model: "qwen2.5-coder-1.5b".into(),
            max_turns: 1,
            max_tokens: Some(160),
            temperature: Some(0.0),
            ..AgentOptions::default()
        },
        ToolContext::new(dir.path().to_path_buf()),
    );
    let sink = Events::default();
    let result = agent
        .run_turn(
            "Add a todo item: buy milk.",
            Vec::new(),
            &sink,
            CancellationToken::new(),
        )
        .await;
    assert!(!result.failed(), "{result:?}");
    let call = result
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant && m.has_tool_calls())
        .unwrap_or_else(|| panic!("no tool call: {:?}", result.messages));
    assert_eq!(call.tool_calls[0].name, "todo");
    let args: serde_json::Value = serde_json::from_str(&call.tool_calls[0].arguments).unwrap();
    assert!(args.is_object(), "valid JSON arguments: {args}");
    for item in args["todos"].as_array().into_iter().flatten() {
        let status = item["status"].as_str().unwrap();
        assert!(
            ["pending", "in_progress", "completed", "cancelled"].contains(&status),
            "the schema's enum holds: {args}"
        );
    }
    let ran =
        sink.0.lock().unwrap().iter().any(
            |e| matches!(e, AgentEvent::ToolFinished { name, ok: true, .. } if name == "todo"),
        );
    assert!(ran, "the call was executed");

    let seen = provider.seen.lock().unwrap();
    assert!(seen.len() >= 2, "a second model call got the result");
    let fed_back = seen[1]
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("the tool result is in the second request");
    assert_eq!(
        fed_back.tool_call_id.as_deref(),
        Some(call.tool_calls[0].id.as_str())
    );
    assert!(
        !result.final_text.trim().is_empty(),
        "the wrap-up answered: {result:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn dropping_the_stream_stops_generation_promptly() {
    let mut s = settings();
    s.max_tokens = 4000;
    let provider = LocalProvider::new(s).unwrap();
    let messages = [Message::user("Write a very long story about a dragon.")];
    let mut stream = provider
        .stream(&request(&messages, &[], 1500))
        .await
        .unwrap();
    let first = stream.next().await;
    assert!(
        matches!(first, Some(Ok(StreamEvent::TextDelta(_)))),
        "{first:?}"
    );
    drop(stream);
    // The worker notices at the next token and takes the next request; a worker still
    // generating 1500 tokens would take far longer than this generous bound.
    let started = Instant::now();
    let short = [Message::user("Hi")];
    let events = collect(&provider, &request(&short, &[], 2)).await;
    assert!(events.iter().any(|e| matches!(e, StreamEvent::Finish(_))));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_truncated_file_is_a_clear_error_not_a_crash() {
    let full = std::fs::read(model_path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, len) in [("header-only", 4096), ("half", full.len() / 2)] {
        let path = dir.path().join(format!("{name}.gguf"));
        std::fs::write(&path, &full[..len]).unwrap();
        let mut s = settings();
        s.model_path = path.clone();
        let provider = LocalProvider::new(s).unwrap();
        let messages = [Message::user("hi")];
        let err = match provider.stream(&request(&messages, &[], 4)).await {
            Err(e) => e,
            Ok(mut stream) => stream.next().await.unwrap().unwrap_err(),
        };
        let text = err.to_string();
        assert!(text.contains("cannot load the model"), "{name}: {text}");
        assert!(text.contains(&path.display().to_string()), "{name}: {text}");
        assert!(
            !err.class().is_retryable(),
            "{name}: loading again cannot help"
        );
    }
}
