//! The OpenAI-compatible API server: `GET /health`, `GET /v1/models` and
//! `POST /v1/chat/completions` (a JSON answer, or `chat.completion.chunk` events over SSE ending
//! in `data: [DONE]`, with `event: hermes.tool.progress` events for tool calls, as the Python
//! Hermes sends them). Each request is one agent turn run by the injected [`TurnRunner`]; turns
//! run concurrently up to a limit (429 beyond it), a client that goes away cancels its turn, and
//! shutting the server down cancels every turn in flight. With a key, every `/v1` request needs
//! `Authorization: Bearer KEY`; without one the server only binds to loopback addresses.

use std::collections::HashSet;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hermes_core::EventSink;
use hermes_protocol::{AgentEvent, Message, TurnEnd, Usage};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use crate::outcome;
use crate::wire::{self, ChatRequest, Completion};

/// Python's port.
pub const DEFAULT_PORT: u16 = 8642;
pub const DEFAULT_HOST: &str = "127.0.0.1";
/// Python's `gateway.api_server.max_concurrent_runs` default.
pub const DEFAULT_MAX_CONCURRENT: usize = 10;
/// The model id reported when nothing else names one (Python's).
pub const DEFAULT_MODEL_NAME: &str = "hermes-agent";

/// One turn as the runner receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnInput {
    /// The request's system messages, layered on the agent's own system prompt.
    pub system: Option<String>,
    /// The conversation before the last user message.
    pub history: Vec<Message>,
    pub user: String,
}

/// What a turn produced, and the stored session it was recorded in.
#[derive(Debug, Clone, Default)]
pub struct TurnOutcome {
    /// The last assistant text without tool calls.
    pub final_text: String,
    pub end: TurnEnd,
    pub usage: Usage,
    pub session_id: Option<String>,
}

/// A turn that could not start (the session could not be built: bad configuration, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RunnerError {
    pub message: String,
}

/// Runs one agent turn: builds a session, runs `input`, sends the agent's events to `events`
/// and stops when `cancel` fires.
#[async_trait::async_trait]
pub trait TurnRunner: Send + Sync + 'static {
    async fn run(
        &self,
        input: TurnInput,
        events: Arc<dyn EventSink>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, RunnerError>;
}

#[derive(Debug, Clone)]
pub struct ApiServerConfig {
    pub host: String,
    pub port: u16,
    /// `API_SERVER_KEY`: when set, every `/v1` request must carry it as a Bearer token.
    pub key: Option<String>,
    /// Turns allowed at once; 0 means no limit.
    pub max_concurrent: usize,
    /// The model id `/v1/models` reports and answers carry when the request names none.
    pub model_name: String,
    /// Reported by `/health`.
    pub version: String,
}

impl Default for ApiServerConfig {
    fn default() -> Self {
        ApiServerConfig {
            host: DEFAULT_HOST.into(),
            port: DEFAULT_PORT,
            key: None,
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            model_name: DEFAULT_MODEL_NAME.into(),
            version: String::new(),
        }
    }
}

/// Why the API server does not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "refusing to serve the API on {host} without a key: set API_SERVER_KEY (environment or .env) or bind to 127.0.0.1"
    )]
    NoKey { host: String },
    #[error("cannot listen on {host}:{port}: {source}")]
    Listen {
        host: String,
        port: u16,
        source: std::io::Error,
    },
}

/// Refuses a bind that would expose an unauthenticated agent: without a key only loopback
/// addresses (and `localhost`) are allowed.
pub fn check_bind(host: &str, key: Option<&str>) -> Result<(), ServeError> {
    if key.is_some_and(|k| !k.is_empty()) {
        return Ok(());
    }
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        Ok(())
    } else {
        Err(ServeError::NoKey {
            host: host.to_string(),
        })
    }
}

struct Shared {
    config: ApiServerConfig,
    runner: Arc<dyn TurnRunner>,
    limit: Option<Arc<Semaphore>>,
    /// Parent of every turn's cancellation: cancelled at shutdown.
    turns: CancellationToken,
}

/// A bound, not yet serving, API server.
pub struct ApiServer {
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
}

