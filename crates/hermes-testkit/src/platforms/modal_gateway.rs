//! A double of the Nous tool gateway's Modal API on 127.0.0.1: the HTTP endpoints the Python
//! Hermes's managed Modal backend calls (`tools/environments/managed_modal.py`), with its
//! request and response shapes:
//!
//! - `POST /v1/sandboxes` `{image, cwd, cpu, memoryMiB, timeoutMs, idleTimeoutMs,
//!   persistentFilesystem, logicalKey[, diskMiB]}` with `x-idempotency-key` → `{id}` (the same
//!   key gives the same sandbox); a persistent `logicalKey` whose sandbox was snapshotted
//!   gets its files back.
//! - `POST /v1/sandboxes/{id}/execs` `{execId, command, cwd, timeoutMs[, stdinData]}` →
//!   `{execId, status: "running"}`; `GET .../execs/{execId}` → `{execId, status, output,
//!   returncode}` with status `running|completed|failed|cancelled|timeout`; `POST
//!   .../execs/{execId}/cancel` kills it; an unknown sandbox or exec is 404 `{error}`.
//! - `POST /v1/sandboxes/{id}/terminate` `{snapshotBeforeTerminate}`.
//! - `Authorization: Bearer TOKEN`, else 401.
//! - Idle hibernation: [`ModalGatewayMock::hibernate_idle`] hibernates every running sandbox
//!   (its processes end, its files stay); the next exec restores it.
//!
//! Commands run on this machine ([`super::sandbox_exec`]) with the sandbox's directory mounted
//! over `/root` in a private mount namespace, so they need root ([`ModalGatewayMock::usable`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

use super::sandbox_exec::{self, Exec};
use super::server::{BoxFuture, MockRequest, MockResponse, Server, Service};

pub const TOKEN: &str = "nous-tool-gateway-test-token";
/// Where the double mounts a sandbox's files.
pub const ROOT: &str = "/root";

/// One sandbox of the double.
#[derive(Debug, Clone)]
pub struct GatewaySandbox {
    pub id: String,
    /// `running`, `hibernated` or `terminated`.
    pub status: String,
    pub create: Value,
    pub idempotency_key: String,
    pub dir: PathBuf,
    pub restores: u32,
    pub terminate: Option<Value>,
}

#[derive(Debug, Clone)]
struct ExecState {
    sandbox: String,
    status: String,
    output: String,
    returncode: Option<i32>,
    pgid: Option<u32>,
}

#[derive(Debug, Default)]
struct State {
    sandboxes: BTreeMap<String, GatewaySandbox>,
    execs: BTreeMap<String, ExecState>,
    exec_requests: Vec<Value>,
    requests: Vec<String>,
    cancels: Vec<String>,
    next: u64,
}

struct GatewayService {
    state: Mutex<State>,
    dir: PathBuf,
}

