//! Responses API request items and the decoding of its SSE events / whole responses into
//! [`StreamEvent`]s.

use std::collections::HashMap;

use hermes_protocol::{FinishReason, Message, Role, StreamEvent, Usage};
use serde_json::{Value, json};

use crate::reasoning::ReasoningEffort;
use crate::{ChatRequest, LlmError};

/// A user message: plain text, or `input_text` + `input_image` parts when it has images.
fn user_item(m: &Message) -> Value {
    if m.images.is_empty() {
        return json!({"type": "message", "role": "user", "content": m.content});
    }
    let mut parts = vec![json!({"type": "input_text", "text": m.content})];
    parts.extend(
        m.images
            .iter()
            .map(|i| json!({"type": "input_image", "image_url": i.as_url()})),
    );
    json!({"type": "message", "role": "user", "content": parts})
}

pub(super) fn request_body(req: &ChatRequest<'_>) -> Value {
    let mut input = Vec::new();
    for m in req.messages {
        match m.role {
            Role::System | Role::User => {
                input.push(user_item(m));
            }
            Role::Assistant => assistant_items(m, &mut input),
            Role::Tool => input.push(json!({
                "type": "function_call_output",
                "call_id": m.tool_call_id.clone().unwrap_or_default(),
                "output": m.content,
            })),
        }
    }
    let mut body = json!({
        "model": req.model,
        "input": input,
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    });
    if !req.system.is_empty() {
        body["instructions"] = json!(req.system);
    }
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(
            req.tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "name": t.name, "description": t.description,
                                "parameters": t.parameters, "strict": false})
                })
                .collect(),
        );
    }
    if let Some(n) = req.max_tokens {
        body["max_output_tokens"] = json!(n);
    }
    if let Some(t) = req.temperature {
        body["temperature"] = crate::util::decimal(t);
    }
    if let Some(effort) = req.reasoning {
        // The Responses API has no `minimal` on every model; `low` is the nearest level.
        let level = match effort {
            ReasoningEffort::Minimal => "low",
            other => other.openai(),
        };
        body["reasoning"] = if effort == ReasoningEffort::Off {
            json!({"effort": level})
        } else {
            json!({"effort": level, "summary": "auto"})
        };
    }
    body
}

fn assistant_items(m: &Message, input: &mut Vec<Value>) {
    if let Some(items) = m.reasoning_details.as_ref().and_then(Value::as_array) {
        input.extend(items.iter().filter(|i| i["type"] == "reasoning").cloned());
    }
    if !m.content.is_empty() {
        input.push(json!({"type": "message", "role": "assistant",
                          "content": [{"type": "output_text", "text": m.content}]}));
    }
    for call in &m.tool_calls {
        input.push(
            json!({"type": "function_call", "call_id": call.id, "name": call.name,
                          "arguments": call.arguments}),
        );
    }
}

/// The state of one streamed response.
#[derive(Default)]
pub(super) struct Decoder {
    /// Output index of a function call -> our tool-call index.
    calls: HashMap<u64, usize>,
    pub(super) finished: bool,
}

impl Decoder {
    pub(super) fn event(&mut self, data: &str) -> Result<Vec<StreamEvent>, LlmError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::Decode(format!(
                "invalid JSON in stream ({e}): {}",
                crate::error::snippet(data)
            ))
        })?;
        let text = |k: &str| v[k].as_str().filter(|s| !s.is_empty()).map(str::to_string);
        let mut out = Vec::new();
        match v["type"].as_str().unwrap_or("") {
            "response.output_text.delta" | "response.refusal.delta" => {
                out.extend(text("delta").map(StreamEvent::TextDelta));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.extend(text("delta").map(StreamEvent::ReasoningDelta));
            }
            "response.output_item.added" if v["item"]["type"] == "function_call" => {
                let index = self.calls.len();
                self.calls
                    .insert(v["output_index"].as_u64().unwrap_or(0), index);
                out.push(StreamEvent::ToolCallDelta {
                    index,
                    id: v["item"]["call_id"].as_str().map(str::to_string),
                    name: v["item"]["name"].as_str().map(str::to_string),
                    arguments: v["item"]["arguments"].as_str().unwrap_or("").to_string(),
                });
            }
            "response.function_call_arguments.delta" => {
                if let Some(&index) = self.calls.get(&v["output_index"].as_u64().unwrap_or(0)) {
                    out.push(StreamEvent::ToolCallDelta {
                        index,
                        id: None,
                        name: None,
                        arguments: v["delta"].as_str().unwrap_or("").to_string(),
                    });
                }
            }
            "response.output_item.done" if v["item"]["type"] == "reasoning" => {
                out.push(StreamEvent::ReasoningDetail(v["item"].clone()));
            }
            "response.completed" | "response.incomplete" => {
                self.finished = true;
                out.extend(finish(&v["response"], !self.calls.is_empty()));
            }
            "response.failed" | "error" => {
                let e = if v["response"]["error"].is_object() {
                    &v["response"]["error"]
                } else {
                    &v
                };
                return Err(crate::error::in_stream(e));
            }
            _ => {}
        }
        Ok(out)
    }
}

