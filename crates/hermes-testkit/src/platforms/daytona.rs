//! A Daytona double on 127.0.0.1, following Daytona's REST API (`/api/sandbox...`, the
//! platform API the SDKs call) and the per-sandbox toolbox API reached through the sandbox's
//! `toolboxProxyUrl` (`{toolboxProxyUrl}/{sandboxId}/...`):
//!
//! - `POST /api/sandbox` (`CreateSandbox`: `name`, `labels`, `snapshot` or `buildInfo`,
//!   `cpu`, `memory`, `disk`, `autoStopInterval`, `env`, `target`) → the sandbox in state
//!   `creating`; it is `started` by the next read. A name already taken is 409.
//! - `GET /api/sandbox` (the list; `?labels={"k":"v"}`, a JSON object, keeps the sandboxes
//!   carrying all those labels), `GET /api/sandbox/{idOrName}` (404 `Sandbox with ID or name
//!   X not found`), `POST /api/sandbox/{id}/start`, `POST /api/sandbox/{id}/stop`,
//!   `DELETE /api/sandbox/{id}`.
//! - Toolbox `POST /toolbox/{id}/process/execute` `{command, cwd, timeout}` → `{exitCode,
//!   result}` (stdout and stderr combined; `-1` and no output at the timeout); a sandbox not
//!   `started` answers 400 as the proxy does. `POST /toolbox/{id}/files/upload?path=P`
//!   (multipart `file`), `GET /toolbox/{id}/files/download?path=P`.
//! - `Authorization: Bearer KEY` on every call, else 401 `{statusCode, message, error}`.
//! - Idle auto-stop: with [`DaytonaMock::auto_stop_after`], a started sandbox whose
//!   `autoStopInterval` is not 0 and that saw no request for that long is stopped (found so by
//!   the next request), as Daytona does once the interval passes without activity.
//!
//! Commands run on this machine (see [`super::sandbox_exec`]) with `HOME` the sandbox's own
//! directory, which is where a session's files land.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::sandbox_exec::{self, Exec};
use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};

pub const API_KEY: &str = "dtn_test_key_0123456789";

/// One sandbox of the double.
#[derive(Debug, Clone)]
pub struct MockSandbox {
    pub id: String,
    pub name: String,
    pub state: String,
    /// The `POST /api/sandbox` body.
    pub create: Value,
    /// Its home directory on this machine.
    pub home: PathBuf,
}

#[derive(Debug, Default)]
struct State {
    sandboxes: BTreeMap<String, MockSandbox>,
    /// Every request as `METHOD path`.
    requests: Vec<String>,
    /// Every execute body.
    executes: Vec<Value>,
    /// Every upload: (path, bytes).
    uploads: Vec<(String, usize)>,
    /// Every `Authorization` header seen.
    authorizations: Vec<String>,
    next: u64,
    refuse_create: Option<(u16, String)>,
    idle_stop: Option<Duration>,
    last_active: BTreeMap<String, Instant>,
    /// Toolbox requests in progress per sandbox: activity, whatever their age.
    in_flight: BTreeMap<String, usize>,
    auto_stops: usize,
}

struct DaytonaService {
    state: Mutex<State>,
    dir: PathBuf,
    port: Mutex<u16>,
}

impl DaytonaService {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sandbox_json(&self, s: &MockSandbox) -> Value {
        let port = *self.port.lock().unwrap_or_else(PoisonError::into_inner);
        json!({
            "id": s.id, "name": s.name, "organizationId": "org-test", "user": "daytona",
            "state": s.state, "labels": s.create["labels"], "env": s.create["env"],
            "cpu": s.create["cpu"], "memory": s.create["memory"], "disk": s.create["disk"],
            "autoStopInterval": s.create["autoStopInterval"], "target": "us",
            "toolboxProxyUrl": format!("http://127.0.0.1:{port}/toolbox"),
            "errorReason": null,
        })
    }

    fn find(&self, id_or_name: &str) -> Option<String> {
        let mut st = self.lock();
        let id = st
            .sandboxes
            .values()
            .find(|s| s.id == id_or_name || s.name == id_or_name)
            .map(|s| s.id.clone())?;
        touch(&mut st, &id);
        Some(id)
    }

