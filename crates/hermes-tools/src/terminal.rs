//! The `terminal` tool: every command first passes the approval gate; then it runs in the
//! foreground (`bash -c`, its own process group), with a timeout that kills the whole group,
//! stdout and stderr merged in order, output bounded in memory and truncated head+tail for the
//! model, ANSI escapes removed, and the exit code reported with a note when a non-zero code is
//! not an error (grep finding nothing, ...), or in the background (`background: true`) as a
//! job of the session's [`crate::process::ProcessRegistry`].

mod capture;
mod process_group;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use crate::env::{ExecutionEnvironment, ShellRequest, Stopper};
use crate::output::{strip_ansi, truncate_middle};
use crate::sandbox::{Sandbox, SandboxState};
use crate::{Tool, ToolContext, ToolError, ToolResult, paths};
use capture::BoundedCapture;
pub use process_group::signal_group;

/// Characters of output the model gets; 40 % from the head, 60 % from the tail.
pub const MAX_OUTPUT_CHARS: usize = 50_000;
/// Bytes of output kept in memory while a command runs (head and tail).
const CAPTURE_BYTES: usize = 256 * 1024;
/// After the command exits, how long to keep reading output that its background children may
/// still hold the pipe open for.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
/// Grace between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// The longest timeout a call may ask for.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

pub struct TerminalTool;

#[derive(Deserialize)]
struct TerminalArgs {
    command: String,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    workdir: Option<String>,
    #[serde(default)]
    background: bool,
    /// `false`: run outside the OS sandbox, once the user approves.
    #[serde(default)]
    sandbox: Option<bool>,
}

#[async_trait::async_trait]
impl Tool for TerminalTool {
    fn name(&self) -> &str {
        "terminal"
    }
    fn toolset(&self) -> &str {
        "terminal"
    }
    fn description(&self) -> &str {
        "Run a shell command (bash) and return its combined stdout/stderr and exit code. Non-interactive: pass flags such as -y; no sudo prompts. Long output is truncated in the middle. background=true starts servers and long jobs and returns an id for the process tool."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run"},
                "timeout": {"type": "integer", "description": "Seconds before the command is killed (default 180)", "minimum": 1},
                "workdir": {"type": "string", "description": "Directory to run in (default: the working directory)"},
                "background": {"type": "boolean", "description": "Run in the background (no timeout) and return a process id"},
                "sandbox": {"type": "boolean", "description": "false: run outside the OS sandbox (the user is asked first); only after the sandbox blocked a needed write or connection"}
            },
            "required": ["command"]
        })
    }
    fn preview(&self, args: &Value) -> String {
        crate::output::shorten_line(
            args.get("command").and_then(Value::as_str).unwrap_or(""),
            60,
        )
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: TerminalArgs = serde_json::from_value(args)
            .map_err(|e| ToolError::new(format!("invalid arguments: {e}")))?;
        if args.command.trim().is_empty() {
            return Err(ToolError::new("command is empty"));
        }
        let local = ctx.environment.is_local();
        let workdir = if local {
            let workdir = match &args.workdir {
                Some(w) => paths::resolve(&ctx.cwd, w),
                None => ctx.cwd.clone(),
            };
            if !workdir.is_dir() {
                return Err(ToolError::new(format!(
                    "working directory does not exist: {}",
                    workdir.display()
                )));
            }
            workdir.display().to_string()
        } else {
            // The environment's own paths; a missing directory fails inside it.
            ctx.environment
                .connect()
                .await
                .map_err(|e| ToolError::new(e.to_string()))?;
            let cwd = ctx.environment.cwd();
            match &args.workdir {
                Some(w) => crate::env::resolve_posix_in(&cwd, &ctx.environment.home(), w),
                None => cwd,
            }
        };
        let note = ctx
            .approvals
            .check(
                &args.command,
                ctx.interaction.as_ref(),
                &ctx.cancel,
                &ctx.redactor,
            )
            .await?;
        // A container is its own sandbox; the OS sandbox is for this machine's commands.
        let sandbox = if local {
            sandbox_for(&args, ctx).await?
        } else {
            None
        };
        let mut result = if args.background {
            let job = ctx
                .processes
                .spawn(
                    ctx.environment.as_ref(),
                    &args.command,
                    &workdir,
                    &ctx.child_env,
                    sandbox,
                )
                .await?;
            json!({
                "id": job.id,
                "pid": job.pid,
                "status": "running",
                "note": "started in the background; check it with process(action='poll', id=...), stop it with action='kill'",
            })
        } else {
            let timeout = args
                .timeout
                .map(|s| Duration::from_secs(s.clamp(1, MAX_TIMEOUT_SECS)))
                .unwrap_or(ctx.terminal_timeout);
            let run = run_command(&args.command, &workdir, timeout, sandbox, ctx).await?;
            let failed = run.exit_code != Some(0) && run.timed_out.is_none() && !run.interrupted;
            let note = sandbox
                .filter(|_| failed)
                .and_then(|s| s.denial_note(&run.output));
            let mut result = run.into_result(&args.command);
            if let Some(note) = note {
                result["sandbox"] = json!(note);
            }
            result
        };
        if let Some(note) = note {
            result["approval_note"] = json!(note);
        }
        Ok(result)
    }
}