fn finish(response: &Value, had_calls: bool) -> Vec<StreamEvent> {
    let u = &response["usage"];
    let usage = Usage {
        input_tokens: u["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: u["output_tokens"].as_u64().unwrap_or(0),
        cache_read_tokens: u["input_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0),
        cache_write_tokens: 0,
        reasoning_tokens: u["output_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap_or(0),
    };
    let reason = if response["status"] == "incomplete" {
        match response["incomplete_details"]["reason"].as_str() {
            Some("content_filter") => FinishReason::ContentFilter,
            _ => FinishReason::Length,
        }
    } else if had_calls {
        FinishReason::ToolCalls
    } else {
        FinishReason::Stop
    };
    vec![StreamEvent::Usage(usage), StreamEvent::Finish(reason)]
}

/// The events of a whole (non-streamed) response.
pub(super) fn response_events(body: &[u8]) -> Result<Vec<StreamEvent>, LlmError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| LlmError::Decode(format!("invalid JSON response ({e})")))?;
    if v["error"].is_object() {
        return Err(LlmError::InStream(crate::error::error_text(&v["error"])));
    }
    let mut out = Vec::new();
    let mut calls = 0;
    for item in v["output"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("message") => {
                for part in item["content"].as_array().into_iter().flatten() {
                    if let Some(t) = part["text"].as_str().filter(|t| !t.is_empty()) {
                        out.push(StreamEvent::TextDelta(t.to_string()));
                    }
                }
            }
            Some("reasoning") => {
                for s in item["summary"].as_array().into_iter().flatten() {
                    if let Some(t) = s["text"].as_str().filter(|t| !t.is_empty()) {
                        out.push(StreamEvent::ReasoningDelta(t.to_string()));
                    }
                }
                out.push(StreamEvent::ReasoningDetail(item.clone()));
            }
            Some("function_call") => {
                out.push(StreamEvent::ToolCallDelta {
                    index: calls,
                    id: item["call_id"].as_str().map(str::to_string),
                    name: item["name"].as_str().map(str::to_string),
                    arguments: item["arguments"].as_str().unwrap_or("").to_string(),
                });
                calls += 1;
            }
            _ => {}
        }
    }
    out.extend(finish(&v, calls > 0));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    #[test]
    fn conversation_becomes_input_items_paired_by_call_id() {
        let messages = vec![
            Message::user("go"),
            Message::assistant_with_tools("looking", vec![ToolCall { id: "c1".into(), name: "t".into(), arguments: "{}".into() }])
                .with_reasoning_details(vec![json!({"type": "reasoning", "id": "rs_1", "encrypted_content": "xyz", "summary": []})]),
            Message::tool_result("c1", "t", "result"),
        ];
        let req = ChatRequest {
            model: "gpt-5.1-codex",
            system: "sys",
            messages: &messages,
            tools: &[],
            max_tokens: Some(100),
            temperature: None,
            reasoning: None,
        };
        let body = request_body(&req);
        let input = body["input"].as_array().unwrap();
        let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "message",
                "reasoning",
                "message",
                "function_call",
                "function_call_output"
            ]
        );
        assert_eq!(input[3]["call_id"], "c1");
        assert_eq!(input[4]["call_id"], "c1");
        assert_eq!(body["instructions"], "sys");
        assert_eq!(body["store"], false);
        assert_eq!(body["max_output_tokens"], 100);
    }

    #[test]
    fn stream_events_decode() {
        let mut d = Decoder::default();
        let mut all = Vec::new();
        for data in [
            r#"{"type":"response.created","response":{"status":"in_progress"}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","delta":"think"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs","encrypted_content":"e"}}"#,
            r#"{"type":"response.output_text.delta","delta":"Hi"}"#,
            r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","call_id":"c9","name":"terminal","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":2,"delta":"{}"}"#,
            r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":5,"output_tokens":3,"input_tokens_details":{"cached_tokens":2}}}}"#,
        ] {
            all.extend(d.event(data).unwrap());
        }
        assert!(d.finished);
        assert!(all.contains(&StreamEvent::ReasoningDelta("think".into())));
        assert!(all.contains(&StreamEvent::TextDelta("Hi".into())));
        assert!(all.contains(&StreamEvent::ToolCallDelta {
            index: 0,
            id: Some("c9".into()),
            name: Some("terminal".into()),
            arguments: String::new()
        }));
        assert!(all.contains(&StreamEvent::Usage(Usage {
            input_tokens: 5,
            output_tokens: 3,
            cache_read_tokens: 2,
            ..Usage::default()
        })));
        assert_eq!(
            all.last(),
            Some(&StreamEvent::Finish(FinishReason::ToolCalls))
        );
        let err = Decoder::default()
            .event(r#"{"type":"response.failed","response":{"error":{"message":"quota"}}}"#)
            .unwrap_err();
        assert!(err.to_string().contains("quota"));
    }
}
