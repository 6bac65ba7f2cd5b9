//! Talking to language models. The [`Provider`] trait streams provider-neutral
//! [`StreamEvent`]s for a [`ChatRequest`]; one module per wire format converts to and from it
//! (today: [`openai_chat`]). Around it: SSE parsing ([`sse`]), folding a stream into one
//! assistant message ([`accumulate`]), `<think>` splitting ([`think`]), error classification
//! ([`error`]), retry backoff ([`retry`]) and choosing a provider from config and environment
//! ([`resolve`]).

pub mod accumulate;
pub mod error;
mod http;
pub mod openai_chat;
pub mod resolve;
pub mod retry;
pub mod sse;
pub mod think;

use std::pin::Pin;
use std::sync::Arc;

use futures_util::Stream;
use hermes_protocol::{Message, StreamEvent, ToolSchema};

pub use accumulate::{AssistantResponse, ResponseAccumulator};
pub use error::{ErrorClass, LlmError};
pub use resolve::{Overrides, ProviderSpec, ResolveError, WireFormat, resolve};
pub use retry::RetryPolicy;

/// One model call: the system prompt, the conversation, and the tools the model may call.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSchema],
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
}

/// The events of one streamed response. The stream ends after `StreamEvent::Finish` (and a
/// possible trailing `Usage`); an `Err` item ends it early.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// A language model behind some wire format.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// The provider id (`openrouter`, `custom`, `local`, ...).
    fn name(&self) -> &str;
    /// Where requests go, for messages to the user.
    fn endpoint(&self) -> &str;
    /// Starts a streamed completion. Errors before the first byte (HTTP status, connection)
    /// come back here; errors after it come through the stream.
    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError>;
}

/// Builds the provider a resolved spec describes.
pub fn build_provider(
    spec: &ProviderSpec,
    timeouts: &HttpTimeouts,
) -> Result<Arc<dyn Provider>, LlmError> {
    match spec.wire {
        WireFormat::OpenAiChat => Ok(Arc::new(openai_chat::OpenAiChat::new(spec, timeouts)?)),
    }
}

/// Network timeouts: connecting, and the longest silence allowed while a response streams.
#[derive(Debug, Clone, Copy)]
pub struct HttpTimeouts {
    pub connect: std::time::Duration,
    pub idle: std::time::Duration,
}

impl Default for HttpTimeouts {
    fn default() -> Self {
        HttpTimeouts {
            connect: std::time::Duration::from_secs(15),
            idle: std::time::Duration::from_secs(180),
        }
    }
}
