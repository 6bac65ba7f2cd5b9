//! The `process` tool: `list`, `poll` (status and output since the last poll), `log` (lines by
//! number), `wait` (until exit or timeout), `kill`, and `write`/`submit`/`close` for the job's
//! stdin (what is written passes the approval gate like a command, checked together with the
//! unterminated text written before it, so a command split over several writes is seen whole).

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::Job;
use crate::output::{strip_ansi, truncate_middle};
use crate::{Tool, ToolContext, ToolError, ToolResult};

/// Characters of new output a poll returns (the latest are kept).
const POLL_CHARS: usize = 8_000;
/// Lines `log` returns by default, and at most.
const LOG_LINES: usize = 200;
const MAX_LOG_LINES: usize = 2_000;
/// The longest `wait`.
const MAX_WAIT_SECS: u64 = 600;
const KILL_GRACE: Duration = Duration::from_secs(2);
/// Stdin text without a newline that is still checked as one command line.
const MAX_PENDING_STDIN: usize = 64 * 1024;

pub struct ProcessTool;

#[derive(Deserialize)]
struct ProcessArgs {
    action: String,
    #[serde(default, alias = "session_id", alias = "process_id")]
    id: Option<String>,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<usize>,
}

#[async_trait::async_trait]
impl Tool for ProcessTool {
    fn name(&self) -> &str {
        "process"
    }
    fn toolset(&self) -> &str {
        "terminal"
    }
    fn description(&self) -> &str {
        "Manage background processes started with terminal(background=true): list; poll (status + output since the last poll); log (lines by number, default the last 200); wait (until exit or timeout); kill; write (raw stdin), submit (stdin line + Enter), close (stdin EOF)."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["list", "poll", "log", "wait", "kill", "write", "submit", "close"]},
                "id": {"type": "string", "description": "Process id from terminal (all actions but list)"},
                "data": {"type": "string", "description": "Text for write/submit"},
                "timeout": {"type": "integer", "description": "Seconds to wait (default: the terminal timeout)", "minimum": 1},
                "offset": {"type": "integer", "description": "log: first line number (1-based)", "minimum": 1},
                "limit": {"type": "integer", "description": "log: lines to return (default 200)", "minimum": 1}
            },
            "required": ["action"]
        })
    }
    fn preview(&self, args: &Value) -> String {
        let action = args.get("action").and_then(Value::as_str).unwrap_or("");
        let id = args.get("id").and_then(Value::as_str).unwrap_or("");
        format!("{action} {id}").trim().to_string()
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: ProcessArgs = serde_json::from_value(args)
            .map_err(|e| ToolError::new(format!("invalid arguments: {e}")))?;
        let action = args.action.trim().to_ascii_lowercase();
        if action == "list" {
            return Ok(list(ctx));
        }
        let id = args
            .id
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| ToolError::new(format!("`id` is required for {action}")))?;
        let job = ctx.processes.get(id).ok_or_else(|| {
            let known: Vec<String> = ctx.processes.jobs().iter().map(|j| j.id.clone()).collect();
            ToolError::new(format!(
                "no background process `{id}` (known: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))
        })?;
        match action.as_str() {
            "poll" => Ok(poll(&job)),
            "log" => Ok(log(&job, args.offset, args.limit)),
            "wait" => {
                let limit = args
                    .timeout
                    .map(|s| Duration::from_secs(s.clamp(1, MAX_WAIT_SECS)))
                    .unwrap_or(ctx.terminal_timeout);
                Ok(wait(&job, limit, ctx).await)
            }
            "kill" => {
                let killed = job.kill(KILL_GRACE).await;
                let mut out = status(&job);
                if !killed {
                    out["note"] = json!("the process had already exited");
                }
                Ok(out)
            }
            "write" | "submit" | "close" => {
                let data = args.data.unwrap_or_default();
                let mut note = None;
                let text = if action == "submit" {
                    format!("{data}\n")
                } else {
                    data
                };
                // What the program will see as one line: the unterminated text written
                // before, and this.
                let line = format!("{}{text}", job.pending_stdin());
                if action != "close" && text.is_empty() {
                    return Err(ToolError::new(format!("`data` is required for {action}")));
                }
                if !text.is_empty() {
                    if line.len() > MAX_PENDING_STDIN {
                        return Err(ToolError::new(format!(
                            "not written: more than {MAX_PENDING_STDIN} bytes without a newline; submit shorter lines"
                        )));
                    }
                    note = ctx
                        .approvals
                        .check(&line, ctx.interaction.as_ref(), &ctx.cancel, &ctx.redactor)
                        .await?;
                }
                job.write_stdin(&text, action == "close").await?;
                job.set_pending_stdin(&line);
                let mut out = status(&job);
                out["bytes_written"] = json!(text.len());
                if let Some(n) = note {
                    out["note"] = json!(n);
                }
                Ok(out)
            }
            other => Err(ToolError::new(format!(
                "unknown action `{other}` (list, poll, log, wait, kill, write, submit, close)"
            ))),
        }
    }
}

