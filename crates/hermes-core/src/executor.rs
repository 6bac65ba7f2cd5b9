//! Running the tool calls of one model response. Calls are grouped into batches that may run
//! concurrently (reads of any paths together; a write starts a new batch when it overlaps a path
//! the batch touches; shell commands always alone), at most `max_parallel` at once, and the
//! results come back in call order whatever order they finish in.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use hermes_protocol::{AgentEvent, Message, ToolCall};
use hermes_tools::paths::overlaps;
use hermes_tools::registry::error_value;
use hermes_tools::{Access, Registry, Tool, ToolContext};
use serde_json::Value;

use crate::EventSink;

/// How long a tool that ignores cancellation is given before it is abandoned.
const CANCEL_GRACE: Duration = Duration::from_secs(3);

/// A tool call after validation: what will run, or why it will not.
pub(crate) struct PlannedCall {
    /// The call as recorded in the conversation (name corrected, arguments repaired).
    pub call: ToolCall,
    pub action: Action,
}

pub(crate) enum Action {
    Run {
        tool: Arc<dyn Tool>,
        args: Value,
    },
    /// Not run; the message goes back to the model as the call's error result.
    Reject(String),
}

/// Runs the planned calls and hands over one tool message per call, in call order, each as
/// soon as it and every call before it have finished (so persistence commits a result while
/// later calls still run).
pub(crate) async fn execute(
    calls: &[PlannedCall],
    ctx: &ToolContext,
    sink: &dyn EventSink,
    max_parallel: usize,
    on_result: &mut (dyn FnMut(Message) + Send),
) {
    for batch in plan_batches(calls, ctx) {
        // Collected first: a closure kept inside the stream would make this future non-`Send`
        // (a turn runs inside `delegate_task`'s future for sub-agents).
        let runs: Vec<_> = batch
            .iter()
            .map(|&i| run_one(&calls[i], ctx, sink))
            .collect();
        let mut outcomes = futures_util::stream::iter(runs).buffered(max_parallel.max(1));
        let mut order = batch.iter();
        while let Some(content) = outcomes.next().await {
            if let Some(&i) = order.next() {
                let call = &calls[i].call;
                on_result(Message::tool_result(&call.id, &call.name, content));
            }
        }
    }
}

/// [`execute`] collecting the messages (tests).
#[cfg(test)]
async fn execute_all(
    calls: &[PlannedCall],
    ctx: &ToolContext,
    sink: &dyn EventSink,
    max_parallel: usize,
) -> Vec<Message> {
    let mut out = Vec::new();
    execute(calls, ctx, sink, max_parallel, &mut |m| out.push(m)).await;
    out
}