/// The sandbox this call runs in: the session's, or none when the model asked to leave it
/// (`sandbox: false`) and the user approved. A sandbox the user asked for but the system cannot
/// give refuses the command.
async fn sandbox_for<'a>(
    args: &TerminalArgs,
    ctx: &'a ToolContext,
) -> Result<Option<&'a Sandbox>, ToolError> {
    let escape = args.sandbox == Some(false);
    if escape && !matches!(*ctx.sandbox, SandboxState::Off) {
        ctx.approvals
            .check_unsandboxed(
                &args.command,
                ctx.interaction.as_ref(),
                &ctx.cancel,
                &ctx.redactor,
            )
            .await?;
        return Ok(None);
    }
    match &*ctx.sandbox {
        SandboxState::Off => Ok(None),
        SandboxState::Active(sandbox) => Ok(Some(sandbox)),
        SandboxState::Unavailable { mode, reason } => Err(ToolError::new(format!(
            "BLOCKED: terminal.sandbox.mode is {mode} but this system cannot sandbox commands ({reason}). Tell the user: set terminal.sandbox.mode: off (or run with --sandbox off) to run commands unsandboxed, or call terminal with sandbox: false to ask for this one command."
        ))),
    }
}

/// How a command ended.
#[derive(Debug)]
pub struct CommandRun {
    pub output: String,
    /// None when killed by a signal.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: Option<Duration>,
    pub interrupted: bool,
}

impl CommandRun {
    /// The result the model gets: output cleaned and truncated, the exit code, and the
    /// timeout, interruption or exit-code note. Public so that a command run elsewhere (an
    /// editor's terminal) reaches the model in the same shape.
    pub fn into_result(self, command: &str) -> Value {
        let output = truncate_middle(
            strip_ansi(self.output.trim_end()).as_str(),
            MAX_OUTPUT_CHARS,
            0.4,
        );
        let exit_code = self
            .exit_code
            .unwrap_or_else(|| self.signal.map_or(-1, |s| 128 + s));
        let mut result = json!({ "output": output, "exit_code": exit_code });
        if let Some(limit) = self.timed_out {
            result["error"] = json!(format!(
                "command timed out after {}s and was killed; run long jobs with a larger timeout",
                limit.as_secs()
            ));
        } else if self.interrupted {
            result["error"] = json!("interrupted by the user; the command was killed");
        } else if let Some(note) = exit_note(command, exit_code) {
            result["note"] = json!(note);
        }
        result
    }
}

/// The shell commands run under (`<shell> -c COMMAND`).
pub fn shell() -> &'static str {
    if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    }
}

/// A command started in an environment: the local child (the shell, or the client that runs
/// the command remotely), the read end of its merged output, and how to stop it.
pub(crate) struct Spawned {
    pub child: tokio::process::Child,
    pub pipe: tokio::net::unix::pipe::Receiver,
    pub stopper: Stopper,
}