impl ApiServer {
    /// Checks the bind rule and binds `host:port` (port 0: any free port).
    pub async fn bind(
        config: ApiServerConfig,
        runner: Arc<dyn TurnRunner>,
    ) -> Result<Self, ServeError> {
        check_bind(&config.host, config.key.as_deref())?;
        let host = config.host.trim_start_matches('[').trim_end_matches(']');
        let listener = tokio::net::TcpListener::bind((host, config.port))
            .await
            .map_err(|source| ServeError::Listen {
                host: config.host.clone(),
                port: config.port,
                source,
            })?;
        let limit =
            (config.max_concurrent > 0).then(|| Arc::new(Semaphore::new(config.max_concurrent)));
        Ok(ApiServer {
            listener,
            shared: Arc::new(Shared {
                config,
                runner,
                limit,
                turns: CancellationToken::new(),
            }),
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` fires, then cancels the turns in flight and returns once their
    /// connections are done.
    pub async fn serve(self, shutdown: CancellationToken) -> std::io::Result<()> {
        let turns = self.shared.turns.clone();
        let app = router(self.shared);
        axum::serve(self.listener, app)
            .with_graceful_shutdown(async move {
                shutdown.cancelled().await;
                turns.cancel();
            })
            .await
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/v1/health", get(health))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat_completions))
        .fallback(not_found)
        .with_state(shared)
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

async fn not_found() -> Response {
    json_response(
        StatusCode::NOT_FOUND,
        wire::error_body("Not found", "invalid_request_error", None, None),
    )
}

async fn health(State(s): State<Arc<Shared>>) -> Response {
    json_response(
        StatusCode::OK,
        json!({"status": "ok", "platform": "hermes-agent", "version": s.config.version}),
    )
}

async fn models(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    json_response(
        StatusCode::OK,
        wire::models(&s.config.model_name, unix_now()),
    )
}

/// `None` when the request may proceed, else the 401 answer.
fn check_auth(s: &Shared, headers: &HeaderMap) -> Option<Response> {
    let key = s.config.key.as_deref().filter(|k| !k.is_empty())?;
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .unwrap_or_default();
    if constant_time_eq(token.as_bytes(), key.as_bytes()) {
        return None;
    }
    Some(json_response(
        StatusCode::UNAUTHORIZED,
        wire::error_body(
            "Invalid API key",
            "invalid_request_error",
            None,
            Some("invalid_api_key"),
        ),
    ))
}

/// Compares without stopping at the first difference, so the time taken says nothing about
/// how much of the key was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn completion_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "chatcmpl-{:x}{:04x}{:x}",
        nanos,
        n & 0xffff,
        std::process::id()
    )
}

async fn chat_completions(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    let request = match wire::parse_chat_request(&body) {
        Ok(r) => r,
        Err(bad) => return json_response(StatusCode::BAD_REQUEST, bad.body()),
    };
    let permit = match &s.limit {
        None => None,
        Some(sem) => match sem.clone().try_acquire_owned() {
            Ok(p) => Some(p),
            Err(_) => {
                let mut r = json_response(
                    StatusCode::TOO_MANY_REQUESTS,
                    wire::error_body(
                        &format!(
                            "Too many concurrent runs (the limit is {}); retry shortly",
                            s.config.max_concurrent
                        ),
                        "rate_limit_error",
                        None,
                        Some("concurrency_limit"),
                    ),
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                return r;
            }
        },
    };
    let completion = Completion {
        id: completion_id(),
        created: unix_now(),
        model: request
            .model
            .clone()
            .unwrap_or_else(|| s.config.model_name.clone()),
    };
    if request.stream {
        streamed(&s, request, completion, permit)
    } else {
        answered(&s, request, completion, permit).await
    }
}

fn turn_input(r: &ChatRequest) -> TurnInput {
    TurnInput {
        system: r.system.clone(),
        history: r.history.clone(),
        user: r.user.clone(),
    }
}

/// `finish_reason` of a finished turn, and the error to report with it.
fn finish_of(outcome: &Result<TurnOutcome, RunnerError>) -> (&'static str, Option<String>) {
    match outcome {
        Err(e) => ("error", Some(e.message.clone())),
        Ok(o) => (
            outcome::finish_reason(&o.end),
            match &o.end {
                TurnEnd::Interrupted => Some("the turn was cancelled".into()),
                TurnEnd::Failed(f) => Some(f.message.clone()),
                TurnEnd::Completed | TurnEnd::BudgetExhausted => None,
            },
        ),
    }
}

async fn answered(
    s: &Shared,
    request: ChatRequest,
    completion: Completion,
    permit: Option<OwnedSemaphorePermit>,
) -> Response {
    let cancel = s.turns.child_token();
    // Dropped with this handler when the client goes away: the turn stops.
    let guard = cancel.clone().drop_guard();
    let runner = s.runner.clone();
    let input = turn_input(&request);
    let task = tokio::spawn(async move {
        let _permit = permit;
        let events: Arc<dyn EventSink> = Arc::new(|_: AgentEvent| {});
        runner.run(input, events, cancel).await
    });
    let outcome = match task.await {
        Ok(o) => o,
        Err(e) => Err(RunnerError {
            message: format!("the turn failed: {e}"),
        }),
    };
    guard.disarm();
    let (finish_reason, error) = finish_of(&outcome);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                wire::error_body(&e.message, "server_error", None, None),
            );
        }
    };
    let mut response = match outcome::error_shape(&outcome.end) {
        Some(shape) => {
            let mut r = json_response(
                shape.status,
                wire::error_body(
                    error.as_deref().unwrap_or_default(),
                    shape.kind,
                    None,
                    Some(shape.code),
                ),
            );
            if let Some(secs) = outcome::retry_after(&outcome.end)
                && let Ok(v) = HeaderValue::from_str(&secs.to_string())
            {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            r
        }
        None => json_response(
            StatusCode::OK,
            completion.answer(&outcome.final_text, finish_reason, &outcome.usage),
        ),
    };
    if let Some(id) = outcome
        .session_id
        .as_deref()
        .and_then(|id| HeaderValue::from_str(id).ok())
    {
        response.headers_mut().insert("x-hermes-session-id", id);
    }
    response
}

fn streamed(
    s: &Shared,
    request: ChatRequest,
    completion: Completion,
    permit: Option<OwnedSemaphorePermit>,
) -> Response {
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let _ = tx.send(wire::sse(
        None,
        &completion.chunk(json!({"role": "assistant"}), None),
    ));
    let cancel = s.turns.child_token();
    let events = stream_sink(tx.clone(), completion.clone());
    let runner = s.runner.clone();
    let input = turn_input(&request);
    let include_usage = request.include_usage;
    let turn_cancel = cancel.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let outcome = runner.run(input, events, turn_cancel).await;
        let (finish_reason, error) = finish_of(&outcome);
        let mut last = completion.chunk(json!({}), Some(finish_reason));
        if let Some(e) = error {
            let (kind, code) = match &outcome {
                Ok(o) => outcome::error_shape(&o.end)
                    .map(|s| (s.kind, s.code))
                    .unwrap_or(("server_error", "agent_error")),
                Err(_) => ("server_error", "agent_error"),
            };
            last["error"] = json!({"message": e, "type": kind, "code": code});
        }
        let _ = tx.send(wire::sse(None, &last));
        if include_usage {
            let usage = outcome.map(|o| o.usage).unwrap_or_default();
            let _ = tx.send(wire::sse(None, &completion.usage_chunk(&usage)));
        }
        let _ = tx.send(wire::SSE_DONE.to_string());
    });
    // The body owns the guard: when the client disconnects the body is dropped and the turn
    // is cancelled.
    let guard = cancel.drop_guard();
    let stream = futures_util::stream::unfold((rx, guard), |(mut rx, guard)| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, Infallible>(chunk), (rx, guard)))
    });
    let mut response = Response::new(Body::from_stream(stream));
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// The sink of a streamed turn: answer text as content chunks, tool calls as
/// `hermes.tool.progress` events (`running`, then `completed` for a call seen starting).
fn stream_sink(tx: mpsc::UnboundedSender<String>, completion: Completion) -> Arc<dyn EventSink> {
    let started: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
    Arc::new(move |event: AgentEvent| match event {
        AgentEvent::TextDelta(text) if !text.is_empty() => {
            let _ = tx.send(wire::sse(
                None,
                &completion.chunk(json!({"content": text}), None),
            ));
        }
        AgentEvent::ToolStarted {
            call_id,
            name,
            preview,
        } => {
            if let Ok(mut s) = started.lock() {
                s.insert(call_id.clone());
            }
            let label = if preview.is_empty() {
                name.clone()
            } else {
                preview
            };
            let _ = tx.send(wire::sse(
                Some("hermes.tool.progress"),
                &json!({"tool": name, "label": label, "toolCallId": call_id, "status": "running"}),
            ));
        }
        AgentEvent::ToolFinished { call_id, name, .. } => {
            let seen = started.lock().is_ok_and(|mut s| s.remove(&call_id));
            if seen {
                let _ = tx.send(wire::sse(
                    Some("hermes.tool.progress"),
                    &json!({"tool": name, "toolCallId": call_id, "status": "completed"}),
                ));
            }
        }
        _ => {}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_binds_go_without_a_key() {
        assert!(check_bind("127.0.0.1", None).is_ok());
        assert!(check_bind("::1", None).is_ok());
        assert!(check_bind("localhost", None).is_ok());
        let err = check_bind("0.0.0.0", None).unwrap_err();
        assert!(err.to_string().contains("API_SERVER_KEY"), "{err}");
        assert!(check_bind("0.0.0.0", Some("")).is_err());
        assert!(check_bind("0.0.0.0", Some("k")).is_ok());
    }

    #[test]
    fn constant_time_compare() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
        assert!(constant_time_eq(b"", b""));
    }
}
