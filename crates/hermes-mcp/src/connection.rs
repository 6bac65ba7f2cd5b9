//! Starting and speaking to one server: a child process over stdio, Streamable HTTP (rmcp's
//! client on our reqwest, OAuth in front when configured) or legacy SSE ([`crate::sse`]);
//! the handshake, the listing of tools and capabilities, and the restart of a connection
//! found dead (exited, broken pipe, closed transport) before the next call, once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use serde_json::Value;
use tokio::process::Child;

use crate::config::{ServerConfig, Transport};
use crate::handler::{ClientSide, ListChanged};
use crate::hub::State;
use crate::oauth::http::AuthorizedClient;
use crate::sse::{SseTransport, header_map};

/// Variables of our environment a stdio server gets (plus its own `env`); API keys stay here.
const SAFE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LANG", "LC_ALL", "TERM", "SHELL", "TMPDIR",
];

/// A tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    pub name: String,
    pub description: String,
    pub schema: Value,
}

/// What a server offers: its tools (after `tools.include` / `tools.exclude`) and whether
/// it has resources and prompts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listed {
    pub tools: Vec<RemoteTool>,
    pub resources: bool,
    pub prompts: bool,
}

/// One live session with a server.
pub(crate) struct Live {
    client: RunningService<RoleClient, ClientSide>,
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

    pub fn peer(&self) -> Peer<RoleClient> {
        self.client.peer().clone()
    }
}

/// How long connecting may take: `connect_timeout`, plus the browser step of an OAuth
/// server when someone can do it.
pub(crate) fn deadline(config: &ServerConfig, interactive: bool) -> Duration {
    match (&config.oauth, interactive) {
        (Some(o), true) => config.connect_timeout + o.timeout,
        _ => config.connect_timeout,
    }
}

/// Connects `state`'s server and lists what it offers, within its deadline.
pub(crate) async fn connect(state: &Arc<State>) -> Result<Listed, String> {
    let config = &state.config;
    let interactive = state.oauth.as_ref().is_some();
    let limit = deadline(config, interactive);
    let work = async {
        let live = start(state).await?;
        let listed = list(config, &live.peer()).await?;
        Ok::<_, String>((live, listed))
    };
    let (live, listed) = tokio::time::timeout(limit, work)
        .await
        .map_err(|_| format!("no answer within {}", seconds(limit)))?
        .map_err(|why| hide_headers(config, &why))?;
    *state.live.lock().await = Some(live);
    Ok(listed)
}

/// Lists tools (when the server has them) and notes its resources and prompts.
pub(crate) async fn list(config: &ServerConfig, peer: &Peer<RoleClient>) -> Result<Listed, String> {
    let caps = peer.peer_info().map(|i| i.capabilities.clone());
    let has = |f: fn(&rmcp::model::ServerCapabilities) -> bool| caps.as_ref().is_none_or(f);
    let tools = if has(|c| c.tools.is_some()) {
        peer.list_all_tools()
            .await
            .map_err(|e| format!("listing its tools failed: {e}"))?
    } else {
        Vec::new()
    };
    let tools = tools
        .into_iter()
        .filter(|t| config.wants_tool(&t.name))
        .map(|t| RemoteTool {
            name: t.name.to_string(),
            description: t.description.as_deref().unwrap_or_default().to_string(),
            schema: Value::Object((*t.input_schema).clone()),
        })
        .collect();
    Ok(Listed {
        tools,
        resources: config.resources && caps.as_ref().is_some_and(|c| c.resources.is_some()),
        prompts: config.prompts && caps.as_ref().is_some_and(|c| c.prompts.is_some()),
    })
}

fn handler(state: &Arc<State>) -> ClientSide {
    let weak: Weak<State> = Arc::downgrade(state);
    let changes: Weak<dyn ListChanged> = weak;
    ClientSide {
        sampler: state.sampler.clone(),
        changes,
    }
}