/// Starts `command` under the environment's shell, the local child in its own process group,
/// stdout and stderr merged into one pipe (read from [`Spawned::pipe`]).
pub(crate) async fn spawn_shell(
    environment: &dyn ExecutionEnvironment,
    command: &str,
    workdir: &str,
    env: &crate::secrets::ChildEnv,
    sandbox: Option<&Sandbox>,
    stdin: Stdio,
) -> Result<Spawned, ToolError> {
    let prepared = environment
        .shell(ShellRequest {
            script: command,
            workdir,
            env,
            extra_env: &[],
            sandbox,
            feeds_stdin: false,
        })
        .await
        .map_err(|e| ToolError::new(e.to_string()))?;
    let (reader, writer) =
        std::io::pipe().map_err(|e| ToolError::new(format!("cannot create a pipe: {e}")))?;
    let writer_err = writer
        .try_clone()
        .map_err(|e| ToolError::new(format!("cannot create a pipe: {e}")))?;
    let mut cmd = prepared.command;
    cmd.stdin(stdin)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_err))
        .process_group(0)
        .kill_on_drop(true);
    let program = cmd.as_std().get_program().to_string_lossy().into_owned();
    let child = cmd
        .spawn()
        .map_err(|e| ToolError::new(format!("cannot start {program}: {e}")))?;
    // The parent's copies of the write end must close, or reading never sees EOF.
    drop(cmd);
    let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(reader.into())
        .map_err(|e| ToolError::new(format!("cannot read command output: {e}")))?;
    Ok(Spawned {
        child,
        pipe,
        stopper: prepared.stopper,
    })
}

/// Runs `command` in its own process group, merging stdout and stderr into one pipe.
pub async fn run_command(
    command: &str,
    workdir: &str,
    timeout: Duration,
    sandbox: Option<&Sandbox>,
    ctx: &ToolContext,
) -> Result<CommandRun, ToolError> {
    let Spawned {
        mut child,
        mut pipe,
        stopper,
    } = spawn_shell(
        ctx.environment.as_ref(),
        command,
        workdir,
        &ctx.child_env,
        sandbox,
        Stdio::null(),
    )
    .await?;
    let pgid = child.id();

    let mut capture = BoundedCapture::new(CAPTURE_BYTES);
    let mut buf = vec![0u8; 16 * 1024];
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut pipe_open = true;
    let mut timed_out = None;
    let mut interrupted = false;

    let status = loop {
        tokio::select! {
            read = pipe.read(&mut buf), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => capture.push(&buf[..n]),
            },
            status = child.wait() => break status,
            () = &mut deadline => {
                timed_out = Some(timeout);
                break stopper.terminate(&mut child, pgid, KILL_GRACE).await;
            }
            () = ctx.cancel.cancelled() => {
                interrupted = true;
                break stopper.terminate(&mut child, pgid, KILL_GRACE).await;
            }
        }
    };
    // Output written just before exit, or by children still holding the pipe.
    let drain_until = tokio::time::Instant::now() + DRAIN_AFTER_EXIT;
    while pipe_open {
        match tokio::time::timeout_at(drain_until, pipe.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => capture.push(&buf[..n]),
            _ => pipe_open = false,
        }
    }
    let status =
        status.map_err(|e| ToolError::new(format!("waiting for the command failed: {e}")))?;
    use std::os::unix::process::ExitStatusExt;
    Ok(CommandRun {
        output: capture.into_string(),
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        interrupted,
    })
}

/// Explains non-zero exit codes that are not failures.
fn exit_note(command: &str, exit_code: i32) -> Option<&'static str> {
    if exit_code == 0 {
        return None;
    }
    let last = command
        .rsplit(['|', ';', '&'])
        .next()
        .unwrap_or(command)
        .split_whitespace()
        .find(|w| !w.contains('='))
        .unwrap_or("");
    let base = last.rsplit('/').next().unwrap_or(last);
    match (base, exit_code) {
        ("grep" | "egrep" | "fgrep" | "rg" | "ag", 1) => Some("no matches found (not an error)"),
        ("diff" | "cmp", 1) => Some("the inputs differ (not an error)"),
        ("test" | "[", 1) => Some("the condition is false (not an error)"),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
