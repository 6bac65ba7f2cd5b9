//! The worker thread that owns one loaded model: llama.cpp's backend (initialised once per
//! process), the model, and one inference context whose KV cache is kept between requests so a
//! conversation's unchanged prefix (the system prompt, earlier turns) is not evaluated again.
//! Engines are shared per model file and settings, so a process loads each model once; the
//! thread ends when the last provider using it is dropped.

use std::num::NonZeroU32;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock, Weak, mpsc};

use hermes_llm::LlmError;
use hermes_protocol::{Message, StreamEvent, ToolSchema};
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;

use super::generate::Session;
use super::log_capture;
use super::template::Template;
use crate::settings::LocalSettings;

/// Sampling choices of one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sampling {
    pub temperature: f32,
    pub top_p: f32,
    pub seed: Option<u32>,
}

/// One request: the conversation and tools (formatted on the worker, which knows the model's
/// template), and where the events go. A closed channel means the caller stopped listening:
/// generation stops.
pub(crate) struct Job {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSchema>,
    /// `model.tool_choice: required`: while tools are offered, the reply is a call.
    pub require_tool_call: bool,
    pub sampling: Sampling,
    pub max_tokens: u32,
    pub events: tokio::sync::mpsc::UnboundedSender<Result<StreamEvent, LlmError>>,
}

pub(crate) struct Engine {
    /// `None` once the engine is being dropped.
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Drop for Engine {
    /// Closes the queue and waits for the worker to free the model: a process must not exit
    /// (running llama.cpp's static destructors) while its thread is still inside a decode.
    /// The worker notices a dropped caller at the next token, so this is short.
    fn drop(&mut self) {
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.take();
        }
        let worker = self.worker.lock().ok().and_then(|mut w| w.take());
        if let Some(worker) = worker {
            let _ = worker.join();
        }
    }
}

/// What makes two engines interchangeable.
type EngineKey = (std::path::PathBuf, Option<String>, u32, u32);

fn key(settings: &LocalSettings) -> EngineKey {
    (
        settings.model_path.clone(),
        settings.chat_template.clone(),
        settings.context_length,
        settings.threads,
    )
}

impl Engine {
    /// The running engine for these settings, or a new one (which starts loading at once).
    pub(crate) fn shared(settings: &LocalSettings) -> Arc<Engine> {
        static ENGINES: Mutex<Vec<(EngineKey, Weak<Engine>)>> = Mutex::new(Vec::new());
        let mut engines = ENGINES.lock().unwrap_or_else(|p| p.into_inner());
        engines.retain(|(_, e)| e.strong_count() > 0);
        let wanted = key(settings);
        if let Some(engine) = engines
            .iter()
            .find(|(k, _)| *k == wanted)
            .and_then(|(_, e)| e.upgrade())
        {
            return engine;
        }
        let (sender, receiver) = mpsc::channel();
        let worker_settings = settings.clone();
        // A thread that cannot start drops the receiver, and `submit` reports that.
        let worker = std::thread::Builder::new()
            .name("hermes-local".into())
            .spawn(move || work(&worker_settings, &receiver))
            .ok();
        let engine = Arc::new(Engine {
            jobs: Mutex::new(Some(sender)),
            worker: Mutex::new(worker),
        });
        engines.push((wanted, Arc::downgrade(&engine)));
        engine
    }

    pub(crate) fn submit(&self, job: Job) -> Result<(), LlmError> {
        let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        let not_running =
            || LlmError::Config("the local model's worker thread is not running".into());
        jobs.as_ref()
            .ok_or_else(not_running)?
            .send(job)
            .map_err(|_| not_running())
    }
}

/// The worker: load, then serve jobs until every sender is gone.
fn work(settings: &LocalSettings, jobs: &mpsc::Receiver<Job>) {
    let failure = match backend() {
        Ok(backend) => match load(backend, settings) {
            Ok(model) => serve(backend, &model, settings, jobs),
            Err(message) => message,
        },
        Err(message) => message.clone(),
    };
    for job in jobs {
        let _ = job.events.send(Err(LlmError::Config(failure.clone())));
    }
}

/// llama.cpp's process-wide backend; its logs go to `tracing`, where nothing prints them
/// unless a load is being watched ([`log_capture`]).
fn backend() -> Result<&'static LlamaBackend, &'static String> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| format!("cannot start llama.cpp: {e}"))
        })
        .as_ref()
}

fn load(backend: &LlamaBackend, settings: &LocalSettings) -> Result<LlamaModel, String> {
    let path = &settings.model_path;
    let (loaded, errors) = log_capture::errors_during(|| {
        LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
    });
    loaded.map_err(|e| {
        let detail = errors.last().cloned().unwrap_or_else(|| e.to_string());
        format!(
            "cannot load the model {}: {detail} (is the file complete and a model this llama.cpp supports?)",
            path.display()
        )
    })
}

/// Creates the context and answers jobs; returns the reason it stopped serving, if any.
fn serve(
    backend: &LlamaBackend,
    model: &LlamaModel,
    settings: &LocalSettings,
    jobs: &mpsc::Receiver<Job>,
) -> String {
    let n_ctx = settings.context_length.min(model.n_ctx_train().max(256));
    let threads = i32::try_from(settings.threads).unwrap_or(1).max(1);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        // Keep the whole sliding-window cache (Gemma 3) so a conversation's prefix can be
        // reused across requests instead of evaluated again.
        .with_swa_full(true);
    let (context, errors) = log_capture::errors_during(|| model.new_context(backend, params));
    let context = match context {
        Ok(c) => c,
        Err(e) => {
            let detail = errors.last().cloned().unwrap_or_else(|| e.to_string());
            return format!("cannot create a {n_ctx}-token context for the model: {detail}");
        }
    };
    let template = match Template::choose(model, settings.chat_template.as_deref()) {
        Ok(t) => t,
        Err(message) => return message,
    };
    let mut session = Session::new(model, context, template, settings);
    for job in jobs {
        let events = job.events.clone();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| session.run(&job)));
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                let _ = events.send(Err(error));
            }
            Err(_) => {
                let message = "the local model crashed while generating; restart hermes";
                let _ = events.send(Err(LlmError::Config(message.into())));
                return message.into();
            }
        }
    }
    String::new()
}
