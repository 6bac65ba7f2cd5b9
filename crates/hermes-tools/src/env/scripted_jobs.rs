//! Background jobs for backends whose commands answer only when they end (Daytona's toolbox,
//! Modal's execs): the job is started detached in the environment with its output in a log
//! there, by the SSH backend's scripts ([`super::ssh_scripts`]), and each follow is a bounded
//! read of that log ([`ssh_scripts::follow_for`]) that comes back as soon as it has new output,
//! so `process poll` sees a job's output while it runs. A backend provides the ways of running
//! a control script ([`ControlScripts`]); [`WithScriptedJobs`] gives it the jobs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::ssh_scripts::{self as scripts, remote_command};
use super::{
    Backend, DetachedJobs, DetachedStatus, EnvError, ExecutionEnvironment, Prepared, RemoteSignal,
    ShellRequest, Stopper,
};

/// Rounds of half a second one follow waits for output.
const FOLLOW_ROUNDS: u32 = 4;

/// How a backend runs a control script (a `sh -c SCRIPT NAME ARGS` line) in its environment.
#[async_trait::async_trait]
pub trait ControlScripts: Send + Sync + std::fmt::Debug {
    /// Runs `line` to the end; its exit code and output.
    async fn control(&self, line: &str) -> Result<(i32, String), EnvError>;
    /// A local command (this binary's remote client) that runs `line` and prints its output.
    async fn command(&self, line: &str) -> Result<tokio::process::Command, EnvError>;
    /// [`ControlScripts::control`] where nothing can wait (a signal from a drop), best effort.
    fn control_blocking(&self, line: &str);
    /// The shell a job's command runs under (`bash` when the environment has it).
    async fn job_shell(&self) -> Result<&'static str, EnvError>;
}

/// An environment whose background jobs are [`ScriptedJobs`] over its own control scripts.
#[derive(Debug)]
pub struct WithScriptedJobs<C: ExecutionEnvironment + ControlScripts + 'static>(Arc<C>);

impl<C: ExecutionEnvironment + ControlScripts + 'static> WithScriptedJobs<C> {
    pub fn new(environment: C) -> WithScriptedJobs<C> {
        WithScriptedJobs(Arc::new(environment))
    }
}

#[async_trait::async_trait]
impl<C: ExecutionEnvironment + ControlScripts + 'static> ExecutionEnvironment
    for WithScriptedJobs<C>
{
    fn backend(&self) -> Backend {
        self.0.backend()
    }
    fn cwd(&self) -> String {
        self.0.cwd()
    }
    fn home(&self) -> String {
        self.0.home()
    }
    async fn connect(&self) -> Result<(), EnvError> {
        self.0.connect().await
    }
    async fn shell(&self, request: ShellRequest<'_>) -> Result<Prepared, EnvError> {
        self.0.shell(request).await
    }
    fn detached(&self) -> Option<Arc<dyn DetachedJobs>> {
        Some(Arc::new(ScriptedJobs::new(self.0.clone())))
    }
    async fn shutdown(&self) {
        self.0.shutdown().await;
    }
}

/// The [`DetachedJobs`] of a backend.
#[derive(Debug)]
pub(crate) struct ScriptedJobs<C: ControlScripts + 'static> {
    control: Arc<C>,
    next: AtomicU64,
}

impl<C: ControlScripts + 'static> ScriptedJobs<C> {
    pub fn new(control: Arc<C>) -> ScriptedJobs<C> {
        ScriptedJobs {
            control,
            next: AtomicU64::new(1),
        }
    }
}

/// Signals the process group a job recorded, through the backend's control scripts.
#[derive(Debug)]
struct JobSignal<C: ControlScripts + 'static>(Arc<C>);

fn kill_line(token: &str, signal: &str) -> String {
    remote_command(&scripts::kill(), &[token, signal], &[])
}

#[async_trait::async_trait]
impl<C: ControlScripts + 'static> RemoteSignal for JobSignal<C> {
    fn signal_blocking(&self, token: &str, signal: &str) {
        self.0.control_blocking(&kill_line(token, signal));
    }
    async fn signal(&self, token: &str, signal: &str) {
        let _ = self.0.control(&kill_line(token, signal)).await;
    }
}

#[async_trait::async_trait]
impl<C: ControlScripts + 'static> DetachedJobs for ScriptedJobs<C> {
    async fn start(&self, script: &str, workdir: &str) -> Result<(String, Stopper), EnvError> {
        let token = format!(
            "bg-{}-{}",
            std::process::id(),
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let shell = self.control.job_shell().await?;
        let line = remote_command(
            &scripts::start_detached(),
            &[&token, workdir, script, shell],
            &[],
        );
        let (code, out) = self.control.control(&line).await?;
        if code != 0 {
            return Err(EnvError::Start(format!(
                "the background job did not start: {}",
                out.trim()
            )));
        }
        let stopper = Stopper::Remote {
            target: Arc::new(JobSignal(self.control.clone())),
            token: token.clone(),
        };
        Ok((token, stopper))
    }

    async fn follow(&self, token: &str, offset: u64) -> Result<tokio::process::Command, EnvError> {
        self.control
            .command(&remote_command(
                &scripts::follow_for(FOLLOW_ROUNDS),
                &[token, &offset.to_string()],
                &[],
            ))
            .await
    }

    async fn status(&self, token: &str) -> Result<DetachedStatus, EnvError> {
        let (_, out) = self
            .control
            .control(&remote_command(&scripts::status(), &[token], &[]))
            .await?;
        Ok(scripts::parse_status(&out))
    }

    async fn forget(&self, token: &str) {
        let _ = self
            .control
            .control(&remote_command(&scripts::forget(), &[token], &[]))
            .await;
    }
}
