//! What a tool call may use: the working directory, the environment for subprocesses (without
//! credentials), the terminal timeout, the cancellation token and iteration budget of the turn,
//! the frontend's [`Interaction`], and the session's state shared by every turn: which stored
//! session it is ([`SessionHandle`]), the approval gate, background processes, the todo list,
//! the redactor of known secrets, the protected paths and the repeated-search guard.
//!
//! Everything per session lives here and nowhere else (no process-wide statics, no current
//! directory): one process hosts many sessions at once, and tools are shared between them.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_config::{Config, ConfigError, Environment, HermesHome};
use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalGate, ApprovalSettings, CommandChecker, CommandJudge, is_truthy};
use crate::budget::IterationBudget;
use crate::env::daytona::{DaytonaEnvironment, Resources};
use crate::env::docker::DockerEnvironment;
use crate::env::local::LocalEnvironment;
use crate::env::modal::ModalEnvironment;
use crate::env::scripted_jobs::WithScriptedJobs;
use crate::env::singularity::{SingularityEnvironment, find_executable};
use crate::env::ssh::{SshClient, SshEnvironment};
use crate::env::{Backend, EnvironmentSettings, ExecutionEnvironment};
use crate::interaction::{Interaction, NonInteractive};
use crate::process::ProcessRegistry;
use crate::protect::ProtectedPaths;
use crate::redact::Redactor;
use crate::sandbox::{SandboxMode, SandboxSettings, SandboxState};
use crate::search::RepeatGuard;
use crate::secrets::ChildEnv;
use crate::todo::TodoStore;

/// The id of the stored session a live session records into now. Shared by the session's
/// recorder (which moves it on `/new` and when a compression continues in a child session) and
/// its tools (`session_search` leaves the current session out, `delegate_task` files children
/// under it), so both always agree.
#[derive(Debug, Clone, Default)]
pub struct SessionHandle(Arc<Mutex<String>>);

impl SessionHandle {
    pub fn new(id: impl Into<String>) -> SessionHandle {
        SessionHandle(Arc::new(Mutex::new(id.into())))
    }

    /// The current id ("" when the session is not stored).
    pub fn id(&self) -> String {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn set(&self, id: impl Into<String>) {
        if let Ok(mut s) = self.0.lock() {
            *s = id.into();
        }
    }
}

/// The chat a session talks in (gateway sessions only): where a cron job created from it
/// delivers (`deliver: origin`), stored in the job as the Python Hermes stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatOrigin {
    pub platform: String,
    pub chat_id: String,
    /// `dm`, `group`, `channel` (as the gateway keys sessions).
    pub chat_type: String,
    pub chat_name: Option<String>,
    pub thread_id: Option<String>,
    pub user_id: Option<String>,
}

impl ChatOrigin {
    /// The job's `origin` object (the Python Hermes's fields).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "platform": self.platform,
            "chat_id": self.chat_id,
            "chat_type": self.chat_type,
            "chat_name": self.chat_name,
            "thread_id": self.thread_id,
            "user_id": self.user_id,
        })
    }
}

#[derive(Clone)]
pub struct ToolContext {
    /// Relative paths and commands start here.
    pub cwd: PathBuf,
    /// The environment handed to subprocesses.
    pub child_env: Arc<ChildEnv>,
    /// Default limit of a foreground terminal command.
    pub terminal_timeout: Duration,
    /// Cancelled when the user interrupts the turn.
    pub cancel: CancellationToken,
    /// The iteration budget of the running turn (none outside a turn): tools that run model
    /// calls (`delegate_task`) draw on it, tools that should not count refund it.
    pub budget: Option<Arc<IterationBudget>>,
    pub interaction: Arc<dyn Interaction>,
    /// The stored session this context belongs to.
    pub session: SessionHandle,
    pub approvals: Arc<ApprovalGate>,
    pub processes: Arc<ProcessRegistry>,
    pub todos: Arc<TodoStore>,
    pub redactor: Arc<Redactor>,
    pub protected: Arc<ProtectedPaths>,
    pub search_guard: Arc<RepeatGuard>,
    /// The chat this session talks in, when it is a gateway chat.
    pub origin: Option<Arc<ChatOrigin>>,
    /// The OS sandbox commands run in (`terminal.sandbox`).
    pub sandbox: Arc<SandboxState>,
    /// Where commands and file tools act (`terminal.backend`).
    pub environment: Arc<dyn ExecutionEnvironment>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("cwd", &self.cwd)
            .field("terminal_timeout", &self.terminal_timeout)
            .field("session", &self.session.id())
            .field("approvals", &self.approvals)
            .field("sandbox", &self.sandbox)
            .field("environment", &self.environment.backend())
            .finish_non_exhaustive()
    }
}

