//! The OpenAI Chat Completions wire format (`POST {base}/chat/completions`, SSE streaming),
//! spoken by OpenAI, OpenRouter, Nous Portal, Gemini's OpenAI endpoint, DeepSeek, xAI, Ollama,
//! vLLM, llama.cpp server, LM Studio and most custom endpoints. Our own serde types: requests
//! borrow the conversation; responses are parsed tolerantly (unknown fields ignored, `null` and
//! missing treated alike, non-streamed JSON accepted when a server ignores `stream: true`).

mod wire;

use hermes_protocol::{FinishReason, StreamEvent};

use crate::sse::SseEvent;
use crate::stream::{Decode, events_of};
use crate::{ChatRequest, EventStream, HttpTimeouts, LlmError, Provider, ProviderSpec, http};

pub struct OpenAiChat {
    name: String,
    url: String,
    api_key: Option<String>,
    effort_style: wire::EffortStyle,
    client: reqwest::Client,
}

impl OpenAiChat {
    pub fn new(spec: &ProviderSpec, timeouts: &HttpTimeouts) -> Result<Self, LlmError> {
        Ok(OpenAiChat {
            name: spec.provider.clone(),
            url: format!("{}/chat/completions", spec.base_url.trim_end_matches('/')),
            api_key: spec.api_key.clone(),
            effort_style: if matches!(spec.provider.as_str(), "openrouter" | "nous")
                || spec.base_url.contains("openrouter.ai")
            {
                wire::EffortStyle::Object
            } else {
                wire::EffortStyle::TopLevel
            },
            client: crate::http::client(timeouts)?,
        })
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiChat {
    fn name(&self) -> &str {
        &self.name
    }

    fn endpoint(&self) -> &str {
        &self.url
    }

    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError> {
        let body = serde_json::to_vec(&wire::RequestBody::new(request, self.effort_style))
            .map_err(|e| LlmError::Config(format!("cannot encode the request: {e}")))?;
        let mut headers = Vec::new();
        if let Some(key) = &self.api_key {
            headers.push(("authorization", format!("Bearer {key}")));
        }
        let response = http::post_json(&self.client, &self.url, &headers, body).await?;
        events_of(response, ChatDecoder::default(), wire::completion_events).await
    }
}

/// Chat-completions SSE: `data: {chunk}` events ending with `data: [DONE]`.
#[derive(Default)]
struct ChatDecoder {
    saw_finish: bool,
    saw_tool_call: bool,
    done: bool,
}

impl Decode<SseEvent> for ChatDecoder {
    fn decode(&mut self, event: SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            if self.saw_finish {
                return Ok(Vec::new());
            }
            // Some servers skip finish_reason; [DONE] still means the answer is whole.
            self.saw_finish = true;
            let reason = if self.saw_tool_call {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            };
            return Ok(vec![StreamEvent::Finish(reason)]);
        }
        let events = wire::chunk_events(data)?;
        for ev in &events {
            match ev {
                StreamEvent::Finish(_) => self.saw_finish = true,
                StreamEvent::ToolCallDelta { .. } => self.saw_tool_call = true,
                _ => {}
            }
        }
        Ok(events)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn is_complete(&self) -> bool {
        self.saw_finish
    }
}