/// Splits calls (by index, in order) into batches whose members may run concurrently.
fn plan_batches(calls: &[PlannedCall], ctx: &ToolContext) -> Vec<Vec<usize>> {
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut reads: Vec<PathBuf> = Vec::new();
    let mut writes: Vec<PathBuf> = Vec::new();
    let touches = |set: &[PathBuf], paths: &[PathBuf]| {
        paths.iter().any(|p| set.iter().any(|q| overlaps(p, q)))
    };
    for (i, planned) in calls.iter().enumerate() {
        let access = match &planned.action {
            Action::Run { tool, args } => tool.access(args, ctx),
            Action::Reject(_) => Access::Read(Vec::new()),
        };
        let conflict = match &access {
            Access::Exclusive => true,
            Access::Read(paths) => touches(&writes, paths),
            Access::Write(paths) => touches(&writes, paths) || touches(&reads, paths),
        };
        if conflict && !current.is_empty() {
            batches.push(std::mem::take(&mut current));
            reads.clear();
            writes.clear();
        }
        current.push(i);
        match access {
            Access::Exclusive => batches.push(std::mem::take(&mut current)),
            Access::Read(paths) => reads.extend(paths),
            Access::Write(paths) => writes.extend(paths),
        }
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

async fn run_one(planned: &PlannedCall, ctx: &ToolContext, sink: &dyn EventSink) -> String {
    let call = &planned.call;
    let (tool, args) = match &planned.action {
        Action::Reject(message) => {
            sink.emit(AgentEvent::ToolFinished {
                call_id: call.id.clone(),
                name: call.name.clone(),
                duration: Duration::ZERO,
                ok: false,
            });
            return error_value(message).to_string();
        }
        Action::Run { tool, args } => (tool, args),
    };
    if ctx.cancel.is_cancelled() {
        return error_value("skipped: the user interrupted the turn before this call ran")
            .to_string();
    }
    sink.emit(AgentEvent::ToolStarted {
        call_id: call.id.clone(),
        name: call.name.clone(),
        preview: tool.preview(args),
    });
    let started = Instant::now();
    let outcome = tokio::select! {
        outcome = Registry::execute(tool.as_ref(), args.clone(), ctx) => Some(outcome),
        () = async { ctx.cancel.cancelled().await; tokio::time::sleep(CANCEL_GRACE).await } => None,
    };
    let (content, ok) = match outcome {
        Some(o) => (o.content, o.ok),
        None => (
            error_value("interrupted: the user stopped this call before it finished").to_string(),
            false,
        ),
    };
    sink.emit(AgentEvent::ToolFinished {
        call_id: call.id.clone(),
        name: call.name.clone(),
        duration: started.elapsed(),
        ok,
    });
    content
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_tools::{ToolError, ToolResult};
    use serde_json::json;

    struct Probe {
        name: &'static str,
        access: fn(&Value) -> Access,
    }

    #[async_trait::async_trait]
    impl Tool for Probe {
        fn name(&self) -> &str {
            self.name
        }
        fn toolset(&self) -> &str {
            "test"
        }
        fn description(&self) -> &str {
            ""
        }
        fn parameters(&self) -> Value {
            json!({})
        }
        fn access(&self, args: &Value, _ctx: &ToolContext) -> Access {
            (self.access)(args)
        }
        async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
            let ms = args["sleep_ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            if args["fail"] == true {
                return Err(ToolError::new("failed"));
            }
            Ok(json!({"echo": args["id"]}))
        }
    }

    fn path_of(args: &Value) -> Vec<PathBuf> {
        vec![PathBuf::from(args["path"].as_str().unwrap_or("/"))]
    }

    fn planned(tool: &Arc<dyn Tool>, id: &str, args: Value) -> PlannedCall {
        PlannedCall {
            call: ToolCall {
                id: id.into(),
                name: tool.name().into(),
                arguments: args.to_string(),
            },
            action: Action::Run {
                tool: tool.clone(),
                args,
            },
        }
    }

    #[test]
    fn batches_follow_access() {
        let reader: Arc<dyn Tool> = Arc::new(Probe {
            name: "read",
            access: |a| Access::Read(path_of(a)),
        });
        let writer: Arc<dyn Tool> = Arc::new(Probe {
            name: "write",
            access: |a| Access::Write(path_of(a)),
        });
        let shell: Arc<dyn Tool> = Arc::new(Probe {
            name: "shell",
            access: |_| Access::Exclusive,
        });
        let ctx = ToolContext::new(PathBuf::from("/"));
        let calls = vec![
            planned(&reader, "0", json!({"path": "/a"})),
            planned(&reader, "1", json!({"path": "/b"})),
            planned(&writer, "2", json!({"path": "/c"})),
            planned(&writer, "3", json!({"path": "/a/x"})),
            planned(&shell, "4", json!({})),
            planned(&reader, "5", json!({"path": "/a"})),
            planned(&reader, "6", json!({"path": "/a/x"})),
        ];
        assert_eq!(
            plan_batches(&calls, &ctx),
            vec![vec![0, 1, 2], vec![3], vec![4], vec![5, 6]]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn reads_run_concurrently_and_results_keep_call_order() {
        let reader: Arc<dyn Tool> = Arc::new(Probe {
            name: "read",
            access: |a| Access::Read(path_of(a)),
        });
        let ctx = ToolContext::new(PathBuf::from("/"));
        let calls: Vec<PlannedCall> = (0..10)
            .map(|i| {
                planned(
                    &reader,
                    &i.to_string(),
                    json!({"id": i, "path": format!("/f{i}"), "sleep_ms": 1000 - i * 50}),
                )
            })
            .collect();
        let started = tokio::time::Instant::now();
        let results = execute_all(&calls, &ctx, &crate::NoEvents, 8).await;
        // 10 calls of ~1 s, 8 at a time: two waves, not ten.
        assert!(
            started.elapsed() < Duration::from_millis(2100),
            "{:?}",
            started.elapsed()
        );
        for (i, m) in results.iter().enumerate() {
            assert_eq!(m.tool_call_id.as_deref(), Some(i.to_string().as_str()));
            assert_eq!(m.content, format!("{{\"echo\":{i}}}"));
        }
    }

    #[tokio::test]
    async fn rejected_calls_get_error_results_in_place() {
        let reader: Arc<dyn Tool> = Arc::new(Probe {
            name: "read",
            access: |a| Access::Read(path_of(a)),
        });
        let ctx = ToolContext::new(PathBuf::from("/"));
        let calls = vec![
            planned(&reader, "a", json!({"id": 1, "path": "/x"})),
            PlannedCall {
                call: ToolCall {
                    id: "b".into(),
                    name: "nope".into(),
                    arguments: "{}".into(),
                },
                action: Action::Reject("Tool 'nope' does not exist.".into()),
            },
            planned(&reader, "c", json!({"id": 3, "path": "/y", "fail": true})),
        ];
        let results = execute_all(&calls, &ctx, &crate::NoEvents, 8).await;
        assert_eq!(
            results[1].content,
            r#"{"error":"Tool 'nope' does not exist."}"#
        );
        assert_eq!(results[2].content, r#"{"error":"failed"}"#);
    }
}
