//! The review run: a forked agent on the session's provider and model, with the session's
//! system prompt and tool schemas byte for byte and the conversation replayed as is, so the
//! provider's prompt cache of the live session serves the whole prefix; only the review's
//! question (the last user message) is new. Tools other than `memory` and the skills toolset
//! keep their schema (the cache key includes the tools) but refuse to run. Routed to
//! `auxiliary.background_review`'s other model, the cache is cold anyway: the review then
//! offers only its own tools and replays a compact digest of the older turns.
//!
//! The run is stored as its own session (source `review`, the live session as parent), asks
//! nobody anything (flagged commands are denied), and its successful writes become the
//! one-line notices handed to [`Notices`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_core::record::{EventRecorder, StreamedText};
use hermes_core::skills::{Library, SkillManageTool};
use hermes_core::{Agent, AgentOptions, EventSink, ModelTarget};
use hermes_protocol::{AgentEvent, Message, Role, TurnEnd, Usage};
use hermes_store::{NewSession, SessionStart};
use hermes_tools::{
    ApprovalAnswer, ApprovalRequest, Interaction, Registry, SessionHandle, Tool, ToolContext,
    ToolError, ToolResult,
};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Due, SOURCE, prompts};
use crate::runtime::Runtime;

/// The model calls one review may make (the Python Hermes's fork limit).
const MAX_REVIEW_CALLS: u32 = 16;

/// Messages the digest keeps verbatim on the routed path.
const DIGEST_TAIL: usize = 24;

/// What a refused tool answers.
pub const REFUSAL: &str = "Background review denied non-whitelisted tool: {tool}. Only memory and skill tools are allowed.";

/// Where the review's one-line notices go (stderr, the REPL, a chat).
pub trait Notices: Send + Sync {
    fn notice(&self, line: &str);
}

impl<F: Fn(&str) + Send + Sync> Notices for F {
    fn notice(&self, line: &str) {
        self(line)
    }
}

/// What a finished review did.
#[derive(Debug, Clone)]
pub struct ReviewOutcome {
    /// The stored review session.
    pub session_id: String,
    /// The writes, as announced (also when notices are off).
    pub notices: Vec<String>,
    pub api_calls: u32,
    pub usage: Usage,
    pub end: TurnEnd,
}

/// A review running in the background.
#[derive(Debug)]
pub struct ReviewHandle {
    task: JoinHandle<ReviewOutcome>,
}

