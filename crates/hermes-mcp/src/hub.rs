//! The [`Hub`]: every configured MCP server of a process, connected in the background. One
//! hub can serve many sessions (a gateway): [`Hub::connect`] returns at once, the servers
//! connect concurrently on one background thread with its own runtime, and each server's
//! tools join [`Hub::tools`] when it is ready; [`Hub::version`] (or [`Hub::subscribe`]) moves
//! whenever a list changes (a server connected or failed, a `list_changed` notification), so
//! a session reads the current list when it builds its tool set. [`Hub::wait_ready`] bounds
//! the wait of a caller that wants the tools before its first model call (`hermes -z`), and
//! [`Hub::servers`] gives the status of each server (connecting, connected with N tools,
//! failed: why) for status lines and `hermes mcp list`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use hermes_tools::Tool;
use tokio::runtime::Handle;
use tokio::sync::watch;

use crate::config::ServerConfig;
use crate::connection::{self, Listed, Live};
use crate::handler::ListChanged;
use crate::oauth::{AuthPrompt, ConsolePrompt, OAuth};
use crate::sampling::{Sampler, SamplingHandler};
use crate::text;
use crate::tools;

/// How a hub connects its servers.
#[derive(Clone, Default)]
pub struct HubOptions {
    /// Where stdio servers' stderr goes (`$HERMES_HOME/logs/mcp-stderr.log`); none: nowhere.
    pub stderr_log: Option<PathBuf>,
    /// The home whose `mcp-tokens/` holds OAuth tokens; none: OAuth servers cannot connect.
    pub home: Option<PathBuf>,
    /// The model that answers sampling requests of servers whose policy allows them; none:
    /// sampling is not offered to any server.
    pub sampling: Option<Arc<dyn SamplingHandler>>,
    /// Who shows the browser URL of an OAuth authorization; none: only stored (or
    /// refreshed) tokens are used and a server that needs a new login fails, naming
    /// `hermes mcp login`.
    pub auth_prompt: Option<Arc<dyn AuthPrompt>>,
    /// Block in [`Hub::connect`] until every server is ready or this much time has passed.
    pub wait: Option<Duration>,
}

impl std::fmt::Debug for HubOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubOptions")
            .field("stderr_log", &self.stderr_log)
            .field("home", &self.home)
            .field("sampling", &self.sampling.is_some())
            .field("auth_prompt", &self.auth_prompt.is_some())
            .field("wait", &self.wait)
            .finish()
    }
}

/// The one-call form a session setup uses: `stderr_log` is `<home>/logs/mcp-stderr.log`
/// (which names the home of the OAuth tokens), browser authorization only from a terminal,
/// no sampling, and `connect` waits until every server connected or gave up (each bounded
/// by its own `connect_timeout`).
impl From<Option<PathBuf>> for HubOptions {
    fn from(stderr_log: Option<PathBuf>) -> HubOptions {
        use std::io::IsTerminal;
        let home = stderr_log
            .as_deref()
            .filter(|p| p.file_name().is_some_and(|n| n == "mcp-stderr.log"))
            .and_then(|p| p.parent())
            .filter(|d| d.file_name().is_some_and(|n| n == "logs"))
            .and_then(|d| d.parent())
            .map(PathBuf::from);
        let prompt: Option<Arc<dyn AuthPrompt>> = if std::io::stdin().is_terminal() {
            Some(Arc::new(ConsolePrompt))
        } else {
            None
        };
        HubOptions {
            stderr_log,
            home,
            sampling: None,
            auth_prompt: prompt,
            wait: Some(Duration::MAX),
        }
    }
}

/// Where a server's connection stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Connecting,
    Connected,
    /// Not connected: why (secrets redacted).
    Failed(String),
    /// `enabled: false`.
    Disabled,
}

/// A server as the hub sees it now.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerView {
    pub name: String,
    /// `npx -y pkg`, `http host/path`, `sse host/path`.
    pub transport: String,
    pub status: Status,
    /// The names the model sees (`mcp__srv__tool`, with the resource and prompt tools).
    pub tools: Vec<String>,
    /// How many times its lists were fetched again after a `list_changed` notification.
    pub refreshes: u64,
}