/// Everything a frontend knows when it sets up the tools of a session.
pub struct SessionTools<'a> {
    pub cwd: PathBuf,
    pub home: &'a HermesHome,
    pub config: &'a Config,
    pub env: &'a Environment,
    /// `--yolo` on the command line (`HERMES_YOLO_MODE` is read here).
    pub yolo: bool,
    pub interaction: Arc<dyn Interaction>,
    /// The smart-approval judge (`approvals.mode: smart`); none: ask the user.
    pub judge: Option<Arc<dyn CommandJudge>>,
    /// Credentials the session knows besides the environment (the provider key), as
    /// `(name, value)`: redacted from tool output.
    pub known_secrets: Vec<(String, String)>,
    pub session: SessionHandle,
    /// `--sandbox MODE` on the command line (else `terminal.sandbox` in config.yaml).
    pub sandbox: Option<SandboxMode>,
}

impl ToolContext {
    /// A context for `cwd` with the process environment (minus secrets), a 180 s terminal
    /// timeout, default approval settings, no OS sandbox and no user to ask.
    pub fn new(cwd: PathBuf) -> ToolContext {
        let protected = ProtectedPaths::from_process();
        let checker = CommandChecker::new(protected.home(), protected.hermes_home());
        ToolContext {
            environment: Arc::new(LocalEnvironment::new(cwd.clone())),
            cwd,
            child_env: Arc::new(ChildEnv::from_process(&[])),
            terminal_timeout: Duration::from_secs(180),
            cancel: CancellationToken::new(),
            budget: None,
            interaction: Arc::new(NonInteractive),
            session: SessionHandle::default(),
            approvals: Arc::new(ApprovalGate::new(
                ApprovalSettings::default(),
                checker,
                None,
            )),
            processes: Arc::new(ProcessRegistry::new()),
            todos: Arc::new(TodoStore::new()),
            redactor: Arc::new(Redactor::from_process()),
            protected: Arc::new(protected),
            search_guard: Arc::new(RepeatGuard::default()),
            origin: None,
            sandbox: Arc::new(SandboxState::Off),
        }
    }

    /// The context of a session: config (`terminal`, `approvals`, `command_allowlist`), the
    /// home's secrets, the user's home and Hermes home for protected paths.
    pub fn for_session(setup: SessionTools<'_>) -> Result<ToolContext, ConfigError> {
        let config = setup.config;
        let yolo = setup.yolo
            || setup
                .env
                .var("HERMES_YOLO_MODE")
                .is_some_and(|v| is_truthy(&v));
        let settings = ApprovalSettings::from_config(config, yolo)?;
        let sandbox = SandboxSettings::from_config(config, setup.sandbox)?;
        let sandbox = SandboxState::for_session(&sandbox, &setup.cwd, setup.home.root());
        let environment = environment_for(config, &setup)?;
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let protected = ProtectedPaths::new(home, Some(setup.home.root().to_path_buf()));
        let checker = CommandChecker::new(protected.home(), protected.hermes_home());
        let mut redactor = Redactor::from_environment(setup.env);
        for (name, value) in setup.known_secrets {
            redactor.add(name, value);
        }
        Ok(ToolContext {
            cwd: setup.cwd,
            child_env: Arc::new(ChildEnv::from_process(&config.terminal.env_passthrough)),
            terminal_timeout: Duration::from_secs(config.terminal.timeout.max(1)),
            cancel: CancellationToken::new(),
            budget: None,
            interaction: setup.interaction,
            session: setup.session,
            approvals: Arc::new(ApprovalGate::new(settings, checker, setup.judge)),
            processes: Arc::new(ProcessRegistry::new()),
            todos: Arc::new(TodoStore::new()),
            redactor: Arc::new(redactor),
            protected: Arc::new(protected),
            search_guard: Arc::new(RepeatGuard::default()),
            origin: None,
            sandbox: Arc::new(sandbox),
            environment,
        })
    }