impl GatewayService {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn handle(self: &Arc<Self>, req: MockRequest) -> MockResponse {
        let path = req.path().to_string();
        self.lock().requests.push(format!("{} {path}", req.method));
        if req.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
            return error(401, "invalid or expired Nous token");
        }
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        match (req.method.as_str(), parts.as_slice()) {
            ("POST", ["v1", "sandboxes"]) => self.create(&req, body),
            ("POST", ["v1", "sandboxes", id, "execs"]) => self.start_exec(id, body),
            ("GET", ["v1", "sandboxes", id, "execs", exec]) => {
                let st = self.lock();
                match st.execs.get(*exec).filter(|e| e.sandbox == *id) {
                    None => error(404, "exec not found"),
                    Some(e) => MockResponse::json(200, &exec_json(exec, e)),
                }
            }
            ("POST", ["v1", "sandboxes", id, "execs", exec, "cancel"]) => {
                let mut st = self.lock();
                st.cancels.push(exec.to_string());
                match st.execs.get_mut(*exec).filter(|e| e.sandbox == *id) {
                    None => error(404, "exec not found"),
                    Some(e) => {
                        if e.status == "running" {
                            if let Some(pgid) = e.pgid {
                                sandbox_exec::kill_group(pgid, "KILL");
                            }
                            e.status = "cancelled".into();
                            e.returncode = Some(130);
                        }
                        MockResponse::json(200, &json!({"execId": exec, "status": e.status}))
                    }
                }
            }
            ("POST", ["v1", "sandboxes", id, "terminate"]) => {
                let mut st = self.lock();
                let running: Vec<u32> = st
                    .execs
                    .values()
                    .filter(|e| e.sandbox == *id && e.status == "running")
                    .filter_map(|e| e.pgid)
                    .collect();
                match st.sandboxes.get_mut(*id) {
                    None => error(404, "sandbox not found"),
                    Some(s) => {
                        for pgid in running {
                            sandbox_exec::kill_group(pgid, "KILL");
                        }
                        s.status = "terminated".into();
                        s.terminate = Some(body);
                        MockResponse::json(200, &json!({"id": id, "status": "terminated"}))
                    }
                }
            }
            _ => error(404, &format!("no route for {} {path}", req.method)),
        }
    }

    fn create(&self, req: &MockRequest, body: Value) -> MockResponse {
        let key = req
            .header("x-idempotency-key")
            .unwrap_or_default()
            .to_string();
        for field in ["image", "cwd", "logicalKey"] {
            if !body[field].is_string() {
                return error(400, &format!("{field} is required"));
            }
        }
        let mut st = self.lock();
        if let Some(s) = st
            .sandboxes
            .values()
            .find(|s| !key.is_empty() && s.idempotency_key == key)
        {
            return MockResponse::json(200, &json!({"id": s.id, "status": s.status}));
        }
        st.next += 1;
        let id = format!("sb-{:06}", st.next);
        let logical = body["logicalKey"].as_str().unwrap_or_default();
        // A persistent filesystem comes back for the same logical key after a snapshot.
        let dir = if body["persistentFilesystem"] == true {
            self.dir.join(format!("fs-{logical}"))
        } else {
            self.dir.join(&id)
        };
        if let Err(e) = std::fs::create_dir_all(&dir) {
            return error(500, &e.to_string());
        }
        let s = GatewaySandbox {
            id: id.clone(),
            status: "running".into(),
            create: body,
            idempotency_key: key,
            dir,
            restores: 0,
            terminate: None,
        };
        st.sandboxes.insert(id.clone(), s);
        MockResponse::json(200, &json!({"id": id, "status": "running"}))
    }

    fn start_exec(self: &Arc<Self>, id: &str, body: Value) -> MockResponse {
        let mut st = self.lock();
        st.exec_requests.push(body.clone());
        let Some(sandbox) = st.sandboxes.get_mut(id) else {
            return error(404, "sandbox not found");
        };
        match sandbox.status.as_str() {
            "terminated" => return error(409, "sandbox is terminated"),
            "hibernated" => {
                sandbox.status = "running".into();
                sandbox.restores += 1;
            }
            _ => {}
        }
        let (Some(exec_id), Some(command)) = (body["execId"].as_str(), body["command"].as_str())
        else {
            return error(400, "execId and command are required");
        };
        let exec = Exec {
            command: command.to_string(),
            cwd: body["cwd"].as_str().unwrap_or(ROOT).to_string(),
            home: PathBuf::from(ROOT),
            env: BTreeMap::new(),
            stdin: body["stdinData"].as_str().map(|s| s.as_bytes().to_vec()),
            timeout: Duration::from_millis(body["timeoutMs"].as_u64().unwrap_or(60_000)),
            bind: Some((sandbox.dir.clone(), ROOT.to_string())),
        };
        let exec_id = exec_id.to_string();
        st.execs.insert(
            exec_id.clone(),
            ExecState {
                sandbox: id.to_string(),
                status: "running".into(),
                output: String::new(),
                returncode: None,
                pgid: None,
            },
        );
        drop(st);
        let me = Arc::clone(self);
        let key = exec_id.clone();
        tokio::spawn(async move {
            let started = {
                let me = Arc::clone(&me);
                let key = key.clone();
                move |pgid: u32| {
                    if let Some(e) = me.lock().execs.get_mut(&key) {
                        e.pgid = Some(pgid);
                    }
                }
            };
            let outcome = sandbox_exec::run(exec, started).await;
            let mut st = me.lock();
            if let Some(e) = st.execs.get_mut(&key)
                && e.status == "running"
            {
                match outcome {
                    Ok(o) => {
                        e.output = o.output;
                        match o.code {
                            Some(code) => {
                                e.status = if code == 0 { "completed" } else { "failed" }.into();
                                e.returncode = Some(code);
                            }
                            None => {
                                e.status = "timeout".into();
                                e.returncode = Some(124);
                            }
                        }
                    }
                    Err(err) => {
                        e.status = "failed".into();
                        e.output = err.to_string();
                        e.returncode = Some(1);
                    }
                }
            }
        });
        MockResponse::json(200, &json!({"execId": exec_id, "status": "running"}))
    }
}

