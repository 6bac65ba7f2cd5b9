//! Connections to MCP servers. Every connection lives on one background thread with its own
//! tokio runtime, so the synchronous session setup can wait for all servers at once (each
//! bounded by its `connect_timeout`, none delaying the others) and calls from any runtime run
//! there. A stdio server is a child process killed when its connection is dropped; an HTTP
//! server is reached over Streamable HTTP (rmcp's client on our reqwest: JSON or SSE answers,
//! `Mcp-Session-Id`, the configured `headers` on every request). A connection found dead
//! (exited, broken pipe, closed transport) is started again on the next call, once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_tools::{Tool, ToolContext, ToolError, ToolResult};
use rmcp::ServiceExt;
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use serde_json::Value;
use tokio::process::Child;
use tokio::runtime::Handle;

use crate::config::{ServerConfig, Transport};
use crate::text;

/// Variables of our environment a stdio server gets (plus its own `env`); API keys stay here.
const SAFE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "SHELL", "TMPDIR",
];

/// The thread and runtime the connections live on; stopped when the last user goes.
struct Background {
    handle: Handle,
    stop: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Background {
    fn start() -> std::io::Result<Arc<Background>> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = rt.handle().clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("hermes-mcp".into())
            .spawn(move || {
                rt.block_on(async {
                    let _ = rx.await;
                });
            })?;
        Ok(Arc::new(Background {
            handle,
            stop: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
        }))
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Ok(mut stop) = self.stop.lock()
            && let Some(tx) = stop.take()
        {
            let _ = tx.send(());
        }
        if let Ok(mut thread) = self.thread.lock()
            && let Some(t) = thread.take()
            && t.thread().id() != std::thread::current().id()
        {
            let _ = t.join();
        }
    }
}

/// One live session with a server.
struct Live {
    client: RunningService<RoleClient, ()>,
    child: Option<Child>,
}

impl Live {
    fn alive(&mut self) -> bool {
        let exited = match self.child.as_mut() {
            Some(child) => !matches!(child.try_wait(), Ok(None)),
            None => false,
        };
        !exited && !self.client.is_closed()
    }
}

/// What the calls of one server share: its config and the live session, if any.
struct State {
    config: ServerConfig,
    stderr_log: Option<PathBuf>,
    live: tokio::sync::Mutex<Option<Live>>,
}

/// A tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub schema: Value,
}

/// How a server's connection went.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Connected, with the tools that pass `tools.include` / `tools.exclude`.
    Connected(Vec<RemoteTool>),
    /// Not connected: why (secrets redacted).
    Failed(String),
    /// `enabled: false`.
    Disabled,
}

/// One configured server and its connection.
pub struct Server {
    pub config: ServerConfig,
    pub status: Status,
    // Dropped before `bg`: the child is killed, then the thread stops.
    state: Arc<State>,
    bg: Option<Arc<Background>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.config.name)
            .field("status", &self.status)
            .finish()
    }
}

/// Every configured MCP server of a session.
#[derive(Debug, Default)]
pub struct Hub {
    pub servers: Vec<Arc<Server>>,
}

impl Hub {
    /// Connects every enabled server concurrently and waits until each has connected or
    /// failed (at most its `connect_timeout`). `stderr_log` receives the servers' stderr.
    pub fn connect(configs: &[ServerConfig], stderr_log: Option<PathBuf>) -> Hub {
        if configs.is_empty() {
            return Hub::default();
        }
        let bg = match Background::start() {
            Ok(bg) => bg,
            Err(e) => {
                let why = format!("cannot start the MCP thread: {e}");
                return Hub {
                    servers: configs.iter().map(|c| failed_server(c, &why)).collect(),
                };
            }
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let mut states = Vec::new();
        for (i, config) in configs.iter().enumerate() {
            let state = Arc::new(State {
                config: config.clone(),
                stderr_log: stderr_log.clone(),
                live: tokio::sync::Mutex::new(None),
            });
            states.push(state.clone());
            if !config.enabled {
                continue;
            }
            let tx = tx.clone();
            bg.handle.spawn(async move {
                let status = match connect_and_list(&state).await {
                    Ok(tools) => Status::Connected(tools),
                    Err(why) => Status::Failed(text::redact(&why)),
                };
                let _ = tx.send((i, status));
            });
        }
        drop(tx);
        let mut statuses: Vec<Status> = vec![Status::Disabled; configs.len()];
        while let Ok((i, status)) = rx.recv() {
            statuses[i] = status;
        }
        let servers = configs
            .iter()
            .zip(states)
            .zip(statuses)
            .map(|((config, state), status)| {
                Arc::new(Server {
                    config: config.clone(),
                    status,
                    state,
                    bg: Some(bg.clone()),
                })
            })
            .collect();
        Hub { servers }
    }

    /// One line per server that failed: `MCP server `NAME` is unavailable: REASON`.
    pub fn warnings(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter_map(|s| match &s.status {
                Status::Failed(why) => Some(format!(
                    "MCP server `{}` is unavailable: {why}",
                    s.config.name
                )),
                _ => None,
            })
            .collect()
    }

    /// The tools of every connected server, as `mcp__<server>__<tool>` in toolset
    /// `mcp-<server>`.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for server in &self.servers {
            let Status::Connected(list) = &server.status else {
                continue;
            };
            let toolset = server.config.toolset();
            for remote in list {
                let description = match remote.description.trim() {
                    "" => format!("MCP tool {} from {}", remote.name, server.config.name),
                    d => d.to_string(),
                };
                tools.push(Arc::new(McpTool {
                    name: text::tool_name(&server.config.name, &remote.name),
                    toolset: toolset.clone(),
                    description,
                    schema: remote.schema.clone(),
                    remote: remote.name.clone(),
                    server: server.clone(),
                }));
            }
        }
        tools
    }
}