/// Starts the server (or opens the HTTP session) and completes the MCP handshake.
async fn start(state: &Arc<State>) -> Result<Live, String> {
    let config = &state.config;
    match &config.transport {
        Transport::Stdio { command, args, env } => {
            start_stdio(state, command, args, env, state.stderr_log.as_ref()).await
        }
        Transport::Http { url, headers } => start_http(state, url, headers).await,
        Transport::Sse { url, headers } => start_sse(state, url, headers).await,
    }
}

async fn start_stdio(
    state: &Arc<State>,
    command: &str,
    args: &[String],
    env: &[(String, String)],
    stderr_log: Option<&PathBuf>,
) -> Result<Live, String> {
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
    let client = handler(state).serve((stdout, stdin)).await.map_err(|e| {
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

fn http_client(config: &ServerConfig) -> Result<reqwest::Client, String> {
    // Installing twice is harmless; the first provider stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("hermes-rs/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// Opens a Streamable HTTP session with `url`, `headers` sent on every request.
async fn start_http(
    state: &Arc<State>,
    url: &str,
    headers: &[(String, String)],
) -> Result<Live, String> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let config = &state.config;
    let map: HashMap<_, _> = header_map(headers)?
        .into_iter()
        .filter_map(|(k, v)| Some((k?, v)))
        .collect();
    let client = http_client(config)?;
    let transport_config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .custom_headers(map)
        .reinit_on_expired_session(true);
    let served = match &state.oauth {
        Some(oauth) => {
            let authorized = AuthorizedClient {
                http: client,
                oauth: oauth.clone(),
            };
            handler(state)
                .serve(StreamableHttpClientTransport::with_client(
                    authorized,
                    transport_config,
                ))
                .await
        }
        None => {
            handler(state)
                .serve(StreamableHttpClientTransport::with_client(
                    client,
                    transport_config,
                ))
                .await
        }
    };
    let client =
        served.map_err(|e| format!("the MCP handshake with {url} failed: {}", http_reason(&e)))?;
    Ok(Live {
        client,
        child: None,
    })
}

/// Opens a legacy HTTP+SSE session with `url`.
async fn start_sse(
    state: &Arc<State>,
    url: &str,
    headers: &[(String, String)],
) -> Result<Live, String> {
    let config = &state.config;
    let map = header_map(headers)?;
    // The event stream stays open: no overall timeout on the client, only on connecting.
    let transport = SseTransport::connect(url, http_client(config)?, map, state.oauth.clone())
        .await
        .map_err(|e| format!("cannot open the SSE stream of {url}: {e}"))?;
    let client = handler(state)
        .serve(transport)
        .await
        .map_err(|e| format!("the MCP handshake with {url} failed: {}", sse_reason(&e)))?;
    Ok(Live {
        client,
        child: None,
    })
}

fn sse_reason(error: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError;
    match error {
        ClientInitializeError::TransportError { error: dynamic, .. } => {
            innermost(dynamic.error.as_ref())
        }
        other => other.to_string(),
    }
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
pub(crate) fn hide_headers(config: &ServerConfig, why: &str) -> String {
    let mut text = why.to_string();
    if let Some((_, headers)) = config.transport.remote() {
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

pub(crate) fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// A live peer; a server found dead (exited, pipe closed) is started again first.
pub(crate) async fn peer(state: &Arc<State>) -> Result<Peer<RoleClient>, String> {
    let mut live = state.live.lock().await;
    if !live.as_mut().is_some_and(Live::alive) {
        *live = None;
        let started = tokio::time::timeout(state.config.connect_timeout, start(state))
            .await
            .map_err(|_| "the server did not come back".to_string())?
            .map_err(|why| hide_headers(&state.config, &why))?;
        *live = Some(started);
    }
    live.as_ref()
        .map(Live::peer)
        .ok_or_else(|| "not connected".to_string())
}

/// Forgets a session whose transport broke, so the next call starts a new one.
pub(crate) async fn forget_if_gone(state: &Arc<State>, e: &ServiceError) {
    if matches!(
        e,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    ) {
        *state.live.lock().await = None;
    }
}
