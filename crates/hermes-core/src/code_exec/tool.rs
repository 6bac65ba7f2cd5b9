//! The `execute_code` tool: writes the script and the generated `hermes_tools` module into a
//! private temporary directory, opens the tool channel there, runs the script under the limits
//! and answers `{status, output, exit_code, tool_calls_made, duration_seconds}` (plus `error`
//! when it failed, timed out or was interrupted, and `stdout_truncated` when output was cut).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use hermes_tools::{Registry, Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use hermes_tools::env::shell_fs::ShellFs;

use super::child::{self, Ending, Finished};
use super::refund::Refunder;
use super::rpc::Rpc;
use super::stubs::Transport;
use super::{CodeExecSettings, SANDBOX_TOOLS, TOOL_NAME, remote, stubs};

pub struct ExecuteCodeTool {
    /// `None`: listed and measured only (a session installs the working one).
    tools: Option<Registry>,
    settings: CodeExecSettings,
    description: String,
    refunder: Refunder,
}

fn description(names: &[&str]) -> String {
    format!(
        "Run a Python script that calls tools: `from hermes_tools import ...` gives {}; each returns the tool's JSON result as a dict. Use it for 3+ tool calls with logic between them, loops, or to filter big outputs: only what the script prints comes back. Runs in the working directory. Limits: 5 minutes, 50 tool calls, 50 KB of output.",
        stubs::signatures(names)
    )
}

impl ExecuteCodeTool {
    /// The tool as `hermes tools` lists it and `hermes prompt-size` measures it (every sandbox
    /// tool described); calling it says it is not set up. [`super::install`] replaces it.
    pub fn schema_only() -> ExecuteCodeTool {
        ExecuteCodeTool {
            tools: None,
            settings: CodeExecSettings::default(),
            description: description(SANDBOX_TOOLS),
            refunder: Refunder::default(),
        }
    }

    /// A working tool whose scripts reach `tools`.
    pub fn new(tools: Registry, settings: CodeExecSettings) -> ExecuteCodeTool {
        let names: Vec<&str> = tools.names();
        let description = description(&names);
        ExecuteCodeTool {
            tools: Some(tools),
            settings,
            description,
            refunder: Refunder::default(),
        }
    }
}