    async fn handle(&self, req: MockRequest) -> MockResponse {
        let path = req.path().to_string();
        {
            let mut st = self.lock();
            st.requests.push(format!("{} {path}", req.method));
            st.authorizations
                .push(req.header("authorization").unwrap_or_default().to_string());
        }
        if req.header("authorization") != Some(&format!("Bearer {API_KEY}")) {
            return error(401, "Unauthorized", "Invalid API key");
        }
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        match (req.method.as_str(), parts.as_slice()) {
            ("POST", ["api", "sandbox"]) => self.create(&req),
            ("GET", ["api", "sandbox"]) => {
                let wanted: serde_json::Map<String, Value> = req
                    .query()
                    .into_iter()
                    .find(|(k, _)| k == "labels")
                    .and_then(|(_, v)| serde_json::from_str(&v).ok())
                    .unwrap_or_default();
                let list: Vec<Value> = {
                    let st = self.lock();
                    st.sandboxes.values().cloned().collect::<Vec<_>>()
                }
                .iter()
                .filter(|s| wanted.iter().all(|(k, v)| s.create["labels"][k] == *v))
                .map(|s| self.sandbox_json(s))
                .collect();
                MockResponse::json(200, &Value::Array(list))
            }
            ("GET", ["api", "sandbox", key]) => match self.find(key) {
                None => not_found(key),
                Some(id) => {
                    let s = {
                        let mut st = self.lock();
                        let Some(s) = st.sandboxes.get_mut(&id) else {
                            return not_found(key);
                        };
                        // A creating or starting sandbox is up by the next read.
                        if s.state == "creating" || s.state == "starting" {
                            s.state = "started".into();
                        }
                        s.clone()
                    };
                    MockResponse::json(200, &self.sandbox_json(&s))
                }
            },
            ("POST", ["api", "sandbox", key, action @ ("start" | "stop")]) => {
                let Some(id) = self.find(key) else {
                    return not_found(key);
                };
                let s = {
                    let mut st = self.lock();
                    let Some(s) = st.sandboxes.get_mut(&id) else {
                        return not_found(key);
                    };
                    s.state = if *action == "start" {
                        "starting".into()
                    } else {
                        "stopped".into()
                    };
                    s.clone()
                };
                MockResponse::json(200, &self.sandbox_json(&s))
            }
            ("DELETE", ["api", "sandbox", key]) => {
                let Some(id) = self.find(key) else {
                    return not_found(key);
                };
                if let Some(s) = self.lock().sandboxes.remove(&id) {
                    let _ = std::fs::remove_dir_all(&s.home);
                }
                MockResponse::empty(200)
            }
            (_, ["toolbox", id, rest @ ..]) => self.toolbox(&req, id, rest).await,
            _ => error(404, "Not Found", &format!("Cannot {} {path}", req.method)),
        }
    }

    fn create(&self, req: &MockRequest) -> MockResponse {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        if let Some((status, message)) = self.lock().refuse_create.clone() {
            return error(status, "Forbidden", &message);
        }
        if body.get("snapshot").is_none() && body.get("buildInfo").is_none() {
            return error(400, "Bad Request", "snapshot or buildInfo is required");
        }
        let name = body["name"].as_str().unwrap_or_default().to_string();
        if !name.is_empty() && self.find(&name).is_some() {
            return error(
                409,
                "Conflict",
                &format!("Sandbox with name {name} already exists"),
            );
        }
        let mut st = self.lock();
        st.next += 1;
        let id = format!("sbx-{:08x}", st.next);
        let home = self.dir.join(&id);
        if let Err(e) = std::fs::create_dir_all(&home) {
            return error(500, "Internal Server Error", &e.to_string());
        }
        let s = MockSandbox {
            id: id.clone(),
            name: if name.is_empty() { id.clone() } else { name },
            state: "creating".into(),
            create: body,
            home,
        };
        st.sandboxes.insert(id, s.clone());
        drop(st);
        MockResponse::json(200, &self.sandbox_json(&s))
    }

    async fn toolbox(&self, req: &MockRequest, id: &str, rest: &[&str]) -> MockResponse {
        let reply = self.toolbox_call(req, id, rest).await;
        let mut st = self.lock();
        if let Some(n) = st.in_flight.get_mut(id) {
            *n = n.saturating_sub(1);
        }
        touch(&mut st, id);
        reply
    }

