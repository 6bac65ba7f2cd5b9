//! The editor's terminal, when it offers one (`terminal: true` in its capabilities): a
//! foreground `terminal` command runs in a terminal the editor creates (`terminal/create`),
//! embedded in the tool call so the editor shows its output live, waited for with our timeout
//! (`terminal/kill` on timeout or cancel), read back (`terminal/output`) and always released.
//! Everything before the command reaches the editor stays ours: the arguments, the working
//! directory check and the approval gate (a denied command never reaches the editor). The
//! model gets the result in the built-in tool's shape (exit code, output, notes).
//!
//! What stays in our own terminal tool: background commands (the `process` tool polls, reads
//! and kills them by our job id, and they outlive the call, while an editor terminal belongs to
//! the call that made it), and commands of calls the editor does not show: a subagent's (they
//! run inside the parent's `delegate_task` call, and a terminal embedded nowhere would show
//! the user nothing while hiding the output from our own capture).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, EnvVariable, KillTerminalRequest, ReleaseTerminalRequest,
    SessionNotification, SessionUpdate, Terminal, TerminalExitStatus, TerminalOutputRequest,
    ToolCallContent, ToolCallUpdate, ToolCallUpdateFields, WaitForTerminalExitRequest,
};
use hermes_tools::terminal::{CommandRun, MAX_OUTPUT_CHARS, MAX_TIMEOUT_SECS, TerminalTool, shell};
use hermes_tools::{
    Access, Interaction, Tool, ToolContext, ToolError, ToolResult, Unavailable, paths,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::permission::EditorInteraction;

/// How long a killed command may take to report how it ended.
const EXIT_AFTER_KILL: Duration = Duration::from_secs(2);

/// One editor session as its terminal calls need it: the id the editor knows, the `terminal`
/// call running now (told by the session's updates), and the editor terminal each call used.
#[derive(Default)]
pub struct TerminalLink {
    session_id: Mutex<String>,
    running: Mutex<Option<String>>,
    terminals: Mutex<HashMap<String, String>>,
}

impl TerminalLink {
    pub fn set_session_id(&self, id: String) {
        if let Ok(mut s) = self.session_id.lock() {
            *s = id;
        }
    }

    fn session_id(&self) -> String {
        self.session_id
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// A `terminal` call starts (its command runs alone: calls of the shell are exclusive).
    pub fn call_started(&self, call_id: &str) {
        if let Ok(mut r) = self.running.lock() {
            *r = Some(call_id.to_string());
        }
    }

    pub fn call_finished(&self, call_id: &str) {
        if let Ok(mut r) = self.running.lock()
            && r.as_deref() == Some(call_id)
        {
            *r = None;
        }
    }

    /// The editor terminal that ran `call_id`, once (its result shows the terminal again).
    pub fn take_terminal(&self, call_id: &str) -> Option<String> {
        self.terminals.lock().ok()?.remove(call_id)
    }

    /// The `terminal` call the editor shows running now, if any.
    fn running(&self) -> Option<String> {
        self.running.lock().ok()?.clone()
    }

    /// Records that `call_id` ran in the editor's terminal `terminal_id`.
    fn attach(&self, call_id: &str, terminal_id: &str) {
        if let Ok(mut t) = self.terminals.lock() {
            t.insert(call_id.to_string(), terminal_id.to_string());
        }
    }
}

/// The editor's sessions of this connection, found from a tool call's context by the
/// session's [`EditorInteraction`] (the tool is shared by every session, and the stored
/// session's id may change under compression while the editor's stays).
#[derive(Default)]
pub struct TerminalLinks {
    by_interaction: Mutex<HashMap<usize, Arc<TerminalLink>>>,
}

fn address<T: ?Sized>(arc: &Arc<T>) -> usize {
    Arc::as_ptr(arc).cast::<()>() as usize
}

impl TerminalLinks {
    pub fn add(&self, interaction: &Arc<EditorInteraction>, link: Arc<TerminalLink>) {
        if let Ok(mut m) = self.by_interaction.lock() {
            m.insert(address(interaction), link);
        }
    }

    fn of(&self, interaction: &Arc<dyn Interaction>) -> Option<Arc<TerminalLink>> {
        self.by_interaction
            .lock()
            .ok()?
            .get(&address(interaction))
            .cloned()
    }
}

/// `terminal` through the editor's `terminal/*` methods.
pub struct EditorTerminal {
    pub cx: ConnectionTo<Client>,
    pub links: Arc<TerminalLinks>,
}

#[derive(Deserialize)]
struct Args {
    command: String,
    #[serde(default)]
    timeout: Option<u64>,
    #[serde(default)]
    workdir: Option<String>,
    #[serde(default)]
    background: bool,
}

#[async_trait::async_trait]
impl Tool for EditorTerminal {
    fn name(&self) -> &str {
        TerminalTool.name()
    }
    fn toolset(&self) -> &str {
        TerminalTool.toolset()
    }
    fn description(&self) -> &str {
        TerminalTool.description()
    }
    fn parameters(&self) -> Value {
        TerminalTool.parameters()
    }
    fn access(&self, args: &Value, ctx: &ToolContext) -> Access {
        TerminalTool.access(args, ctx)
    }
    fn required_env(&self) -> &'static [&'static str] {
        TerminalTool.required_env()
    }
    fn check_available(&self) -> Result<(), Unavailable> {
        TerminalTool.check_available()
    }
    fn max_result_chars(&self) -> usize {
        TerminalTool.max_result_chars()
    }
    fn preview(&self, args: &Value) -> String {
        TerminalTool.preview(args)
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let Some((link, call_id)) = self
            .links
            .of(&ctx.interaction)
            .and_then(|l| l.running().map(|c| (l, c)))
        else {
            return TerminalTool.call(args, ctx).await;
        };
        let parsed: Args = serde_json::from_value(args.clone())
            .map_err(|e| ToolError::new(format!("invalid arguments: {e}")))?;
        if parsed.background {
            return TerminalTool.call(args, ctx).await;
        }
        if parsed.command.trim().is_empty() {
            return Err(ToolError::new("command is empty"));
        }
        let workdir = match &parsed.workdir {
            Some(w) => paths::resolve(&ctx.cwd, w),
            None => ctx.cwd.clone(),
        };
        if !workdir.is_dir() {
            return Err(ToolError::new(format!(
                "working directory does not exist: {}",
                workdir.display()
            )));
        }
        let note = ctx
            .approvals
            .check(
                &parsed.command,
                ctx.interaction.as_ref(),
                &ctx.cancel,
                &ctx.redactor,
            )
            .await?;
        let timeout = parsed
            .timeout
            .map(|s| Duration::from_secs(s.clamp(1, MAX_TIMEOUT_SECS)))
            .unwrap_or(ctx.terminal_timeout);
        let run = Run {
            cx: &self.cx,
            session_id: link.session_id(),
        };
        let mut result = run
            .command(&link, &call_id, &parsed.command, workdir, timeout, ctx)
            .await?
            .into_result(&parsed.command);
        if let Some(note) = note {
            result["approval_note"] = json!(note);
        }
        Ok(result)
    }
}

/// One command in one editor session.
struct Run<'a> {
    cx: &'a ConnectionTo<Client>,
    session_id: String,
}

