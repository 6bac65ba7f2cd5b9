//! The OpenAI Chat Completions wire format (`POST {base}/chat/completions`, SSE streaming),
//! spoken by OpenAI, OpenRouter, Nous Portal, Gemini's OpenAI endpoint, DeepSeek, xAI, Ollama,
//! vLLM, llama.cpp server, LM Studio and most custom endpoints. Our own serde types: requests
//! borrow the conversation; responses are parsed tolerantly (unknown fields ignored, `null` and
//! missing treated alike, non-streamed JSON accepted when a server ignores `stream: true`).

mod wire;

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use hermes_protocol::{FinishReason, StreamEvent};

use crate::sse::{SseEvent, SseParser};
use crate::{ChatRequest, EventStream, HttpTimeouts, LlmError, Provider, ProviderSpec};

/// Longest error body we keep from a failed response.
const MAX_ERROR_BODY: usize = 64 * 1024;

pub struct OpenAiChat {
    name: String,
    url: String,
    api_key: Option<String>,
    client: reqwest::Client,
}

impl OpenAiChat {
    pub fn new(spec: &ProviderSpec, timeouts: &HttpTimeouts) -> Result<Self, LlmError> {
        Ok(OpenAiChat {
            name: spec.provider.clone(),
            url: format!("{}/chat/completions", spec.base_url.trim_end_matches('/')),
            api_key: spec.api_key.clone(),
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
        let body = serde_json::to_vec(&wire::RequestBody::new(request))
            .map_err(|e| LlmError::Config(format!("cannot encode the request: {e}")))?;
        let mut http = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                reqwest::header::ACCEPT,
                "text/event-stream, application/json",
            )
            .body(body);
        if let Some(key) = &self.api_key {
            http = http.bearer_auth(key);
        }
        let response = http
            .send()
            .await
            .map_err(|e| LlmError::from_reqwest(&e, false))?;
        let status = response.status();
        if !status.is_success() {
            return Err(http_error(response).await);
        }
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("application/json"));
        if is_json {
            let bytes = response
                .bytes()
                .await
                .map_err(|e| LlmError::from_reqwest(&e, true))?;
            let events = wire::completion_events(&bytes)?;
            return Ok(Box::pin(futures_util::stream::iter(
                events.into_iter().map(Ok),
            )));
        }
        Ok(sse_stream(Box::pin(response.bytes_stream())))
    }
}

/// Turns an error response into an [`LlmError::Http`] with the provider's message.
async fn http_error(response: reqwest::Response) -> LlmError {
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    LlmError::Http {
        status,
        message: wire::error_message(&body, status),
        retry_after,
    }
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 86_400.0)));
    }
    get("retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite())
        .map(|s| Duration::from_secs_f64(s.clamp(0.0, 86_400.0)))
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// Where a streamed response stands.
struct SseState {
    body: ByteStream,
    parser: SseParser,
    queue: VecDeque<Result<StreamEvent, LlmError>>,
    /// No more reading: `[DONE]` seen, the body ended, or an error was queued.
    closed: bool,
    saw_finish: bool,
    saw_tool_call: bool,
}

fn sse_stream(body: ByteStream) -> EventStream {
    let state = SseState {
        body,
        parser: SseParser::new(),
        queue: VecDeque::new(),
        closed: false,
        saw_finish: false,
        saw_tool_call: false,
    };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.queue.pop_front() {
                return Some((item, st));
            }
            if st.closed {
                return None;
            }
            match st.body.next().await {
                Some(Ok(bytes)) => match st.parser.push(&bytes) {
                    Ok(events) => {
                        for ev in events {
                            st.handle(ev);
                        }
                    }
                    Err(e) => st.fail(LlmError::Decode(e)),
                },
                Some(Err(e)) => st.fail(LlmError::from_reqwest(&e, true)),
                None => {
                    if let Some(ev) = st.parser.finish() {
                        st.handle(ev);
                    }
                    if !st.closed {
                        st.closed = true;
                        if !st.saw_finish {
                            st.queue.push_back(Err(LlmError::StreamCut(
                                "the response ended before the model finished".into(),
                            )));
                        }
                    }
                }
            }
        }
    }))
}

impl SseState {
    fn handle(&mut self, event: SseEvent) {
        if self.closed {
            return;
        }
        let data = event.data.trim();
        if data.is_empty() {
            return;
        }
        if data == "[DONE]" {
            self.closed = true;
            if !self.saw_finish {
                // Some servers skip finish_reason; [DONE] still means the answer is whole.
                self.saw_finish = true;
                let reason = if self.saw_tool_call {
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                };
                self.queue.push_back(Ok(StreamEvent::Finish(reason)));
            }
            return;
        }
        match wire::chunk_events(data) {
            Ok(events) => {
                for ev in events {
                    match &ev {
                        StreamEvent::Finish(_) => self.saw_finish = true,
                        StreamEvent::ToolCallDelta { .. } => self.saw_tool_call = true,
                        _ => {}
                    }
                    self.queue.push_back(Ok(ev));
                }
            }
            Err(e) => self.fail(e),
        }
    }

    fn fail(&mut self, error: LlmError) {
        self.closed = true;
        self.queue.push_back(Err(error));
    }
}
