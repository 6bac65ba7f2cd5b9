//! Bedrock Converse request shape and the mapping of its stream events (`messageStart`,
//! `contentBlockStart/Delta/Stop`, `messageStop`, `metadata`, exceptions) to [`StreamEvent`]s.

use std::collections::HashMap;

use hermes_protocol::{FinishReason, Image, Message, Role, StreamEvent, Usage};
use serde_json::{Value, json};

use super::eventstream::Frame;
use crate::reasoning::{ClaudeThinking, ReasoningEffort, claude_thinking};
use crate::{ChatRequest, LlmError, catalogue};

/// A user turn: its inline images as Converse `image` blocks (Bedrock takes bytes only: an
/// image given by URL is named in the text instead), then its text.
fn user_blocks(m: &Message) -> Vec<Value> {
    let mut blocks = Vec::new();
    let mut text = m.content.clone();
    for image in &m.images {
        match image {
            Image::Data { media_type, data } => {
                let format = media_type.strip_prefix("image/").unwrap_or(media_type);
                let format = if format == "jpg" { "jpeg" } else { format };
                blocks.push(json!({"image": {"format": format, "source": {"bytes": data}}}));
            }
            Image::Url { url } => text.push_str(&format!("\n[image: {url}]")),
        }
    }
    blocks.push(json!({"text": non_empty(&text)}));
    blocks
}

pub(super) fn request_body(req: &ChatRequest<'_>) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    for m in req.messages {
        let (role, blocks) = match m.role {
            Role::System | Role::User => ("user", user_blocks(m)),
            Role::Tool => (
                "user",
                vec![json!({"toolResult": {
                    "toolUseId": m.tool_call_id.clone().unwrap_or_default(),
                    "content": [{"text": non_empty(&m.content)}],
                }})],
            ),
            Role::Assistant => ("assistant", assistant_blocks(m)),
        };
        match messages.last_mut() {
            Some(prev) if prev["role"] == role => {
                if let Some(c) = prev["content"].as_array_mut() {
                    c.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    let max_tokens = req
        .max_tokens
        .map_or_else(|| catalogue::max_output(req.model).min(32_000), u64::from);
    let mut body = json!({"messages": messages, "inferenceConfig": {"maxTokens": max_tokens}});
    if !req.system.is_empty() {
        body["system"] = json!([{"text": req.system}]);
    }
    if let Some(t) = req.temperature {
        body["inferenceConfig"]["temperature"] = crate::util::decimal(t);
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"toolSpec": {"name": t.name, "description": t.description,
                                          "inputSchema": {"json": t.parameters}}})
            })
            .collect();
        body["toolConfig"] = json!({"tools": tools});
    }
    // Claude on Bedrock takes extended thinking as a model-specific field, with a token budget
    // (and room for it in maxTokens, and no temperature).
    if let Some(effort) = req.reasoning.filter(|e| *e != ReasoningEffort::Off)
        && req.model.contains("claude")
        && claude_thinking(req.model) != ClaudeThinking::Unsupported
    {
        let budget = effort.budget_tokens();
        body["additionalModelRequestFields"] =
            json!({"thinking": {"type": "enabled", "budget_tokens": budget}});
        let room = u64::from(budget) + 4_096;
        if max_tokens < room {
            body["inferenceConfig"]["maxTokens"] = json!(room);
        }
        if let Some(config) = body["inferenceConfig"].as_object_mut() {
            config.remove("temperature");
        }
    }
    body
}

fn non_empty(s: &str) -> &str {
    if s.is_empty() { "(empty)" } else { s }
}

fn assistant_blocks(m: &Message) -> Vec<Value> {
    let mut blocks = Vec::new();
    if !m.content.trim().is_empty() {
        blocks.push(json!({"text": m.content}));
    }
    for c in &m.tool_calls {
        let input: Value = serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
        blocks.push(json!({"toolUse": {"toolUseId": c.id, "name": c.name, "input": input}}));
    }
    if blocks.is_empty() {
        blocks.push(json!({"text": "(empty)"}));
    }
    blocks
}

/// The state of one streamed Converse response.
#[derive(Default)]
pub(super) struct Decoder {
    /// Content block index -> tool-call index.
    tools: HashMap<u64, usize>,
    pub(super) finished: bool,
    pub(super) got_metadata: bool,
}

