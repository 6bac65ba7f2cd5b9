//! Sampling answered by a `hermes_llm::Provider` (feature `llm`): [`ProviderSampler`] turns
//! a [`SamplingRequest`] into a chat request for the provider (the policy's or the server's
//! model, else the session's), streams it and folds the answer back, tool calls included.
//! The runtime hands one to [`crate::HubOptions::sampling`].

use std::sync::Arc;

use futures_util::StreamExt;
use hermes_llm::accumulate::ResponseAccumulator;
use hermes_llm::{ChatRequest, Provider};
use hermes_protocol::{FinishReason, Message, ToolCall, ToolSchema};

use crate::sampling::{
    SampledToolCall, SamplingBlock, SamplingError, SamplingHandler, SamplingReply, SamplingRequest,
    SamplingRole, StopReason,
};

/// The most characters of one sampled answer kept (a runaway model stops being read).
const MAX_ANSWER: usize = 1 << 20;

pub struct ProviderSampler {
    provider: Arc<dyn Provider>,
    /// The model used when neither the policy nor the server names one.
    default_model: String,
}

impl ProviderSampler {
    pub fn new(provider: Arc<dyn Provider>, default_model: impl Into<String>) -> ProviderSampler {
        ProviderSampler {
            provider,
            default_model: default_model.into(),
        }
    }
}

/// The request's messages as the neutral conversation: tool uses become assistant tool
/// calls, tool results tool messages, media a placeholder a text model can read.
fn conversation(request: &SamplingRequest) -> Vec<Message> {
    let mut out = Vec::new();
    let mut names = std::collections::HashMap::new();
    for m in &request.messages {
        let mut text = Vec::new();
        let mut calls = Vec::new();
        for block in &m.content {
            match block {
                SamplingBlock::Text(t) if !t.is_empty() => text.push(t.clone()),
                SamplingBlock::Text(_) => {}
                SamplingBlock::Media { kind, mime_type } => {
                    text.push(format!("[{kind}: {mime_type}]"))
                }
                SamplingBlock::ToolUse { id, name, input } => {
                    names.insert(id.clone(), name.clone());
                    calls.push(ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: input.to_string(),
                    });
                }
                SamplingBlock::ToolResult {
                    tool_use_id,
                    text: result,
                } => {
                    let name = names.get(tool_use_id).cloned().unwrap_or_default();
                    out.push(Message::tool_result(
                        tool_use_id.clone(),
                        name,
                        result.clone(),
                    ));
                }
            }
        }
        let joined = text.join("\n");
        match (m.role, calls.is_empty()) {
            (SamplingRole::Assistant, false) => {
                out.push(Message::assistant_with_tools(joined, calls))
            }
            (SamplingRole::Assistant, true) if !joined.is_empty() => {
                out.push(Message::assistant(joined))
            }
            (SamplingRole::User, _) if !joined.is_empty() => out.push(Message::user(joined)),
            _ => {}
        }
    }
    out
}

#[async_trait::async_trait]
impl SamplingHandler for ProviderSampler {
    async fn sample(&self, request: SamplingRequest) -> Result<SamplingReply, SamplingError> {
        let model = request
            .model
            .clone()
            .unwrap_or_else(|| self.default_model.clone());
        let messages = conversation(&request);
        let tools: Vec<ToolSchema> = request
            .tools
            .iter()
            .map(|t| ToolSchema {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: t.input_schema.clone(),
            })
            .collect();
        let chat = ChatRequest {
            model: &model,
            system: request.system_prompt.as_deref().unwrap_or_default(),
            messages: &messages,
            tools: &tools,
            max_tokens: Some(request.max_tokens),
            temperature: request.temperature,
            reasoning: None,
        };
        let fail = |e: hermes_llm::LlmError| SamplingError(format!("the model call failed: {e}"));
        let mut stream = self.provider.stream(&chat).await.map_err(fail)?;
        let mut acc = ResponseAccumulator::new();
        while let Some(event) = stream.next().await {
            acc.push(&event.map_err(fail)?);
            if acc.text().len() > MAX_ANSWER {
                break;
            }
        }
        let response = acc.finish();
        let stop_reason = match response.finish_reason {
            Some(FinishReason::Length) => StopReason::MaxTokens,
            Some(FinishReason::ToolCalls) => StopReason::ToolUse,
            _ if !response.tool_calls.is_empty() => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        };
        let tool_calls = response
            .tool_calls
            .into_iter()
            .map(|c| SampledToolCall {
                input: serde_json::from_str(&c.arguments)
                    .unwrap_or_else(|_| serde_json::json!({"_raw": c.arguments})),
                id: c.id,
                name: c.name,
            })
            .collect();
        Ok(SamplingReply {
            model,
            text: response.text,
            tool_calls,
            stop_reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampling::SamplingMessage;
    use serde_json::json;

    #[test]
    fn sampling_messages_become_a_conversation() {
        let r = SamplingRequest {
            server: "s".into(),
            model: None,
            system_prompt: None,
            messages: vec![
                SamplingMessage {
                    role: SamplingRole::User,
                    content: vec![
                        SamplingBlock::Text("look".into()),
                        SamplingBlock::Media {
                            kind: "image".into(),
                            mime_type: "image/png".into(),
                        },
                    ],
                },
                SamplingMessage {
                    role: SamplingRole::Assistant,
                    content: vec![SamplingBlock::ToolUse {
                        id: "c".into(),
                        name: "find".into(),
                        input: json!({"q": 1}),
                    }],
                },
                SamplingMessage {
                    role: SamplingRole::User,
                    content: vec![SamplingBlock::ToolResult {
                        tool_use_id: "c".into(),
                        text: "found".into(),
                    }],
                },
            ],
            max_tokens: 10,
            temperature: None,
            stop_sequences: vec![],
            tools: vec![],
        };
        let m = conversation(&r);
        assert_eq!(m[0], Message::user("look\n[image: image/png]"));
        assert_eq!(
            m[1],
            Message::assistant_with_tools(
                "",
                vec![ToolCall {
                    id: "c".into(),
                    name: "find".into(),
                    arguments: "{\"q\":1}".into()
                }]
            )
        );
        assert_eq!(m[2], Message::tool_result("c", "find", "found"));
    }
}