fn failed_server(config: &ServerConfig, why: &str) -> Arc<Server> {
    Arc::new(Server {
        config: config.clone(),
        status: Status::Failed(why.to_string()),
        state: Arc::new(State {
            config: config.clone(),
            stderr_log: None,
            live: tokio::sync::Mutex::new(None),
        }),
        bg: None,
    })
}

async fn connect_and_list(state: &State) -> Result<Vec<RemoteTool>, String> {
    let config = &state.config;
    let timeout = config.connect_timeout;
    let work = async {
        let live = start(config, state.stderr_log.as_ref()).await?;
        let listed = live
            .client
            .list_all_tools()
            .await
            .map_err(|e| format!("listing its tools failed: {e}"))?;
        Ok::<_, String>((live, listed))
    };
    let (live, listed) = tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| format!("no answer within {}", seconds(timeout)))?
        .map_err(|why| hide_headers(config, &why))?;
    *state.live.lock().await = Some(live);
    Ok(listed
        .into_iter()
        .filter(|t| config.wants_tool(&t.name))
        .map(|t| RemoteTool {
            name: t.name.to_string(),
            description: t.description.as_deref().unwrap_or_default().to_string(),
            schema: Value::Object((*t.input_schema).clone()),
        })
        .collect())
}

/// Starts the server (or opens the HTTP session) and completes the MCP handshake.
async fn start(config: &ServerConfig, stderr_log: Option<&PathBuf>) -> Result<Live, String> {
    let (command, args, env) = match &config.transport {
        Transport::Stdio { command, args, env } => (command, args, env),
        Transport::Http { url, headers } => return start_http(config, url, headers).await,
    };
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(
            std::env::vars()
                .filter(|(k, _)| SAFE_ENV.contains(&k.as_str()) || k.starts_with("XDG_")),
        )
        .envs(env.iter().cloned())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr_target(stderr_log))
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(format!("cannot talk to `{command}`"));
    };
    let client = ().serve((stdout, stdin)).await.map_err(|e| {
        let exited = match child.try_wait() {
            Ok(Some(status)) => format!(" (the server exited: {status})"),
            _ => String::new(),
        };
        format!("the MCP handshake failed: {e}{exited}")
    })?;
    Ok(Live {
        client,
        child: Some(child),
    })
}

/// Opens a Streamable HTTP session with `url`, `headers` sent on every request.
async fn start_http(
    config: &ServerConfig,
    url: &str,
    headers: &[(String, String)],
) -> Result<Live, String> {
    use reqwest::header::{HeaderName, HeaderValue};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let mut map = HashMap::new();
    for (name, value) in headers {
        let Ok(key) = HeaderName::from_bytes(name.trim().as_bytes()) else {
            return Err(format!("`{name}` is not a valid HTTP header name"));
        };
        let Ok(mut value) = HeaderValue::from_str(value.trim()) else {
            return Err(format!("the value of header `{name}` is not valid"));
        };
        value.set_sensitive(true);
        map.insert(key, value);
    }
    // Installing twice is harmless; the first provider stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("hermes-rs/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url.to_string())
            .custom_headers(map)
            .reinit_on_expired_session(true),
    );
    let client = ()
        .serve(transport)
        .await
        .map_err(|e| format!("the MCP handshake with {url} failed: {}", http_reason(&e)))?;
    Ok(Live {
        client,
        child: None,
    })
}

