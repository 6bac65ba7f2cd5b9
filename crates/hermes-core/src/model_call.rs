//! One model call as the agent needs it: streamed to the event sink as it arrives (answer text
//! with `<think>` blocks routed to reasoning), retried with backoff on transient failures,
//! resumed after a stream that broke mid-answer (the text already shown is kept and the model
//! asked to continue from it), and cancellable at any point.

use std::borrow::Cow;

use futures_util::StreamExt;
use hermes_llm::retry::jitter_random;
use hermes_llm::think::{Piece, ThinkSplitter};
use hermes_llm::{
    AssistantResponse, ChatRequest, ErrorClass, LlmError, Provider, ResponseAccumulator,
    RetryPolicy,
};
use hermes_protocol::{AgentEvent, Message, ToolSchema};
use tokio_util::sync::CancellationToken;

use crate::EventSink;

/// Sent after a response that broke off mid-answer, with the partial answer as the preceding
/// assistant message.
pub(crate) const CONTINUE_NOTE: &str = "[System: your previous reply was cut off by a network error after the text above. Continue exactly where it stopped, without repeating anything.]";

/// Why a model call produced no response.
#[derive(Debug)]
pub(crate) enum CallFailure {
    /// The user interrupted; what had been streamed so far.
    Interrupted { text: String, reasoning: String },
    /// Unrecoverable (or retries exhausted): a one-line reason for the user.
    Failed { reason: String, class: ErrorClass },
}

/// Everything a model call needs besides the messages.
pub(crate) struct ModelCall<'a> {
    pub provider: &'a dyn Provider,
    pub model: &'a str,
    pub system: &'a str,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub retry: RetryPolicy,
    /// Where the API key comes from, named in auth errors.
    pub key_hint: Option<&'a str>,
}

/// How one attempt ended.
enum Attempt {
    Done(AssistantResponse),
    Interrupted {
        text: String,
        reasoning: String,
    },
    Failed {
        error: LlmError,
        text: String,
        reasoning: String,
        had_tool_calls: bool,
    },
}

