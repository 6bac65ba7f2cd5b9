//! [`LocalProvider`]: a GGUF model run in-process by llama.cpp, behind the same `Provider`
//! trait as remote models. Inference is blocking CPU work, so each model lives on its own
//! worker thread ([`engine`]) that loads it once and serves requests one at a time, streaming
//! events back through a channel; dropping the stream (the agent does on Ctrl-C) stops
//! generation at the next token.

mod engine;
mod generate;
mod log_capture;
mod template;

use std::sync::Arc;

use hermes_llm::{ChatRequest, EventStream, LlmError, Provider};
use hermes_protocol::StreamEvent;

use crate::settings::{LocalSettings, ModelFileError, check_model_file};
use engine::{Engine, Job, Sampling};

pub struct LocalProvider {
    settings: LocalSettings,
    endpoint: String,
    engine: Arc<Engine>,
}

impl std::fmt::Debug for LocalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalProvider")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl LocalProvider {
    /// Checks the model file and starts loading it in the background (a process shares one
    /// loaded copy per file and settings). Load failures (a truncated file, an architecture
    /// this llama.cpp does not know) are reported by the first request.
    pub fn new(settings: LocalSettings) -> Result<Self, ModelFileError> {
        check_model_file(&settings)?;
        let engine = Engine::shared(&settings);
        Ok(LocalProvider {
            endpoint: settings.model_path.display().to_string(),
            settings,
            engine,
        })
    }

    pub fn settings(&self) -> &LocalSettings {
        &self.settings
    }
}

#[async_trait::async_trait]
impl Provider for LocalProvider {
    fn name(&self) -> &str {
        "local"
    }

    fn endpoint(&self) -> &str {
        &self.endpoint
    }

    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError> {
        let (events, receiver) = tokio::sync::mpsc::unbounded_channel();
        let s = &self.settings;
        self.engine.submit(Job {
            system: request.system.to_string(),
            messages: request.messages.to_vec(),
            tools: request.tools.to_vec(),
            require_tool_call: s.require_tool_call,
            sampling: Sampling {
                temperature: request.temperature.unwrap_or(s.temperature),
                top_p: s.top_p,
                seed: s.seed,
            },
            max_tokens: request
                .max_tokens
                .filter(|n| *n > 0)
                .unwrap_or(s.max_tokens),
            events,
        })?;
        Ok(finished_or_cut(receiver))
    }
}

/// The job's events; a worker that goes away before finishing (it never should) ends the
/// stream with an error instead of a silently short answer.
fn finished_or_cut(
    receiver: tokio::sync::mpsc::UnboundedReceiver<Result<StreamEvent, LlmError>>,
) -> EventStream {
    struct Tail {
        receiver: tokio::sync::mpsc::UnboundedReceiver<Result<StreamEvent, LlmError>>,
        finished: bool,
        done: bool,
    }
    let tail = Tail {
        receiver,
        finished: false,
        done: false,
    };
    Box::pin(futures_util::stream::unfold(tail, |mut st| async move {
        if st.done {
            return None;
        }
        match st.receiver.recv().await {
            Some(item) => {
                match &item {
                    Ok(StreamEvent::Finish(_)) => st.finished = true,
                    Err(_) => st.done = true,
                    Ok(_) => {}
                }
                Some((item, st))
            }
            None => {
                st.done = true;
                (!st.finished).then(|| {
                    let cut = LlmError::StreamCut(
                        "the local model stopped before finishing its reply".into(),
                    );
                    (Err(cut), st)
                })
            }
        }
    }))
}