    async fn toolbox_call(&self, req: &MockRequest, id: &str, rest: &[&str]) -> MockResponse {
        let sandbox = {
            let mut st = self.lock();
            touch(&mut st, id);
            *st.in_flight.entry(id.to_string()).or_default() += 1;
            st.sandboxes.get(id).cloned()
        };
        let Some(sandbox) = sandbox else {
            return not_found(id);
        };
        if sandbox.state != "started" {
            return error(
                400,
                "Bad Request",
                &format!("Sandbox {id} is not started (state: {})", sandbox.state),
            );
        }
        let query: BTreeMap<String, String> = req.query().into_iter().collect();
        match (req.method.as_str(), rest) {
            ("POST", ["process", "execute"]) => {
                let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                self.lock().executes.push(body.clone());
                let Some(command) = body["command"].as_str() else {
                    return error(400, "Bad Request", "command is required");
                };
                let cwd = body["cwd"]
                    .as_str()
                    .filter(|c| !c.is_empty())
                    .map(str::to_string)
                    .unwrap_or_else(|| sandbox.home.display().to_string());
                if !sandbox_exec::is_dir(&cwd) {
                    return error(400, "Bad Request", &format!("cwd {cwd} does not exist"));
                }
                let timeout = body["timeout"].as_u64().filter(|t| *t > 0).unwrap_or(10);
                let env: BTreeMap<String, String> = sandbox.create["env"]
                    .as_object()
                    .map(|o| {
                        o.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                            .collect()
                    })
                    .unwrap_or_default();
                let exec = Exec {
                    command: command.to_string(),
                    cwd,
                    home: sandbox.home.clone(),
                    env,
                    stdin: None,
                    timeout: Duration::from_secs(timeout),
                    bind: None,
                };
                match sandbox_exec::run(exec, |_| {}).await {
                    Ok(o) => MockResponse::json(
                        200,
                        &json!({"exitCode": o.code.unwrap_or(-1), "result": o.output}),
                    ),
                    Err(e) => error(500, "Internal Server Error", &e.to_string()),
                }
            }
            ("POST", ["files", "upload"]) => {
                let Some(path) = query.get("path") else {
                    return error(400, "Bad Request", "path is required");
                };
                let Some(bytes) = multipart_file(req) else {
                    return error(400, "Bad Request", "file is required");
                };
                if let Some(parent) = std::path::Path::new(path).parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                if let Err(e) = std::fs::write(path, &bytes) {
                    return error(400, "Bad Request", &e.to_string());
                }
                self.lock().uploads.push((path.clone(), bytes.len()));
                MockResponse::empty(200)
            }
            ("GET", ["files", "download"]) => {
                let Some(path) = query.get("path") else {
                    return error(400, "Bad Request", "path is required");
                };
                match std::fs::read(path) {
                    Ok(bytes) => MockResponse::bytes(200, "application/octet-stream", bytes),
                    Err(_) => error(404, "Not Found", &format!("file {path} not found")),
                }
            }
            _ => error(404, "Not Found", "unknown toolbox endpoint"),
        }
    }
}

/// Activity on sandbox `id`: stopped first when it was idle past the auto-stop time.
fn touch(st: &mut State, id: &str) {
    let now = Instant::now();
    let idle = st.last_active.get(id).map(|t| now.duration_since(*t));
    let busy = st.in_flight.get(id).is_some_and(|n| *n > 0);
    if let (Some(limit), Some(idle), false) = (st.idle_stop, idle, busy)
        && idle > limit
        && let Some(s) = st.sandboxes.get_mut(id)
        && s.state == "started"
        && s.create["autoStopInterval"].as_u64() != Some(0)
    {
        s.state = "stopped".into();
        st.auto_stops += 1;
    }
    st.last_active.insert(id.to_string(), now);
}

