//! Execution environments: where the agent's hands work (`terminal.backend`). An environment
//! turns "run this shell script in this directory" into a local [`tokio::process::Command`]:
//! the local backend runs `bash -c` on this machine (inside the OS sandbox when the session has
//! one), the Docker backend runs `docker exec -i CONTAINER sh -c ...` in a container created
//! for the session. Everything built on local child processes (foreground commands with
//! timeout and capture, background jobs) works unchanged through that command; what differs
//! is how a command is stopped ([`Stopper`]: the local process group, or the process group
//! inside the container) and how files are reached (the local backend keeps the guarded local
//! file code; other backends go through the environment's shell, [`shell_fs`]).
//!
//! The SSH backend implements [`ExecutionEnvironment`] the same way (the `ssh` client runs the
//! script over there, a recorded remote pid stops it) and adds [`DetachedJobs`]: background
//! jobs that run detached on the remote host, so they survive a dropped connection, and whose
//! output is followed from a remote log.
//!
//! Singularity/Apptainer works like Docker (`apptainer exec instance://NAME sh -c ...`). The
//! cloud backends, Daytona and Modal (through the Nous tool gateway), have HTTP APIs rather
//! than a CLI: their local child is this binary's own client, `hermes __remote-exec`
//! ([`remote_exec`]), which runs one command over the API, prints its output and exits with
//! its status, so timeouts, background jobs and file operations work through them unchanged.

pub mod daytona;
pub mod docker;
pub mod file_sync;
pub mod http_api;
pub mod local;
pub mod modal;
pub mod remote_exec;
pub mod scripted_jobs;
pub mod settings;
pub mod shell_fs;
pub mod singularity;
pub mod ssh;
mod ssh_scripts;
pub mod tools;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use settings::{
    Backend, DaytonaSettings, DockerSettings, EnvironmentSettings, ModalMode, ModalSettings,
    SingularitySettings, SshSettings,
};

/// Why an environment cannot run a command.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EnvError {
    #[error(
        "terminal.backend `{0}` is not in this build yet (available: local, docker, ssh, daytona, modal, singularity)"
    )]
    NotInThisBuild(Backend),
    #[error("terminal.backend {backend}: {fix}")]
    MissingCredential { backend: Backend, fix: String },
    #[error("{service} refused the request (HTTP {status}): {message}")]
    Api {
        service: &'static str,
        status: u16,
        message: String,
    },
    #[error("cannot reach {service} at {url}: {detail}")]
    ApiUnreachable {
        service: &'static str,
        url: String,
        detail: String,
    },
    #[error(
        "neither `apptainer` nor `singularity` runs here ({0}); install Apptainer (https://apptainer.org/docs/admin/main/installation.html) or put it on PATH"
    )]
    SingularityMissing(String),
    #[error(
        "the container CLI `{binary}` was not found ({reason}); install Docker (e.g. apt-get install docker.io) or set terminal.docker_binary"
    )]
    CliMissing { binary: String, reason: String },
    #[error(
        "the Docker daemon is unreachable{host}: {detail}. Start it (systemctl start docker) or point DOCKER_HOST at a running daemon"
    )]
    DaemonUnreachable { host: String, detail: String },
    #[error(
        "the image `{image}` is not on this machine and could not be pulled ({detail}); with no registry reachable, build or `docker import` it locally, or set terminal.docker_image to an image `docker images` lists"
    )]
    ImageMissing { image: String, detail: String },
    #[error("cannot start the container: {0}")]
    Start(String),
    #[error(
        "the ssh client `ssh` cannot run ({0}); install OpenSSH (apt-get install openssh-client)"
    )]
    SshMissing(String),
    #[error(
        "the host key of {host} (port {port}) is not in {known_hosts}: the connection was refused. Check the server's fingerprint, then add it with `ssh-keyscan -p {port} {host} >> {known_hosts}`"
    )]
    HostKeyUnknown {
        host: String,
        port: u16,
        known_hosts: String,
    },
    #[error(
        "the host key of {host} (port {port}) does not match the one in {known_hosts} (a reinstalled server, or someone in between): the connection was refused. If the change is expected, remove the old key with `ssh-keygen -R '[{host}]:{port}' -f {known_hosts}` and add the new one after checking its fingerprint"
    )]
    HostKeyChanged {
        host: String,
        port: u16,
        known_hosts: String,
    },
    #[error(
        "{destination} refused the key ({detail}); set terminal.ssh_key to a key in the remote ~/.ssh/authorized_keys, or load one into ssh-agent"
    )]
    SshAuth { destination: String, detail: String },
    #[error("cannot reach {destination} over ssh: {detail}")]
    SshUnreachable { destination: String, detail: String },
    #[error("{0}")]
    Io(String),
}

