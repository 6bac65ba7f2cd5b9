//! The agent's events as ACP `session/update` notifications: streamed answer and thought
//! chunks, each tool call started (kind, title, locations, raw input) and finished (status,
//! its result text, and for file edits the old and new text of every file it changed), and
//! the replay of a stored conversation when an editor loads a session.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    Content, ContentBlock, ContentChunk, Diff, SessionNotification, SessionUpdate, Terminal,
    TextContent, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use hermes_core::EventSink;
use hermes_protocol::{AgentEvent, Message, Role};
use serde_json::Value;

use super::editor_terminal::TerminalLink;
use super::tools;

/// Tool output shown in the editor is cut here; the model saw all of it.
const RESULT_LIMIT: usize = 5000;

/// Sends the updates of one session to the editor.
pub struct Updates {
    cx: ConnectionTo<Client>,
    session_id: String,
    cwd: PathBuf,
    calls: Mutex<Calls>,
    /// Told which `terminal` call runs, so the editor's terminal lands in that call.
    terminal: Option<Arc<TerminalLink>>,
}

/// What is known of the tool calls of the running turn.
#[derive(Default)]
struct Calls {
    /// Arguments by call id, from the assistant message that made the calls.
    args: HashMap<String, Value>,
    /// The files an edit call is about to change, with their text before it (`None`: the
    /// file did not exist).
    before: HashMap<String, Vec<(PathBuf, Option<String>)>>,
}

impl Updates {
    pub fn new(cx: ConnectionTo<Client>, session_id: String, cwd: PathBuf) -> Updates {
        Updates {
            cx,
            session_id,
            cwd,
            calls: Mutex::new(Calls::default()),
            terminal: None,
        }
    }

    /// Follows the session's `terminal` calls for the editor's terminal.
    pub fn with_terminal(mut self, link: Arc<TerminalLink>) -> Updates {
        self.terminal = Some(link);
        self
    }

    pub fn send(&self, update: SessionUpdate) {
        // An editor that went away cannot be told; the turn still ends normally.
        if let Err(e) = self
            .cx
            .send_notification(SessionNotification::new(self.session_id.clone(), update))
        {
            tracing::debug!("acp: session/update not sent: {e}");
        }
    }

    fn tool_started(&self, call_id: &str, name: &str, preview: &str) {
        if name == "terminal"
            && let Some(link) = &self.terminal
        {
            link.call_started(call_id);
        }
        let Ok(mut calls) = self.calls.lock() else {
            return;
        };
        let args = calls.args.get(call_id).cloned().unwrap_or(Value::Null);
        if tools::edits_files(name) {
            let before = tools::edited_paths(&args)
                .into_iter()
                .map(|p| {
                    let abs = self.cwd.join(p);
                    let text = std::fs::read_to_string(&abs).ok();
                    (abs, text)
                })
                .collect();
            calls.before.insert(call_id.to_string(), before);
        }
        drop(calls);
        self.send(SessionUpdate::ToolCall(
            ToolCall::new(call_id.to_string(), tools::title(name, &args, preview))
                .kind(tools::kind(name))
                .status(ToolCallStatus::InProgress)
                .locations(tools::locations(name, &args, &self.cwd))
                .raw_input(Some(args)),
        ));
    }

