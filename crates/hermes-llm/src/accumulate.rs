//! Folds a stream of [`StreamEvent`]s into one [`AssistantResponse`]: text and reasoning
//! concatenated, tool calls assembled by index from their deltas, the last usage and finish
//! reason kept. [`complete`] does it for a whole request.

use std::collections::BTreeMap;

use futures_util::StreamExt;
use hermes_protocol::{FinishReason, StreamEvent, ToolCall, Usage};

use crate::{ChatRequest, LlmError, Provider};

/// One whole response of `provider` to `request`, for callers that want the answer rather than
/// the stream (summaries, judges, vision, panels). The first stream error ends it.
pub async fn complete(
    provider: &dyn Provider,
    request: &ChatRequest<'_>,
) -> Result<AssistantResponse, LlmError> {
    let mut stream = provider.stream(request).await?;
    let mut acc = ResponseAccumulator::new();
    while let Some(event) = stream.next().await {
        acc.push(&event?);
    }
    Ok(acc.finish())
}

/// One finished model response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantResponse {
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<FinishReason>,
    /// Opaque reasoning items to store with the message (see `Message::reasoning_details`).
    pub reasoning_details: Vec<serde_json::Value>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

#[derive(Debug, Default)]
pub struct ResponseAccumulator {
    text: String,
    reasoning: String,
    calls: BTreeMap<usize, PartialCall>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    details: Vec<serde_json::Value>,
}

impl ResponseAccumulator {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::TextDelta(t) => self.text.push_str(t),
            StreamEvent::ReasoningDelta(r) => self.reasoning.push_str(r),
            StreamEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => {
                let call = self.calls.entry(*index).or_default();
                if let Some(id) = id.as_ref().filter(|s| !s.is_empty()) {
                    call.id = Some(id.clone());
                }
                if let Some(name) = name.as_ref().filter(|s| !s.is_empty()) {
                    // Most servers send the name once; a few repeat it in every delta.
                    if !call.name.ends_with(name.as_str()) {
                        call.name.push_str(name);
                    }
                }
                call.arguments.push_str(arguments);
            }
            StreamEvent::Usage(u) => self.usage = Some(*u),
            StreamEvent::ReasoningDetail(d) => self.details.push(d.clone()),
            StreamEvent::Finish(f) => self.finish = Some(f.clone()),
        }
    }

    /// Text received so far (kept when a stream breaks).
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn reasoning(&self) -> &str {
        &self.reasoning
    }

    pub fn has_tool_calls(&self) -> bool {
        !self.calls.is_empty()
    }

    pub fn finish(self) -> AssistantResponse {
        let tool_calls = self
            .calls
            .into_iter()
            .filter(|(_, c)| !c.name.is_empty() || !c.arguments.is_empty())
            .enumerate()
            .map(|(n, (_, c))| ToolCall {
                id: c.id.unwrap_or_else(|| format!("call_{n}")),
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        AssistantResponse {
            text: self.text,
            reasoning: self.reasoning,
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish,
            reasoning_details: self.details,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(index: usize, id: Option<&str>, name: Option<&str>, args: &str) -> StreamEvent {
        StreamEvent::ToolCallDelta {
            index,
            id: id.map(str::to_string),
            name: name.map(str::to_string),
            arguments: args.into(),
        }
    }

    #[test]
    fn interleaved_tool_call_deltas_assemble_by_index() {
        let mut acc = ResponseAccumulator::new();
        for e in [
            StreamEvent::TextDelta("Let me ".into()),
            StreamEvent::TextDelta("look.".into()),
            delta(1, Some("b"), Some("read_file"), ""),
            delta(0, Some("a"), Some("terminal"), "{\"comm"),
            delta(1, None, None, "{\"path\":\"x\"}"),
            delta(0, None, None, "and\":\"ls\"}"),
            StreamEvent::Finish(FinishReason::ToolCalls),
        ] {
            acc.push(&e);
        }
        let r = acc.finish();
        assert_eq!(r.text, "Let me look.");
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].id, "a");
        assert_eq!(r.tool_calls[0].arguments, "{\"command\":\"ls\"}");
        assert_eq!(r.tool_calls[1].name, "read_file");
        assert_eq!(r.finish_reason, Some(FinishReason::ToolCalls));
    }

    #[test]
    fn missing_ids_are_generated_and_repeated_names_not_doubled() {
        let mut acc = ResponseAccumulator::new();
        acc.push(&delta(0, None, Some("terminal"), "{}"));
        acc.push(&delta(0, None, Some("terminal"), ""));
        let r = acc.finish();
        assert_eq!(r.tool_calls[0].id, "call_0");
        assert_eq!(r.tool_calls[0].name, "terminal");
    }
}
