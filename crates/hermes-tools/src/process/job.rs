//! One background job: the child (`bash -c`, own process group, stdin piped, stdout and stderr
//! merged into one pipe) and the task that collects its output and its exit status. In an
//! environment with [`DetachedJobs`] (SSH) the job runs detached on the far side instead and
//! the task follows its remote log, again after a dropped connection, until it has ended.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};
use tokio::sync::watch;

use super::buffer::OutputBuffer;
use crate::ToolError;
use crate::env::{DetachedJobs, DetachedStatus, ExecutionEnvironment, Stopper};
use crate::sandbox::Sandbox;
use crate::secrets::ChildEnv;
use crate::terminal::{Spawned, spawn_shell};

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    /// None when killed by a signal.
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl ExitInfo {
    /// The exit code the shell would report (`128 + signal` for a signal).
    pub fn shell_code(&self) -> i32 {
        self.code
            .unwrap_or_else(|| self.signal.map_or(-1, |s| 128 + s))
    }
}

#[derive(Debug, Default)]
struct JobState {
    output: OutputBuffer,
    /// Where the last poll stopped reading.
    poll_cursor: u64,
    /// Something in the process group still holds the output pipe.
    pipe_open: bool,
    killed: bool,
    tracked: bool,
}

pub struct Job {
    pub id: String,
    pub command: String,
    pub cwd: PathBuf,
    /// Also the process group id.
    pub pid: Option<u32>,
    /// Reaches the job's processes (in a container: the group inside it).
    stopper: Stopper,
    started: Instant,
    state: Mutex<JobState>,
    exit: watch::Receiver<Option<ExitInfo>>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    /// What was written to stdin since its last newline: the command line still being typed,
    /// checked whole when more is written (`write "rm -rf "` then `submit "/"`).
    pending_line: Mutex<String>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("id", &self.id)
            .field("command", &self.command)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl Job {
    pub(super) async fn start(
        id: String,
        environment: &dyn ExecutionEnvironment,
        command: &str,
        workdir: &str,
        env: &ChildEnv,
        sandbox: Option<&Sandbox>,
    ) -> Result<Arc<Job>, ToolError> {
        if let Some(jobs) = environment.detached() {
            return Job::start_detached(id, jobs, command, workdir).await;
        }
        let Spawned {
            mut child,
            pipe,
            stopper,
        } = spawn_shell(environment, command, workdir, env, sandbox, Stdio::piped()).await?;
        let (tx, rx) = watch::channel(None);
        let pid = child.id();
        let job = Arc::new(Job {
            id,
            command: command.to_string(),
            cwd: PathBuf::from(workdir),
            pid,
            stopper,
            started: Instant::now(),
            state: Mutex::new(JobState {
                pipe_open: true,
                tracked: pid.is_some(),
                ..JobState::default()
            }),
            exit: rx,
            stdin: tokio::sync::Mutex::new(child.stdin.take()),
            pending_line: Mutex::new(String::new()),
        });
        if let Some(pgid) = pid {
            super::track_group(pgid, true);
        }
        tokio::spawn(collect(job.clone(), child, pipe, tx));
        Ok(job)
    }

    /// A job detached on the far side: no local child, no stdin; its output comes from
    /// following the remote log.
    async fn start_detached(
        id: String,
        jobs: Arc<dyn DetachedJobs>,
        command: &str,
        workdir: &str,
    ) -> Result<Arc<Job>, ToolError> {
        let (token, stopper) = jobs
            .start(command, workdir)
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        let (tx, rx) = watch::channel(None);
        let job = Arc::new(Job {
            id,
            command: command.to_string(),
            cwd: PathBuf::from(workdir),
            pid: None,
            stopper,
            started: Instant::now(),
            state: Mutex::new(JobState {
                pipe_open: true,
                ..JobState::default()
            }),
            exit: rx,
            stdin: tokio::sync::Mutex::new(None),
            pending_line: Mutex::new(String::new()),
        });
        tokio::spawn(follow_detached(Arc::downgrade(&job), jobs, token, tx));
        Ok(job)
    }

    fn state<R>(&self, f: impl FnOnce(&mut JobState) -> R) -> Option<R> {
        self.state.lock().ok().map(|mut s| f(&mut s))
    }

    pub fn exit_info(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// The leader exited and nothing holds the output pipe any more.
    pub fn is_finished(&self) -> bool {
        self.exit_info().is_some() && !self.state(|s| s.pipe_open).unwrap_or(false)
    }

    /// Something of the job may still be running.
    pub(super) fn group_alive(&self) -> bool {
        !self.is_finished()
    }

    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn was_killed(&self) -> bool {
        self.state(|s| s.killed).unwrap_or(false)
    }

    pub(super) async fn signal(&self, signal: i32) {
        self.stopper.signal(self.pid, signal).await;
    }

    /// [`Job::signal`] where nothing may be awaited (drop).
    pub(super) fn signal_blocking(&self, signal: i32) {
        self.stopper.signal_blocking(self.pid, signal);
    }

    pub(super) fn forget_group(&self) {
        if let (Some(pgid), Some(true)) = (self.pid, self.state(|s| std::mem::take(&mut s.tracked)))
        {
            super::track_group(pgid, false);
        }
    }

    /// Resolves when the leader has exited.
    pub async fn wait_exit(&self) {
        let mut rx = self.exit.clone();
        let _ = rx.wait_for(Option::is_some).await;
    }

    /// Output printed since the previous poll (and bytes of it already dropped).
    pub fn poll_output(&self) -> (String, u64) {
        self.state(|s| {
            let out = s.output.since(s.poll_cursor);
            s.poll_cursor = s.output.end();
            out
        })
        .unwrap_or_default()
    }

    /// The kept lines and the number of the first.
    pub fn lines(&self) -> (Vec<String>, u64) {
        self.state(|s| s.output.lines()).unwrap_or_default()
    }

    pub fn tail(&self, max_chars: usize) -> String {
        self.state(|s| s.output.tail(max_chars)).unwrap_or_default()
    }

    /// SIGTERM to the group, then SIGKILL after a grace. `false` when it had already exited.
    pub async fn kill(&self, grace: Duration) -> bool {
        if self.exit_info().is_some() {
            if !self.is_finished() {
                // The leader is gone but children still hold the pipe.
                self.signal(libc::SIGKILL).await;
            }
            return false;
        }
        self.state(|s| s.killed = true);
        self.signal(libc::SIGTERM).await;
        if tokio::time::timeout(grace, self.wait_exit()).await.is_err() {
            self.signal(libc::SIGKILL).await;
            let _ = tokio::time::timeout(grace, self.wait_exit()).await;
        } else {
            self.signal(libc::SIGKILL).await;
        }
        true
    }

    /// The stdin text written since the last newline.
    pub fn pending_stdin(&self) -> String {
        self.pending_line
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default()
    }

    /// Remembers what stays unterminated after `line` (the pending text plus what was just
    /// written) went to stdin.
    pub fn set_pending_stdin(&self, line: &str) {
        if let Ok(mut p) = self.pending_line.lock() {
            *p = line.rsplit('\n').next().unwrap_or("").to_string();
        }
    }

    /// Writes to the job's stdin; `close` closes it afterwards (EOF).
    pub async fn write_stdin(&self, data: &str, close: bool) -> Result<(), ToolError> {
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(ToolError::new("the process's stdin is closed"));
        };
        if !data.is_empty() {
            pipe.write_all(data.as_bytes())
                .await
                .and(pipe.flush().await)
                .map_err(|e| ToolError::new(format!("cannot write to the process: {e}")))?;
        }
        if close {
            *stdin = None;
        }
        Ok(())
    }
}

/// Reads the job's output until every holder of the pipe is gone, and records the exit.
async fn collect(
    job: Arc<Job>,
    mut child: Child,
    mut pipe: tokio::net::unix::pipe::Receiver,
    exit: watch::Sender<Option<ExitInfo>>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut pipe_open = true;
    let mut exited = false;
    while pipe_open || !exited {
        tokio::select! {
            read = pipe.read(&mut buf), if pipe_open => match read {
                Ok(0) | Err(_) => {
                    pipe_open = false;
                    job.state(|s| s.pipe_open = false);
                }
                Ok(n) => {
                    job.state(|s| s.output.push(&buf[..n]));
                }
            },
            status = child.wait(), if !exited => {
                exited = true;
                use std::os::unix::process::ExitStatusExt;
                let info = match status {
                    Ok(s) => ExitInfo { code: s.code(), signal: s.signal() },
                    Err(_) => ExitInfo { code: None, signal: None },
                };
                exit.send_replace(Some(info));
                // Closing stdin lets anything still reading it finish.
                *job.stdin.lock().await = None;
            }
        }
    }
    job.forget_group();
}

/// Longest wait between reconnection attempts while the far side is unreachable.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Follows a detached job's log from where the last follow stopped until the job has ended
/// and all of its output is read, reconnecting (with backoff) when the connection drops.
/// Ends early when the job is forgotten (its session is gone).
async fn follow_detached(
    job: Weak<Job>,
    jobs: Arc<dyn DetachedJobs>,
    token: String,
    exit: watch::Sender<Option<ExitInfo>>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut backoff = Duration::from_millis(500);
    let info = loop {
        let Some(strong) = job.upgrade() else { return };
        let offset = strong.state(|s| s.output.end()).unwrap_or(0);
        let mut drained = false;
        if let Ok(mut command) = jobs.follow(&token, offset).await {
            command
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .kill_on_drop(true);
            if let Ok(mut child) = command.spawn() {
                if let Some(mut out) = child.stdout.take() {
                    while let Ok(n) = out.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        strong.state(|s| s.output.push(&buf[..n]));
                        backoff = Duration::from_millis(500);
                    }
                }
                drained = child.wait().await.is_ok_and(|s| s.success());
            }
        }
        drop(strong);
        match jobs.status(&token).await {
            Ok(DetachedStatus::Exited(code)) if drained => {
                break if code > 128 {
                    ExitInfo {
                        code: None,
                        signal: Some(code - 128),
                    }
                } else {
                    ExitInfo {
                        code: Some(code),
                        signal: None,
                    }
                };
            }
            Ok(DetachedStatus::Lost) => {
                break ExitInfo {
                    code: None,
                    signal: None,
                };
            }
            // The connection dropped (or the job ended while it was down: one more follow
            // reads the rest); unreachable: try again later.
            Ok(DetachedStatus::Exited(_)) | Ok(DetachedStatus::Running) | Err(_) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    };
    // The files go first: a session's end waits for the exit, then the process may end.
    jobs.forget(&token).await;
    if let Some(job) = job.upgrade() {
        job.state(|s| s.pipe_open = false);
    }
    exit.send_replace(Some(info));
}
