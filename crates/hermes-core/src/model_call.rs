//! One model call as the agent needs it: streamed to the event sink as it arrives (answer text
//! with `<think>` blocks routed to reasoning), retried with backoff on transient failures,
//! resumed after a stream that broke mid-answer (the text already shown is kept and the model
//! asked to continue from it), and cancellable at any point.

use std::borrow::Cow;

use futures_util::StreamExt;
use hermes_llm::reasoning::ReasoningSettings;
use hermes_llm::retry::jitter_random;
use hermes_llm::think::Piece;
use hermes_llm::{
    AssistantResponse, ChatRequest, ErrorClass, LlmError, Provider, ResponseAccumulator,
    RetryPolicy,
};
use hermes_protocol::{AgentEvent, Message, ToolSchema};
use tokio_util::sync::CancellationToken;

use crate::EventSink;
use crate::memory::scrub::AnswerFilter;

/// Sent after a response that broke off mid-answer, with the partial answer as the preceding
/// assistant message.
pub(crate) const CONTINUE_NOTE: &str = "[System: your previous reply was cut off by a network or provider error after the text above. Continue exactly where it stopped, without repeating anything.]";

/// Why a model call produced no response.
#[derive(Debug)]
pub(crate) enum CallFailure {
    /// The user interrupted; what had been streamed so far.
    Interrupted { text: String, reasoning: String },
    /// Unrecoverable (or retries exhausted): a one-line reason for the user, its class, and
    /// the wait the provider asked for (rate limits).
    Failed {
        reason: String,
        class: ErrorClass,
        retry_after: Option<std::time::Duration>,
    },
}

/// One provider and model to call; the first of a list is the primary, the others are
/// `fallback_providers` in order.
#[derive(Clone)]
pub struct ModelTarget {
    pub provider: std::sync::Arc<dyn Provider>,
    pub model: String,
}

/// Everything a model call needs besides the messages.
pub(crate) struct ModelCall<'a> {
    /// Primary first, then fallbacks.
    pub targets: &'a [ModelTarget],
    /// Index of the target in use; moves forward (for the rest of the session) on fallback.
    pub active: &'a std::sync::atomic::AtomicUsize,
    pub system: &'a str,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// Reasoning effort, resolved per model (a fallback may take another).
    pub reasoning: &'a ReasoningSettings,
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
    fn target(&self) -> Option<&ModelTarget> {
        let i = self.active.load(std::sync::atomic::Ordering::Acquire);
        self.targets.get(i).or(self.targets.last())
    }

    /// Moves to the next fallback target, when there is one.
    fn fall_back(&self) -> Option<&ModelTarget> {
        let i = self.active.load(std::sync::atomic::Ordering::Acquire);
        let next = self.targets.get(i + 1)?;
        self.active
            .store(i + 1, std::sync::atomic::Ordering::Release);
        Some(next)
    }

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
            let Some(target) = self.target() else {
                return Err(CallFailure::Failed {
                    reason: "no model provider is configured".into(),
                    class: ErrorClass::FormatError,
                    retry_after: None,
                });
            };
            let request = ChatRequest {
                model: &target.model,
                system: self.system,
                messages: &conversation,
                tools,
                max_tokens: self.max_tokens,
                temperature: self.temperature,
                reasoning: self.reasoning.for_model(&target.model),
            };
            match self
                .attempt(target.provider.as_ref(), &request, sink, cancel)
                .await
            {
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
                    // answer (cut, or ended by an error the provider sent mid-stream) was
                    // shown, so it is kept and continued.
                    if !had_tool_calls {
                        kept_text.push_str(&text);
                        kept_reasoning.push_str(&reasoning);
                    }
                    // Another key of the same provider first: no wait, no retry spent.
                    if let Some(note) = target.provider.rotate_credential(&error) {
                        sink.emit(AgentEvent::Status(note));
                        continue;
                    }
                    let exhausted = retries >= self.retry.max_retries;
                    if !class.is_retryable() || exhausted {
                        let reason = if class.is_retryable() {
                            format!("API call failed after {retries} retries: {error}")
                        } else {
                            self.explain(target.provider.as_ref(), &error, class)
                        };
                        if falls_back_on(class, exhausted)
                            && let Some(next) = self.fall_back()
                        {
                            sink.emit(AgentEvent::Status(format!(
                                "{reason}; falling back to {} ({})",
                                next.model,
                                next.provider.name()
                            )));
                            retries = 0;
                            continue;
                        }
                        return Err(CallFailure::Failed {
                            reason,
                            class,
                            retry_after: error.retry_after(),
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
        provider: &dyn Provider,
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
            s = provider.stream(request) => s,
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
        // `<think>` blocks go to reasoning; echoed `<memory-context>` fences are dropped.
        let mut splitter = AnswerFilter::new();
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
    fn explain(&self, provider: &dyn Provider, error: &LlmError, class: ErrorClass) -> String {
        match class {
            ErrorClass::Auth => match self.key_hint {
                Some(source) => format!("{error} (the credentials from {source} were rejected)"),
                None => format!("{error} (no API key was sent; set one for this provider)"),
            },
            ErrorClass::ContextOverflow => format!(
                "{error} (the conversation no longer fits the model's context window; start a new session)"
            ),
            ErrorClass::ModelNotFound => format!(
                "{error} (check model.default in config.yaml, or pass --model; endpoint {})",
                provider.endpoint()
            ),
            _ => error.to_string(),
        }
    }
}

/// Whether a failure of this class moves on to the next `fallback_providers` entry: after the
/// retries of a transient failure are spent, or at once when this provider cannot serve the
/// request at all.
fn falls_back_on(class: ErrorClass, retries_exhausted: bool) -> bool {
    retries_exhausted
        || matches!(
            class,
            ErrorClass::Auth
                | ErrorClass::Billing
                | ErrorClass::ModelNotFound
                | ErrorClass::ContentPolicy
        )
}