/// How waiting for the command ended.
enum Waited {
    Exited(TerminalExitStatus),
    TimedOut(Duration),
    Interrupted,
}

impl Run<'_> {
    async fn command(
        &self,
        link: &TerminalLink,
        call_id: &str,
        command: &str,
        workdir: PathBuf,
        timeout: Duration,
        ctx: &ToolContext,
    ) -> Result<CommandRun, ToolError> {
        let create = CreateTerminalRequest::new(self.session_id.clone(), shell())
            .args(vec!["-c".to_string(), command.to_string()])
            .cwd(workdir)
            .env(env_changes(ctx.child_env.vars()))
            .output_byte_limit(MAX_OUTPUT_CHARS as u64);
        let terminal_id = self
            .cx
            .send_request(create)
            .block_task()
            .await
            .map_err(|e| {
                ToolError::new(format!(
                    "the editor could not start the command in its terminal: {}",
                    e.message
                ))
            })?
            .terminal_id
            .0
            .to_string();
        let release = Release {
            cx: self.cx.clone(),
            session_id: self.session_id.clone(),
            terminal_id: terminal_id.clone(),
        };
        link.attach(call_id, &terminal_id);
        self.show(call_id, &terminal_id);
        let ended = self.wait(&terminal_id, timeout, ctx).await;
        let outcome = self.finish(&terminal_id, ended).await;
        drop(release);
        outcome
    }

    /// Embeds the terminal in the tool call: the editor shows its output as it comes.
    fn show(&self, call_id: &str, terminal_id: &str) {
        let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_string(),
            ToolCallUpdateFields::new().content(vec![ToolCallContent::Terminal(Terminal::new(
                terminal_id.to_string(),
            ))]),
        ));
        if let Err(e) = self
            .cx
            .send_notification(SessionNotification::new(self.session_id.clone(), update))
        {
            tracing::debug!("acp: terminal not shown in its tool call: {e}");
        }
    }

    async fn wait(
        &self,
        terminal_id: &str,
        timeout: Duration,
        ctx: &ToolContext,
    ) -> Result<Waited, ToolError> {
        let wait =
            WaitForTerminalExitRequest::new(self.session_id.clone(), terminal_id.to_string());
        tokio::select! {
            r = self.cx.send_request(wait).block_task() => r
                .map(|r| Waited::Exited(r.exit_status))
                .map_err(|e| ToolError::new(format!(
                    "the editor's terminal failed while the command ran: {}",
                    e.message
                ))),
            () = tokio::time::sleep(timeout) => Ok(Waited::TimedOut(timeout)),
            () = ctx.cancel.cancelled() => Ok(Waited::Interrupted),
        }
    }

    /// Kills a command that must stop, then reads what it printed.
    async fn finish(
        &self,
        terminal_id: &str,
        ended: Result<Waited, ToolError>,
    ) -> Result<CommandRun, ToolError> {
        let (mut status, timed_out, interrupted) = match ended? {
            Waited::Exited(status) => (Some(status), None, false),
            Waited::TimedOut(limit) => (None, Some(limit), false),
            Waited::Interrupted => (None, None, true),
        };
        if status.is_none() {
            let kill = KillTerminalRequest::new(self.session_id.clone(), terminal_id.to_string());
            if let Err(e) = self.cx.send_request(kill).block_task().await {
                tracing::debug!("acp: terminal/kill failed: {e}");
            }
            let wait =
                WaitForTerminalExitRequest::new(self.session_id.clone(), terminal_id.to_string());
            status = tokio::time::timeout(EXIT_AFTER_KILL, self.cx.send_request(wait).block_task())
                .await
                .ok()
                .and_then(Result::ok)
                .map(|r| r.exit_status);
        }
        let read = TerminalOutputRequest::new(self.session_id.clone(), terminal_id.to_string());
        let out = self.cx.send_request(read).block_task().await.map_err(|e| {
            ToolError::new(format!(
                "the editor could not give the command's output: {}",
                e.message
            ))
        })?;
        let status = status.or(out.exit_status);
        let mut output = out.output;
        if out.truncated {
            output = format!(
                "... [earlier output dropped: the editor keeps the last {MAX_OUTPUT_CHARS} bytes] ...\n{output}"
            );
        }
        Ok(CommandRun {
            output,
            exit_code: status
                .as_ref()
                .and_then(|s| s.exit_code)
                .and_then(|c| i32::try_from(c).ok()),
            signal: status
                .as_ref()
                .and_then(|s| s.signal.as_deref())
                .and_then(signal_number),
            timed_out,
            interrupted,
        })
    }
}

