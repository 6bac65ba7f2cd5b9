//! Talking to language models. The [`Provider`] trait streams provider-neutral
//! [`StreamEvent`]s for a [`ChatRequest`]; one module per wire format converts to and from it
//! ([`openai_chat`], [`anthropic`], [`openai_responses`], `bedrock`). Around it: SSE parsing
//! ([`sse`]), bounds on what a provider may send ([`limits`]), folding a stream into one
//! assistant message ([`accumulate`]), `<think>` splitting ([`think`]), tool calls written as
//! text ([`tool_text`]), error classification ([`error`]) and redaction ([`redact`]), retry
//! backoff ([`retry`]), choosing a provider from config and environment ([`resolve`]), and the
//! OAuth sign-ins the Python Hermes keeps in `auth.json` ([`auth_store`], [`oauth`]).

pub mod accumulate;
pub mod anthropic;
pub mod auth_store;
#[cfg(feature = "bedrock")]
pub mod bedrock;
pub mod catalogue;
pub mod error;
mod http;
pub mod limits;
pub mod oauth;
pub mod openai_chat;
pub mod openai_responses;
pub mod pool;
pub mod reasoning;
pub mod redact;
pub mod resolve;
pub mod retry;
pub mod sse;
mod stream;
pub mod think;
pub mod tool_text;
pub mod util;

use std::pin::Pin;
use std::sync::Arc;

use futures_util::Stream;
use hermes_protocol::{Message, StreamEvent, ToolSchema};

pub use accumulate::{AssistantResponse, ResponseAccumulator, complete};
pub use error::{ErrorClass, LlmError};
pub use limits::{LimitExceeded, StreamLimits};
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
    /// How hard a reasoning model should think; `None` sends nothing (the provider's default).
    pub reasoning: Option<reasoning::ReasoningEffort>,
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
    /// After `error`, switches to another credential when the provider has several (see
    /// [`pool`]); returns a note for the user when it did, `None` when no other key is usable.
    fn rotate_credential(&self, _error: &LlmError) -> Option<String> {
        None
    }
}

/// Builds the provider a resolved spec describes.
pub fn build_provider(
    spec: &ProviderSpec,
    timeouts: &HttpTimeouts,
) -> Result<Arc<dyn Provider>, LlmError> {
    build_provider_with(
        spec,
        &ProviderOptions {
            timeouts: *timeouts,
            ..ProviderOptions::default()
        },
    )
}

/// Builds the provider a resolved spec describes, with wire-format options.
pub fn build_provider_with(
    spec: &ProviderSpec,
    options: &ProviderOptions,
) -> Result<Arc<dyn Provider>, LlmError> {
    match spec.wire {
        WireFormat::OpenAiChat => Ok(Arc::new(openai_chat::OpenAiChat::new(spec, options)?)),
        WireFormat::Anthropic => Ok(Arc::new(anthropic::Anthropic::new(spec, options)?)),
        WireFormat::Responses => Ok(Arc::new(openai_responses::OpenAiResponses::new(
            spec, options,
        )?)),
        #[cfg(feature = "bedrock")]
        WireFormat::Bedrock => Ok(Arc::new(bedrock::Bedrock::new(spec, options)?)),
        #[cfg(not(feature = "bedrock"))]
        WireFormat::Bedrock => Err(LlmError::Config(
            "this hermes was built without AWS Bedrock support; rebuild with `--features bedrock`"
                .into(),
        )),
    }
}

/// The HTTP client the wire formats use (rustls, these timeouts, hermes's user agent), for a
/// caller that needs one plain request of its own, such as `hermes doctor`'s endpoint check.
pub fn http_client(timeouts: &HttpTimeouts) -> Result<reqwest::Client, LlmError> {
    http::client(timeouts)
}

/// Settings of the wire formats beyond the provider spec.
#[derive(Debug, Clone, Default)]
pub struct ProviderOptions {
    pub timeouts: HttpTimeouts,
    /// Anthropic prompt-cache lifetime: `5m` (default) or `1h` (`prompt_caching.cache_ttl`).
    pub cache_ttl: Option<String>,
    /// Bounds on each response (sizes, idle and overall deadlines).
    pub limits: StreamLimits,
    /// Headers every request carries besides the format's own (Chat Completions and
    /// Responses), e.g. what the ChatGPT backend requires of a Codex client.
    pub headers: Vec<(String, String)>,
    /// AWS credentials and region for Bedrock's SigV4 (from the environment).
    #[cfg(feature = "bedrock")]
    pub aws: Option<bedrock::AwsCredentials>,
}

impl ProviderOptions {
    /// Options with these timeouts and cache lifetime; feature-specific fields at their defaults.
    // The update fills fields that exist only with some features.
    #[allow(clippy::needless_update)]
    pub fn new(timeouts: HttpTimeouts, cache_ttl: Option<String>) -> Self {
        ProviderOptions {
            timeouts,
            cache_ttl,
            ..ProviderOptions::default()
        }
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