    /// Ends the session's tools: background jobs killed, the environment shut down (a
    /// non-persistent container removed).
    pub async fn shutdown(&self) {
        self.processes.shutdown().await;
        self.environment.shutdown().await;
    }

    /// The context of one turn: its cancellation token and iteration budget.
    pub fn for_turn(
        &self,
        cancel: CancellationToken,
        budget: Option<Arc<IterationBudget>>,
    ) -> ToolContext {
        ToolContext {
            cancel,
            budget,
            ..self.clone()
        }
    }
}

/// `env` with the home's skills, caches and `terminal.credential_files` pushed into it before
/// use ([`crate::env::file_sync`]).
fn synced(
    config: &Config,
    setup: &SessionTools<'_>,
    env: Arc<dyn ExecutionEnvironment>,
) -> Arc<dyn ExecutionEnvironment> {
    let credential_files = config
        .raw
        .pointer("/terminal/credential_files")
        .and_then(serde_json::Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(serde_json::Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let force = setup
        .env
        .var(crate::env::file_sync::FORCE_ENV)
        .is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes"));
    Arc::new(crate::env::file_sync::Synced::new(
        env,
        crate::env::file_sync::SyncSources {
            home: setup.home.root().to_path_buf(),
            credential_files,
        },
        force,
    ))
}

/// The session's execution environment (`terminal.backend`). Backends not in this build are
/// refused here, at session start, rather than at the first command.
fn environment_for(
    config: &Config,
    setup: &SessionTools<'_>,
) -> Result<Arc<dyn ExecutionEnvironment>, ConfigError> {
    let settings = EnvironmentSettings::from_config_with(config, |name| setup.env.var(name))?;
    match settings.backend {
        Backend::Local => Ok(Arc::new(LocalEnvironment::new(setup.cwd.clone()))),
        Backend::Docker => {
            let session = setup.session.id();
            let env = setup.env;
            Ok(Arc::new(DockerEnvironment::new(
                settings.docker,
                setup.cwd.clone(),
                setup.home.root(),
                if session.is_empty() {
                    "session"
                } else {
                    &session
                },
                |name| env.var(name),
            )))
        }
        Backend::Ssh => {
            let session = setup.session.id();
            Ok(synced(
                config,
                setup,
                Arc::new(SshEnvironment::new(SshClient::new(
                    settings.ssh,
                    &setup.home.root().join("cache").join("ssh"),
                    if session.is_empty() {
                        "session"
                    } else {
                        &session
                    },
                    std::env::var("HOME").ok(),
                ))),
            ))
        }
        Backend::Daytona | Backend::Modal | Backend::Singularity => {
            let session = setup.session.id();
            let session = if session.is_empty() {
                "session".to_string()
            } else {
                session
            };
            let d = &settings.docker;
            let resources = Resources {
                cpu: d.cpu,
                memory: d.memory,
                disk: d.disk,
                persistent: d.persistent,
            };
            let launcher = crate::sandbox::launcher_path().map(std::path::Path::to_path_buf);
            let home = setup.home.root();
            let env: Arc<dyn ExecutionEnvironment> = match settings.backend {
                Backend::Daytona => Arc::new(WithScriptedJobs::new(DaytonaEnvironment::new(
                    settings.daytona,
                    resources,
                    home,
                    &session,
                    launcher,
                ))),
                Backend::Modal => Arc::new(WithScriptedJobs::new(ModalEnvironment::new(
                    settings.modal,
                    resources,
                    config.terminal.timeout,
                    home,
                    &session,
                    launcher,
                ))),
                // The image's files are its own; bind mounts show it nothing of the home.
                _ => {
                    return Ok(Arc::new(SingularityEnvironment::new(
                        settings.singularity,
                        resources,
                        home,
                        &session,
                        find_executable(setup.env.var("PATH").as_deref()),
                    )));
                }
            };
            Ok(synced(config, setup, env))
        }
    }
}
