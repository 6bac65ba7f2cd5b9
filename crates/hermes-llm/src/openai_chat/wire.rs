//! Serde types of the Chat Completions wire format: the request body (borrowing our messages)
//! and tolerant decoders for streamed chunks, whole completions and error bodies.

use hermes_protocol::{FinishReason, Image, Message, Role, StreamEvent, ToolSchema, Usage};
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

/// The route-specific choices of one request body.
#[derive(Debug, Clone)]
pub(super) struct Options {
    pub effort: EffortStyle,
    /// The `cache_control` marker to place, when the route caches prompts.
    pub cache: Option<Value>,
    /// Send `reasoning_content` with every assistant turn.
    pub echo_reasoning: bool,
}

/// Breakpoints a request may carry (Anthropic's limit): the system prompt and three messages.
const MAX_BREAKPOINTS: usize = 4;

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Content<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    /// Replayed reasoning, for the providers that require it back (see `policy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
}

/// A message's content: plain text, or parts: the text (carrying a cache breakpoint when
/// one is placed) and the message's images as `image_url` parts.
enum Content<'a> {
    Text(&'a str),
    Parts {
        text: &'a str,
        marker: Option<&'a Value>,
        images: &'a [Image],
    },
}

impl Serialize for Content<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self {
            Content::Text(t) => serializer.serialize_str(t),
            Content::Parts {
                text,
                marker,
                images,
            } => {
                let mut seq = serializer.serialize_seq(None)?;
                if !text.is_empty() || images.is_empty() {
                    let mut part = serde_json::json!({"type": "text", "text": text});
                    if let Some(m) = marker {
                        part["cache_control"] = (*m).clone();
                    }
                    seq.serialize_element(&part)?;
                }
                for image in *images {
                    seq.serialize_element(&serde_json::json!({
                        "type": "image_url",
                        "image_url": {"url": image.as_url()},
                    }))?;
                }
                seq.end()
            }
        }
    }
}

impl<'a> Content<'a> {
    fn of(m: &'a Message) -> Content<'a> {
        if m.images.is_empty() {
            Content::Text(&m.content)
        } else {
            Content::Parts {
                text: &m.content,
                marker: None,
                images: &m.images,
            }
        }
    }

    fn text(&self) -> &'a str {
        match self {
            Content::Text(t) => t,
            Content::Parts { text, .. } => text,
        }
    }

    fn with_marker(&self, marker: &'a Value) -> Content<'a> {
        match self {
            Content::Text(text) => Content::Parts {
                text,
                marker: Some(marker),
                images: &[],
            },
            Content::Parts { text, images, .. } => Content::Parts {
                text,
                marker: Some(marker),
                images,
            },
        }
    }
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
    pub(super) fn new(req: &ChatRequest<'a>, options: &'a Options) -> Self {
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        if !req.system.is_empty() {
            messages.push(WireMessage {
                role: "system",
                content: Content::Text(req.system),
                tool_calls: Vec::new(),
                tool_call_id: None,
                name: None,
                reasoning_content: None,
            });
        }
        messages.extend(
            req.messages
                .iter()
                .map(|m| WireMessage::new(m, options.echo_reasoning)),
        );
        if let Some(marker) = &options.cache {
            place_breakpoints(&mut messages, marker);
        }
        let style = options.effort;
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

/// Anthropic-style caching on the OpenAI envelope: the system prompt and the last messages
/// that can carry a marker (a non-empty text; an assistant turn of pure tool calls cannot)
/// get one on their content part, four at most.
fn place_breakpoints<'a>(messages: &mut [WireMessage<'a>], marker: &'a Value) {
    let mut left = MAX_BREAKPOINTS;
    if let Some(first) = messages.first_mut().filter(|m| m.role == "system") {
        first.content = first.content.with_marker(marker);
        left -= 1;
    }
    for m in messages
        .iter_mut()
        .rev()
        .filter(|m| m.role != "system" && !m.content.text().is_empty())
        .take(left)
    {
        m.content = m.content.with_marker(marker);
    }
}

impl<'a> WireMessage<'a> {
    fn new(m: &'a Message, echo_reasoning: bool) -> Self {
        WireMessage {
            role: m.role.as_str(),
            content: Content::of(m),
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
            // These providers reject an empty string too: a single space stands for "none".
            reasoning_content: (echo_reasoning && m.role == Role::Assistant).then(|| {
                m.reasoning
                    .as_deref()
                    .filter(|r| !r.is_empty())
                    .unwrap_or(" ")
            }),
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
    /// Anthropic-style figures some proxies (OpenRouter, Cline) put at the top level.
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
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
            cache_read_tokens: [
                details.cached_tokens,
                u.cache_read_input_tokens,
                u.prompt_cache_hit_tokens,
            ]
            .into_iter()
            .flatten()
            .find(|&n| n > 0)
            .unwrap_or(0),
            cache_write_tokens: [details.cache_write_tokens, u.cache_creation_input_tokens]
                .into_iter()
                .flatten()
                .find(|&n| n > 0)
                .unwrap_or(0),
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
        let options = Options {
            effort: EffortStyle::TopLevel,
            cache: None,
            echo_reasoning: false,
        };
        let v = serde_json::to_value(RequestBody::new(&req, &options)).unwrap();
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
        assert!(v["messages"][2].get("reasoning_content").is_none());
    }

    fn conversation() -> Vec<Message> {
        vec![
            Message::user("first"),
            Message::assistant_with_tools(
                "",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                }],
            )
            .with_reasoning(Some("I should read it.".into())),
            Message::tool_result("c1", "read_file", "contents"),
            Message::assistant("It says contents."),
            Message::user("thanks"),
        ]
    }

