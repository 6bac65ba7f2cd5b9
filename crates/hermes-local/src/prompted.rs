//! [`PromptedTools`]: tool calling for OpenAI-compatible servers that have none (an older
//! llama.cpp server, some LM Studio or vLLM setups). It wraps another [`Provider`]: the tools
//! go into the system prompt instead of the request's `tools`, the conversation's tool calls
//! and results are rewritten as plain turns, and the streamed reply is parsed back into a tool
//! call. Opt-in with `model.tool_calling: prompt`.

use std::sync::Arc;

use futures_util::StreamExt;
use hermes_llm::{ChatRequest, EventStream, LlmError, Provider};
use hermes_protocol::{FinishReason, Message, StreamEvent};

use crate::reply::ReplyStream;
use crate::tool_prompt::plain_conversation;

pub struct PromptedTools {
    inner: Arc<dyn Provider>,
}

impl PromptedTools {
    pub fn new(inner: Arc<dyn Provider>) -> Self {
        PromptedTools { inner }
    }
}

#[async_trait::async_trait]
impl Provider for PromptedTools {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }

    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError> {
        let turns = plain_conversation(request.system, request.messages, request.tools);
        let mut system = String::new();
        let mut messages = Vec::with_capacity(turns.len());
        for turn in turns {
            match turn.role {
                "system" if messages.is_empty() => system = turn.content,
                "assistant" => messages.push(Message::assistant(turn.content)),
                _ => messages.push(Message::user(turn.content)),
            }
        }
        let rewritten = ChatRequest {
            system: &system,
            messages: &messages,
            tools: &[],
            ..*request
        };
        let inner = self.inner.stream(&rewritten).await?;
        Ok(parse_stream(inner))
    }
}

/// Passes usage through, runs text through a [`ReplyStream`], and replaces the inner finish
/// event by the one the parsed reply deserves.
fn parse_stream(inner: EventStream) -> EventStream {
    struct State {
        inner: EventStream,
        reply: ReplyStream,
        finish: Option<FinishReason>,
        queue: std::collections::VecDeque<Result<StreamEvent, LlmError>>,
        done: bool,
    }
    let state = State {
        inner,
        reply: ReplyStream::new(),
        finish: None,
        queue: Default::default(),
        done: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.queue.pop_front() {
                return Some((item, st));
            }
            if st.done {
                return None;
            }
            match st.inner.next().await {
                Some(Ok(StreamEvent::TextDelta(t))) => {
                    st.queue.extend(st.reply.push(&t).into_iter().map(Ok));
                }
                Some(Ok(StreamEvent::Finish(reason))) => st.finish = Some(reason),
                // Reasoning and usage pass through; a server without tool support sends no
                // native tool calls, and any it does send are kept as they are.
                Some(Ok(other)) => st.queue.push_back(Ok(other)),
                Some(Err(e)) => {
                    st.done = true;
                    st.queue.push_back(Err(e));
                }
                None => {
                    st.done = true;
                    // A stream that ended without a finish event is an error the inner
                    // provider already reported; only a finished reply is parsed.
                    if let Some(reason) = st.finish.take() {
                        st.queue.extend(st.reply.finish(reason).into_iter().map(Ok));
                    }
                }
            }
        }
    }))
}
