//! Anthropic Messages request and response shapes: converting our conversation to content
//! blocks, and decoding SSE events / whole messages into [`StreamEvent`]s.

use std::collections::HashMap;

use hermes_protocol::{FinishReason, Image, Message, Role, StreamEvent, Usage};
use serde_json::{Value, json};

use crate::reasoning::{ClaudeThinking, ReasoningEffort, claude_thinking};
use crate::{ChatRequest, LlmError, catalogue};

/// How many trailing messages get a cache breakpoint (plus the system prompt: Anthropic's
/// maximum of four).
const CACHED_TAIL: usize = 3;

pub(super) fn request_body(req: &ChatRequest<'_>, cache_ttl: Option<&str>) -> Value {
    let cache = match cache_ttl {
        Some("1h") => json!({"type": "ephemeral", "ttl": "1h"}),
        _ => json!({"type": "ephemeral"}),
    };
    let mut messages = convert_messages(req.messages);
    let n = messages.len();
    for m in messages.iter_mut().skip(n.saturating_sub(CACHED_TAIL)) {
        if let Some(last) = m["content"].as_array_mut().and_then(|c| c.last_mut()) {
            last["cache_control"] = cache.clone();
        }
    }
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.max_tokens.map_or_else(|| catalogue::max_output(req.model), u64::from),
        "messages": messages,
        "stream": true,
    });
    if !req.system.is_empty() {
        body["system"] = json!([{"type": "text", "text": req.system, "cache_control": cache}]);
    }
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(
            req.tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect(),
        );
    }
    if let Some(t) = req.temperature {
        body["temperature"] = crate::util::decimal(t);
    }
    if let Some(effort) = req.reasoning {
        add_thinking(&mut body, req.model, effort);
    }
    body
}

/// Extended thinking for a reasoning effort: an adaptive effort level on current Claude models,
/// a token budget on older ones (which also need room for it in `max_tokens` and no
/// temperature other than 1); `Off` disables thinking.
fn add_thinking(body: &mut Value, model: &str, effort: ReasoningEffort) {
    if effort == ReasoningEffort::Off {
        body["thinking"] = json!({"type": "disabled"});
        return;
    }
    match claude_thinking(model) {
        ClaudeThinking::Unsupported => {}
        ClaudeThinking::Adaptive { xhigh } => {
            let level = match effort {
                ReasoningEffort::Minimal => "low",
                ReasoningEffort::XHigh if !xhigh => "max",
                other => other.as_str(),
            };
            body["thinking"] = json!({"type": "adaptive", "display": "summarized"});
            body["output_config"] = json!({"effort": level});
        }
        ClaudeThinking::Budget => {
            let budget = effort.budget_tokens();
            body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
            let room = u64::from(budget) + 4_096;
            if body["max_tokens"].as_u64().is_none_or(|m| m < room) {
                body["max_tokens"] = json!(room);
            }
            if let Some(map) = body.as_object_mut() {
                map.remove("temperature");
            }
        }
    }
}