/// The thread and runtime the connections live on; stopped when the last user goes.
pub(crate) struct Background {
    pub handle: Handle,
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

/// The version counter and readiness of a hub, shared with its servers.
pub(crate) struct Signal {
    version: AtomicU64,
    tx: watch::Sender<u64>,
    connecting: Mutex<usize>,
    ready: Condvar,
}

impl Signal {
    fn bump(&self) {
        let v = self.version.fetch_add(1, Ordering::SeqCst) + 1;
        self.tx.send_replace(v);
    }

    fn one_done(&self) {
        if let Ok(mut n) = self.connecting.lock() {
            *n = n.saturating_sub(1);
        }
        self.ready.notify_all();
        self.bump();
    }
}

/// What is known of a server right now.
#[derive(Default)]
struct View {
    status: Option<Status>,
    listed: Listed,
    refreshes: u64,
}

/// One server: its settings, its live session and what it offers.
pub(crate) struct State {
    pub config: ServerConfig,
    pub stderr_log: Option<PathBuf>,
    pub sampler: Option<Arc<Sampler>>,
    pub oauth: Option<Arc<OAuth>>,
    /// Declared before `bg`: the session (and child process) ends before the thread stops.
    pub live: tokio::sync::Mutex<Option<Live>>,
    view: Mutex<View>,
    signal: Arc<Signal>,
    me: Weak<State>,
    refresh_pending: AtomicBool,
    refresh_running: AtomicBool,
    pub bg: Arc<Background>,
}

impl State {
    fn set(&self, status: Status, listed: Option<Listed>) {
        if let Ok(mut v) = self.view.lock() {
            v.status = Some(status);
            if let Some(l) = listed {
                v.listed = l;
            }
        }
    }

    /// Lists the server's tools, resources and prompts again (after `list_changed`), as
    /// long as notifications keep coming; several in a row cost one listing.
    async fn refresh(self: Arc<Self>) {
        loop {
            while self.refresh_pending.swap(false, Ordering::SeqCst) {
                self.refresh_once().await;
            }
            self.refresh_running.store(false, Ordering::SeqCst);
            // A notification that came in while we were finishing is ours to handle.
            if !self.refresh_pending.load(Ordering::SeqCst)
                || self.refresh_running.swap(true, Ordering::SeqCst)
            {
                break;
            }
        }
    }

    async fn refresh_once(&self) {
        let peer = {
            let live = self.live.lock().await;
            live.as_ref().map(|l| l.peer())
        };
        let Some(peer) = peer else {
            return;
        };
        let listed =
            tokio::time::timeout(self.config.timeout, connection::list(&self.config, &peer)).await;
        if let Ok(Ok(listed)) = listed {
            if let Ok(mut v) = self.view.lock() {
                v.listed = listed;
                v.refreshes += 1;
            }
            self.signal.bump();
        }
    }
}

impl ListChanged for State {
    fn list_changed(&self) {
        self.refresh_pending.store(true, Ordering::SeqCst);
        if self.refresh_running.swap(true, Ordering::SeqCst) {
            return;
        }
        match self.me.upgrade() {
            Some(me) => {
                self.bg.handle.spawn(me.refresh());
            }
            None => self.refresh_running.store(false, Ordering::SeqCst),
        }
    }
}

struct Inner {
    states: Vec<Arc<State>>,
    /// Servers that could not even be set up (no background thread).
    failed: Vec<(ServerConfig, String)>,
    signal: Arc<Signal>,
}

/// Every configured MCP server of a process (cheap to clone: one shared set of
/// connections). The connections end when the hub and every tool it handed out are gone.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("servers", &self.servers())
            .finish()
    }
}

impl Default for Hub {
    fn default() -> Hub {
        Hub::connect(&[], HubOptions::default())
    }
}

