//! Serde types of the Chat Completions wire format: the request body (borrowing our messages)
//! and tolerant decoders for streamed chunks, whole completions and error bodies.

use hermes_protocol::{FinishReason, Message, Role, StreamEvent, ToolSchema, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::snippet;
use crate::reasoning::ReasoningEffort;
use crate::{ChatRequest, LlmError};

#[derive(Serialize)]
pub(super) struct RequestBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    /// OpenRouter / Nous: `{"enabled": false}` or `{"enabled": true, "effort": ...}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Value>,
    /// Everyone else (OpenAI, DeepSeek, vLLM, LM Studio, ...): `none` .. `xhigh`.
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    stream: bool,
    stream_options: StreamOptions,
}

/// How a Chat Completions endpoint takes a reasoning effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EffortStyle {
    /// OpenRouter's `reasoning` object (also Nous Portal).
    Object,
    /// OpenAI's top-level `reasoning_effort` string.
    TopLevel,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    r#type: &'static str,
    function: WireToolDef<'a>,
}

#[derive(Serialize)]
struct WireToolDef<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

impl<'a> RequestBody<'a> {
    pub(super) fn new(req: &ChatRequest<'a>, style: EffortStyle) -> Self {
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        if !req.system.is_empty() {
            messages.push(WireMessage {
                role: "system",
                content: req.system,
                tool_calls: Vec::new(),
                tool_call_id: None,
                name: None,
            });
        }
        messages.extend(req.messages.iter().map(WireMessage::from));
        RequestBody {
            model: req.model,
            messages,
            tools: req.tools.iter().map(WireTool::from).collect(),
            max_tokens: req.max_tokens,
            temperature: req.temperature,
            reasoning: match (req.reasoning, style) {
                (Some(ReasoningEffort::Off), EffortStyle::Object) => {
                    Some(serde_json::json!({"enabled": false}))
                }
                (Some(e), EffortStyle::Object) => {
                    Some(serde_json::json!({"enabled": true, "effort": e.openai()}))
                }
                _ => None,
            },
            reasoning_effort: match (req.reasoning, style) {
                (Some(e), EffortStyle::TopLevel) => Some(e.openai()),
                _ => None,
            },
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
        }
    }
}

impl<'a> From<&'a Message> for WireMessage<'a> {
    fn from(m: &'a Message) -> Self {
        WireMessage {
            role: m.role.as_str(),
            content: &m.content,
            tool_calls: m
                .tool_calls
                .iter()
                .map(|c| WireToolCall {
                    id: &c.id,
                    r#type: "function",
                    function: WireFunction {
                        name: &c.name,
                        arguments: &c.arguments,
                    },
                })
                .collect(),
            tool_call_id: m.tool_call_id.as_deref(),
            name: if m.role == Role::Tool {
                m.name.as_deref()
            } else {
                None
            },
        }
    }
}

impl<'a> From<&'a ToolSchema> for WireTool<'a> {
    fn from(t: &'a ToolSchema) -> Self {
        WireTool {
            r#type: "function",
            function: WireToolDef {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        }
    }
}

// ---- responses ----