/// `{id, status, exit_code?, ...}`
fn status(job: &Job) -> Value {
    let mut v = json!({
        "id": job.id,
        "status": if job.was_killed() && job.exit_info().is_some() { "killed" } else if job.exit_info().is_some() { "exited" } else { "running" },
    });
    if let Some(exit) = job.exit_info() {
        v["exit_code"] = json!(exit.shell_code());
    }
    v
}

fn list(ctx: &ToolContext) -> Value {
    let jobs: Vec<Value> = ctx
        .processes
        .jobs()
        .iter()
        .map(|job| {
            let mut v = status(job);
            v["command"] = json!(crate::output::shorten_line(&job.command, 200));
            v["pid"] = json!(job.pid);
            v["uptime_seconds"] = json!(job.uptime().as_secs());
            v
        })
        .collect();
    json!({ "processes": jobs })
}

fn poll(job: &Arc<Job>) -> Value {
    let (text, dropped) = job.poll_output();
    let mut v = status(job);
    v["uptime_seconds"] = json!(job.uptime().as_secs());
    let text = strip_ansi(&text);
    let kept = if text.chars().count() > POLL_CHARS {
        let skip = text.chars().count() - POLL_CHARS;
        v["note"] = json!(format!(
            "{skip} earlier characters of new output skipped; use log to page through them"
        ));
        text.chars().skip(skip).collect()
    } else {
        text
    };
    v["new_output"] = json!(kept);
    if dropped > 0 {
        v["dropped_bytes"] = json!(dropped);
    }
    v
}

fn log(job: &Arc<Job>, offset: Option<u64>, limit: Option<usize>) -> Value {
    let (lines, first) = job.lines();
    let total = first - 1 + lines.len() as u64;
    let limit = limit.unwrap_or(LOG_LINES).clamp(1, MAX_LOG_LINES);
    let start = match offset {
        Some(o) => o.max(first),
        None => {
            total
                .saturating_sub(limit as u64)
                .max(first.saturating_sub(1))
                + 1
        }
    };
    let from = (start.saturating_sub(first)) as usize;
    let picked: Vec<&str> = lines
        .iter()
        .skip(from)
        .take(limit)
        .map(String::as_str)
        .collect();
    let mut v = status(job);
    v["output"] = json!(truncate_middle(
        &strip_ansi(&picked.join("\n")),
        50_000,
        0.5
    ));
    v["total_lines"] = json!(total);
    if !picked.is_empty() {
        v["lines"] = json!(format!("{}-{}", start, start + picked.len() as u64 - 1));
    }
    if offset.is_some_and(|o| o < first) {
        v["note"] = json!(format!("lines before {first} were dropped from memory"));
    }
    if start + (picked.len() as u64) <= total {
        v["next_offset"] = json!(start + picked.len() as u64);
    }
    v
}

async fn wait(job: &Arc<Job>, limit: Duration, ctx: &ToolContext) -> Value {
    let outcome = tokio::select! {
        r = tokio::time::timeout(limit, job.wait_exit()) => if r.is_ok() { "exited" } else { "timeout" },
        () = ctx.cancel.cancelled() => "interrupted",
    };
    let mut v = status(job);
    v["output"] = json!(strip_ansi(&job.tail(2_000)));
    match outcome {
        "timeout" => v["note"] = json!(format!("still running after {}s", limit.as_secs())),
        "interrupted" => {
            v["note"] = json!("the user interrupted the wait; the process keeps running")
        }
        _ => {}
    }
    v
}