impl ModelCall<'_> {
    pub(crate) async fn run(
        &self,
        messages: &[Message],
        tools: &[ToolSchema],
        sink: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<AssistantResponse, CallFailure> {
        // Text and reasoning of earlier attempts that broke off mid-answer.
        let mut kept_text = String::new();
        let mut kept_reasoning = String::new();
        let mut retries = 0u32;
        loop {
            let conversation: Cow<'_, [Message]> = if kept_text.trim().is_empty() {
                Cow::Borrowed(messages)
            } else {
                let mut m = messages.to_vec();
                m.push(Message::assistant(kept_text.clone()));
                m.push(Message::user(CONTINUE_NOTE));
                Cow::Owned(m)
            };
            let request = ChatRequest {
                model: self.model,
                system: self.system,
                messages: &conversation,
                tools,
                max_tokens: self.max_tokens,
                temperature: self.temperature,
            };
            match self.attempt(&request, sink, cancel).await {
                Attempt::Done(mut response) => {
                    response.text.insert_str(0, &kept_text);
                    response.reasoning.insert_str(0, &kept_reasoning);
                    return Ok(response);
                }
                Attempt::Interrupted { text, reasoning } => {
                    return Err(CallFailure::Interrupted {
                        text: kept_text + &text,
                        reasoning: kept_reasoning + &reasoning,
                    });
                }
                Attempt::Failed {
                    error,
                    text,
                    reasoning,
                    had_tool_calls,
                } => {
                    let class = error.class();
                    let cut = error.is_stream_cut();
                    // A half-streamed tool call is discarded and asked for again; half an
                    // answer is kept and continued.
                    if cut && !had_tool_calls {
                        kept_text.push_str(&text);
                        kept_reasoning.push_str(&reasoning);
                    }
                    if !class.is_retryable() {
                        return Err(CallFailure::Failed {
                            reason: self.explain(&error, class),
                            class,
                        });
                    }
                    if retries >= self.retry.max_retries {
                        return Err(CallFailure::Failed {
                            reason: format!("API call failed after {retries} retries: {error}"),
                            class,
                        });
                    }
                    let delay = if cut {
                        std::time::Duration::ZERO
                    } else {
                        self.retry
                            .delay(retries, error.retry_after(), jitter_random())
                    };
                    retries += 1;
                    sink.emit(AgentEvent::Status(format!(
                        "{error}; retrying in {:.1}s ({retries}/{})",
                        delay.as_secs_f64(),
                        self.retry.max_retries
                    )));
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = cancel.cancelled() => {
                            return Err(CallFailure::Interrupted { text: kept_text, reasoning: kept_reasoning });
                        }
                    }
                }
            }
        }
    }

    async fn attempt(
        &self,
        request: &ChatRequest<'_>,
        sink: &dyn EventSink,
        cancel: &CancellationToken,
    ) -> Attempt {
        let interrupted = || Attempt::Interrupted {
            text: String::new(),
            reasoning: String::new(),
        };
        let started = tokio::select! {
            biased;
            () = cancel.cancelled() => return interrupted(),
            s = self.provider.stream(request) => s,
        };
        let mut stream = match started {
            Ok(s) => s,
            Err(error) => {
                return Attempt::Failed {
                    error,
                    text: String::new(),
                    reasoning: String::new(),
                    had_tool_calls: false,
                };
            }
        };
        let mut acc = ResponseAccumulator::new();
        let mut splitter = ThinkSplitter::new();
        let mut text = String::new();
        let mut reasoning = String::new();
        let route = |pieces: Vec<Piece>, text: &mut String, reasoning: &mut String| {
            for piece in pieces {
                match piece {
                    Piece::Visible(t) => {
                        text.push_str(&t);
                        sink.emit(AgentEvent::TextDelta(t));
                    }
                    Piece::Reasoning(r) => {
                        reasoning.push_str(&r);
                        sink.emit(AgentEvent::ReasoningDelta(r));
                    }
                }
            }
        };
        loop {
            let item = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    route(splitter.finish(), &mut text, &mut reasoning);
                    return Attempt::Interrupted { text, reasoning };
                }
                item = stream.next() => item,
            };
            match item {
                None => break,
                Some(Ok(event)) => {
                    match &event {
                        hermes_protocol::StreamEvent::TextDelta(t) => {
                            route(splitter.push(t), &mut text, &mut reasoning);
                        }
                        hermes_protocol::StreamEvent::ReasoningDelta(r) => {
                            route(vec![Piece::Reasoning(r.clone())], &mut text, &mut reasoning);
                        }
                        _ => {}
                    }
                    acc.push(&event);
                }
                Some(Err(error)) => {
                    route(splitter.finish(), &mut text, &mut reasoning);
                    return Attempt::Failed {
                        error,
                        text,
                        reasoning,
                        had_tool_calls: acc.has_tool_calls(),
                    };
                }
            }
        }
        route(splitter.finish(), &mut text, &mut reasoning);
        let mut response = acc.finish();
        response.text = text;
        response.reasoning = reasoning;
        Attempt::Done(response)
    }

    /// A one-line reason for an error that will not be retried, naming what to fix.
    fn explain(&self, error: &LlmError, class: ErrorClass) -> String {
        match class {
            ErrorClass::Auth => match self.key_hint {
                Some(source) => format!("{error} (the API key from {source} was rejected)"),
                None => format!("{error} (no API key was sent; set one for this provider)"),
            },
            ErrorClass::ContextOverflow => format!(
                "{error} (the conversation no longer fits the model's context window; start a new session)"
            ),
            ErrorClass::ModelNotFound => format!(
                "{error} (check model.default in config.yaml, or pass --model; endpoint {})",
                self.provider.endpoint()
            ),
            _ => error.to_string(),
        }
    }
}