/// The HTTP-level cause of a failed handshake when there is one (`HTTP 401 Unauthorized`,
/// `connection refused`), else the error itself.
fn http_reason(error: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError;
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let ClientInitializeError::TransportError { error: dynamic, .. } = error else {
        return error.to_string();
    };
    let Some(http) = dynamic
        .error
        .downcast_ref::<StreamableHttpError<reqwest::Error>>()
    else {
        return innermost(dynamic.error.as_ref());
    };
    match http {
        StreamableHttpError::AuthRequired(_) => "HTTP 401 Unauthorized".into(),
        StreamableHttpError::InsufficientScope(_) => "HTTP 403 Forbidden".into(),
        StreamableHttpError::UnexpectedServerResponse(text) => text.to_string(),
        StreamableHttpError::Client(e) => innermost(e),
        other => other.to_string(),
    }
}

/// The last cause of an error chain (`connection refused` rather than `error sending request`).
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut last = error;
    while let Some(next) = last.source() {
        last = next;
    }
    if std::ptr::addr_eq(last, error) {
        error.to_string()
    } else {
        format!("{error}: {last}")
    }
}

/// `why` with the values of the server's HTTP headers (tokens, keys) replaced by `***`.
fn hide_headers(config: &ServerConfig, why: &str) -> String {
    let mut text = why.to_string();
    if let Transport::Http { headers, .. } = &config.transport {
        for (_, value) in headers {
            let value = value.trim();
            if value.len() >= 4 {
                text = text.replace(value, "***");
            }
        }
    }
    text
}

fn stderr_target(log: Option<&PathBuf>) -> Stdio {
    let file = log.and_then(|path| {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()
    });
    match file {
        Some(f) => Stdio::from(f),
        None => Stdio::null(),
    }
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// A live peer; a server found dead (exited, pipe closed) is started again first.
async fn peer(state: &State) -> Result<Peer<RoleClient>, String> {
    let mut live = state.live.lock().await;
    if !live.as_mut().is_some_and(Live::alive) {
        *live = None;
        let started = tokio::time::timeout(
            state.config.connect_timeout,
            start(&state.config, state.stderr_log.as_ref()),
        )
        .await
        .map_err(|_| "the server did not come back".to_string())?
        .map_err(|why| hide_headers(&state.config, &why))?;
        *live = Some(started);
    }
    live.as_ref()
        .map(|l| l.client.peer().clone())
        .ok_or_else(|| "not connected".to_string())
}

fn transport_gone(e: &ServiceError) -> bool {
    matches!(
        e,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    )
}

/// One `tools/call`, rendered for the model. A call the server died during fails (it is not
/// repeated: tools need not be idempotent); the next call starts the server again.
async fn call(state: Arc<State>, tool: String, args: Value) -> Value {
    let arguments = match args {
        Value::Object(map) => map,
        Value::Null => serde_json::Map::new(),
        other => {
            return serde_json::json!({"error": format!("arguments must be an object, not {other}")});
        }
    };
    let params = rmcp::model::CallToolRequestParams::new(tool).with_arguments(arguments);
    let peer = match peer(&state).await {
        Ok(peer) => peer,
        Err(why) => {
            let why = format!("MCP server `{}` is not connected: {why}", state.config.name);
            return serde_json::json!({"error": text::redact(&why)});
        }
    };
    match peer.call_tool(params).await {
        Ok(result) => {
            let value = serde_json::to_value(&result).unwrap_or(Value::Null);
            text::render_result(&value)
        }
        Err(e) => {
            if transport_gone(&e) {
                *state.live.lock().await = None;
            }
            let why = hide_headers(&state.config, &format!("MCP call failed: {e}"));
            serde_json::json!({"error": text::redact(&why)})
        }
    }
}

/// A tool of an MCP server.
pub struct McpTool {
    name: String,
    toolset: String,
    description: String,
    schema: Value,
    remote: String,
    server: Arc<Server>,
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn toolset(&self) -> &str {
        &self.toolset
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        self.schema.clone()
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
        let timeout = self.server.config.timeout;
        let Some(bg) = &self.server.bg else {
            return Err(ToolError::new(format!(
                "MCP server `{}` is not connected",
                self.server.config.name
            )));
        };
        let mut task = bg
            .handle
            .spawn(call(self.server.state.clone(), self.remote.clone(), args));
        let value = match tokio::time::timeout(timeout, &mut task).await {
            Ok(Ok(value)) => value,
            Ok(Err(e)) => serde_json::json!({"error": format!("MCP call failed: {e}")}),
            Err(_) => {
                task.abort();
                serde_json::json!({"error": format!(
                    "MCP tool {} timed out after {}", self.name, seconds(timeout)
                )})
            }
        };
        match value.get("error").and_then(Value::as_str) {
            Some(e) => Err(ToolError::new(e)),
            None => Ok(value),
        }
    }
}
