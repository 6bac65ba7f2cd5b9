//! The scripted mock OpenAI-compatible server: owns the dedicated OS thread
//! and its current-thread tokio runtime, the accept loop, the per-connection
//! keep-alive request loop, turn assignment and request capture, and the
//! public [`MockServer`] handle (inspection, waiting, shutdown on drop).

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::http::{self, Request};
use crate::respond::{self, Dispatch};
use crate::script::Script;

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct CapturedRequest {
    pub method: String,
    /// Request target, e.g. `/v1/chat/completions` (query included if sent).
    pub path: String,
    /// Names lower-cased, values trimmed, in arrival order.
    pub headers: Vec<(String, String)>,
    /// Parsed body; `Value::Null` when empty or not JSON.
    pub body: Value,
    pub raw_body: String,
    pub received_at: Instant,
}

impl CapturedRequest {
    /// First header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        http::header_in(&self.headers, name)
    }

    /// Whether this is a `POST .../chat/completions`.
    pub fn is_chat(&self) -> bool {
        is_chat(&self.method, &self.path)
    }
}

fn strip_query(target: &str) -> &str {
    target.split('?').next().unwrap_or_default()
}

/// A model request of any supported wire format (chat completions, messages, responses,
/// Bedrock converse).
fn is_chat(method: &str, target: &str) -> bool {
    method.eq_ignore_ascii_case("POST") && crate::respond::Api::of_path(target).is_some()
}

fn is_models(method: &str, target: &str) -> bool {
    method.eq_ignore_ascii_case("GET")
        && strip_query(target)
            .trim_end_matches('/')
            .ends_with("/models")
}

#[derive(Debug, Default)]
struct State {
    requests: Vec<CapturedRequest>,
    next_turn: usize,
    chat_count: usize,
    /// Answers given per canned route (index into `Script::routes`).
    route_hits: std::collections::HashMap<usize, usize>,
}

struct Shared {
    script: Script,
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Captures `req` and decides what answers it, atomically, in arrival order.
    fn admit(&self, req: &Request) -> Dispatch {
        let raw_body = String::from_utf8_lossy(&req.body).into_owned();
        let captured = CapturedRequest {
            method: req.method.clone(),
            path: req.target.clone(),
            headers: req.headers.clone(),
            body: serde_json::from_str(&raw_body).unwrap_or(Value::Null),
            raw_body,
            received_at: Instant::now(),
        };
        let mut state = self.lock();
        state.requests.push(captured);
        if is_chat(&req.method, &req.target) {
            let ordinal = state.chat_count;
            state.chat_count += 1;
            let idx = state.next_turn;
            let turn = self.script.turns.get(idx).cloned().map(|t| (idx, t));
            if turn.is_some() {
                state.next_turn += 1;
            }
            Dispatch::Chat { ordinal, turn }
        } else if is_models(&req.method, &req.target) {
            Dispatch::Models
        } else if let Some(route) = self
            .script
            .routes
            .iter()
            .position(|r| r.path == strip_query(&req.target))
        {
            let served = state.route_hits.entry(route).or_insert(0);
            let answers = &self.script.routes[route].answers;
            let answer = answers.get(*served).or(answers.last()).cloned();
            *served += 1;
            match answer {
                Some(answer) => Dispatch::Canned(answer),
                None => Dispatch::NotFound,
            }
        } else {
            Dispatch::NotFound
        }
    }
}

fn log(msg: &str) {
    eprintln!("[hermes-testkit mock server] {msg}");
}

/// A running scripted mock LLM server; dropping it shuts it down.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl MockServer {
    /// Starts the server with a script; returns once it is listening.
    /// Panics (in the caller's thread) if it cannot bind or spawn.
    pub fn start(script: Script) -> MockServer {
        match MockServer::try_start(script) {
            Ok(server) => server,
            Err(e) => panic!("hermes-testkit: cannot start mock server: {e}"),
        }
    }

    /// Like [`MockServer::start`] but reports failures.
    pub fn try_start(script: Script) -> io::Result<MockServer> {
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let shared = Arc::new(Shared {
            script,
            state: Mutex::new(State::default()),
        });
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<()>>();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("mock-llm-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match TcpListener::from_std(std_listener) {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    tokio::select! {
                        _ = shutdown_rx => {}
                        () = accept_loop(listener, thread_shared) => {}
                    }
                });
                // Dropping the runtime here cancels every connection task,
                // closing their sockets and the listener.
                drop(runtime);
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(MockServer {
                addr,
                shared,
                shutdown: Some(shutdown_tx),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(io::Error::other(
                    "mock server thread exited before listening",
                ))
            }
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port())
    }

    /// Every request received, in arrival order (all paths).
    pub fn requests(&self) -> Vec<CapturedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Only model requests (any wire format, see [`crate::Api`]), bodies parsed as JSON.
    pub fn chat_requests(&self) -> Vec<Value> {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| r.is_chat())
            .map(|r| r.body.clone())
            .collect()
    }

    /// Requests to `path` (without query), in arrival order.
    pub fn requests_to(&self, path: &str) -> Vec<CapturedRequest> {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| strip_query(&r.path) == path)
            .cloned()
            .collect()
    }

    /// The most recent chat request body, if any.
    pub fn last_chat_request(&self) -> Option<Value> {
        self.chat_requests().pop()
    }

    /// Number of script turns consumed so far (exhausted requests don't count).
    pub fn turns_consumed(&self) -> usize {
        self.shared.lock().next_turn
    }

    /// Number of chat requests received so far (including exhausted ones).
    pub fn chat_request_count(&self) -> usize {
        self.shared.lock().chat_count
    }

    /// Blocks (polling) until at least `n` chat requests arrived or `timeout`
    /// elapsed; returns whether they did.
    pub fn wait_for_chat_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.chat_request_count() >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
        {
            log("server thread panicked");
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(serve_connection(stream, Arc::clone(&shared)));
            }
            Err(e) => {
                log(&format!("accept failed: {e}"));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Serves requests on one connection until the peer closes, asks to close,
/// a fault closes it, or an I/O error occurs. Always ends with a graceful
/// write shutdown (FIN), never a deliberate RST.
async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    if let Err(e) = stream.set_nodelay(true) {
        log(&format!("set_nodelay failed: {e}"));
    }
    let mut conn = BufReader::new(stream);
    loop {
        let req = match http::read_request(&mut conn).await {
            Ok(Some(req)) => req,
            Ok(None) => break,
            Err(e) => {
                log(&format!("bad request, closing connection: {e}"));
                break;
            }
        };
        let dispatch = shared.admit(&req);
        let close = req.wants_close();
        match respond::respond(conn.get_mut(), &req, dispatch, &shared.script, close).await {
            Ok(respond::Outcome::KeepAlive) if !close => {}
            Ok(_) => break,
            Err(e) => {
                log(&format!("write failed: {e}"));
                break;
            }
        }
    }
    let _ = conn.get_mut().shutdown().await;
}