fn exec_json(id: &str, e: &ExecState) -> Value {
    let mut v = json!({"execId": id, "status": e.status});
    if e.status != "running" {
        v["output"] = json!(e.output);
        v["returncode"] = json!(e.returncode);
    }
    v
}

fn error(status: u16, message: &str) -> MockResponse {
    MockResponse::json(status, &json!({"error": message}))
}

impl Service for GatewayService {
    fn http(self: Arc<Self>, req: MockRequest) -> BoxFuture<MockResponse> {
        Box::pin(async move { self.handle(req) })
    }
}

/// The Modal tool gateway double (token [`TOKEN`]).
pub struct ModalGatewayMock {
    server: Server,
    service: Arc<GatewayService>,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for ModalGatewayMock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModalGatewayMock")
            .field("addr", &self.server.addr)
            .finish()
    }
}

impl ModalGatewayMock {
    /// Why the double cannot run commands here, if it cannot (it needs a private mount
    /// namespace: root and `unshare`).
    pub fn usable() -> Result<(), String> {
        if sandbox_exec::can_bind() {
            Ok(())
        } else {
            Err(
                "the Modal gateway double needs root and unshare(1) to mount a sandbox over /root"
                    .into(),
            )
        }
    }

    #[allow(clippy::expect_used)]
    pub fn start() -> ModalGatewayMock {
        let dir = tempfile::Builder::new()
            .prefix("modal-gateway-mock")
            .tempdir()
            .expect("a temp dir for the Modal gateway mock");
        let service = Arc::new(GatewayService {
            state: Mutex::new(State::default()),
            dir: dir.path().to_path_buf(),
        });
        let server =
            Server::start("modal-gateway", Arc::clone(&service)).expect("start the gateway mock");
        ModalGatewayMock {
            server,
            service,
            _dir: dir,
        }
    }

    /// The value for `MODAL_GATEWAY_URL`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.server.addr.port())
    }

    pub fn sandboxes(&self) -> Vec<GatewaySandbox> {
        self.service.lock().sandboxes.values().cloned().collect()
    }

    /// Every exec start body.
    pub fn exec_requests(&self) -> Vec<Value> {
        self.service.lock().exec_requests.clone()
    }

    /// Every exec id cancelled.
    pub fn cancels(&self) -> Vec<String> {
        self.service.lock().cancels.clone()
    }

    /// Every request as `METHOD path`.
    pub fn requests(&self) -> Vec<String> {
        self.service.lock().requests.clone()
    }

    /// The gateway's idle timeout firing: every running sandbox is hibernated (its running
    /// execs end, its files stay). Returns how many.
    pub fn hibernate_idle(&self) -> usize {
        let mut st = self.service.lock();
        let mut ids = Vec::new();
        for s in st.sandboxes.values_mut() {
            if s.status == "running" {
                s.status = "hibernated".into();
                ids.push(s.id.clone());
            }
        }
        for e in st.execs.values_mut() {
            if ids.contains(&e.sandbox) && e.status == "running" {
                if let Some(pgid) = e.pgid {
                    sandbox_exec::kill_group(pgid, "KILL");
                }
                e.status = "failed".into();
                e.returncode = Some(137);
            }
        }
        ids.len()
    }
}