/// The interpreter: the active virtualenv's python, else `python3`, else `python` on PATH.
fn find_python(venv: Option<&str>, path: Option<&str>) -> Option<PathBuf> {
    if let Some(venv) = venv.filter(|v| !v.is_empty()) {
        let p = Path::new(venv).join("bin/python");
        if p.is_file() {
            return Some(p);
        }
    }
    let path = path?;
    for name in ["python3", "python"] {
        for dir in std::env::split_paths(path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// A random token for the tool channel (128 bits from the OS).
fn token() -> Result<String, ToolError> {
    let mut bytes = [0u8; 16];
    let mut f = std::fs::File::open("/dev/urandom")
        .map_err(|e| ToolError::new(format!("cannot read randomness: {e}")))?;
    std::io::Read::read_exact(&mut f, &mut bytes)
        .map_err(|e| ToolError::new(format!("cannot read randomness: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl ExecuteCodeTool {
    /// The script in the session's remote environment, its tool calls through files.
    async fn call_remote(&self, code: &str, tools: &Registry, ctx: &ToolContext) -> ToolResult {
        let env = &ctx.environment;
        env.connect()
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        let fs = ShellFs::new(env.clone());
        let dir = remote::RemoteDir::create(fs.clone()).await?;
        let outcome = async {
            fs.write(
                &format!("{}/hermes_tools.py", dir.path),
                stubs::module(&tools.names(), Transport::Files).as_bytes(),
            )
            .await?;
            fs.write(&format!("{}/script.py", dir.path), code.as_bytes())
                .await?;
            let token = token()?;
            let rpc = Rpc {
                tools,
                ctx,
                token: &token,
                max_calls: self.settings.max_tool_calls.max(1),
                calls: AtomicUsize::new(0),
            };
            let workdir = if self.settings.mode.trim().eq_ignore_ascii_case("strict") {
                dir.path.clone()
            } else {
                env.cwd()
            };
            let channel = [
                ("HERMES_RPC_DIR".to_string(), dir.rpc()),
                ("HERMES_RPC_TOKEN".to_string(), token.clone()),
            ];
            let timeout = Duration::from_secs(self.settings.timeout.max(1));
            let started = Instant::now();
            let finished = remote::run_script(ctx, &dir, &workdir, &channel, timeout, &rpc).await?;
            self.refunder.refund(ctx);
            Ok::<_, ToolError>(report(finished, started, rpc.calls_made(), timeout))
        }
        .await;
        dir.remove().await;
        outcome
    }
}

#[async_trait::async_trait]
impl Tool for ExecuteCodeTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn toolset(&self) -> &str {
        "code_execution"
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Python source; print the result"}
            },
            "required": ["code"]
        })
    }
    fn preview(&self, args: &Value) -> String {
        let code = args.get("code").and_then(Value::as_str).unwrap_or("");
        let first = code
            .lines()
            .find(|l| {
                let t = l.trim();
                !t.is_empty() && !t.starts_with("import ") && !t.starts_with("from ")
            })
            .unwrap_or("");
        hermes_tools::output::shorten_line(first.trim(), 60)
    }
    fn check_available(&self) -> Result<(), hermes_tools::Unavailable> {
        let venv = std::env::var("VIRTUAL_ENV").ok();
        let path = std::env::var("PATH").ok();
        find_python(venv.as_deref(), path.as_deref())
            .map(|_| ())
            .ok_or_else(|| hermes_tools::Unavailable {
                reason: "python3 is not installed".into(),
            })
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let Some(tools) = &self.tools else {
            return Err(ToolError::new(
                "code execution is not set up in this session",
            ));
        };
        let code = args.get("code").and_then(Value::as_str).unwrap_or("");
        if code.trim().is_empty() {
            return Err(ToolError::new("no code provided"));
        }
        if !ctx.environment.is_local() {
            return self.call_remote(code, tools, ctx).await;
        }
        let python = find_python(ctx.child_env.get("VIRTUAL_ENV"), ctx.child_env.get("PATH"))
            .ok_or_else(|| {
                ToolError::new(
                    "python3 is not installed (execute_code needs a Python 3 interpreter)",
                )
            })?;
        let dir = tempfile::Builder::new()
            .prefix("hermes-code-")
            .tempdir()
            .map_err(|e| ToolError::new(format!("cannot create a temporary directory: {e}")))?;
        let script = dir.path().join("script.py");
        let write = |path: &Path, text: &str| {
            std::fs::write(path, text)
                .map_err(|e| ToolError::new(format!("cannot write {}: {e}", path.display())))
        };
        write(
            &dir.path().join("hermes_tools.py"),
            &stubs::module(&tools.names(), Transport::Socket),
        )?;
        write(&script, code)?;
        let socket = dir.path().join("rpc.sock");
        let listener = tokio::net::UnixListener::bind(&socket)
            .map_err(|e| ToolError::new(format!("cannot open the tool channel: {e}")))?;
        let token = token()?;

        let mut env: Vec<(String, String)> = ctx
            .child_env
            .vars()
            .iter()
            .filter(|(k, _)| k != "PYTHONPATH" && !k.starts_with("HERMES_RPC_"))
            .cloned()
            .collect();
        let pythonpath = match ctx.child_env.get("PYTHONPATH") {
            Some(p) if !p.is_empty() => format!("{}:{p}", dir.path().display()),
            _ => dir.path().display().to_string(),
        };
        env.extend([
            ("PYTHONPATH".to_string(), pythonpath),
            (
                "HERMES_RPC_SOCKET".to_string(),
                socket.display().to_string(),
            ),
            ("HERMES_RPC_TOKEN".to_string(), token.clone()),
            ("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string()),
            ("PYTHONIOENCODING".to_string(), "utf-8".to_string()),
            ("PYTHONUTF8".to_string(), "1".to_string()),
        ]);
        let cwd = if self.settings.mode.trim().eq_ignore_ascii_case("strict") {
            dir.path().to_path_buf()
        } else {
            ctx.cwd.clone()
        };

        let rpc = Rpc {
            tools,
            ctx,
            token: &token,
            max_calls: self.settings.max_tool_calls.max(1),
            calls: AtomicUsize::new(0),
        };
        let timeout = Duration::from_secs(self.settings.timeout.max(1));
        let started = Instant::now();
        let finished = child::run(
            &python,
            &script,
            &cwd,
            &env,
            timeout,
            ctx,
            rpc.serve(&listener),
        )
        .await
        .map_err(|e| ToolError::new(format!("cannot start {}: {e}", python.display())))?;
        drop(listener);
        // A script's many tool calls cost this one model call.
        self.refunder.refund(ctx);

        Ok(report(finished, started, rpc.calls_made(), timeout))
    }
}

/// The tool's answer for a finished script: `{status, output, exit_code, tool_calls_made,
/// duration_seconds}` (+ `error`, `stdout_truncated`).
fn report(finished: Finished, started: Instant, calls: usize, timeout: Duration) -> Value {
    let duration = (started.elapsed().as_secs_f64() * 100.0).round() / 100.0;
    let clean = |s: String| hermes_tools::output::strip_ansi(&s);
    let mut output = clean(finished.stdout.text());
    let stderr = clean(finished.stderr.text());
    let exit_code = finished.status.and_then(|s| s.code()).unwrap_or(-1);
    let mut result = json!({
        "status": "success",
        "exit_code": exit_code,
        "tool_calls_made": calls,
        "duration_seconds": duration,
    });
    match finished.ending {
        Ending::TimedOut => {
            let msg = format!(
                "the script timed out after {}s and was killed",
                timeout.as_secs()
            );
            output = if output.is_empty() {
                msg.clone()
            } else {
                format!("{output}\n\n{msg}")
            };
            result["status"] = json!("timeout");
            result["error"] = json!(msg);
        }
        Ending::Interrupted => {
            output.push_str("\n[interrupted by the user; the script was killed]");
            result["status"] = json!("interrupted");
        }
        Ending::Exited if exit_code != 0 => {
            result["status"] = json!("error");
            result["error"] = json!(if stderr.trim().is_empty() {
                format!("the script exited with code {exit_code}")
            } else {
                stderr.trim_end().to_string()
            });
            if !stderr.trim().is_empty() {
                output = format!("{output}\n--- stderr ---\n{}", stderr.trim_end());
            }
        }
        Ending::Exited => {}
    }
    result["output"] = json!(output);
    if finished.stdout.truncated() {
        result["stdout_truncated"] = json!(true);
        result["stdout_bytes_total"] = json!(finished.stdout.total());
    }
    result
}
