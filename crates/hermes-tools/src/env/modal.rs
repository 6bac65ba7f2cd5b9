//! The Modal backend. Modal's own API for sandboxes is gRPC, spoken only by its SDK; the
//! Python Hermes reaches Modal over HTTP through the Nous tool gateway ("managed Modal",
//! `tools/environments/managed_modal.py`), and that is what this backend speaks:
//!
//! - `POST {gateway}/v1/sandboxes` with `{image, cwd, cpu, memoryMiB, timeoutMs,
//!   idleTimeoutMs, persistentFilesystem, logicalKey[, diskMiB]}` and an
//!   `x-idempotency-key`, on the first command → `{id}`;
//! - `POST .../{id}/execs` `{execId, command, cwd, timeoutMs[, stdinData]}`, polled with
//!   `GET .../{id}/execs/{execId}` until `completed|failed|cancelled|timeout` (`output`,
//!   `returncode`), cancelled with `POST .../execs/{execId}/cancel` (a timeout or kill);
//! - `POST .../{id}/terminate` `{snapshotBeforeTerminate}` at session end (a snapshot when
//!   `container_persistent`, restored by the gateway for the same `logicalKey`).
//!
//! Idle hibernation (`idleTimeoutMs`) is the gateway's: a hibernated sandbox is restored on
//! the next exec. Direct Modal (`modal_mode: direct`, the SDK's gRPC) is not in this build.
//! The bearer token is the user's Nous token (`TOOL_GATEWAY_USER_TOKEN`, else the home's
//! `auth.json`), sent to the gateway only.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::daytona::Resources;
use super::docker::fnv1a;
use super::http_api::{Api, uuid4};
use super::remote_exec::{self, Request};
use super::scripted_jobs::ControlScripts;
use super::{
    Backend, EnvError, ExecutionEnvironment, ModalMode, ModalSettings, Prepared, RemoteSignal,
    ShellRequest, Stopper, sh_quote,
};

/// Where commands start (the Python Hermes's default for Modal).
pub const WORKDIR: &str = "/root";
/// The sandbox's lifetime the create asks for (the Python Hermes's).
const SANDBOX_TIMEOUT_MS: u64 = 3_600_000;
/// The least idle time before the gateway hibernates the sandbox.
const MIN_IDLE_MS: u64 = 300_000;
const CREATE_TIMEOUT: Duration = Duration::from_secs(60);

