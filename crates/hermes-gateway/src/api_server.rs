//! The OpenAI-compatible API server, the Python Hermes's routes: `GET /health`,
//! `GET /v1/models[/{id}]`, `POST /v1/chat/completions` ([`chat`]: a JSON answer, or
//! `chat.completion.chunk` events over SSE ending in `data: [DONE]`), and the Responses API
//! ([`responses`]: `POST /v1/responses`, `GET`/`DELETE /v1/responses/{id}`, chained through
//! `previous_response_id` over a bounded [`response_store`]) and runs ([`runs`]: a turn started
//! in the background, followed over an event stream, its approval prompts answered through the
//! API, stoppable). Each request is one agent turn run
//! by the injected [`TurnRunner`]; turns run concurrently up to a limit (429 beyond it), a client
//! that goes away cancels its turn, and shutting the server down cancels every turn in flight.
//! With a key, every route but `/health` needs `Authorization: Bearer KEY`; without one the
//! server only binds to loopback addresses. Every error is OpenAI's error envelope; an unknown
//! route answers 404 naming the routes that exist. Every request first passes the [`guard`]
//! (origin, Host, JSON-only bodies read within a deadline) and every connection the
//! [`listener`]'s limits (header deadline, a connection cap that closes idle connections
//! first).
//!
//! With a [`Backing`] (the gateway's runtime) the server also offers the home's resources:
//! stored sessions ([`sessions`], turns in them through [`session_chat`]), cron jobs
//! ([`jobs`]), and the catalogue of skills and toolsets with a detailed health ([`catalog`]).

mod catalog;
pub mod chat;
mod guard;
pub use guard::loopback_host;
mod jobs;
pub mod listener;
pub mod model_routes;
pub mod response_store;
pub mod responses;
pub mod runs;
mod session_chat;
mod sessions;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hermes_core::EventSink;
use hermes_protocol::{Message, TurnEnd, Usage};
use hermes_runtime::Runtime;
use serde_json::{Value, json};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

pub use model_routes::ModelRoute;

use crate::chat::ChatGateway;
use crate::outcome;
use crate::wire;

/// Python's port.
pub const DEFAULT_PORT: u16 = 8642;
pub const DEFAULT_HOST: &str = "127.0.0.1";
/// Python's `gateway.api_server.max_concurrent_runs` default.
pub const DEFAULT_MAX_CONCURRENT: usize = 10;
/// The model id reported when nothing else names one (Python's).
pub const DEFAULT_MODEL_NAME: &str = "hermes-agent";
/// The largest request body accepted (a long conversation with images fits; more is 413).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Continue a stored session: the conversation comes from the store, the answer names it.
pub const SESSION_ID_HEADER: &str = "x-hermes-session-id";
/// The long-term memory scope a client names: facts the memory provider stores in the turn
/// carry it, and recall sees only facts carrying it. Echoed on the answer.
pub const SESSION_KEY_HEADER: &str = "x-hermes-session-key";
/// Opt in to `event: hermes.tool.progress` SSE events (value `events`, `1` or `true`); without
/// it tool progress travels as SSE comment lines, which every standard client skips.
pub const TOOL_PROGRESS_HEADER: &str = "x-hermes-tool-progress";
/// Python's `CHAT_COMPLETIONS_SSE_KEEPALIVE_SECONDS`: a stream silent this long (a slow tool,
/// a long model call) gets a `: keepalive` comment, so proxies and clients with read timeouts
/// keep the connection.
pub const DEFAULT_SSE_KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(30);
/// The comment line sent on a silent stream; every SSE client skips it.
pub const SSE_KEEPALIVE_LINE: &str = ": keepalive\n\n";
/// Longest session id accepted in [`SESSION_ID_HEADER`].
const MAX_SESSION_ID_LEN: usize = 256;

