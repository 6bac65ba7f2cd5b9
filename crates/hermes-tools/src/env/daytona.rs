//! The Daytona backend over Daytona's REST API (the endpoints the Python Hermes reaches through
//! the `daytona` SDK). The sandbox is created on the first command (`POST /sandbox`, from
//! `daytona_image` through a one-line Dockerfile build, or from `daytona_snapshot`), named
//! `hermes-KEY` and labelled `hermes_task_id=KEY`, with the container resource keys and
//! `autoStopInterval` (Daytona stops an idle sandbox, keeping its disk). Before each command the
//! sandbox's state is read and a stopped or archived one is started again, as the Python
//! Hermes does. Commands go to the sandbox's toolbox (`{toolboxProxyUrl}/{id}/process/execute`)
//! through `hermes __remote-exec` ([`super::remote_exec`]), wrapped like Docker's so that a
//! timeout signals the command's process group in the sandbox. At session end the sandbox is
//! deleted, or only stopped when `container_persistent` (the next session finds it by name and
//! starts it). The API key goes to the API host only; nothing of the host's environment is
//! sent. A session's sandbox also carries `hermes_host` and `hermes_pid` labels: before a
//! session creates its own, sandboxes of this host whose Hermes process is gone (killed or
//! crashed before it could delete them) are deleted, so they do not run up costs.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use super::docker::{PID_DIR, fnv1a, kill_line, wrapped_line};
use super::http_api::Api;
use super::remote_exec::{self, Request};
use super::scripted_jobs::ControlScripts;
use super::{
    Backend, DaytonaSettings, EnvError, ExecutionEnvironment, Prepared, RemoteSignal, ShellRequest,
    Stopper, sh_quote,
};

/// Limit of a lifecycle call (get, start, stop, delete).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a sandbox may take to reach `started` (an image build included).
const START_TIMEOUT: Duration = Duration::from_secs(600);
/// Daytona caps a sandbox's disk at 10 GiB.
const MAX_DISK_GIB: u64 = 10;
/// States a sandbox passes through on its way to a steady one.
const TRANSITIONAL: &[&str] = &[
    "creating",
    "starting",
    "stopping",
    "restoring",
    "resuming",
    "pulling_snapshot",
    "pending_build",
    "building_snapshot",
    "archiving",
];

/// The container resources the Daytona sandbox asks for (the `container_*` keys).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resources {
    pub cpu: f64,
    /// MB.
    pub memory: u64,
    /// MB.
    pub disk: u64,
    pub persistent: bool,
}

/// The sandbox once it runs.
#[derive(Debug, Clone)]
struct Ready {
    id: String,
    toolbox: String,
    shell: &'static str,
}

/// The Daytona environment of one session (background jobs come with
/// [`super::scripted_jobs::WithScriptedJobs`]).
#[derive(Debug)]
pub struct DaytonaEnvironment {
    settings: DaytonaSettings,
    resources: Resources,
    api: Option<Api>,
    key: String,
    launcher: Option<PathBuf>,
    ready: tokio::sync::Mutex<Option<Ready>>,
    home: std::sync::Mutex<String>,
    next_token: AtomicU64,
}

impl DaytonaEnvironment {
    /// `home_root` names the persistent sandbox (one per Hermes home), `session_key` a
    /// session's own. `launcher`: this binary (the commands' client).
    pub fn new(
        settings: DaytonaSettings,
        resources: Resources,
        home_root: &std::path::Path,
        session_key: &str,
        launcher: Option<PathBuf>,
    ) -> DaytonaEnvironment {
        let key = if resources.persistent {
            format!(
                "home-{:016x}",
                fnv1a(home_root.display().to_string().as_bytes())
            )
        } else {
            let clean: String = session_key
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .take(40)
                .collect();
            let salt = fnv1a(format!("{session_key}{:?}", std::time::SystemTime::now()).as_bytes());
            format!("{clean}-{:08x}", salt as u32)
                .trim_start_matches('-')
                .to_string()
        };
        let api = settings
            .api_key
            .as_deref()
            .and_then(|k| Api::new("the Daytona API", k).ok());
        DaytonaEnvironment {
            settings,
            resources,
            api,
            key,
            launcher,
            ready: tokio::sync::Mutex::new(None),
            home: std::sync::Mutex::new("/home/daytona".into()),
            next_token: AtomicU64::new(1),
        }
    }

    /// The sandbox's name.
    pub fn sandbox_name(&self) -> String {
        format!("hermes-{}", self.key)
    }

