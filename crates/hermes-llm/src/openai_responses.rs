//! The OpenAI Responses wire format (`POST {base}/responses`, SSE), used by Codex models:
//! the conversation as input items (messages, `function_call` / `function_call_output` paired by
//! call id, reasoning items replayed), stateless (`store: false`), streamed output items.

mod wire;

use hermes_protocol::StreamEvent;

use crate::sse::SseEvent;
use crate::stream::{Decode, events_of};
use crate::{ChatRequest, EventStream, LlmError, Provider, ProviderOptions, ProviderSpec, http};

pub struct OpenAiResponses {
    name: String,
    url: String,
    api_key: Option<String>,
    extra_headers: Vec<(String, String)>,
    client: reqwest::Client,
    limits: crate::limits::StreamLimits,
}

impl OpenAiResponses {
    pub fn new(spec: &ProviderSpec, options: &ProviderOptions) -> Result<Self, LlmError> {
        Ok(OpenAiResponses {
            name: spec.provider.clone(),
            url: format!("{}/responses", spec.base_url.trim_end_matches('/')),
            api_key: spec.api_key.clone(),
            extra_headers: options.headers.clone(),
            client: http::client_for(&options.timeouts, &spec.base_url)?,
            limits: options.limits,
        })
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiResponses {
    fn name(&self) -> &str {
        &self.name
    }

    fn endpoint(&self) -> &str {
        &self.url
    }

    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError> {
        let body = serde_json::to_vec(&wire::request_body(request))
            .map_err(|e| LlmError::Config(format!("cannot encode the request: {e}")))?;
        let mut headers: Vec<(&str, String)> = self
            .extra_headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        if let Some(key) = &self.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        let sent = http::post_json(&self.client, &self.url, &headers, body, &self.limits).await?;
        events_of(sent, wire::Decoder::default(), wire::response_events).await
    }
}

impl Decode<SseEvent> for wire::Decoder {
    fn decode(&mut self, event: SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        self.event(&event.data)
    }

    fn is_done(&self) -> bool {
        self.finished
    }

    fn is_complete(&self) -> bool {
        self.finished
    }
}