/// The routes this server answers, named by the 404 of any other.
pub const ROUTES: &[&str] = &[
    "GET /health",
    "GET /v1/health",
    "GET /v1/models",
    "GET /v1/models/{model}",
    "GET /v1/capabilities",
    "POST /v1/chat/completions",
    "POST /v1/responses",
    "GET /v1/responses/{response_id}",
    "DELETE /v1/responses/{response_id}",
    "POST /v1/runs",
    "GET /v1/runs/{run_id}",
    "GET /v1/runs/{run_id}/events",
    "POST /v1/runs/{run_id}/approval",
    "POST /v1/runs/{run_id}/stop",
    "GET /health/detailed",
    "GET /v1/skills",
    "GET /v1/toolsets",
    "GET /api/sessions",
    "POST /api/sessions",
    "GET /api/sessions/{session_id}",
    "PATCH /api/sessions/{session_id}",
    "DELETE /api/sessions/{session_id}",
    "GET /api/sessions/{session_id}/messages",
    "POST /api/sessions/{session_id}/fork",
    "POST /api/sessions/{session_id}/chat",
    "POST /api/sessions/{session_id}/chat/stream",
    "GET /api/jobs",
    "POST /api/jobs",
    "GET /api/jobs/{job_id}",
    "PATCH /api/jobs/{job_id}",
    "DELETE /api/jobs/{job_id}",
    "POST /api/jobs/{job_id}/pause",
    "POST /api/jobs/{job_id}/resume",
    "POST /api/jobs/{job_id}/run",
];

/// One turn as the runner receives it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnInput {
    /// The client's own system text (system messages, `instructions`): merged into the agent's
    /// system prompt, never sent as a second system message.
    pub system: Option<String>,
    /// The conversation before `user`; `None`: the stored conversation of `session`.
    pub history: Option<Vec<Message>>,
    pub user: String,
    /// Images given with `user`.
    pub images: Vec<hermes_protocol::Image>,
    /// The stored session to record the turn in (and, without `history`, to continue);
    /// `None`: a new one.
    pub session: Option<String>,
    /// Who answers approval prompts (a run's API client); `None`: nobody is asked, the
    /// session's unattended rules apply.
    pub approver: Option<Approver>,
    /// The `model_routes` entry the request named as its model; `None`: the configured model.
    pub route: Option<ModelRoute>,
    /// The client's own tools, offered beside ours ([`crate::client_tools`]).
    pub tools: Vec<hermes_protocol::ToolSchema>,
    /// Results of the client's tool calls: when present the turn continues from them and
    /// `user` is unused.
    pub tool_results: Vec<Message>,
    /// The client's `X-Hermes-Session-Key`: scopes the memory provider's facts.
    pub memory_scope: Option<String>,
}

/// The [`Interaction`](hermes_tools::Interaction) a turn asks for approvals.
#[derive(Clone)]
pub struct Approver(pub Arc<dyn hermes_tools::Interaction>);

impl std::fmt::Debug for Approver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Approver")
    }
}

impl PartialEq for Approver {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// What a turn produced, and the stored session it was recorded in.
#[derive(Debug, Clone, Default)]
pub struct TurnOutcome {
    /// The last assistant text without tool calls.
    pub final_text: String,
    pub end: TurnEnd,
    pub usage: Usage,
    pub session_id: Option<String>,
    /// The conversation after the turn (without the system prompt): what a later turn
    /// chained to this one continues from.
    pub conversation: Vec<Message>,
    /// What this turn added to it: the user message, assistant messages (with their tool
    /// calls), tool results.
    pub added: Vec<Message>,
    /// Calls of the client's own tools the turn stopped at, for the client to run.
    pub client_calls: Vec<hermes_protocol::ToolCall>,
}

/// A turn that could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunnerError {
    /// The stored session to continue does not exist.
    #[error("Session not found: {0}")]
    SessionNotFound(String),
    /// The session could not be built (bad configuration, a damaged store, ...).
    #[error("{0}")]
    Setup(String),
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
    /// `API_SERVER_KEY`: when set, every route but `/health` must carry it as a Bearer token.
    pub key: Option<String>,
    /// Turns allowed at once; 0 means no limit.
    pub max_concurrent: usize,
    /// The model id `/v1/models` reports and answers carry when the request names none.
    pub model_name: String,
    /// Reported by `/health`.
    pub version: String,
    /// Where stored Responses live across restarts (`None`: in memory only).
    pub response_store: Option<PathBuf>,
    /// `API_SERVER_CORS_ORIGINS`: browser origins allowed to call the server (`*`: any);
    /// a request from any other origin is refused.
    pub cors_origins: Vec<String>,
    /// `API_SERVER_ALLOWED_HOSTS`: `Host` names answered besides the loopback ones when the
    /// server listens on loopback (`*`: any).
    pub allowed_hosts: Vec<String>,
    pub connections: listener::ConnectionLimits,
    /// What the resource routes read (sessions, jobs, skills, toolsets, detailed health).
    pub backing: Backing,
    /// `model_routes`: aliases a request may name as its model, in order.
    pub model_routes: Vec<(String, ModelRoute)>,
    /// `gateway.api_server.sse_keepalive`: silence after which a stream gets a keepalive.
    pub sse_keepalive: std::time::Duration,
}

