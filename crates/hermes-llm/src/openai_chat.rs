//! The OpenAI Chat Completions wire format (`POST {base}/chat/completions`, SSE streaming),
//! spoken by OpenAI, OpenRouter, Nous Portal, Gemini's OpenAI endpoint, DeepSeek, xAI, Ollama,
//! vLLM, llama.cpp server, LM Studio and most custom endpoints. Our own serde types: requests
//! borrow the conversation; responses are parsed tolerantly (unknown fields ignored, `null` and
//! missing treated alike, non-streamed JSON accepted when a server ignores `stream: true`).
//!
//! Per route, as the Python Hermes decides ([`policy`]): Claude (and Kimi) models behind
//! OpenRouter or Nous Portal get Anthropic `cache_control` breakpoints; providers that require
//! it (DeepSeek, Kimi / Moonshot, Xiaomi MiMo) get `reasoning_content` back on every replayed
//! assistant turn. When tools are offered, `<tool_call>` blocks a server left in the content
//! ([`crate::tool_text`]) become tool calls.

pub mod policy;
mod wire;

use hermes_protocol::{FinishReason, StreamEvent};

use crate::limits::StreamLimits;
use crate::sse::SseEvent;
use crate::stream::{Decode, events_of};
use crate::tool_text::ToolCallText;
use crate::{ChatRequest, EventStream, LlmError, Provider, ProviderOptions, ProviderSpec, http};

pub struct OpenAiChat {
    name: String,
    base_url: String,
    url: String,
    api_key: Option<String>,
    extra_headers: Vec<(String, String)>,
    effort_style: wire::EffortStyle,
    cache_ttl: Option<String>,
    limits: StreamLimits,
    client: reqwest::Client,
}

impl OpenAiChat {
    pub fn new(spec: &ProviderSpec, options: &ProviderOptions) -> Result<Self, LlmError> {
        Ok(OpenAiChat {
            name: spec.provider.clone(),
            base_url: spec.base_url.clone(),
            url: format!("{}/chat/completions", spec.base_url.trim_end_matches('/')),
            api_key: spec.api_key.clone(),
            extra_headers: options.headers.clone(),
            effort_style: if matches!(spec.provider.as_str(), "openrouter" | "nous")
                || spec.base_url.contains("openrouter.ai")
            {
                wire::EffortStyle::Object
            } else {
                wire::EffortStyle::TopLevel
            },
            cache_ttl: options.cache_ttl.clone(),
            limits: options.limits,
            client: http::client_for(&options.timeouts, &spec.base_url)?,
        })
    }

    /// The route-specific parts of the request body for `model`.
    fn wire_options(&self, model: &str) -> wire::Options {
        let route = policy::Route {
            provider: &self.name,
            base_url: &self.base_url,
            model,
        };
        wire::Options {
            effort: self.effort_style,
            cache: route
                .caches_prompt()
                .then(|| policy::cache_marker(self.cache_ttl.as_deref())),
            echo_reasoning: route.echoes_reasoning(),
        }
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
        let options = self.wire_options(request.model);
        let body = serde_json::to_vec(&wire::RequestBody::new(request, &options))
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
        // Tool calls left as text are only calls when the model was offered tools.
        let text_calls =
            (!request.tools.is_empty()).then(|| ToolCallText::new(self.limits.max_answer_bytes));
        events_of(sent, ChatDecoder::new(text_calls), wire::completion_events).await
    }
}

/// Chat-completions SSE: `data: {chunk}` events ending with `data: [DONE]`.
struct ChatDecoder {
    saw_finish: bool,
    saw_tool_call: bool,
    done: bool,
    /// `<tool_call>` blocks in content, when tools were offered.
    text_calls: Option<ToolCallText>,
}

impl ChatDecoder {
    fn new(text_calls: Option<ToolCallText>) -> ChatDecoder {
        ChatDecoder {
            saw_finish: false,
            saw_tool_call: false,
            done: false,
            text_calls,
        }
    }

    /// The decoded events of one chunk (or a whole completion) with text calls recognised.
    fn filter(&mut self, events: Vec<StreamEvent>) -> Result<Vec<StreamEvent>, LlmError> {
        let mut out = Vec::with_capacity(events.len());
        for ev in events {
            match ev {
                StreamEvent::TextDelta(t) if self.text_calls.is_some() => {
                    if let Some(tc) = &mut self.text_calls {
                        out.extend(tc.push(&t)?);
                    }
                }
                StreamEvent::Finish(reason) => {
                    out.extend(self.flush());
                    self.saw_finish = true;
                    out.push(StreamEvent::Finish(self.adjusted(reason)));
                }
                StreamEvent::ToolCallDelta { .. } => {
                    self.saw_tool_call = true;
                    out.push(ev);
                }
                other => out.push(other),
            }
        }
        Ok(out)
    }

    /// Text held back by the `<tool_call>` recogniser, now that the content ended.
    fn flush(&mut self) -> Vec<StreamEvent> {
        self.text_calls
            .as_mut()
            .map(ToolCallText::finish)
            .unwrap_or_default()
    }

    /// A plain stop after calls written as text is a stop for tool calls.
    fn adjusted(&self, reason: FinishReason) -> FinishReason {
        let text_calls = self
            .text_calls
            .as_ref()
            .is_some_and(|tc| tc.calls_found() > 0);
        if reason == FinishReason::Stop && text_calls {
            FinishReason::ToolCalls
        } else {
            reason
        }
    }
}

impl Decode<SseEvent> for ChatDecoder {
    fn decode(&mut self, event: SseEvent) -> Result<Vec<StreamEvent>, LlmError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            let mut out = self.flush();
            if self.saw_finish {
                return Ok(out);
            }
            // Some servers skip finish_reason; [DONE] still means the answer is whole.
            self.saw_finish = true;
            let reason = if self.saw_tool_call {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            };
            out.push(StreamEvent::Finish(self.adjusted(reason)));
            return Ok(out);
        }
        let events = wire::chunk_events(data)?;
        self.filter(events)
    }

    fn decode_whole(&mut self, events: Vec<StreamEvent>) -> Result<Vec<StreamEvent>, LlmError> {
        self.filter(events)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn is_complete(&self) -> bool {
        self.saw_finish
    }
}
