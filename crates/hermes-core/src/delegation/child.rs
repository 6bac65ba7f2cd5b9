//! One sub-agent, start to finish: its tools (the allowed ones, narrowed to the task's
//! toolsets), a copy of the parent's tool context with its own todo list, a fresh [`Agent`] on
//! the parent's model targets, one turn on the task, and the entry the parent reads. Its events
//! go to its session record only, never to the parent's frontend; each of its model calls is
//! also taken from the parent turn's budget, and when that is spent the child is stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hermes_protocol::{AgentEvent, TurnEnd, TurnResult};
use hermes_store::{NewSession, SessionStart};
use hermes_tools::search::RepeatGuard;
use hermes_tools::todo::TodoStore;
use hermes_tools::{SessionHandle, ToolContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::tasks::Task;
use super::{Delegation, brief};
use crate::record::{EventRecorder, StreamedText};
use crate::{Agent, AgentOptions, EventSink, IterationBudget};

/// Runs `task` (number `index` of the call, from 0) as a sub-agent and returns its entry:
/// `{task, status: ok|failed, summary | error, api_calls}`, plus `note` when it stopped at its
/// own limit and `session_id` when its conversation was recorded.
pub(crate) async fn run(
    delegation: &Delegation,
    index: usize,
    task: &Task,
    ctx: &ToolContext,
    parent_budget: Option<Arc<IterationBudget>>,
) -> Value {
    let number = index + 1;
    let all = vec!["all".to_string()];
    let tools = match delegation
        .tools
        .select(task.toolsets.as_ref().unwrap_or(&all))
    {
        Ok((tools, _)) => tools,
        Err(e) => return failed(number, &e.to_string(), 0),
    };
    let Some(primary) = delegation.targets.first() else {
        return failed(number, "no model is configured for sub-agents", 0);
    };
    let session_id = hermes_store::time::new_session_id();
    let system_prompt = brief::child_system_prompt(&ctx.cwd);
    let tool_ctx = ToolContext {
        session: SessionHandle::new(session_id.clone()),
        todos: Arc::new(TodoStore::new()),
        search_guard: Arc::new(RepeatGuard::default()),
        ..ctx.clone()
    };
    let options = AgentOptions {
        model: primary.model.clone(),
        max_turns: delegation.settings.max_iterations,
        ..delegation.options.clone()
    };
    let agent = Agent::new(
        primary.provider.clone(),
        tools,
        system_prompt.clone(),
        options,
        tool_ctx,
    )
    .with_fallbacks(delegation.targets[1..].to_vec());

    let record = delegation.sessions.as_ref().map(|sessions| {
        // The delegating session as it is now (it moves with `/new` and compression).
        let parent = Some(ctx.session.id()).filter(|p| !p.is_empty());
        let session = NewSession {
            id: session_id.clone(),
            source: "subagent".into(),
            model: Some(primary.model.clone()),
            provider: Some(primary.provider.name().to_string()),
            cwd: Some(ctx.cwd.display().to_string()),
            parent_session_id: parent,
            system_prompt: Some(system_prompt),
        };
        let writer = sessions.writer.session(SessionStart::New(session));
        EventRecorder::new(writer, StreamedText::Dropped)
    });
    let cancel = ctx.cancel.child_token();
    let sink = ChildSink {
        parent_budget,
        cancel: cancel.clone(),
        out_of_budget: AtomicBool::new(false),
        record: record.as_ref(),
    };
    let message = brief::task_message(&task.goal, task.context.as_deref());
    let turn = agent.run_turn(&message, Vec::new(), &sink, cancel).await;
    let out_of_budget = sink.out_of_budget.load(Ordering::Acquire);
    drop(sink);
    let mut entry = entry(
        number,
        &turn,
        out_of_budget,
        delegation.settings.max_iterations,
    );
    if let Some(record) = record {
        // The parent's own recorder is the one that reports store failures.
        let _ = record.finish(end_reason(&turn, out_of_budget)).await;
        entry["session_id"] = Value::String(session_id);
    }
    entry
}

/// What the parent reads about one finished child.
fn entry(number: usize, turn: &TurnResult, out_of_budget: bool, limit: u32) -> Value {
    let summary = turn.final_text.trim();
    let reason = if out_of_budget {
        Some("the turn's budget of model calls ran out before the sub-agent finished".to_string())
    } else if turn.is_interrupted() {
        Some("interrupted before it finished".to_string())
    } else if let Some(failure) = turn.failure() {
        Some(failure.message.clone())
    } else if summary.is_empty() {
        Some("the sub-agent ended without a summary".to_string())
    } else {
        None
    };
    if let Some(reason) = reason {
        return failed(number, &reason, turn.api_calls);
    }
    let mut entry = json!({
        "task": number,
        "status": "ok",
        "summary": summary,
        "api_calls": turn.api_calls,
    });
    if turn.end == TurnEnd::BudgetExhausted {
        entry["note"] = Value::String(format!(
            "stopped at its limit of {limit} model calls; the summary may be incomplete"
        ));
    }
    entry
}

pub(crate) fn failed(number: usize, reason: &str, api_calls: u32) -> Value {
    json!({
        "task": number,
        "status": "failed",
        "error": reason,
        "api_calls": api_calls,
    })
}

/// The stored session's end reason, in the words every session uses.
fn end_reason(turn: &TurnResult, out_of_budget: bool) -> &'static str {
    if out_of_budget {
        TurnEnd::BudgetExhausted.as_str()
    } else {
        turn.end.as_str()
    }
}

/// Where a child's events go: each model call is charged to the parent turn's budget (the
/// child is cancelled before the request goes out when none is left), and everything goes to
/// the child's session record.
struct ChildSink<'a> {
    parent_budget: Option<Arc<IterationBudget>>,
    cancel: CancellationToken,
    out_of_budget: AtomicBool,
    record: Option<&'a EventRecorder>,
}

impl EventSink for ChildSink<'_> {
    fn emit(&self, event: AgentEvent) {
        if let AgentEvent::ModelCallStarted { .. } = event
            && let Some(budget) = &self.parent_budget
            && !budget.try_consume()
        {
            self.out_of_budget.store(true, Ordering::Release);
            self.cancel.cancel();
        }
        if let Some(record) = self.record {
            record.record(&event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries() {
        let turn = TurnResult {
            final_text: " found it \n".into(),
            api_calls: 2,
            ..TurnResult::default()
        };
        assert_eq!(
            entry(1, &turn, false, 50),
            json!({"task": 1, "status": "ok", "summary": "found it", "api_calls": 2})
        );
        let limited = TurnResult {
            end: TurnEnd::BudgetExhausted,
            ..turn.clone()
        };
        assert_eq!(
            entry(2, &limited, false, 50)["note"],
            "stopped at its limit of 50 model calls; the summary may be incomplete"
        );
        assert_eq!(
            entry(1, &turn, true, 50)["error"],
            "the turn's budget of model calls ran out before the sub-agent finished"
        );
        let broken = TurnResult {
            end: TurnEnd::failed(hermes_protocol::ErrorClass::FormatError, "HTTP 400: bad"),
            ..TurnResult::default()
        };
        assert_eq!(
            entry(3, &broken, false, 50),
            json!({"task": 3, "status": "failed", "error": "HTTP 400: bad", "api_calls": 0})
        );
        let silent = TurnResult {
            ..TurnResult::default()
        };
        assert_eq!(
            entry(1, &silent, false, 50)["error"],
            "the sub-agent ended without a summary"
        );
    }
}