/// The gateway behind the resource routes; without a runtime, the session routes answer 503,
/// the job routes 501 and the catalogue routes 500, as the Python Hermes does without them.
#[derive(Clone, Default)]
pub struct Backing {
    /// The home's runtime: its session store, cron store, skills and tool catalogue.
    pub runtime: Option<Runtime>,
    /// Wakes the gateway's cron scheduler (a job made due by `POST /api/jobs/{id}/run`).
    pub cron_wake: Option<Arc<Notify>>,
    /// The chat platforms, reported by `/health/detailed`.
    pub chats: Option<Arc<ChatGateway>>,
}

impl std::fmt::Debug for Backing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backing")
            .field("runtime", &self.runtime)
            .field("cron_wake", &self.cron_wake.is_some())
            .field("chats", &self.chats.is_some())
            .finish()
    }
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
            response_store: None,
            cors_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            connections: listener::ConnectionLimits::default(),
            backing: Backing::default(),
            model_routes: Vec::new(),
            sse_keepalive: DEFAULT_SSE_KEEPALIVE,
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
    #[error(transparent)]
    Store(#[from] response_store::StoreError),
}

/// Refuses a bind that would expose an unauthenticated agent: without a key only loopback
/// addresses (and `localhost`) are allowed.
pub fn check_bind(host: &str, key: Option<&str>) -> Result<(), ServeError> {
    if key.is_some_and(|k| !k.is_empty()) || is_loopback_bind(host) {
        Ok(())
    } else {
        Err(ServeError::NoKey {
            host: host.to_string(),
        })
    }
}

