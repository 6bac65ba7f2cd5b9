//! How the cloud sandbox doubles ([`super::daytona`], [`super::modal_gateway`]) run a command:
//! `sh -c COMMAND` on this machine in its own process group, with a clean environment (only
//! `HOME`, `PATH` and the sandbox's own variables: nothing of the test's), stdout and stderr
//! merged as both services return them, stopped at a deadline. With `bind`, the command runs in
//! a private mount namespace (`unshare --mount`, root only) where the sandbox's directory is
//! bind-mounted over the path the real service's containers have (`/root` for Modal), so
//! commands and file paths behave as in the service's container without touching the host's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most output kept per command.
const MAX_OUTPUT: u64 = 64 * 1024 * 1024;

/// One command to run.
#[derive(Debug, Clone)]
pub(crate) struct Exec {
    pub command: String,
    pub cwd: String,
    pub home: PathBuf,
    pub env: BTreeMap<String, String>,
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    /// The sandbox directory mounted over this path for the command.
    pub bind: Option<(PathBuf, String)>,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// None: killed at the deadline.
    pub code: Option<i32>,
    pub output: String,
}

/// Whether commands can get a private mount namespace here (root with `unshare`).
pub fn can_bind() -> bool {
    std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `exec`; `started` gets the process group id once it runs (for cancellation).
pub(crate) async fn run(exec: Exec, started: impl FnOnce(u32)) -> std::io::Result<Outcome> {
    let (reader, writer) = std::io::pipe()?;
    let writer_err = writer.try_clone()?;
    let mut command = match &exec.bind {
        Some((dir, target)) => {
            let mut c = tokio::process::Command::new("unshare");
            c.args(["--mount", "--propagation", "private", "sh", "-c"])
                .arg("mount --bind \"$1\" \"$2\" && cd -- \"$3\" && exec sh -c \"$4\"")
                .arg("sandbox")
                .arg(dir)
                .arg(target)
                .arg(&exec.cwd)
                .arg(&exec.command);
            c
        }
        None => {
            let mut c = tokio::process::Command::new("sh");
            c.arg("-c").arg(&exec.command).current_dir(&exec.cwd);
            c
        }
    };
    command
        .env_clear()
        .env("HOME", &exec.home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        .envs(&exec.env)
        .stdin(if exec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_err))
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    drop(command);
    if let Some(pid) = child.id() {
        started(pid);
    }
    if let (Some(mut pipe), Some(data)) = (child.stdin.take(), exec.stdin.clone()) {
        tokio::spawn(async move {
            let _ = pipe.write_all(&data).await;
            let _ = pipe.shutdown().await;
        });
    }
    let pid = child.id();
    let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into())?;
    let collect = async {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        let keep = |out: &mut Vec<u8>, bytes: &[u8]| {
            if (out.len() as u64) < MAX_OUTPUT {
                out.extend_from_slice(bytes);
            }
        };
        let status = loop {
            tokio::select! {
                read = pipe.read(&mut buf) => match read {
                    Ok(0) | Err(_) => break child.wait().await,
                    Ok(n) => keep(&mut out, &buf[..n]),
                },
                status = child.wait() => {
                    // Output written just before exit; a background child holding the pipe
                    // does not hold the reply.
                    let until = tokio::time::Instant::now() + Duration::from_millis(200);
                    while let Ok(Ok(n)) = tokio::time::timeout_at(until, pipe.read(&mut buf)).await {
                        if n == 0 {
                            break;
                        }
                        keep(&mut out, &buf[..n]);
                    }
                    break status;
                }
            }
        };
        (out, status)
    };
    match tokio::time::timeout(exec.timeout, collect).await {
        Ok((out, status)) => Ok(Outcome {
            code: Some(status?.code().unwrap_or(-1)),
            output: String::from_utf8_lossy(&out).into_owned(),
        }),
        Err(_) => {
            if let Some(pid) = pid {
                kill_group(pid, "KILL");
            }
            Ok(Outcome {
                code: None,
                output: String::new(),
            })
        }
    }
}

/// Signals a process group.
pub(crate) fn kill_group(pgid: u32, signal: &str) {
    let _ = std::process::Command::new("kill")
        .args([format!("-{signal}"), "--".into(), format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Whether `path` is a directory (an exec's cwd).
pub(crate) fn is_dir(path: &str) -> bool {
    Path::new(path).is_dir()
}