/// Releases the editor's terminal however the call ends, even when the turn is cancelled and
/// the call dropped mid-way (the editor kills a command still running and frees it).
struct Release {
    cx: ConnectionTo<Client>,
    session_id: String,
    terminal_id: String,
}

impl Drop for Release {
    fn drop(&mut self) {
        let release =
            ReleaseTerminalRequest::new(self.session_id.clone(), self.terminal_id.clone());
        self.cx.send_request(release).detach();
    }
}

/// The environment the command gets on top of the editor's own: what Hermes sets differently
/// from the environment it was started with, and every variable our tools withhold (API keys
/// and other credentials) set empty, since the editor's environment usually holds them too.
fn env_changes(child: &[(String, String)]) -> Vec<EnvVariable> {
    let child: HashMap<&str, &str> = child
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let ours: HashMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let mut out: Vec<EnvVariable> = child
        .iter()
        .filter(|(k, v)| ours.get(**k).map(String::as_str) != Some(**v))
        .map(|(k, v)| EnvVariable::new(*k, *v))
        .collect();
    out.extend(
        ours.keys()
            .filter(|k| !child.contains_key(k.as_str()))
            .map(|k| EnvVariable::new(k.clone(), "")),
    );
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// A signal as the editor names it (`SIGTERM`, `TERM`, `15`), as its number.
fn signal_number(name: &str) -> Option<i32> {
    if let Ok(n) = name.parse() {
        return Some(n);
    }
    let name = name.strip_prefix("SIG").unwrap_or(name);
    Some(match name {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "ABRT" => libc::SIGABRT,
        "KILL" => libc::SIGKILL,
        "SEGV" => libc::SIGSEGV,
        "PIPE" => libc::SIGPIPE,
        "ALRM" => libc::SIGALRM,
        "TERM" => libc::SIGTERM,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_changes_are_what_hermes_sets_and_withholds() {
        let mut child: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| k != "PATH")
            .collect();
        child.push(("HERMES_ACP_TEST_ADDED".into(), "1".into()));
        let changes: Vec<(String, String)> = env_changes(&child)
            .into_iter()
            .map(|e| (e.name, e.value))
            .collect();
        let mut expected = vec![("HERMES_ACP_TEST_ADDED".to_string(), "1".to_string())];
        if std::env::var_os("PATH").is_some() {
            expected.push(("PATH".into(), String::new()));
        }
        assert_eq!(changes, expected);
    }

    #[test]
    fn signals_are_read_by_name_or_number() {
        assert_eq!(signal_number("SIGKILL"), Some(libc::SIGKILL));
        assert_eq!(signal_number("TERM"), Some(libc::SIGTERM));
        assert_eq!(signal_number("2"), Some(2));
        assert_eq!(signal_number("SIGWHATEVER"), None);
    }
}
