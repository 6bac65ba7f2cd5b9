//! The Anthropic Messages wire format (`POST {base}/v1/messages`, SSE): the system prompt split
//! out, tool calls as `tool_use` blocks and results as `tool_result` blocks in user turns,
//! thinking blocks kept (with their signatures) and sent back, and prompt-cache breakpoints on
//! the system prompt and the last three messages.

mod wire;

use hermes_protocol::StreamEvent;

use crate::sse::SseEvent;
use crate::stream::{Decode, events_of};
use crate::{ChatRequest, EventStream, LlmError, Provider, ProviderOptions, ProviderSpec, http};

/// The API version header every request carries.
const API_VERSION: &str = "2023-06-01";

pub struct Anthropic {
    name: String,
    url: String,
    api_key: Option<String>,
    cache_ttl: Option<String>,
    client: reqwest::Client,
    limits: crate::limits::StreamLimits,
}

impl Anthropic {
    pub fn new(spec: &ProviderSpec, options: &ProviderOptions) -> Result<Self, LlmError> {
        let base = spec.base_url.trim_end_matches('/');
        // Accept both `https://api.anthropic.com` and `https://api.anthropic.com/v1`.
        let url = if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        };
        Ok(Anthropic {
            name: spec.provider.clone(),
            url,
            api_key: spec.api_key.clone(),
            cache_ttl: options.cache_ttl.clone(),
            client: http::client_for(&options.timeouts, &spec.base_url)?,
            limits: options.limits,
        })
    }
}

#[async_trait::async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        &self.name
    }

    fn endpoint(&self) -> &str {
        &self.url
    }

    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError> {
        let body = wire::request_body(request, self.cache_ttl.as_deref());
        let body = serde_json::to_vec(&body)
            .map_err(|e| LlmError::Config(format!("cannot encode the request: {e}")))?;
        let mut headers = vec![("anthropic-version", API_VERSION.to_string())];
        if let Some(key) = &self.api_key {
            headers.push(("x-api-key", key.clone()));
        }
        let sent = http::post_json(&self.client, &self.url, &headers, body, &self.limits).await?;
        events_of(sent, wire::Decoder::default(), wire::message_events).await
    }
}

impl Decode<SseEvent> for wire::Decoder {
    fn decode(&mut self, event: SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        self.event(&event.data)
    }

    fn is_done(&self) -> bool {
        self.stopped
    }

    fn is_complete(&self) -> bool {
        self.finished
    }
}