/// One shell script to run in an environment.
pub struct ShellRequest<'a> {
    pub script: &'a str,
    /// The environment's path of the working directory.
    pub workdir: &'a str,
    /// The session's filtered host environment: what a local command gets. Remote backends
    /// ignore it (their environment is their own).
    pub env: &'a crate::secrets::ChildEnv,
    /// Variables for this command besides the environment's own (execute_code's channel, ...).
    pub extra_env: &'a [(String, String)],
    /// The local OS sandbox (ignored by backends that are a sandbox themselves).
    pub sandbox: Option<&'a crate::sandbox::Sandbox>,
    /// The caller writes the command's whole input to its stdin and closes it (a file
    /// write). Backends whose API takes input up front (Daytona, Modal) read it first; other
    /// commands get no input there.
    pub feeds_stdin: bool,
}

/// A prepared command: the caller sets stdio, process group and spawns it.
pub struct Prepared {
    pub command: tokio::process::Command,
    pub stopper: Stopper,
}

/// Delivers a signal to the process group a remote command started.
#[async_trait::async_trait]
pub trait RemoteSignal: Send + Sync + fmt::Debug {
    /// Sends `signal` ("TERM", "KILL") and waits for the delivery, bounded.
    fn signal_blocking(&self, token: &str, signal: &str);
    /// The same, without blocking the runtime.
    async fn signal(&self, token: &str, signal: &str);
}

/// How to stop what a prepared command started.
#[derive(Debug, Clone)]
pub enum Stopper {
    /// The local process group of the child (`process_group(0)`).
    LocalGroup,
    /// The process group inside the environment, named by a token the script recorded.
    Remote {
        target: Arc<dyn RemoteSignal>,
        token: String,
    },
}

impl Stopper {
    /// Signals the command's processes: `pgid` is the local child's group.
    pub async fn signal(&self, pgid: Option<u32>, signal: i32) {
        match self {
            Stopper::LocalGroup => {
                if let Some(pgid) = pgid {
                    crate::terminal::signal_group(pgid, signal);
                }
            }
            Stopper::Remote { target, token } => {
                target.signal(token, signal_name(signal)).await;
                // The local client goes too once its remote command is gone; SIGKILL makes
                // sure a hung client does not outlive it.
                if signal == libc::SIGKILL
                    && let Some(pgid) = pgid
                {
                    crate::terminal::signal_group(pgid, signal);
                }
            }
        }
    }

    /// [`Stopper::signal`] for synchronous contexts (drop, abrupt exit).
    pub fn signal_blocking(&self, pgid: Option<u32>, signal: i32) {
        match self {
            Stopper::LocalGroup => {
                if let Some(pgid) = pgid {
                    crate::terminal::signal_group(pgid, signal);
                }
            }
            Stopper::Remote { target, token } => {
                target.signal_blocking(token, signal_name(signal));
                if let Some(pgid) = pgid {
                    crate::terminal::signal_group(pgid, libc::SIGKILL);
                }
            }
        }
    }