    fn api(&self) -> Result<&Api, EnvError> {
        self.api.as_ref().ok_or_else(|| EnvError::MissingCredential {
            backend: Backend::Daytona,
            fix: "DAYTONA_API_KEY is not set; create a key at https://app.daytona.io/dashboard/keys and put it in ~/.hermes/.env".into(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.settings.api_url)
    }

    /// The `POST /sandbox` body.
    pub fn create_body(&self) -> Value {
        let r = &self.resources;
        let gib = |mb: u64| mb.div_ceil(1024).max(1);
        let mut labels = json!({"hermes_task_id": self.key});
        if !r.persistent {
            labels["hermes_host"] = json!(host_name());
            labels["hermes_pid"] = json!(std::process::id().to_string());
        }
        let mut body = json!({
            "name": self.sandbox_name(),
            "labels": labels,
            "autoStopInterval": self.settings.auto_stop,
            "cpu": (r.cpu.ceil() as u64).max(1),
            "memory": gib(r.memory),
            "disk": gib(r.disk).min(MAX_DISK_GIB),
        });
        match &self.settings.snapshot {
            Some(snapshot) => body["snapshot"] = json!(snapshot),
            None => {
                body["buildInfo"] = json!({
                    "dockerfileContent": format!("FROM {}\n", self.settings.image),
                    "contextHashes": [],
                });
            }
        }
        if let Some(target) = &self.settings.target {
            body["target"] = json!(target);
        }
        body
    }

    async fn get(&self, id: &str) -> Result<Option<Value>, EnvError> {
        let api = self.api()?;
        let reply = api
            .call(
                Method::GET,
                &self.url(&format!("sandbox/{id}")),
                None,
                &[],
                CALL_TIMEOUT,
            )
            .await?;
        if reply.status == 404 {
            return Ok(None);
        }
        api.expect_json(reply).map(Some)
    }

    async fn post(&self, path: &str) -> Result<(), EnvError> {
        let api = self.api()?;
        let reply = api
            .call(Method::POST, &self.url(path), None, &[], CALL_TIMEOUT)
            .await?;
        if reply.ok() {
            Ok(())
        } else {
            Err(api.refused(&reply))
        }
    }

    /// Polls the sandbox until it is `started` (starting it when stopped or archived).
    async fn until_started(&self, mut sandbox: Value) -> Result<Value, EnvError> {
        let deadline = Instant::now() + START_TIMEOUT;
        let mut pause = Duration::from_millis(200);
        let mut started_once = false;
        loop {
            let id = sandbox["id"].as_str().unwrap_or_default().to_string();
            let state = sandbox["state"].as_str().unwrap_or_default().to_string();
            match state.as_str() {
                "started" => return Ok(sandbox),
                "stopped" | "archived" if !started_once => {
                    self.post(&format!("sandbox/{id}/start")).await?;
                    started_once = true;
                }
                "error" | "build_failed" | "destroyed" | "destroying" => {
                    let reason = sandbox["errorReason"].as_str().unwrap_or("no reason given");
                    return Err(EnvError::Start(format!(
                        "the Daytona sandbox {} is {state}: {reason}",
                        self.sandbox_name()
                    )));
                }
                s if TRANSITIONAL.contains(&s) || s == "stopped" || s == "archived" => {}
                other => {
                    return Err(EnvError::Start(format!(
                        "the Daytona sandbox {} is in an unexpected state `{other}`",
                        self.sandbox_name()
                    )));
                }
            }
            if Instant::now() >= deadline {
                return Err(EnvError::Start(format!(
                    "the Daytona sandbox {} did not start within {}s (state {state})",
                    self.sandbox_name(),
                    START_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(2));
            sandbox = self
                .get(&id)
                .await?
                .ok_or_else(|| EnvError::Start(format!("the Daytona sandbox {id} disappeared")))?;
        }
    }

    fn toolbox(&self, sandbox: &Value) -> String {
        let id = sandbox["id"].as_str().unwrap_or_default();
        match sandbox["toolboxProxyUrl"]
            .as_str()
            .filter(|u| !u.is_empty())
        {
            Some(proxy) => format!("{}/{id}", proxy.trim_end_matches('/')),
            // Older API servers serve the toolbox under the API itself.
            None => format!("{}/toolbox/{id}/toolbox", self.settings.api_url),
        }
    }

    /// The running sandbox: created on first use (a persistent one found by name first), and
    /// started again when Daytona stopped it while idle.
    async fn ensure(&self) -> Result<Ready, EnvError> {
        let api = self.api()?;
        let mut slot = self.ready.lock().await;
        if let Some(ready) = slot.as_ref() {
            let sandbox = self.get(&ready.id).await?.ok_or_else(|| {
                EnvError::Start(format!(
                    "the Daytona sandbox {} was deleted outside this session",
                    self.sandbox_name()
                ))
            })?;
            if sandbox["state"] == "started" {
                return Ok(ready.clone());
            }
            let sandbox = self.until_started(sandbox).await?;
            let ready = Ready {
                toolbox: self.toolbox(&sandbox),
                ..ready.clone()
            };
            *slot = Some(ready.clone());
            return Ok(ready);
        }
        let existing = if self.resources.persistent {
            self.get(&self.sandbox_name()).await?
        } else {
            None
        };
        if !self.resources.persistent {
            self.delete_orphans().await;
        }
        let sandbox = match existing {
            Some(sandbox) => sandbox,
            None => {
                let reply = api
                    .call(
                        Method::POST,
                        &self.url("sandbox"),
                        Some(&self.create_body()),
                        &[],
                        START_TIMEOUT,
                    )
                    .await?;
                api.expect_json(reply)?
            }
        };
        let sandbox = self.until_started(sandbox).await?;
        let id = sandbox["id"].as_str().unwrap_or_default().to_string();
        if id.is_empty() {
            return Err(EnvError::Start(
                "Daytona returned a sandbox without an id".into(),
            ));
        }
        let toolbox = self.toolbox(&sandbox);
        let (code, out) = remote_exec::daytona_execute(
            api,
            &toolbox,
            &format!(
                "sh -c {}",
                sh_quote(&format!(
                    "mkdir -p {PID_DIR}; echo \"HOME=$HOME\"; command -v bash || true"
                ))
            ),
            "/",
            60,
        )
        .await?;
        if code != 0 {
            return Err(EnvError::Start(format!(
                "the Daytona sandbox {} cannot run sh: {}",
                self.sandbox_name(),
                out.trim()
            )));
        }
        if let Some(home) = out
            .lines()
            .find_map(|l| l.strip_prefix("HOME="))
            .filter(|h| h.starts_with('/'))
            && let Ok(mut slot) = self.home.lock()
        {
            *slot = home.trim().to_string();
        }
        let shell = if out.lines().any(|l| l.trim().ends_with("/bash")) {
            "bash"
        } else {
            "sh"
        };
        let ready = Ready { id, toolbox, shell };
        *slot = Some(ready.clone());
        Ok(ready)
    }

    /// Deletes the session sandboxes of this host whose Hermes process no longer runs. Best
    /// effort: a failed listing or deletion leaves them for the next session.
    async fn delete_orphans(&self) {
        let Ok(api) = self.api() else { return };
        let filter = json!({"hermes_host": host_name()}).to_string();
        let Ok(url) = reqwest::Url::parse_with_params(&self.url("sandbox"), [("labels", filter)])
        else {
            return;
        };
        let Ok(reply) = api
            .call(Method::GET, url.as_str(), None, &[], CALL_TIMEOUT)
            .await
        else {
            return;
        };
        let Ok(Value::Array(sandboxes)) = api.expect_json(reply) else {
            return;
        };
        for sandbox in sandboxes {
            let labels = &sandbox["labels"];
            let owner = labels["hermes_pid"]
                .as_str()
                .and_then(|p| p.parse::<u32>().ok());
            let (Some(owner), Some(id)) = (owner, sandbox["id"].as_str()) else {
                continue;
            };
            if labels["hermes_host"] != host_name() || hermes_runs(owner) {
                continue;
            }
            let _ = api
                .call(
                    Method::DELETE,
                    &self.url(&format!("sandbox/{id}")),
                    None,
                    &[],
                    CALL_TIMEOUT,
                )
                .await;
        }
    }

    fn signal_target(&self, ready: &Ready) -> Arc<DaytonaSignal> {
        Arc::new(DaytonaSignal {
            api: self.api.clone(),
            token: self.settings.api_key.clone().unwrap_or_default(),
            toolbox: ready.toolbox.clone(),
            launcher: self.launcher.clone(),
        })
    }

    fn launcher(&self) -> Result<&std::path::Path, EnvError> {
        self.launcher.as_deref().ok_or_else(|| {
            EnvError::Io("the Daytona backend needs the hermes binary to run commands".into())
        })
    }

    /// A toolbox call running `line` at `/`, for this binary's remote client.
    fn request(&self, toolbox: &str, line: &str) -> Request {
        Request::Daytona {
            toolbox: toolbox.to_string(),
            cwd: "/".into(),
            stdin: false,
            command: line.to_string(),
        }
    }
}

/// This machine's name, which labels its session sandboxes.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// Whether process `pid` of this machine is a Hermes (a pid reused by another program is
/// not: its sandbox is an orphan).
fn hermes_runs(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| comm.trim().starts_with("hermes"))
}

/// Signals process groups in the sandbox through the toolbox.
#[derive(Debug)]
struct DaytonaSignal {
    api: Option<Api>,
    token: String,
    toolbox: String,
    launcher: Option<PathBuf>,
}

#[async_trait::async_trait]
impl RemoteSignal for DaytonaSignal {
    fn signal_blocking(&self, token: &str, signal: &str) {
        if let Some(launcher) = &self.launcher {
            Request::Daytona {
                toolbox: self.toolbox.clone(),
                cwd: "/".into(),
                stdin: false,
                command: kill_line(token, signal),
            }
            .run_blocking(launcher, &self.token);
        }
    }

    async fn signal(&self, token: &str, signal: &str) {
        if let Some(api) = &self.api {
            let _ = remote_exec::daytona_execute(
                api,
                &self.toolbox,
                &kill_line(token, signal),
                "/",
                30,
            )
            .await;
        }
    }
}

#[async_trait::async_trait]
impl ExecutionEnvironment for DaytonaEnvironment {
    fn backend(&self) -> Backend {
        Backend::Daytona
    }

    fn cwd(&self) -> String {
        self.home()
    }

    fn home(&self) -> String {
        self.home
            .lock()
            .map(|h| h.clone())
            .unwrap_or_else(|_| "/home/daytona".into())
    }

    async fn connect(&self) -> Result<(), EnvError> {
        self.ensure().await.map(|_| ())
    }

    async fn shell(&self, request: ShellRequest<'_>) -> Result<Prepared, EnvError> {
        let ready = self.ensure().await?;
        let launcher = self.launcher()?;
        let token = format!(
            "{}-{}",
            std::process::id(),
            self.next_token.fetch_add(1, Ordering::Relaxed)
        );
        // Variables for this command only (execute_code's channel) go in front of the script.
        let mut script = String::new();
        for (k, v) in request.extra_env {
            script.push_str(&format!("export {k}={}; ", sh_quote(v)));
        }
        script.push_str(request.script);
        let command = Request::Daytona {
            toolbox: ready.toolbox.clone(),
            cwd: request.workdir.to_string(),
            stdin: request.feeds_stdin,
            command: wrapped_line(ready.shell, &token, request.workdir, &script),
        }
        .command(
            launcher,
            self.settings.api_key.as_deref().unwrap_or_default(),
        );
        Ok(Prepared {
            command,
            stopper: Stopper::Remote {
                target: self.signal_target(&ready),
                token,
            },
        })
    }

    async fn shutdown(&self) {
        let ready = self.ready.lock().await.take();
        let Some(ready) = ready else { return };
        let Ok(api) = self.api() else { return };
        let _ = if self.resources.persistent {
            api.call(
                Method::POST,
                &self.url(&format!("sandbox/{}/stop", ready.id)),
                None,
                &[],
                CALL_TIMEOUT,
            )
            .await
        } else {
            api.call(
                Method::DELETE,
                &self.url(&format!("sandbox/{}", ready.id)),
                None,
                &[],
                CALL_TIMEOUT,
            )
            .await
        };
    }
}

#[async_trait::async_trait]
impl ControlScripts for DaytonaEnvironment {
    async fn control(&self, line: &str) -> Result<(i32, String), EnvError> {
        let ready = self.ensure().await?;
        remote_exec::daytona_execute(self.api()?, &ready.toolbox, line, "/", 60).await
    }
    async fn command(&self, line: &str) -> Result<tokio::process::Command, EnvError> {
        let ready = self.ensure().await?;
        Ok(self.request(&ready.toolbox, line).command(
            self.launcher()?,
            self.settings.api_key.as_deref().unwrap_or_default(),
        ))
    }
    fn control_blocking(&self, line: &str) {
        let toolbox = self
            .ready
            .try_lock()
            .ok()
            .and_then(|r| r.as_ref().map(|r| r.toolbox.clone()));
        if let (Some(toolbox), Ok(launcher)) = (toolbox, self.launcher()) {
            self.request(&toolbox, line).run_blocking(
                launcher,
                self.settings.api_key.as_deref().unwrap_or_default(),
            );
        }
    }
    async fn job_shell(&self) -> Result<&'static str, EnvError> {
        Ok(self.ensure().await?.shell)
    }
}

/// `hermes doctor`: the API key is set and the API accepts it (`GET /sandbox`, the key's
/// organisation's sandboxes). Returns how many sandboxes it lists.
pub async fn check(settings: &DaytonaSettings) -> Result<usize, EnvError> {
    let key = settings
        .api_key
        .as_deref()
        .ok_or_else(|| EnvError::MissingCredential {
            backend: Backend::Daytona,
            fix: "DAYTONA_API_KEY is not set".into(),
        })?;
    let api = Api::new("the Daytona API", key)?;
    let reply = api
        .call(
            Method::GET,
            &format!("{}/sandbox", settings.api_url),
            None,
            &[],
            Duration::from_secs(15),
        )
        .await?;
    let v = api.expect_json(reply)?;
    Ok(v.as_array()
        .or_else(|| v["items"].as_array())
        .map_or(0, Vec::len))
}