impl Hub {
    /// Starts connecting every enabled server of `configs` and returns at once (unless
    /// `options.wait` asks to wait).
    pub fn connect(configs: &[ServerConfig], options: impl Into<HubOptions>) -> Hub {
        let options: HubOptions = options.into();
        let (tx, _) = watch::channel(0);
        let enabled = configs.iter().filter(|c| c.enabled).count();
        let signal = Arc::new(Signal {
            version: AtomicU64::new(0),
            tx,
            connecting: Mutex::new(enabled),
            ready: Condvar::new(),
        });
        if enabled == 0 {
            let states = Vec::new();
            let failed = configs.iter().map(|c| (c.clone(), String::new())).collect();
            return Hub {
                inner: Arc::new(Inner {
                    states,
                    failed,
                    signal,
                }),
            };
        }
        let bg = match Background::start() {
            Ok(bg) => bg,
            Err(e) => {
                if let Ok(mut n) = signal.connecting.lock() {
                    *n = 0;
                }
                let why = format!("cannot start the MCP thread: {e}");
                let failed = configs.iter().map(|c| (c.clone(), why.clone())).collect();
                return Hub {
                    inner: Arc::new(Inner {
                        states: Vec::new(),
                        failed,
                        signal,
                    }),
                };
            }
        };
        let mut states = Vec::new();
        for config in configs {
            let sampler = match (&options.sampling, config.sampling.enabled) {
                (Some(handler), true) => Some(Arc::new(Sampler::new(
                    &config.name,
                    config.sampling.clone(),
                    handler.clone(),
                ))),
                _ => None,
            };
            let (oauth, oauth_error) = oauth_for(config, &options);
            let state = Arc::new_cyclic(|me| State {
                config: config.clone(),
                stderr_log: options.stderr_log.clone(),
                sampler,
                oauth,
                live: tokio::sync::Mutex::new(None),
                view: Mutex::new(View::default()),
                signal: signal.clone(),
                me: me.clone(),
                refresh_pending: AtomicBool::new(false),
                refresh_running: AtomicBool::new(false),
                bg: bg.clone(),
            });
            if !config.enabled {
                state.set(Status::Disabled, None);
            } else if let Some(why) = oauth_error {
                state.set(Status::Failed(why), None);
                signal.one_done();
            } else {
                state.set(Status::Connecting, None);
                let task = state.clone();
                bg.handle.spawn(async move {
                    let outcome = connection::connect(&task).await;
                    match outcome {
                        Ok(listed) => task.set(Status::Connected, Some(listed)),
                        Err(why) => task.set(Status::Failed(text::redact(&why)), None),
                    }
                    task.signal.one_done();
                });
            }
            states.push(state);
        }
        let hub = Hub {
            inner: Arc::new(Inner {
                states,
                failed: Vec::new(),
                signal,
            }),
        };
        if let Some(wait) = options.wait {
            // Never longer than the slowest server may take to give up on its own.
            let longest = configs
                .iter()
                .filter(|c| c.enabled)
                .map(|c| connection::deadline(c, options.auth_prompt.is_some()))
                .max()
                .unwrap_or_default();
            hub.wait_ready(wait.min(longest + Duration::from_secs(2)));
        }
        hub
    }