    /// SIGTERM, a grace for the child to exit, then SIGKILL; reaps the child.
    pub async fn terminate(
        &self,
        child: &mut tokio::process::Child,
        pgid: Option<u32>,
        grace: Duration,
    ) -> std::io::Result<std::process::ExitStatus> {
        if pgid.is_none() && matches!(self, Stopper::LocalGroup) {
            let _ = child.start_kill();
            return child.wait().await;
        }
        self.signal(pgid, libc::SIGTERM).await;
        if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
            self.signal(pgid, libc::SIGKILL).await;
            return status;
        }
        self.signal(pgid, libc::SIGKILL).await;
        match tokio::time::timeout(grace, child.wait()).await {
            Ok(status) => status,
            Err(_) => {
                let _ = child.start_kill();
                child.wait().await
            }
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGKILL => "KILL",
        libc::SIGINT => "INT",
        libc::SIGHUP => "HUP",
        _ => "TERM",
    }
}

/// What became of a detached job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetachedStatus {
    Running,
    /// Ended with this exit code (`128 + n` for signal n).
    Exited(i32),
    /// Neither running nor with a recorded exit (killed with SIGKILL, the host rebooted).
    Lost,
}

/// Background jobs that run detached on the far side and outlive the connection: their
/// output goes to a log there, which is followed from a byte offset and re-followed after a
/// reconnection.
#[async_trait::async_trait]
pub trait DetachedJobs: Send + Sync + fmt::Debug {
    /// Starts `script` in `workdir`; returns its token and how to stop it.
    async fn start(&self, script: &str, workdir: &str) -> Result<(String, Stopper), EnvError>;
    /// A command that prints the job's log from byte `offset` until the job ends, then exits
    /// 0 (another status: the connection or the job's files went away).
    async fn follow(&self, token: &str, offset: u64) -> Result<tokio::process::Command, EnvError>;
    /// Whether the job still runs.
    async fn status(&self, token: &str) -> Result<DetachedStatus, EnvError>;
    /// Removes the job's files once its output and status are collected.
    async fn forget(&self, token: &str);
}

/// Where the session's commands and file tools act.
#[async_trait::async_trait]
pub trait ExecutionEnvironment: Send + Sync + fmt::Debug {
    fn backend(&self) -> Backend;

    /// The local backend: tools keep their direct, guarded file access.
    fn is_local(&self) -> bool {
        self.backend() == Backend::Local
    }

    /// The environment's working directory (relative paths start here).
    fn cwd(&self) -> String;

    /// The home directory `~` stands for in paths the tools resolve.
    fn home(&self) -> String {
        "/root".to_string()
    }

    /// Connects, where the environment is remote, so that [`ExecutionEnvironment::cwd`] and
    /// [`ExecutionEnvironment::home`] are the far side's and a refused connection is reported
    /// as such before a tool runs anything.
    async fn connect(&self) -> Result<(), EnvError> {
        Ok(())
    }

    /// A local command that runs `request.script` in the environment.
    async fn shell(&self, request: ShellRequest<'_>) -> Result<Prepared, EnvError>;

    /// Background jobs that survive the client's connection (remote hosts); None: a background
    /// job is the local child of [`ExecutionEnvironment::shell`].
    fn detached(&self) -> Option<Arc<dyn DetachedJobs>> {
        None
    }

    /// Ends the environment at session end (a non-persistent container is removed).
    async fn shutdown(&self);
}

/// Single-quotes `s` for a POSIX shell (any bytes, newlines included).
pub fn sh_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// `path` against the environment's `cwd` (POSIX paths; a leading `~` is `/root`, the
/// container user's home).
pub fn resolve_posix(cwd: &str, path: &str) -> String {
    resolve_posix_in(cwd, "/root", path)
}

/// `path` against `cwd`, a leading `~` standing for `home`.
pub fn resolve_posix_in(cwd: &str, home: &str, path: &str) -> String {
    let path = path.trim();
    let joined = if path.starts_with('/') {
        path.to_string()
    } else if path == "~" {
        home.to_string()
    } else if let Some(rest) = path.strip_prefix("~/") {
        format!("{}/{rest}", home.trim_end_matches('/'))
    } else if path.is_empty() || path == "." {
        cwd.to_string()
    } else {
        format!("{}/{path}", cwd.trim_end_matches('/'))
    };
    normalize_posix(&joined)
}

/// Removes `.` and `..` components and duplicate slashes, lexically.
fn normalize_posix(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests;
