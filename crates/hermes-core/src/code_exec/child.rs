//! The script's process: Python started in its own process group with the session's filtered
//! environment (no credentials) plus the tool channel's socket and token; stdout kept as head
//! (40 %) and tail (60 %) of the output cap, stderr as its head; the whole group stopped
//! (SIGTERM, then SIGKILL after a grace period) on timeout or interrupt. [`supervise`] does the
//! watching for a script started elsewhere too (a remote environment's client process).

use std::collections::VecDeque;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use hermes_tools::ToolContext;
use hermes_tools::env::Stopper;
use tokio::io::AsyncReadExt;

/// Bytes of stdout the model gets.
pub(super) const MAX_STDOUT_BYTES: usize = 50_000;
/// Bytes of stderr kept.
pub(super) const MAX_STDERR_BYTES: usize = 10_000;
const KILL_GRACE: Duration = Duration::from_secs(3);
/// After the script exits, how long to read output its children may still be writing.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    Exited,
    TimedOut,
    Interrupted,
}

pub(super) struct Finished {
    pub ending: Ending,
    pub status: Option<ExitStatus>,
    pub stdout: HeadTail,
    pub stderr: HeadTail,
}

/// The first `head` bytes and the last `tail` bytes of a stream, and its total length.
pub(super) struct HeadTail {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: usize,
}

impl HeadTail {
    pub fn new(head_cap: usize, tail_cap: usize) -> HeadTail {
        HeadTail {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap,
            total: 0,
        }
    }

    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len();
        if self.head.len() < self.head_cap {
            let take = data.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if self.tail_cap == 0 {
            return;
        }
        self.tail.extend(data);
        let excess = self.tail.len().saturating_sub(self.tail_cap);
        self.tail.drain(..excess);
    }

    pub fn truncated(&self) -> bool {
        self.total > self.head.len() + self.tail.len()
    }

    pub fn total(&self) -> usize {
        self.total
    }

    /// The text, with a marker where bytes were left out.
    pub fn text(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let tail = String::from_utf8_lossy(&tail);
        if self.truncated() {
            let omitted = self.total - self.head.len() - self.tail.len();
            format!(
                "{head}\n\n... [OUTPUT TRUNCATED: {omitted} of {} bytes omitted] ...\n\n{tail}",
                self.total
            )
        } else {
            format!("{head}{tail}")
        }
    }
}

/// Runs `python script` in `cwd` until it exits, `timeout` passes or the turn is interrupted.
pub(super) async fn run(
    python: &Path,
    script: &Path,
    cwd: &Path,
    env: &[(String, String)],
    timeout: Duration,
    ctx: &ToolContext,
    serve: impl std::future::Future<Output = ()>,
) -> std::io::Result<Finished> {
    // In the session's OS sandbox, like terminal commands: the tool calls it makes go back
    // over a Unix socket, which the sandbox allows.
    let mut command = match ctx.sandbox.active() {
        Some(sandbox) => {
            let (launcher, args) = sandbox.wrap(python.as_os_str(), &[script.as_os_str()]);
            let mut command = tokio::process::Command::new(launcher);
            command.args(args);
            command
        }
        None => {
            let mut command = tokio::process::Command::new(python);
            command.arg(script);
            command
        }
    };
    let child = command
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    supervise(child, &Stopper::LocalGroup, timeout, ctx, serve).await
}

/// Watches a spawned script (stdout and stderr piped, its own process group) until it exits,
/// `timeout` passes or the turn is interrupted, serving its tool calls meanwhile; `stopper`
/// reaches its processes (here, or inside a remote environment).
pub(super) async fn supervise(
    mut child: tokio::process::Child,
    stopper: &Stopper,
    timeout: Duration,
    ctx: &ToolContext,
    serve: impl std::future::Future<Output = ()>,
) -> std::io::Result<Finished> {
    let pgid = child.id();
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(std::io::Error::other(
            "the script's output pipes are missing",
        ));
    };
    let mut stdout = HeadTail::new(MAX_STDOUT_BYTES * 2 / 5, MAX_STDOUT_BYTES * 3 / 5);
    let mut stderr = HeadTail::new(MAX_STDERR_BYTES, 0);
    let (mut out_open, mut err_open) = (true, true);
    let mut obuf = vec![0u8; 16 * 1024];
    let mut ebuf = vec![0u8; 16 * 1024];
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    tokio::pin!(serve);
    let mut serving = true;
    let mut ending = Ending::Exited;

    let status = loop {
        tokio::select! {
            r = out.read(&mut obuf), if out_open => match r {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => stdout.push(&obuf[..n]),
            },
            r = err.read(&mut ebuf), if err_open => match r {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => stderr.push(&ebuf[..n]),
            },
            status = child.wait() => break status.ok(),
            () = &mut serve, if serving => serving = false,
            () = &mut deadline => {
                ending = Ending::TimedOut;
                break stopper.terminate(&mut child, pgid, KILL_GRACE).await.ok();
            }
            () = ctx.cancel.cancelled() => {
                ending = Ending::Interrupted;
                break stopper.terminate(&mut child, pgid, KILL_GRACE).await.ok();
            }
        }
    };
    let until = tokio::time::Instant::now() + DRAIN_AFTER_EXIT;
    while out_open || err_open {
        tokio::select! {
            r = out.read(&mut obuf), if out_open => match r {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => stdout.push(&obuf[..n]),
            },
            r = err.read(&mut ebuf), if err_open => match r {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => stderr.push(&ebuf[..n]),
            },
            () = tokio::time::sleep_until(until) => break,
        }
    }
    Ok(Finished {
        ending,
        status,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_tail_are_kept() {
        let mut h = HeadTail::new(4, 3);
        h.push(b"abcdefgh");
        h.push(b"ij");
        assert!(h.truncated());
        assert_eq!(h.total(), 10);
        assert_eq!(
            h.text(),
            "abcd\n\n... [OUTPUT TRUNCATED: 3 of 10 bytes omitted] ...\n\nhij"
        );
        let mut small = HeadTail::new(4, 3);
        small.push(b"abc");
        assert_eq!(small.text(), "abc");
        let mut head_only = HeadTail::new(2, 0);
        head_only.push(b"xyz");
        assert!(head_only.text().starts_with("xy\n"));
    }
}