impl ReviewHandle {
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits at most `limit` for the review; `None` when it was still running (it is then
    /// left to die with the process) or failed.
    pub async fn wait(self, limit: Duration) -> Option<ReviewOutcome> {
        match tokio::time::timeout(limit, self.task).await {
            Ok(Ok(outcome)) => Some(outcome),
            Ok(Err(e)) => {
                tracing::warn!("background review failed: {e}");
                None
            }
            Err(_) => {
                tracing::warn!(
                    "background review still running after {}s (memory.review_wait_seconds); not waiting for it",
                    limit.as_secs()
                );
                None
            }
        }
    }
}

/// Everything the review needs from the session, taken when the turn ended.
pub(crate) struct ReviewJob {
    pub runtime: Runtime,
    pub due: Due,
    pub snapshot: Vec<Message>,
    pub system_prompt: String,
    pub tools: Registry,
    pub skills: Arc<Library>,
    pub primary: ModelTarget,
    pub fallbacks: Vec<ModelTarget>,
    pub provider_name: String,
    pub options: AgentOptions,
    pub tool_ctx: ToolContext,
    pub parent_session: String,
    pub notices_on: bool,
    /// The other model of `auxiliary.background_review`, when it is one.
    pub routed: Option<ModelTarget>,
}

/// Starts `job` on a tokio task.
pub(crate) fn start(job: ReviewJob, notices: Arc<dyn Notices>) -> ReviewHandle {
    ReviewHandle {
        task: tokio::spawn(run(job, notices)),
    }
}

async fn run(job: ReviewJob, notices: Arc<dyn Notices>) -> ReviewOutcome {
    let session_id = hermes_store::time::new_session_id();
    let routed = job.routed.is_some();
    let target = job.routed.clone().unwrap_or_else(|| job.primary.clone());
    let tools = review_tools(&job.tools, &job.skills, routed);
    let history = if routed {
        digest(&job.snapshot, DIGEST_TAIL)
    } else {
        job.snapshot.clone()
    };
    let mut tool_ctx = job.tool_ctx.clone();
    tool_ctx.session = SessionHandle::new(session_id.clone());
    tool_ctx.interaction = Arc::new(NobodyToAsk);
    let options = AgentOptions {
        model: target.model.clone(),
        max_turns: MAX_REVIEW_CALLS,
        ..job.options.clone()
    };
    let mut agent = Agent::new(
        target.provider.clone(),
        tools,
        job.system_prompt.clone(),
        options,
        tool_ctx,
    );
    if !routed {
        agent = agent.with_fallbacks(job.fallbacks.clone());
    }
    let writer = job
        .runtime
        .store_writer()
        .session(SessionStart::New(NewSession {
            id: session_id.clone(),
            source: SOURCE.into(),
            model: Some(target.model.clone()),
            provider: Some(if routed {
                target.provider.name().to_string()
            } else {
                job.provider_name.clone()
            }),
            cwd: Some(job.tool_ctx.cwd.display().to_string()),
            parent_session_id: Some(job.parent_session.clone()).filter(|p| !p.is_empty()),
            system_prompt: Some(job.system_prompt.clone()),
        }));
    let sink = ReviewSink {
        record: EventRecorder::new(writer, StreamedText::Dropped),
        finished: Mutex::new(HashMap::new()),
    };
    let question = prompts::for_due(job.due.memory, job.due.skills);
    let replayed = history.len();
    let turn = agent
        .run_turn(&question, history, &sink, CancellationToken::new())
        .await;
    if let Some(failure) = turn.failure() {
        // Best effort, as in the Python Hermes: said, never raised to the conversation.
        tracing::warn!("background review failed: {}", failure.message);
    }
    let ReviewSink { record, finished } = sink;
    if let Err(e) = record.finish(turn.end.as_str()).await {
        tracing::warn!("the review session could not be stored: {e}");
    }
    let finished = finished.into_inner().unwrap_or_default();
    let lines = writes(turn.messages.get(replayed..).unwrap_or_default(), &finished);
    if job.notices_on {
        for line in &lines {
            notices.notice(line);
        }
    }
    ReviewOutcome {
        session_id,
        notices: lines,
        api_calls: turn.api_calls,
        usage: turn.usage,
        end: turn.end,
    }
}

/// Whether the review may run `tool`: memory and the skills toolset.
fn allowed(tool: &dyn Tool) -> bool {
    tool.name() == "memory" || tool.toolset() == "skills"
}

/// The review's tools: the session's in the same order, `skill_manage` creating agent-owned
/// skills, the rest refusing (kept for the cache); routed, only the allowed ones.
fn review_tools(session: &Registry, skills: &Arc<Library>, routed: bool) -> Registry {
    let mut tools = Registry::new();
    for name in session.names() {
        let Some(tool) = session.get(name) else {
            continue;
        };
        if tool.name() == "skill_manage" {
            tools.register(Arc::new(SkillManageTool::for_review(skills.clone())));
        } else if allowed(tool.as_ref()) {
            tools.register(tool.clone());
        } else if !routed {
            tools.register(Arc::new(Refused(tool.clone())));
        }
    }
    tools
}

/// A tool whose schema is offered but whose calls are refused.
struct Refused(Arc<dyn Tool>);

#[async_trait::async_trait]
impl Tool for Refused {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn toolset(&self) -> &str {
        self.0.toolset()
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn parameters(&self) -> Value {
        self.0.parameters()
    }
    async fn call(&self, _args: Value, _ctx: &ToolContext) -> ToolResult {
        Err(ToolError::new(REFUSAL.replace("{tool}", self.0.name())))
    }
}

/// The review has nobody to ask: questions go unanswered, flagged commands are denied.
pub(crate) struct NobodyToAsk;

#[async_trait::async_trait]
impl Interaction for NobodyToAsk {
    fn is_interactive(&self) -> bool {
        false
    }
    async fn clarify(&self, _question: &str, _choices: &[String]) -> Option<String> {
        None
    }
    async fn approve(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Deny
    }
}

/// Records the review session and notes which tool calls succeeded.
struct ReviewSink {
    record: EventRecorder,
    finished: Mutex<HashMap<String, bool>>,
}

impl EventSink for ReviewSink {
    fn emit(&self, event: AgentEvent) {
        self.record.record(&event);
        if let AgentEvent::ToolFinished { call_id, ok, .. } = event
            && let Ok(mut finished) = self.finished.lock()
        {
            finished.insert(call_id, ok);
        }
    }
}

/// The notices for what the review's own messages wrote: one per memory update, one per
/// skill, in order, each once.
fn writes(added: &[Message], finished: &HashMap<String, bool>) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for call in added
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.tool_calls)
    {
        if finished.get(&call.id) != Some(&true) {
            continue;
        }
        let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
        let line = match call.name.as_str() {
            "memory" => "💾 memory updated".to_string(),
            "skill_manage" => {
                let action = args.get("action").and_then(Value::as_str).unwrap_or("");
                let name = args.get("name").and_then(Value::as_str).unwrap_or("");
                if action == "delete" || name.is_empty() {
                    continue;
                }
                format!("📚 skill saved: {name}")
            }
            _ => continue,
        };
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    lines
}

/// The conversation for a cold model: the last `tail` messages as they are (not starting on a
/// tool result), everything before them collapsed into one user message of short lines.
pub fn digest(messages: &[Message], tail: usize) -> Vec<Message> {
    if messages.len() <= tail {
        return messages.to_vec();
    }
    let mut start = messages.len() - tail;
    while start > 0 && messages[start].role == Role::Tool {
        start -= 1;
    }
    if start == 0 {
        return messages.to_vec();
    }
    let mut lines = Vec::new();
    for m in &messages[..start] {
        let text = m.content.trim().replace('\n', " ");
        match m.role {
            Role::User if !text.is_empty() => lines.push(format!("USER: {}", cut(&text, 300))),
            Role::Assistant => {
                if !m.tool_calls.is_empty() {
                    let names: Vec<&str> = m.tool_calls.iter().map(|c| c.name.as_str()).collect();
                    lines.push(format!("ASSISTANT[tools: {}]", names.join(", ")));
                }
                if !text.is_empty() {
                    lines.push(format!("ASSISTANT: {}", cut(&text, 200)));
                }
            }
            _ => {}
        }
    }
    let mut out = vec![Message::user(format!(
        "[Digest of the earlier conversation, older turns shortened; the recent turns follow as they were.]\n{}",
        lines.join("\n")
    ))];
    out.extend_from_slice(&messages[start..]);
    out
}

fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    #[test]
    fn digest_keeps_the_tail_and_summarises_the_rest() {
        let mut messages = Vec::new();
        for i in 0..10 {
            messages.push(Message::user(format!("question {i}")));
            messages.push(Message::assistant_with_tools(
                "",
                vec![ToolCall {
                    id: format!("c{i}"),
                    name: "terminal".into(),
                    arguments: "{}".into(),
                }],
            ));
            messages.push(Message::tool_result(format!("c{i}"), "terminal", "ok"));
            messages.push(Message::assistant(format!("answer {i}")));
        }
        // The last 6 would start on a tool result: its call comes along.
        let out = digest(&messages, 6);
        assert_eq!(out.len(), 1 + 7);
        assert_eq!(out[0].role, Role::User);
        assert!(out[0].content.contains("USER: question 0"));
        assert!(out[0].content.contains("ASSISTANT[tools: terminal]"));
        assert!(!out[0].content.contains("question 9"));
        assert_eq!(out[1..], messages[messages.len() - 7..]);
        assert_eq!(digest(&messages[..4], 6), messages[..4].to_vec());
    }

    #[test]
    fn notices_for_successful_writes_once() {
        let call = |id: &str, name: &str, args: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        };
        let added = vec![Message::assistant_with_tools(
            "",
            vec![
                call(
                    "a",
                    "memory",
                    r#"{"action":"add","target":"user","content":"x"}"#,
                ),
                call("b", "memory", r#"{"action":"add","content":"y"}"#),
                call(
                    "c",
                    "skill_manage",
                    r#"{"action":"create","name":"tidy-csv"}"#,
                ),
                call(
                    "d",
                    "skill_manage",
                    r#"{"action":"create","name":"failed"}"#,
                ),
                call("e", "terminal", "{}"),
            ],
        )];
        let finished: HashMap<String, bool> = [
            ("a", true),
            ("b", true),
            ("c", true),
            ("d", false),
            ("e", true),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(
            writes(&added, &finished),
            ["💾 memory updated", "📚 skill saved: tidy-csv"]
        );
    }
}