/// The user's Nous token from the home's `auth.json` (`providers.nous.access_token`), the
/// store the Python Hermes reads when `TOOL_GATEWAY_USER_TOKEN` is unset.
pub fn token_from_auth_store(home_root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(home_root.join("auth.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v["providers"]["nous"]["access_token"]
        .as_str()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

/// The Modal environment of one session (background jobs come with
/// [`super::scripted_jobs::WithScriptedJobs`]).
#[derive(Debug)]
pub struct ModalEnvironment {
    settings: ModalSettings,
    resources: Resources,
    /// The terminal timeout (s): the idle timeout is at least this.
    command_timeout: u64,
    token: Option<String>,
    api: Option<Api>,
    logical_key: String,
    idempotency_key: String,
    launcher: Option<PathBuf>,
    sandbox: tokio::sync::Mutex<Option<String>>,
    next: AtomicU64,
}

impl ModalEnvironment {
    pub fn new(
        settings: ModalSettings,
        resources: Resources,
        command_timeout: u64,
        home_root: &Path,
        session_key: &str,
        launcher: Option<PathBuf>,
    ) -> ModalEnvironment {
        let token = settings
            .token
            .clone()
            .or_else(|| token_from_auth_store(home_root));
        let logical_key = if resources.persistent {
            format!(
                "home-{:016x}",
                fnv1a(home_root.display().to_string().as_bytes())
            )
        } else if session_key.is_empty() {
            "session".into()
        } else {
            session_key.to_string()
        };
        let api = token
            .as_deref()
            .and_then(|t| Api::new("the Modal tool gateway", t).ok());
        ModalEnvironment {
            settings,
            resources,
            command_timeout,
            token,
            api,
            logical_key,
            idempotency_key: uuid4(),
            launcher,
            sandbox: tokio::sync::Mutex::new(None),
            next: AtomicU64::new(1),
        }
    }

    fn api(&self) -> Result<&Api, EnvError> {
        if self.settings.mode == ModalMode::Direct {
            return Err(EnvError::MissingCredential {
                backend: Backend::Modal,
                fix: "modal_mode: direct needs Modal's gRPC SDK, which this build does not speak; set terminal.modal_mode: managed (or auto) to run Modal sandboxes through the Nous tool gateway".into(),
            });
        }
        self.api.as_ref().ok_or_else(|| EnvError::MissingCredential {
            backend: Backend::Modal,
            fix: "no Nous tool gateway token: set TOOL_GATEWAY_USER_TOKEN (or log in to Nous Portal so ~/.hermes/auth.json has providers.nous.access_token)".into(),
        })
    }

    /// The `POST /v1/sandboxes` body.
    pub fn create_body(&self) -> Value {
        let r = &self.resources;
        let mut body = json!({
            "image": self.settings.image,
            "cwd": WORKDIR,
            "cpu": if r.cpu > 0.0 { r.cpu } else { 1.0 },
            "memoryMiB": if r.memory > 0 { r.memory } else { 5120 },
            "timeoutMs": SANDBOX_TIMEOUT_MS,
            "idleTimeoutMs": MIN_IDLE_MS.max(self.command_timeout.saturating_mul(1000)),
            "persistentFilesystem": r.persistent,
            "logicalKey": self.logical_key,
        });
        if r.disk > 0 {
            body["diskMiB"] = json!(r.disk);
        }
        body
    }

    fn launcher(&self) -> Result<&Path, EnvError> {
        self.launcher.as_deref().ok_or_else(|| {
            EnvError::Io("the Modal backend needs the hermes binary to run commands".into())
        })
    }

    fn exec_id(&self) -> String {
        format!("{}-{}", uuid4(), self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// An exec running `line` at `/`, for this binary's remote client.
    fn request(&self, sandbox: &str, line: &str) -> Request {
        Request::Modal {
            gateway: self.settings.gateway_url.clone(),
            sandbox: sandbox.to_string(),
            exec_id: self.exec_id(),
            cwd: "/".into(),
            stdin: false,
            command: line.to_string(),
        }
    }

    /// The sandbox id, created on first use.
    async fn ensure(&self) -> Result<String, EnvError> {
        let api = self.api()?;
        let mut slot = self.sandbox.lock().await;
        if let Some(id) = slot.as_ref() {
            return Ok(id.clone());
        }
        let reply = api
            .call(
                Method::POST,
                &format!("{}/v1/sandboxes", self.settings.gateway_url),
                Some(&self.create_body()),
                &[("x-idempotency-key", &self.idempotency_key)],
                CREATE_TIMEOUT,
            )
            .await?;
        let body = api.expect_json(reply)?;
        let id = body["id"]
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| EnvError::Start("the Modal gateway returned no sandbox id".into()))?
            .to_string();
        *slot = Some(id.clone());
        Ok(id)
    }
}

/// Cancels a Modal exec (the gateway has no signals: any signal ends the exec).
#[derive(Debug)]
struct ModalCancel {
    api: Api,
    token: String,
    gateway: String,
    sandbox: String,
    launcher: Option<PathBuf>,
}

#[async_trait::async_trait]
impl RemoteSignal for ModalCancel {
    fn signal_blocking(&self, token: &str, _signal: &str) {
        if let Some(launcher) = &self.launcher {
            Request::ModalCancel {
                gateway: self.gateway.clone(),
                sandbox: self.sandbox.clone(),
                exec_id: token.to_string(),
            }
            .run_blocking(launcher, &self.token);
        }
    }

    async fn signal(&self, token: &str, _signal: &str) {
        remote_exec::modal_cancel(&self.api, &self.gateway, &self.sandbox, token).await;
    }
}

#[async_trait::async_trait]
impl ExecutionEnvironment for ModalEnvironment {
    fn backend(&self) -> Backend {
        Backend::Modal
    }

    fn cwd(&self) -> String {
        WORKDIR.to_string()
    }

    async fn connect(&self) -> Result<(), EnvError> {
        self.ensure().await.map(|_| ())
    }

    async fn shell(&self, request: ShellRequest<'_>) -> Result<Prepared, EnvError> {
        let sandbox = self.ensure().await?;
        let api = self.api()?.clone();
        let launcher = self.launcher()?;
        let exec_id = self.exec_id();
        let mut script = String::new();
        for (k, v) in request.extra_env {
            script.push_str(&format!("export {k}={}; ", sh_quote(v)));
        }
        script.push_str(request.script);
        let token = self.token.clone().unwrap_or_default();
        let command = Request::Modal {
            gateway: self.settings.gateway_url.clone(),
            sandbox: sandbox.clone(),
            exec_id: exec_id.clone(),
            cwd: request.workdir.to_string(),
            stdin: request.feeds_stdin,
            command: script,
        }
        .command(launcher, &token);
        Ok(Prepared {
            command,
            stopper: Stopper::Remote {
                target: Arc::new(ModalCancel {
                    api,
                    token,
                    gateway: self.settings.gateway_url.clone(),
                    sandbox,
                    launcher: self.launcher.clone(),
                }),
                token: exec_id,
            },
        })
    }

    async fn shutdown(&self) {
        let id = self.sandbox.lock().await.take();
        let (Some(id), Ok(api)) = (id, self.api()) else {
            return;
        };
        let _ = api
            .call(
                Method::POST,
                &format!("{}/v1/sandboxes/{id}/terminate", self.settings.gateway_url),
                Some(&json!({"snapshotBeforeTerminate": self.resources.persistent})),
                &[],
                Duration::from_secs(60),
            )
            .await;
    }
}

#[async_trait::async_trait]
impl ControlScripts for ModalEnvironment {
    async fn control(&self, line: &str) -> Result<(i32, String), EnvError> {
        let sandbox = self.ensure().await?;
        remote_exec::modal_run(
            self.api()?,
            &self.settings.gateway_url,
            &sandbox,
            &self.exec_id(),
            line,
            "/",
            None,
        )
        .await
    }
    async fn command(&self, line: &str) -> Result<tokio::process::Command, EnvError> {
        let sandbox = self.ensure().await?;
        Ok(self
            .request(&sandbox, line)
            .command(self.launcher()?, self.token.as_deref().unwrap_or_default()))
    }
    fn control_blocking(&self, line: &str) {
        let sandbox = self.sandbox.try_lock().ok().and_then(|s| s.clone());
        if let (Some(sandbox), Ok(launcher)) = (sandbox, self.launcher()) {
            self.request(&sandbox, line)
                .run_blocking(launcher, self.token.as_deref().unwrap_or_default());
        }
    }
    async fn job_shell(&self) -> Result<&'static str, EnvError> {
        Ok("sh")
    }
}