/// Our messages as Anthropic turns: tool results ride in user turns, consecutive same-role
/// turns are merged, and no content block is empty.
fn convert_messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in messages {
        let (role, blocks) = match m.role {
            Role::System | Role::User => ("user", user_blocks(m)),
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": if m.content.is_empty() { "(empty)" } else { &m.content },
                })],
            ),
            Role::Assistant => ("assistant", assistant_blocks(m)),
        };
        match out.last_mut() {
            Some(prev) if prev["role"] == role => {
                if let Some(content) = prev["content"].as_array_mut() {
                    // Tool results must come first in a user turn.
                    if m.role == Role::Tool {
                        let at = content
                            .iter()
                            .take_while(|b| b["type"] == "tool_result")
                            .count();
                        for (i, b) in blocks.into_iter().enumerate() {
                            content.insert(at + i, b);
                        }
                    } else {
                        content.extend(blocks);
                    }
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    out
}

/// A user turn: its images first (Anthropic's advice for vision prompts), then its text.
fn user_blocks(m: &Message) -> Vec<Value> {
    let mut blocks: Vec<Value> = m
        .images
        .iter()
        .map(|image| match image {
            Image::Url { url } => json!({"type": "image", "source": {"type": "url", "url": url}}),
            Image::Data { media_type, data } => json!({
                "type": "image",
                "source": {"type": "base64", "media_type": media_type, "data": data},
            }),
        })
        .collect();
    if blocks.is_empty() || !m.content.is_empty() {
        blocks.push(text_block(&m.content));
    }
    blocks
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": if text.is_empty() { "(empty)" } else { text }})
}

fn assistant_blocks(m: &Message) -> Vec<Value> {
    let mut blocks: Vec<Value> = m
        .reasoning_details
        .as_ref()
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|b| matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if !m.content.trim().is_empty() {
        blocks.push(json!({"type": "text", "text": m.content}));
    }
    for call in &m.tool_calls {
        let input: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    if blocks.is_empty() {
        blocks.push(text_block(""));
    }
    blocks
}

/// What a content block being streamed is.
enum Block {
    Text,
    Thinking { text: String, signature: String },
    Redacted(Value),
    Tool(usize),
}

/// The state of one streamed message.
#[derive(Default)]
pub(super) struct Decoder {
    blocks: HashMap<u64, Block>,
    tools: usize,
    usage: Usage,
    pub(super) finished: bool,
    pub(super) stopped: bool,
}

impl Decoder {
    pub(super) fn event(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::Decode(format!(
                "invalid JSON in stream ({e}): {}",
                crate::error::snippet(data)
            ))
        })?;
        let index = v["index"].as_u64().unwrap_or(0);
        let mut out = Vec::new();
        match v["type"].as_str().unwrap_or("") {
            "message_start" => self.add_usage(&v["message"]["usage"]),
            "content_block_start" => {
                let block = &v["content_block"];
                let kind = match block["type"].as_str() {
                    Some("tool_use") => {
                        let i = self.tools;
                        self.tools += 1;
                        out.push(StreamEvent::ToolCallDelta {
                            index: i,
                            id: block["id"].as_str().map(str::to_string),
                            name: block["name"].as_str().map(str::to_string),
                            arguments: String::new(),
                        });
                        Block::Tool(i)
                    }
                    Some("thinking") => Block::Thinking {
                        text: String::new(),
                        signature: String::new(),
                    },
                    Some("redacted_thinking") => Block::Redacted(block.clone()),
                    _ => Block::Text,
                };
                self.blocks.insert(index, kind);
            }
            "content_block_delta" => {
                let d = &v["delta"];
                match (d["type"].as_str(), self.blocks.get_mut(&index)) {
                    (Some("text_delta"), _) => {
                        push_text(&mut out, d["text"].as_str(), StreamEvent::TextDelta)
                    }
                    (Some("thinking_delta"), Some(Block::Thinking { text, .. })) => {
                        if let Some(t) = d["thinking"].as_str() {
                            text.push_str(t);
                        }
                        push_text(
                            &mut out,
                            d["thinking"].as_str(),
                            StreamEvent::ReasoningDelta,
                        );
                    }
                    (Some("signature_delta"), Some(Block::Thinking { signature, .. })) => {
                        signature.push_str(d["signature"].as_str().unwrap_or(""));
                    }
                    (Some("input_json_delta"), Some(Block::Tool(i))) => {
                        out.push(StreamEvent::ToolCallDelta {
                            index: *i,
                            id: None,
                            name: None,
                            arguments: d["partial_json"].as_str().unwrap_or("").to_string(),
                        })
                    }
                    _ => {}
                }
            }
            "content_block_stop" => match self.blocks.remove(&index) {
                Some(Block::Thinking { text, signature }) => {
                    out.push(StreamEvent::ReasoningDetail(
                        json!({"type": "thinking", "thinking": text, "signature": signature}),
                    ))
                }
                Some(Block::Redacted(block)) => out.push(StreamEvent::ReasoningDetail(block)),
                _ => {}
            },
            "message_delta" => {
                self.add_usage(&v["usage"]);
                if let Some(reason) = v["delta"]["stop_reason"].as_str() {
                    self.finished = true;
                    out.push(StreamEvent::Usage(self.usage));
                    out.push(StreamEvent::Finish(FinishReason::parse(reason)));
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let e = &v["error"];
                return Err(LlmError::InStream(format!(
                    "{}: {}",
                    e["type"].as_str().unwrap_or("error"),
                    e["message"].as_str().unwrap_or("unknown error")
                )));
            }
            _ => {}
        }
        Ok(out)
    }

    /// Anthropic counts cached prompt tokens apart from `input_tokens`; ours includes them.
    fn add_usage(&mut self, u: &Value) {
        let get = |k: &str| u[k].as_u64();
        let read = get("cache_read_input_tokens");
        let write = get("cache_creation_input_tokens");
        if let Some(input) = get("input_tokens") {
            self.usage.input_tokens = input + read.unwrap_or(0) + write.unwrap_or(0);
        }
        if let Some(r) = read {
            self.usage.cache_read_tokens = r;
        }
        if let Some(w) = write {
            self.usage.cache_write_tokens = w;
        }
        if let Some(o) = get("output_tokens") {
            self.usage.output_tokens = o;
        }
    }
}

fn push_text(out: &mut Vec<StreamEvent>, text: Option<&str>, make: fn(String) -> StreamEvent) {
    if let Some(t) = text.filter(|t| !t.is_empty()) {
        out.push(make(t.to_string()));
    }
}

/// The events of a whole (non-streamed) message.
pub(super) fn message_events(body: &[u8]) -> Result<Vec<StreamEvent>, LlmError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| LlmError::Decode(format!("invalid JSON message ({e})")))?;
    if v["type"] == "error" {
        return Err(LlmError::InStream(crate::error::error_text(&v["error"])));
    }
    let mut d = Decoder::default();
    d.add_usage(&v["usage"]);
    let mut out = Vec::new();
    for block in v["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => push_text(&mut out, block["text"].as_str(), StreamEvent::TextDelta),
            Some("thinking") => {
                push_text(
                    &mut out,
                    block["thinking"].as_str(),
                    StreamEvent::ReasoningDelta,
                );
                out.push(StreamEvent::ReasoningDetail(block.clone()));
            }
            Some("redacted_thinking") => out.push(StreamEvent::ReasoningDetail(block.clone())),
            Some("tool_use") => {
                out.push(StreamEvent::ToolCallDelta {
                    index: d.tools,
                    id: block["id"].as_str().map(str::to_string),
                    name: block["name"].as_str().map(str::to_string),
                    arguments: block["input"].to_string(),
                });
                d.tools += 1;
            }
            _ => {}
        }
    }
    out.push(StreamEvent::Usage(d.usage));
    out.push(StreamEvent::Finish(FinishReason::parse(
        v["stop_reason"].as_str().unwrap_or("end_turn"),
    )));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::{ToolCall, ToolSchema};

    fn req<'a>(messages: &'a [Message], tools: &'a [ToolSchema]) -> ChatRequest<'a> {
        ChatRequest {
            model: "claude-sonnet-4-5",
            system: "sys",
            messages,
            tools,
            max_tokens: None,
            temperature: None,
            reasoning: None,
        }
    }

    #[test]
    fn conversation_becomes_blocks_with_results_in_user_turns() {
        let messages = vec![
            Message::user("go"),
            Message::assistant_with_tools(
                "",
                vec![
                    ToolCall {
                        id: "t1".into(),
                        name: "terminal".into(),
                        arguments: "{\"command\":\"ls\"}".into(),
                    },
                    ToolCall {
                        id: "t2".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\":\"a\"}".into(),
                    },
                ],
            )
            .with_reasoning_details(vec![
                json!({"type": "thinking", "thinking": "hm", "signature": "s"}),
            ]),
            Message::tool_result("t1", "terminal", "out"),
            Message::tool_result("t2", "read_file", ""),
            Message::user("[System: note]"),
        ];
        let body = request_body(&req(&messages, &[]), Some("1h"));
        let m = body["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[1]["content"][0]["type"], "thinking");
        assert_eq!(m[1]["content"][0]["signature"], "s");
        assert_eq!(m[1]["content"][1]["input"], json!({"command": "ls"}));
        let user = m[2]["content"].as_array().unwrap();
        assert_eq!(user.len(), 3);
        assert_eq!(user[0]["tool_use_id"], "t1");
        assert_eq!(user[1]["content"], "(empty)");
        assert_eq!(user[2]["text"], "[System: note]");
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        assert_eq!(body["max_tokens"], 64000);
        let marked = m
            .iter()
            .filter(|msg| {
                msg["content"]
                    .as_array()
                    .unwrap()
                    .last()
                    .unwrap()
                    .get("cache_control")
                    .is_some()
            })
            .count();
        assert_eq!(marked, 3, "breakpoints on the last three messages");
    }

    #[test]
    fn stream_events_decode_text_thinking_tools_and_usage() {
        let mut d = Decoder::default();
        let mut all = Vec::new();
        for data in [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"plan"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"tu","name":"terminal","input":{}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            all.extend(d.event(data).unwrap());
        }
        assert!(d.finished && d.stopped);
        assert!(all.contains(&StreamEvent::ReasoningDelta("plan".into())));
        assert!(all.contains(&StreamEvent::ReasoningDetail(
            json!({"type":"thinking","thinking":"plan","signature":"abc"})
        )));
        assert!(all.contains(&StreamEvent::TextDelta("Hi".into())));
        assert!(all.contains(&StreamEvent::ToolCallDelta {
            index: 0,
            id: None,
            name: None,
            arguments: "{\"a\":1}".into()
        }));
        assert!(all.contains(&StreamEvent::Usage(Usage {
            input_tokens: 100,
            output_tokens: 7,
            cache_read_tokens: 90,
            ..Usage::default()
        })));
        assert_eq!(
            all.last(),
            Some(&StreamEvent::Finish(FinishReason::ToolCalls))
        );
        let err = Decoder::default()
            .event(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "provider error in stream: overloaded_error: Overloaded"
        );
    }
}