/// Whether `host` (a bind address) is a loopback one.
fn is_loopback_bind(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

pub(crate) struct Shared {
    pub(crate) config: ApiServerConfig,
    pub(crate) runner: Arc<dyn TurnRunner>,
    limit: Option<Arc<Semaphore>>,
    /// Parent of every turn's cancellation: cancelled at shutdown.
    pub(crate) turns: CancellationToken,
    pub(crate) responses: response_store::ResponseStore,
    pub(crate) runs: runs::Runs,
    pub(crate) browser: guard::BrowserPolicy,
    /// When the server was bound (`/health/detailed`'s uptime).
    pub(crate) started: SystemTime,
    /// Turns running now, counted around the runner.
    pub(crate) active: Arc<AtomicUsize>,
}

/// The injected runner, counting the turns in flight.
struct Counted {
    inner: Arc<dyn TurnRunner>,
    active: Arc<AtomicUsize>,
}

/// Takes one off the count when a turn ends, however it ends (a cancelled future included).
struct Running(Arc<AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[async_trait::async_trait]
impl TurnRunner for Counted {
    async fn run(
        &self,
        input: TurnInput,
        events: Arc<dyn EventSink>,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, RunnerError> {
        self.active.fetch_add(1, Ordering::Relaxed);
        let _running = Running(self.active.clone());
        self.inner.run(input, events, cancel).await
    }
}

impl Shared {
    /// The route a request's `model` names, if it names an alias.
    pub(crate) fn route(&self, model: Option<&str>) -> Option<ModelRoute> {
        let model = model?;
        self.config
            .model_routes
            .iter()
            .find(|(alias, _)| alias == model)
            .map(|(_, route)| route.clone())
    }
}

/// A bound, not yet serving, API server.
pub struct ApiServer {
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
}

impl ApiServer {
    /// Checks the bind rule, opens the response store and binds `host:port` (port 0: any free
    /// port).
    pub async fn bind(
        config: ApiServerConfig,
        runner: Arc<dyn TurnRunner>,
    ) -> Result<Self, ServeError> {
        check_bind(&config.host, config.key.as_deref())?;
        let responses = response_store::ResponseStore::open(
            config.response_store.as_deref(),
            response_store::MAX_STORED_RESPONSES,
        )?;
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
        let browser = guard::BrowserPolicy::new(
            &config.cors_origins,
            is_loopback_bind(&config.host),
            &config.allowed_hosts,
            config.connections.body_timeout,
        );
        let active = Arc::new(AtomicUsize::new(0));
        let runner: Arc<dyn TurnRunner> = Arc::new(Counted {
            inner: runner,
            active: active.clone(),
        });
        Ok(ApiServer {
            listener,
            shared: Arc::new(Shared {
                config,
                runner,
                started: SystemTime::now(),
                active,
                limit,
                turns: CancellationToken::new(),
                responses,
                runs: runs::Runs::new(runs::MAX_KEPT_RUNS),
                browser,
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
        let limits = self.shared.config.connections;
        let app = router(self.shared);
        let cancel_turns = {
            let shutdown = shutdown.clone();
            async move {
                shutdown.cancelled().await;
                turns.cancel();
            }
        };
        tokio::join!(
            listener::serve(self.listener, app, limits, shutdown),
            cancel_turns
        );
        Ok(())
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/v1/health", get(health))
        .route("/v1/models", get(models))
        .route("/v1/models/{model}", get(model))
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/v1/responses", post(responses::create))
        .route(
            "/v1/responses/{id}",
            get(responses::retrieve).delete(responses::delete),
        )
        .route("/v1/capabilities", get(capabilities))
        .route("/v1/runs", post(runs::start))
        .route("/v1/runs/{id}", get(runs::status))
        .route("/v1/runs/{id}/events", get(runs::events))
        .route("/v1/runs/{id}/approval", post(runs::approval))
        .route("/v1/runs/{id}/stop", post(runs::stop))
        .route("/health/detailed", get(catalog::health_detailed))
        .route("/v1/skills", get(catalog::skills))
        .route("/v1/toolsets", get(catalog::toolsets))
        .route("/api/sessions", get(sessions::list).post(sessions::create))
        .route(
            "/api/sessions/{id}",
            get(sessions::get)
                .patch(sessions::patch)
                .delete(sessions::delete),
        )
        .route("/api/sessions/{id}/messages", get(sessions::messages))
        .route("/api/sessions/{id}/fork", post(sessions::fork))
        .route("/api/sessions/{id}/chat", post(session_chat::chat))
        .route(
            "/api/sessions/{id}/chat/stream",
            post(session_chat::chat_stream),
        )
        .route("/api/jobs", get(jobs::list).post(jobs::create))
        .route(
            "/api/jobs/{id}",
            get(jobs::get).patch(jobs::patch).delete(jobs::delete),
        )
        .route("/api/jobs/{id}/pause", post(jobs::pause))
        .route("/api/jobs/{id}/resume", post(jobs::resume))
        .route("/api/jobs/{id}/run", post(jobs::run))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            guard::guard,
        ))
        .with_state(shared)
}

pub(crate) fn json_response(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// An error answer in OpenAI's envelope.
pub(crate) fn error_response(
    status: StatusCode,
    message: &str,
    kind: &str,
    code: Option<&str>,
) -> Response {
    json_response(status, wire::error_body(message, kind, None, code))
}

async fn not_found(method: Method, uri: Uri) -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        &format!(
            "Unknown route: {method} {}. This server answers: {}",
            uri.path(),
            ROUTES.join(", ")
        ),
        "invalid_request_error",
        Some("unknown_route"),
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
    let now = unix_now();
    let mut listing = wire::models(&s.config.model_name, now);
    if let Some(data) = listing["data"].as_array_mut() {
        for (alias, route) in &s.config.model_routes {
            if *alias != s.config.model_name {
                data.push(wire::routed_model(alias, route, &s.config.model_name, now));
            }
        }
    }
    json_response(StatusCode::OK, listing)
}

async fn model(
    State(s): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    if let Some(route) = s.route(Some(&id)).filter(|_| id != s.config.model_name) {
        return json_response(
            StatusCode::OK,
            wire::routed_model(&id, &route, &s.config.model_name, unix_now()),
        );
    }
    if id != s.config.model_name {
        return error_response(
            StatusCode::NOT_FOUND,
            &format!(
                "The model '{id}' does not exist; this server answers as '{}'",
                s.config.model_name
            ),
            "invalid_request_error",
            Some("model_not_found"),
        );
    }
    json_response(
        StatusCode::OK,
        wire::model(&s.config.model_name, unix_now()),
    )
}

/// `GET /v1/capabilities`: the API surface this server has, in the Python Hermes's shape, for
/// clients that discover features instead of assuming them (what this build lacks is `false`
/// and has no endpoint entry).
async fn capabilities(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if let Some(denied) = check_auth(&s, &headers) {
        return denied;
    }
    let endpoint = |method: &str, path: &str| json!({"method": method, "path": path});
    let backed = s.config.backing.runtime.is_some();
    json_response(
        StatusCode::OK,
        json!({
            "object": "hermes.api_server.capabilities",
            "platform": "hermes-agent",
            "model": s.config.model_name,
            "auth": {"type": "bearer", "required": s.config.key.as_deref().is_some_and(|k| !k.is_empty())},
            "runtime": {
                "mode": "server_agent",
                "tool_execution": "server",
                "split_runtime": false,
                "description": "Each request runs a Hermes agent turn on the server; tools execute on the API server's host.",
            },
            "features": {
                "chat_completions": true,
                "chat_completions_streaming": true,
                "responses_api": true,
                "responses_streaming": true,
                "run_submission": true,
                "run_status": true,
                "run_events_sse": true,
                "run_stop": true,
                "run_approval_response": true,
                "tool_progress_events": true,
                "tool_progress_header": "X-Hermes-Tool-Progress",
                "approval_events": true,
                "session_resources": backed,
                "session_chat": backed,
                "session_chat_streaming": backed,
                "session_fork": backed,
                "admin_config_rw": false,
                "jobs_admin": backed,
                "memory_write_api": false,
                "skills_api": backed,
                "audio_api": false,
                "realtime_voice": false,
                "session_continuity_header": "X-Hermes-Session-Id",
                "session_key_header": "X-Hermes-Session-Key",
                // Beyond the Python Hermes: tools defined by the client, handed back to it.
                "client_tools": true,
                "sse_keepalive_seconds": s.config.sse_keepalive.as_secs_f64(),
                "cors": s.browser.cors_enabled(),
            },
            "endpoints": {
                "health": endpoint("GET", "/health"),
                "health_detailed": endpoint("GET", "/health/detailed"),
                "models": endpoint("GET", "/v1/models"),
                "model": endpoint("GET", "/v1/models/{model}"),
                "chat_completions": endpoint("POST", "/v1/chat/completions"),
                "responses": endpoint("POST", "/v1/responses"),
                "response": endpoint("GET", "/v1/responses/{response_id}"),
                "response_delete": endpoint("DELETE", "/v1/responses/{response_id}"),
                "runs": endpoint("POST", "/v1/runs"),
                "run_status": endpoint("GET", "/v1/runs/{run_id}"),
                "run_events": endpoint("GET", "/v1/runs/{run_id}/events"),
                "run_approval": endpoint("POST", "/v1/runs/{run_id}/approval"),
                "run_stop": endpoint("POST", "/v1/runs/{run_id}/stop"),
                "skills": endpoint("GET", "/v1/skills"),
                "toolsets": endpoint("GET", "/v1/toolsets"),
                "sessions": endpoint("GET", "/api/sessions"),
                "session_create": endpoint("POST", "/api/sessions"),
                "session": endpoint("GET", "/api/sessions/{session_id}"),
                "session_update": endpoint("PATCH", "/api/sessions/{session_id}"),
                "session_delete": endpoint("DELETE", "/api/sessions/{session_id}"),
                "session_messages": endpoint("GET", "/api/sessions/{session_id}/messages"),
                "session_fork": endpoint("POST", "/api/sessions/{session_id}/fork"),
                "session_chat": endpoint("POST", "/api/sessions/{session_id}/chat"),
                "session_chat_stream": endpoint("POST", "/api/sessions/{session_id}/chat/stream"),
                "jobs": endpoint("GET", "/api/jobs"),
            },
        }),
    )
}

/// `None` when the request may proceed, else the 401 answer.
pub(crate) fn check_auth(s: &Shared, headers: &HeaderMap) -> Option<Response> {
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
    Some(error_response(
        StatusCode::UNAUTHORIZED,
        "Invalid API key",
        "invalid_request_error",
        Some("invalid_api_key"),
    ))
}

/// The trimmed value of a header that only a keyed server accepts (`Ok(None)`: absent or
/// empty), or the 403 naming why: both session headers reach stored data of other clients.
fn keyed_header<'h>(
    s: &Shared,
    headers: &'h HeaderMap,
    name: &str,
    forbidden: &str,
    code: &str,
) -> Result<Option<&'h str>, Box<Response>> {
    let Some(raw) = headers.get(name) else {
        return Ok(None);
    };
    let value = raw.to_str().map(str::trim).unwrap_or("\u{0}");
    if value.is_empty() {
        return Ok(None);
    }
    if s.config.key.as_deref().is_none_or(str::is_empty) {
        return Err(Box::new(error_response(
            StatusCode::FORBIDDEN,
            forbidden,
            "invalid_request_error",
            Some(code),
        )));
    }
    Ok(Some(value))
}

/// The stored session a request asks to continue ([`SESSION_ID_HEADER`]): `Ok(None)` without
/// the header. As in the Python Hermes, continuing exposes a stored conversation, so it needs
/// a configured key (403 without one); ids with control characters or path separators, or
/// longer than 256 bytes, are refused (400).
pub(crate) fn session_header(
    s: &Shared,
    headers: &HeaderMap,
) -> Result<Option<String>, Box<Response>> {
    let Some(id) = keyed_header(
        s,
        headers,
        SESSION_ID_HEADER,
        "Session continuation requires API key authentication: set API_SERVER_KEY",
        "session_continuation_forbidden",
    )?
    else {
        return Ok(None);
    };
    if id.len() > MAX_SESSION_ID_LEN {
        return Err(Box::new(error_response(
            StatusCode::BAD_REQUEST,
            "Session ID too long",
            "invalid_request_error",
            Some("invalid_session_id"),
        )));
    }
    if id.chars().any(char::is_control) || id.contains(['/', '\\']) || id.contains("..") {
        return Err(Box::new(error_response(
            StatusCode::BAD_REQUEST,
            "Invalid session ID",
            "invalid_request_error",
            Some("invalid_session_id"),
        )));
    }
    Ok(Some(id.to_string()))
}

/// The memory scope a request names ([`SESSION_KEY_HEADER`]): `Ok(None)` without the header.
/// As in the Python Hermes, choosing a scope reaches another client's memories, so it needs a
/// configured key (403 without one); keys with control characters (they would break the echo)
/// or longer than 256 bytes are refused (400).
pub(crate) fn session_key_header(
    s: &Shared,
    headers: &HeaderMap,
) -> Result<Option<String>, Box<Response>> {
    let Some(key) = keyed_header(
        s,
        headers,
        SESSION_KEY_HEADER,
        "X-Hermes-Session-Key requires API key authentication. Configure API_SERVER_KEY to enable this feature.",
        "session_key_forbidden",
    )?
    else {
        return Ok(None);
    };
    if key.len() > MAX_SESSION_ID_LEN || key.chars().any(char::is_control) {
        return Err(Box::new(error_response(
            StatusCode::BAD_REQUEST,
            "Invalid session key",
            "invalid_request_error",
            Some("invalid_session_key"),
        )));
    }
    Ok(Some(key.to_string()))
}

/// Echoes the memory scope of the request on its answer.
pub(crate) fn set_session_key_header(response: &mut Response, key: Option<&str>) {
    if let Some(v) = key.and_then(|k| HeaderValue::from_str(k).ok()) {
        response.headers_mut().insert(SESSION_KEY_HEADER, v);
    }
}

/// Whether the client asked for `event: hermes.tool.progress` events ([`TOOL_PROGRESS_HEADER`]).
pub(crate) fn wants_progress_events(headers: &HeaderMap) -> bool {
    headers
        .get(TOOL_PROGRESS_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
        .is_some_and(|v| matches!(v.as_str(), "events" | "1" | "true" | "yes"))
}

/// A place in the concurrency limit, or the 429 answer.
pub(crate) fn admit(s: &Shared) -> Result<Option<OwnedSemaphorePermit>, Box<Response>> {
    let Some(sem) = &s.limit else {
        return Ok(None);
    };
    match sem.clone().try_acquire_owned() {
        Ok(p) => Ok(Some(p)),
        Err(_) => {
            let mut r = error_response(
                StatusCode::TOO_MANY_REQUESTS,
                &format!(
                    "Too many concurrent runs (the limit is {}); retry shortly",
                    s.config.max_concurrent
                ),
                "rate_limit_error",
                Some("concurrency_limit"),
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            Err(Box::new(r))
        }
    }
}

/// The answer of a turn that could not start.
pub(crate) fn runner_error_response(e: &RunnerError) -> Response {
    match e {
        RunnerError::SessionNotFound(_) => error_response(
            StatusCode::NOT_FOUND,
            &e.to_string(),
            "invalid_request_error",
            Some("session_not_found"),
        ),
        RunnerError::Setup(m) => {
            error_response(StatusCode::INTERNAL_SERVER_ERROR, m, "server_error", None)
        }
    }
}

/// The error answer of a turn that ran but did not answer (`None`: it answered), with
/// `Retry-After` for rate limits.
pub(crate) fn turn_error_response(end: &TurnEnd) -> Option<Response> {
    let shape = outcome::error_shape(end)?;
    let message = match end {
        TurnEnd::Interrupted => "the turn was cancelled".to_string(),
        TurnEnd::Failed(f) => f.message.clone(),
        TurnEnd::Completed | TurnEnd::BudgetExhausted => String::new(),
    };
    let mut r = error_response(shape.status, &message, shape.kind, Some(shape.code));
    if let Some(secs) = outcome::retry_after(end)
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    Some(r)
}

/// Names the stored session on an answer.
pub(crate) fn set_session_header(response: &mut Response, session_id: Option<&str>) {
    if let Some(v) = session_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        response.headers_mut().insert(SESSION_ID_HEADER, v);
    }
}

/// Runs a turn to its end; the turn is cancelled if this future is dropped (the client left).
pub(crate) async fn run_turn(
    s: &Shared,
    input: TurnInput,
    events: Arc<dyn EventSink>,
    permit: Option<OwnedSemaphorePermit>,
) -> Result<TurnOutcome, RunnerError> {
    let cancel = s.turns.child_token();
    // Dropped with the caller when the client goes away: the turn stops.
    let guard = cancel.clone().drop_guard();
    let runner = s.runner.clone();
    let task = tokio::spawn(async move {
        let _permit = permit;
        runner.run(input, events, cancel).await
    });
    let outcome = match task.await {
        Ok(o) => o,
        Err(e) => Err(RunnerError::Setup(format!("the turn failed: {e}"))),
    };
    guard.disarm();
    outcome
}

/// An SSE answer fed by `rx`, with a keepalive comment after `keepalive` of silence: the body
/// owns `guard`, so a client that disconnects drops the body and cancels the turn.
pub(crate) fn sse_response(
    rx: mpsc::UnboundedReceiver<String>,
    guard: tokio_util::sync::DropGuard,
    keepalive: std::time::Duration,
) -> Response {
    let stream = futures_util::stream::unfold((rx, guard), move |(mut rx, guard)| async move {
        let chunk = match tokio::time::timeout(keepalive, rx.recv()).await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => return None,
            Err(_silent) => SSE_KEEPALIVE_LINE.to_string(),
        };
        Some((Ok::<_, std::convert::Infallible>(chunk), (rx, guard)))
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

/// The request body, or the answer for one too large or unreadable (413 / 400).
pub(crate) fn body_bytes(
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<axum::body::Bytes, Box<Response>> {
    body.map_err(|rejection| {
        let status = rejection.status();
        Box::new(if status == StatusCode::PAYLOAD_TOO_LARGE {
            error_response(
                status,
                &format!("Request body too large (the limit is {MAX_BODY_BYTES} bytes)"),
                "invalid_request_error",
                Some("body_too_large"),
            )
        } else {
            error_response(
                status,
                &format!("Cannot read the request body: {rejection}"),
                "invalid_request_error",
                None,
            )
        })
    })
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

pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// A unique id with `prefix` (`chatcmpl-`, `resp_`, `msg_`, ...): time, a counter and the
/// process id, in hex.
pub(crate) fn new_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "{prefix}{:x}{:04x}{:x}",
        nanos,
        n & 0xffff,
        std::process::id()
    )
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