/// The `file` part of a multipart body, bytes as sent.
fn multipart_file(req: &MockRequest) -> Option<Vec<u8>> {
    let ctype = req.header("content-type")?;
    let at = ctype.to_ascii_lowercase().find("boundary=")? + "boundary=".len();
    let boundary = format!(
        "--{}",
        ctype[at..].split(';').next()?.trim().trim_matches('"')
    );
    let body = &req.body;
    let mut start = 0;
    while let Some(pos) = find(&body[start..], boundary.as_bytes()) {
        let part_start = start + pos + boundary.len();
        let next = find(&body[part_start..], boundary.as_bytes())? + part_start;
        let part = &body[part_start..next];
        if let Some(h_end) = find(part, b"\r\n\r\n") {
            let headers = String::from_utf8_lossy(&part[..h_end]).to_ascii_lowercase();
            if headers.contains("name=\"file\"") {
                let content = &part[h_end + 4..];
                let content = content.strip_suffix(b"\r\n").unwrap_or(content);
                return Some(content.to_vec());
            }
        }
        start = next;
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn error(status: u16, error: &str, message: &str) -> MockResponse {
    MockResponse::json(
        status,
        &json!({"statusCode": status, "message": message, "error": error}),
    )
}

fn not_found(key: &str) -> MockResponse {
    error(
        404,
        "Not Found",
        &format!("Sandbox with ID or name {key} not found"),
    )
}

impl Service for DaytonaService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(async move { self.handle(req).await })
    }
}

/// The Daytona API double (key [`API_KEY`]).
pub struct DaytonaMock {
    server: Server,
    service: Arc<DaytonaService>,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for DaytonaMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DaytonaMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl DaytonaMock {
    #[allow(clippy::expect_used)]
    pub fn start() -> DaytonaMock {
        let dir = tempfile::Builder::new()
            .prefix("daytona-mock")
            .tempdir()
            .expect("a temp dir for the Daytona mock");
        let service = Arc::new(DaytonaService {
            state: Mutex::new(State::default()),
            dir: dir.path().to_path_buf(),
            port: Mutex::new(0),
        });
        let server =
            Server::start("daytona", Arc::clone(&service)).expect("start the Daytona mock");
        *service.port.lock().unwrap_or_else(PoisonError::into_inner) = server.addr.port();
        DaytonaMock {
            server,
            service,
            _dir: dir,
        }
    }

    /// The value for `DAYTONA_API_URL`.
    pub fn api_url(&self) -> String {
        format!("http://127.0.0.1:{}/api", self.server.addr.port())
    }

    pub fn sandboxes(&self) -> Vec<MockSandbox> {
        self.service.lock().sandboxes.values().cloned().collect()
    }

    /// Every request as `METHOD path`.
    pub fn requests(&self) -> Vec<String> {
        self.service.lock().requests.clone()
    }

    /// Every execute body, in order.
    pub fn executes(&self) -> Vec<Value> {
        self.service.lock().executes.clone()
    }

    /// Every upload as (path, size).
    pub fn uploads(&self) -> Vec<(String, usize)> {
        self.service.lock().uploads.clone()
    }

    /// Every `Authorization` header received.
    pub fn authorizations(&self) -> Vec<String> {
        self.service.lock().authorizations.clone()
    }

    /// Stops a sandbox idle for `idle` (instead of its `autoStopInterval` minutes) when its
    /// next request comes.
    pub fn auto_stop_after(&self, idle: Duration) {
        self.service.lock().idle_stop = Some(idle);
    }

    /// How many times a sandbox was stopped for idleness.
    pub fn auto_stops(&self) -> usize {
        self.service.lock().auto_stops
    }

    /// A sandbox that exists before the test (left by an earlier process), `started`, with
    /// these labels; returns its id.
    pub fn seed(&self, name: &str, labels: Value) -> String {
        let mut st = self.service.lock();
        st.next += 1;
        let id = format!("sbx-{:08x}", st.next);
        let home = self.service.dir.join(&id);
        let _ = std::fs::create_dir_all(&home);
        st.sandboxes.insert(
            id.clone(),
            MockSandbox {
                id: id.clone(),
                name: name.to_string(),
                state: "started".into(),
                create: json!({"name": name, "labels": labels, "autoStopInterval": 15}),
                home,
            },
        );
        id
    }

    /// Creates answer `status` with `message` (a quota or a refused key).
    pub fn refuse_create(&self, status: u16, message: &str) {
        self.service.lock().refuse_create = Some((status, message.to_string()));
    }
}