    /// Waits (blocking the thread) until no server is still connecting, at most `timeout`.
    /// Returns whether they all finished.
    pub fn wait_ready(&self, timeout: Duration) -> bool {
        let signal = &self.inner.signal;
        let Ok(guard) = signal.connecting.lock() else {
            return false;
        };
        let deadline = Instant::now().checked_add(timeout);
        let mut guard = guard;
        while *guard > 0 {
            let left = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                return false;
            }
            match signal.ready.wait_timeout(guard, left) {
                Ok((g, _)) => guard = g,
                Err(_) => return false,
            }
        }
        true
    }

    /// [`Hub::wait_ready`] for async callers.
    pub async fn ready(&self, timeout: Duration) -> bool {
        let mut rx = self.subscribe();
        let wait = async {
            while !self.is_ready() {
                if rx.changed().await.is_err() {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(timeout, wait).await;
        self.is_ready()
    }

    /// Whether no server is still connecting.
    pub fn is_ready(&self) -> bool {
        self.inner
            .signal
            .connecting
            .lock()
            .map(|n| *n == 0)
            .unwrap_or(true)
    }

    /// Moves each time a server connects or fails, or a list changes.
    pub fn version(&self) -> u64 {
        self.inner.signal.version.load(Ordering::SeqCst)
    }

    /// Follows [`Hub::version`].
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.signal.tx.subscribe()
    }

    /// The tools of every connected server right now, as `mcp__<server>__<tool>` in toolset
    /// `mcp-<server>` (plus each server's resource and prompt tools when it has those).
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut out = Vec::new();
        for state in &self.inner.states {
            let listed = match state.view.lock() {
                Ok(v) if v.status == Some(Status::Connected) => v.listed.clone(),
                _ => continue,
            };
            out.extend(tools::build(state, &listed));
        }
        out
    }

    /// Every configured server with its status, in config order.
    pub fn servers(&self) -> Vec<ServerView> {
        let mut out: Vec<ServerView> = self
            .inner
            .states
            .iter()
            .map(|s| {
                let (status, names, refreshes) = match s.view.lock() {
                    Ok(v) => (
                        v.status.clone().unwrap_or(Status::Connecting),
                        tools::names(&s.config, &v.listed),
                        v.refreshes,
                    ),
                    Err(_) => (Status::Failed("state unavailable".into()), Vec::new(), 0),
                };
                let tools = if status == Status::Connected {
                    names
                } else {
                    Vec::new()
                };
                ServerView {
                    name: s.config.name.clone(),
                    transport: s.config.transport_label(),
                    status,
                    tools,
                    refreshes,
                }
            })
            .collect();
        out.extend(self.inner.failed.iter().map(|(c, why)| ServerView {
            name: c.name.clone(),
            transport: c.transport_label(),
            status: if c.enabled {
                Status::Failed(why.clone())
            } else {
                Status::Disabled
            },
            tools: Vec::new(),
            refreshes: 0,
        }));
        out
    }

    /// One line per server that failed: `MCP server `NAME` is unavailable: REASON`.
    pub fn warnings(&self) -> Vec<String> {
        self.servers()
            .into_iter()
            .filter_map(|s| match s.status {
                Status::Failed(why) => {
                    Some(format!("MCP server `{}` is unavailable: {why}", s.name))
                }
                _ => None,
            })
            .collect()
    }

    /// A short summary for a status line (`MCP: 2 connected (14 tools), 1 connecting`);
    /// none without servers.
    pub fn status_line(&self) -> Option<String> {
        let servers = self.servers();
        if servers.is_empty() {
            return None;
        }
        let count = |f: &dyn Fn(&Status) -> bool| servers.iter().filter(|s| f(&s.status)).count();
        let connected = count(&|s| *s == Status::Connected);
        let connecting = count(&|s| *s == Status::Connecting);
        let failed = count(&|s| matches!(s, Status::Failed(_)));
        let tools: usize = servers.iter().map(|s| s.tools.len()).sum();
        let mut parts = Vec::new();
        if connected > 0 {
            parts.push(format!(
                "{connected} connected ({tools} tool{})",
                if tools == 1 { "" } else { "s" }
            ));
        }
        if connecting > 0 {
            parts.push(format!("{connecting} connecting"));
        }
        if failed > 0 {
            parts.push(format!("{failed} failed"));
        }
        if parts.is_empty() {
            return None;
        }
        Some(format!("MCP: {}", parts.join(", ")))
    }
}

/// The OAuth state of a server that uses it, or why it cannot.
fn oauth_for(config: &ServerConfig, options: &HubOptions) -> (Option<Arc<OAuth>>, Option<String>) {
    let (Some(settings), Some((url, _))) = (&config.oauth, config.transport.remote()) else {
        return (None, None);
    };
    let Some(home) = &options.home else {
        return (
            None,
            Some("OAuth needs the Hermes home for its tokens, and none was given".into()),
        );
    };
    match OAuth::new(
        &config.name,
        url,
        settings.clone(),
        home,
        options.auth_prompt.clone(),
    ) {
        Ok(o) => (Some(Arc::new(o)), None),
        Err(e) => (None, Some(e.to_string())),
    }
}
