//! Events: what a provider streams ([`StreamEvent`]), what the agent tells frontends
//! ([`AgentEvent`]), and the outcome of a turn ([`TurnResult`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{Message, TurnEnd, TurnFailure, Usage};

/// Why the model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FinishReason {
    Stop,
    ToolCalls,
    /// The output limit was hit: any tool call in the message may be cut off.
    Length,
    ContentFilter,
    Other(String),
}

impl FinishReason {
    pub fn parse(s: &str) -> FinishReason {
        match s {
            "stop" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "tool_calls" | "tool_use" | "function_call" => FinishReason::ToolCalls,
            "length" | "max_tokens" => FinishReason::Length,
            "content_filter" | "refusal" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_string()),
        }
    }
}

/// One increment of a streamed model response, independent of the wire format.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// A piece of tool call number `index`. The first piece usually carries `id` and `name`;
    /// later ones append to `arguments`.
    ToolCallDelta {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    Usage(Usage),
    /// One opaque reasoning item to keep with the assistant message and send back later
    /// (see `Message::reasoning_details`).
    ReasoningDetail(serde_json::Value),
    Finish(FinishReason),
}

/// What the agent reports while it works; frontends render these.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// Visible answer text, as it streams.
    TextDelta(String),
    /// Reasoning text, as it streams.
    ReasoningDelta(String),
    /// A model call is about to be made (`api_call` counts from 1 within the turn).
    ModelCallStarted { api_call: u32 },
    /// A tool call is starting. `preview` is the key argument, shortened for display.
    ToolStarted {
        call_id: String,
        name: String,
        preview: String,
    },
    ToolFinished {
        call_id: String,
        name: String,
        duration: Duration,
        ok: bool,
    },
    /// Something worth telling the user that is not part of the answer (retry, repair, ...).
    Status(String),
    /// Token usage of one model call, its estimated cost (`None` when the model has no known
    /// price), and the model and provider that answered (a fallback may have taken over).
    Usage {
        usage: Usage,
        cost_usd: Option<f64>,
        model: String,
        provider: String,
    },
    /// A message was appended to the conversation (the user message, each assistant message,
    /// each tool result), in order, the moment it exists: persistence listens to this.
    MessageAdded(Message),
    /// The user interrupted a model call: the next `MessageAdded` is the answer as far as it
    /// had streamed (or `[interrupted]`), so persistence records it as cut off.
    Interrupted,
    /// The conversation was compressed: `messages` replaces everything said so far (the system
    /// prompt excepted). Persistence continues the session from these.
    ContextCompressed {
        messages: Vec<Message>,
        tokens_before: u64,
        tokens_after: u64,
    },
}

/// The outcome of [`run_turn`](../hermes_core/struct.Agent.html): the final answer and the
/// whole conversation after the turn.
#[derive(Debug, Clone, Default)]
pub struct TurnResult {
    /// The last assistant text without tool calls ("" when there is none).
    pub final_text: String,
    /// The conversation after the turn (without the system prompt): the history passed in, the
    /// user message and everything the turn added.
    pub messages: Vec<Message>,
    /// Model calls made during the turn, retries excluded.
    pub api_calls: u32,
    /// How the turn ended.
    pub end: TurnEnd,
    pub usage: Usage,
    /// Estimated cost in USD, when the model's prices are known.
    pub cost_usd: Option<f64>,
    /// Calls of tools the client defined (API server): the turn stopped to hand them back;
    /// the client runs them and continues the conversation with their results.
    pub client_calls: Vec<crate::ToolCall>,
}

impl TurnResult {
    /// The model ended the turn on its own.
    pub fn is_completed(&self) -> bool {
        self.end == TurnEnd::Completed
    }

    pub fn is_interrupted(&self) -> bool {
        self.end == TurnEnd::Interrupted
    }

    /// Why the turn failed, when it did.
    pub fn failure(&self) -> Option<&TurnFailure> {
        self.end.failure()
    }

    pub fn failed(&self) -> bool {
        self.failure().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons_of_every_wire_format_map_to_one_set() {
        assert_eq!(FinishReason::parse("stop"), FinishReason::Stop);
        assert_eq!(FinishReason::parse("end_turn"), FinishReason::Stop);
        assert_eq!(FinishReason::parse("tool_use"), FinishReason::ToolCalls);
        assert_eq!(FinishReason::parse("max_tokens"), FinishReason::Length);
        assert_eq!(
            FinishReason::parse("weird"),
            FinishReason::Other("weird".into())
        );
    }
}