#[derive(Deserialize, Default)]
#[serde(default)]
struct Chunk {
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Choice {
    /// Streaming chunks carry `delta`, whole completions `message`; same shape.
    delta: Option<Delta>,
    message: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Delta {
    content: Option<Value>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ToolCallDelta {
    index: Option<usize>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct FunctionDelta {
    name: Option<String>,
    /// A string per the spec; a few servers send an object.
    arguments: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek reports cache hits here.
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PromptDetails {
    cached_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CompletionDetails {
    reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Usage {
        let details = u.prompt_tokens_details.unwrap_or_default();
        Usage {
            input_tokens: u.prompt_tokens.unwrap_or(0),
            output_tokens: u.completion_tokens.unwrap_or(0),
            cache_read_tokens: details
                .cached_tokens
                .or(u.prompt_cache_hit_tokens)
                .unwrap_or(0),
            cache_write_tokens: details.cache_write_tokens.unwrap_or(0),
            reasoning_tokens: u
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

/// The events of one streamed chunk (`data:` payload).
pub(super) fn chunk_events(data: &str) -> Result<Vec<StreamEvent>, LlmError> {
    let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
        LlmError::Decode(format!("invalid JSON in stream ({e}): {}", snippet(data)))
    })?;
    chunk_to_events(chunk, false)
}

/// The events equivalent to a whole (non-streamed) completion.
pub(super) fn completion_events(body: &[u8]) -> Result<Vec<StreamEvent>, LlmError> {
    let chunk: Chunk = serde_json::from_slice(body).map_err(|e| {
        LlmError::Decode(format!(
            "invalid JSON completion ({e}): {}",
            snippet(&String::from_utf8_lossy(body))
        ))
    })?;
    if chunk.choices.is_empty() && chunk.error.is_none() {
        return Err(LlmError::Decode("completion without choices".into()));
    }
    let mut events = chunk_to_events(chunk, true)?;
    if !events.iter().any(|e| matches!(e, StreamEvent::Finish(_))) {
        let tools = events
            .iter()
            .any(|e| matches!(e, StreamEvent::ToolCallDelta { .. }));
        events.push(StreamEvent::Finish(if tools {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        }));
    }
    Ok(events)
}

fn chunk_to_events(chunk: Chunk, whole: bool) -> Result<Vec<StreamEvent>, LlmError> {
    if let Some(err) = chunk.error {
        return Err(crate::error::in_stream(&err));
    }
    let mut events = Vec::new();
    let mut finish = None;
    // n = 1: only the first choice matters.
    if let Some(choice) = chunk.choices.into_iter().next() {
        let delta = if whole {
            choice.message
        } else {
            choice.delta.or(choice.message)
        };
        if let Some(d) = delta {
            if let Some(r) = d
                .reasoning_content
                .or(d.reasoning)
                .filter(|r| !r.is_empty())
            {
                events.push(StreamEvent::ReasoningDelta(r));
            }
            if let Some(text) = d
                .content
                .as_ref()
                .and_then(content_text)
                .filter(|t| !t.is_empty())
            {
                events.push(StreamEvent::TextDelta(text));
            }
            for (position, call) in d.tool_calls.unwrap_or_default().into_iter().enumerate() {
                let function = call.function.unwrap_or_default();
                events.push(StreamEvent::ToolCallDelta {
                    index: call.index.unwrap_or(position),
                    id: call.id,
                    name: function.name,
                    arguments: match function.arguments {
                        Some(Value::String(s)) => s,
                        Some(Value::Null) | None => String::new(),
                        Some(other) => other.to_string(),
                    },
                });
            }
        }
        finish = choice.finish_reason.filter(|f| !f.is_empty());
    }
    if let Some(f) = finish {
        events.push(StreamEvent::Finish(FinishReason::parse(&f)));
    }
    if let Some(u) = chunk.usage {
        events.push(StreamEvent::Usage(u.into()));
    }
    Ok(events)
}

/// `content` is a string, or (some servers) a list of `{type: text, text}` parts.
fn content_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    #[test]
    fn request_body_matches_the_wire_format() {
        let messages = vec![
            Message::user("hi"),
            Message::assistant_with_tools(
                "",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "terminal".into(),
                    arguments: "{\"command\":\"ls\"}".into(),
                }],
            ),
            Message::tool_result("c1", "terminal", "{\"output\":\"a\"}"),
        ];
        let tools = vec![ToolSchema {
            name: "terminal".into(),
            description: "Run".into(),
            parameters: serde_json::json!({"type":"object"}),
        }];
        let req = ChatRequest {
            model: "m",
            system: "sys",
            messages: &messages,
            tools: &tools,
            max_tokens: None,
            temperature: None,
            reasoning: None,
        };
        let v = serde_json::to_value(RequestBody::new(&req, EffortStyle::TopLevel)).unwrap();
        assert_eq!(
            v["messages"][0],
            serde_json::json!({"role":"system","content":"sys"})
        );
        assert_eq!(
            v["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"command\":\"ls\"}"
        );
        assert_eq!(v["messages"][3]["tool_call_id"], "c1");
        assert_eq!(v["messages"][3]["name"], "terminal");
        assert_eq!(v["tools"][0]["type"], "function");
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert!(v.get("max_tokens").is_none());
    }

    #[test]
    fn chunks_decode_tolerantly() {
        let ev = chunk_events(r#"{"choices":[{"delta":{"content":null,"reasoning_content":"hm"},"finish_reason":null}],"extra":1}"#).unwrap();
        assert_eq!(ev, vec![StreamEvent::ReasoningDelta("hm".into())]);
        let ev = chunk_events(r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}"#).unwrap();
        assert_eq!(
            ev,
            vec![StreamEvent::Usage(Usage {
                input_tokens: 10,
                output_tokens: 2,
                cache_read_tokens: 4,
                ..Usage::default()
            })]
        );
        let ev = chunk_events(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"t","arguments":null}}]}}]}"#).unwrap();
        assert!(
            matches!(&ev[0], StreamEvent::ToolCallDelta { index: 0, name: Some(n), .. } if n == "t")
        );
        assert!(chunk_events("{not json").is_err());
    }

    #[test]
    fn errors_in_stream_and_bodies_are_readable() {
        let err = chunk_events(
            r#"{"error":{"message":"Provider returned error","metadata":{"raw":"overloaded"}}}"#,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "provider error in stream: Provider returned error (overloaded)"
        );
    }

    #[test]
    fn whole_completion_becomes_events() {
        let ev = completion_events(br#"{"choices":[{"message":{"role":"assistant","content":"hey","tool_calls":[{"id":"x","type":"function","function":{"name":"t","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}]}"#).unwrap();
        assert_eq!(ev[0], StreamEvent::TextDelta("hey".into()));
        assert!(
            matches!(&ev[1], StreamEvent::ToolCallDelta { arguments, .. } if arguments == "{\"a\":1}")
        );
        assert_eq!(ev[2], StreamEvent::Finish(FinishReason::ToolCalls));
    }
}