impl Decoder {
    pub(super) fn frame(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, LlmError> {
        if frame.header(":message-type") == Some("exception") {
            let kind = frame.header(":exception-type").unwrap_or("exception");
            let v: Value = serde_json::from_slice(&frame.payload).unwrap_or(Value::Null);
            let message = v["message"].as_str().unwrap_or("unknown error");
            return Err(LlmError::InStream(format!("{kind}: {message}")));
        }
        let v: Value = serde_json::from_slice(&frame.payload)
            .map_err(|e| LlmError::Decode(format!("invalid JSON in event stream ({e})")))?;
        let index = v["contentBlockIndex"].as_u64().unwrap_or(0);
        let mut out = Vec::new();
        match frame.header(":event-type").unwrap_or("") {
            "contentBlockStart" => {
                if let Some(tool) = v["start"].get("toolUse") {
                    let i = self.tools.len();
                    self.tools.insert(index, i);
                    out.push(StreamEvent::ToolCallDelta {
                        index: i,
                        id: tool["toolUseId"].as_str().map(str::to_string),
                        name: tool["name"].as_str().map(str::to_string),
                        arguments: String::new(),
                    });
                }
            }
            "contentBlockDelta" => {
                let d = &v["delta"];
                if let Some(t) = d["text"].as_str().filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::TextDelta(t.to_string()));
                }
                if let Some(r) = d["reasoningContent"]["text"]
                    .as_str()
                    .filter(|t| !t.is_empty())
                {
                    out.push(StreamEvent::ReasoningDelta(r.to_string()));
                }
                if let (Some(input), Some(&i)) =
                    (d["toolUse"]["input"].as_str(), self.tools.get(&index))
                {
                    out.push(StreamEvent::ToolCallDelta {
                        index: i,
                        id: None,
                        name: None,
                        arguments: input.to_string(),
                    });
                }
            }
            "messageStop" => {
                self.finished = true;
                out.push(StreamEvent::Finish(FinishReason::parse(
                    v["stopReason"].as_str().unwrap_or("end_turn"),
                )));
            }
            "metadata" => {
                self.got_metadata = true;
                let u = &v["usage"];
                let read = u["cacheReadInputTokens"].as_u64().unwrap_or(0);
                let write = u["cacheWriteInputTokens"].as_u64().unwrap_or(0);
                out.push(StreamEvent::Usage(Usage {
                    input_tokens: u["inputTokens"].as_u64().unwrap_or(0) + read + write,
                    output_tokens: u["outputTokens"].as_u64().unwrap_or(0),
                    cache_read_tokens: read,
                    cache_write_tokens: write,
                    reasoning_tokens: 0,
                }));
            }
            _ => {}
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(event: &str, payload: Value) -> Frame {
        Frame {
            headers: vec![
                (":event-type".into(), event.into()),
                (":message-type".into(), "event".into()),
            ],
            payload: payload.to_string().into_bytes(),
        }
    }

    #[test]
    fn user_images_become_converse_image_blocks_before_the_text() {
        let m = Message::user_with_images(
            "what?",
            vec![
                Image::Data {
                    media_type: "image/jpeg".into(),
                    data: "AAAA".into(),
                },
                Image::Url {
                    url: "https://x.org/a.png".into(),
                },
            ],
        );
        assert_eq!(
            user_blocks(&m),
            vec![
                json!({"image": {"format": "jpeg", "source": {"bytes": "AAAA"}}}),
                json!({"text": "what?\n[image: https://x.org/a.png]"}),
            ]
        );
    }

    #[test]
    fn converse_events_map_to_stream_events() {
        let mut d = Decoder::default();
        let mut all = Vec::new();
        for f in [
            frame("messageStart", json!({"role": "assistant"})),
            frame(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
            ),
            frame(
                "contentBlockStart",
                json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "terminal"}}}),
            ),
            frame(
                "contentBlockDelta",
                json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"command\":"}}}),
            ),
            frame(
                "contentBlockDelta",
                json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"ls\"}"}}}),
            ),
            frame("messageStop", json!({"stopReason": "tool_use"})),
            frame(
                "metadata",
                json!({"usage": {"inputTokens": 10, "outputTokens": 5, "cacheReadInputTokens": 90}}),
            ),
        ] {
            all.extend(d.frame(&f).unwrap());
        }
        assert_eq!(all[0], StreamEvent::TextDelta("Hi".into()));
        assert!(
            matches!(&all[1], StreamEvent::ToolCallDelta { index: 0, id: Some(id), .. } if id == "t1")
        );
        assert_eq!(all[4], StreamEvent::Finish(FinishReason::ToolCalls));
        assert_eq!(
            all[5],
            StreamEvent::Usage(Usage {
                input_tokens: 100,
                output_tokens: 5,
                cache_read_tokens: 90,
                ..Usage::default()
            })
        );
        let exc = Frame {
            headers: vec![
                (":message-type".into(), "exception".into()),
                (":exception-type".into(), "throttlingException".into()),
            ],
            payload: br#"{"message":"Too many requests"}"#.to_vec(),
        };
        assert_eq!(
            d.frame(&exc).unwrap_err().to_string(),
            "provider error in stream: throttlingException: Too many requests"
        );
    }

    #[test]
    fn tool_results_ride_in_user_turns() {
        let messages = vec![
            Message::user("go"),
            Message::assistant_with_tools(
                "",
                vec![hermes_protocol::ToolCall {
                    id: "t".into(),
                    name: "x".into(),
                    arguments: "{}".into(),
                }],
            ),
            Message::tool_result("t", "x", "done"),
        ];
        let req = ChatRequest {
            model: "anthropic.claude-sonnet-4-5",
            system: "s",
            messages: &messages,
            tools: &[],
            max_tokens: None,
            temperature: None,
            reasoning: None,
        };
        let b = request_body(&req);
        assert_eq!(
            b["messages"][2]["content"][0]["toolResult"]["toolUseId"],
            "t"
        );
        assert_eq!(b["system"][0]["text"], "s");
        assert_eq!(b["inferenceConfig"]["maxTokens"], 32000);
    }
}