    fn body(messages: &[Message], options: &Options) -> Value {
        let req = ChatRequest {
            model: "m",
            system: "sys",
            messages,
            tools: &[],
            max_tokens: None,
            temperature: None,
            reasoning: None,
        };
        serde_json::to_value(RequestBody::new(&req, options)).unwrap()
    }

    #[test]
    fn cache_breakpoints_go_on_the_system_prompt_and_the_last_three_text_messages() {
        let options = Options {
            effort: EffortStyle::Object,
            cache: Some(serde_json::json!({"type": "ephemeral"})),
            echo_reasoning: false,
        };
        let v = body(&conversation(), &options);
        let marked = |i: usize| {
            v["messages"][i]["content"][0]["cache_control"]
                == serde_json::json!({"type": "ephemeral"})
        };
        assert_eq!(
            v["messages"][0]["content"],
            serde_json::json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
        );
        // 1 user, 2 assistant (tool calls only: cannot carry one), 3 tool, 4 assistant, 5 user.
        assert!(!marked(1) && !marked(2));
        assert!(marked(3) && marked(4) && marked(5));
        assert_eq!(
            v["messages"][2]["content"], "",
            "an empty content stays a string"
        );
        assert_eq!(v["messages"][1]["content"], "first");
    }

    #[test]
    fn images_follow_the_text_and_keep_a_cache_breakpoint_on_it() {
        let options = Options {
            effort: EffortStyle::Object,
            cache: Some(serde_json::json!({"type": "ephemeral"})),
            echo_reasoning: false,
        };
        let messages = vec![Message::user_with_images(
            "what is this?",
            vec![
                Image::Data {
                    media_type: "image/png".into(),
                    data: "AAAA".into(),
                },
                Image::Url {
                    url: "https://example.org/a.jpg".into(),
                },
            ],
        )];
        let v = body(&messages, &options);
        assert_eq!(
            v["messages"][1]["content"],
            serde_json::json!([
                {"type": "text", "text": "what is this?", "cache_control": {"type": "ephemeral"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "image_url", "image_url": {"url": "https://example.org/a.jpg"}},
            ])
        );
        let plain = Options {
            cache: None,
            ..options
        };
        let v = body(&messages, &plain);
        assert_eq!(
            v["messages"][1]["content"][0],
            serde_json::json!({"type": "text", "text": "what is this?"})
        );
    }

    #[test]
    fn reasoning_is_echoed_on_every_assistant_turn_when_required() {
        let options = Options {
            effort: EffortStyle::TopLevel,
            cache: None,
            echo_reasoning: true,
        };
        let v = body(&conversation(), &options);
        assert_eq!(v["messages"][2]["reasoning_content"], "I should read it.");
        assert_eq!(
            v["messages"][4]["reasoning_content"], " ",
            "no reasoning: a space"
        );
        assert!(v["messages"][1].get("reasoning_content").is_none());
        assert!(v["messages"][3].get("reasoning_content").is_none());
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
        let ev = chunk_events(r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"cache_read_input_tokens":6,"cache_creation_input_tokens":3}}"#).unwrap();
        assert_eq!(
            ev,
            vec![StreamEvent::Usage(Usage {
                input_tokens: 10,
                output_tokens: 2,
                cache_read_tokens: 6,
                cache_write_tokens: 3,
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