    fn tool_finished(&self, call_id: &str, ok: bool) {
        if let Some(link) = &self.terminal {
            link.call_finished(call_id);
        }
        let before = self
            .calls
            .lock()
            .ok()
            .and_then(|mut c| c.before.remove(call_id))
            .unwrap_or_default();
        let diffs: Vec<ToolCallContent> = before
            .into_iter()
            .filter_map(|(path, old)| {
                let new = std::fs::read_to_string(&path).unwrap_or_default();
                (old.as_deref() != Some(new.as_str()))
                    .then(|| ToolCallContent::Diff(Diff::new(path, new).old_text(old)))
            })
            .collect();
        let status = if ok {
            ToolCallStatus::Completed
        } else {
            ToolCallStatus::Failed
        };
        let mut fields = ToolCallUpdateFields::new().status(status);
        if !diffs.is_empty() {
            fields = fields.content(diffs);
        }
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_string(),
            fields,
        )));
    }

    fn message_added(&self, message: &Message) {
        match message.role {
            Role::Assistant => {
                if let Ok(mut calls) = self.calls.lock() {
                    for call in &message.tool_calls {
                        let args = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                        calls.args.insert(call.id.clone(), args);
                    }
                }
            }
            Role::Tool => {
                if let Some(id) = &message.tool_call_id {
                    // The editor's terminal the call ran in stays shown beside its result.
                    let terminal = self.terminal.as_ref().and_then(|l| l.take_terminal(id));
                    self.send(tool_result(id, &message.content, terminal));
                }
            }
            Role::User | Role::System => {}
        }
    }
}

impl EventSink for Updates {
    fn emit(&self, event: AgentEvent) {
        match event {
            AgentEvent::TextDelta(text) => self.send(SessionUpdate::AgentMessageChunk(chunk(text))),
            AgentEvent::ReasoningDelta(text) => {
                self.send(SessionUpdate::AgentThoughtChunk(chunk(text)))
            }
            AgentEvent::ToolStarted {
                call_id,
                name,
                preview,
            } => self.tool_started(&call_id, &name, &preview),
            AgentEvent::ToolFinished { call_id, ok, .. } => self.tool_finished(&call_id, ok),
            AgentEvent::MessageAdded(message) => self.message_added(&message),
            AgentEvent::Status(status) => tracing::info!("acp: {status}"),
            AgentEvent::ModelCallStarted { .. }
            | AgentEvent::Usage { .. }
            | AgentEvent::Interrupted
            | AgentEvent::ContextCompressed { .. } => {}
        }
    }
}

fn chunk(text: impl Into<String>) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

/// A tool's result as the content of its call (cut for display), after the editor terminal
/// it ran in, if any.
fn tool_result(call_id: &str, text: &str, terminal: Option<String>) -> SessionUpdate {
    let shown = if text.len() > RESULT_LIMIT {
        let mut end = RESULT_LIMIT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}\n[... truncated]", &text[..end])
    } else {
        text.to_string()
    };
    let mut content: Vec<ToolCallContent> = terminal
        .map(|id| ToolCallContent::Terminal(Terminal::new(id)))
        .into_iter()
        .collect();
    content.push(ToolCallContent::Content(Content::new(ContentBlock::Text(
        TextContent::new(shown),
    ))));
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new().content(content),
    ))
}

/// A stored conversation as the updates that show it: the user's messages, the answers and
/// their reasoning, and each tool call (completed) with its result.
pub fn replay(history: &[Message], cwd: &Path) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    for m in history {
        match m.role {
            Role::User => out.push(SessionUpdate::UserMessageChunk(chunk(m.content.clone()))),
            Role::Assistant => {
                if let Some(r) = m.reasoning.as_ref().filter(|r| !r.is_empty()) {
                    out.push(SessionUpdate::AgentThoughtChunk(chunk(r.clone())));
                }
                if !m.content.is_empty() {
                    out.push(SessionUpdate::AgentMessageChunk(chunk(m.content.clone())));
                }
                for call in &m.tool_calls {
                    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                    out.push(SessionUpdate::ToolCall(
                        ToolCall::new(call.id.clone(), tools::title(&call.name, &args, ""))
                            .kind(tools::kind(&call.name))
                            .status(ToolCallStatus::Completed)
                            .locations(tools::locations(&call.name, &args, cwd))
                            .raw_input(Some(args)),
                    ));
                }
            }
            Role::Tool => {
                if let Some(id) = &m.tool_call_id {
                    out.push(tool_result(id, &m.content, None));
                }
            }
            Role::System => {}
        }
    }
    out
}
