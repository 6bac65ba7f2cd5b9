//! The `delegate_task` tool: validates the call, runs one sub-agent per task (at most
//! `max_concurrent_children` at once, cancelled with the parent's turn) and answers with one
//! JSON object, `{"results": [...]}`, one entry per task in the order given.

use std::sync::Arc;

use hermes_tools::{Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::{Delegation, DelegationSettings, TOOL_NAME, child, tasks};

const DESCRIPTION: &str = "Hand work to sub-agents: each gets a fresh conversation and your tools except delegate_task, clarify and memory, and only its final summary comes back to you. Use it for work that would flood your context, or for independent tasks in parallel (tasks). A sub-agent knows nothing of this conversation: put everything it needs (paths, errors, constraints) in goal and context. A summary is the sub-agent's own report; check what matters.";

pub struct DelegateTaskTool {
    /// `None`: listed and measured only (a session installs the working one).
    delegation: Option<Arc<Delegation>>,
    max_tasks: usize,
    /// Sub-agents running now, across calls.
    slots: Arc<Semaphore>,
}

impl DelegateTaskTool {
    /// The tool as `hermes tools` lists it and `hermes prompt-size` measures it; calling it
    /// says delegation is not set up. A session replaces it with [`Delegation::install`].
    pub fn schema_only() -> DelegateTaskTool {
        let settings = DelegationSettings::default();
        DelegateTaskTool {
            delegation: None,
            max_tasks: settings.max_concurrent_children,
            slots: Arc::new(Semaphore::new(settings.max_concurrent_children)),
        }
    }

    pub(crate) fn new(delegation: Delegation) -> DelegateTaskTool {
        let max = delegation.settings.max_concurrent_children;
        DelegateTaskTool {
            delegation: Some(Arc::new(delegation)),
            max_tasks: max,
            slots: Arc::new(Semaphore::new(max)),
        }
    }
}

#[async_trait::async_trait]
impl Tool for DelegateTaskTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }
    fn toolset(&self) -> &str {
        "delegation"
    }
    fn description(&self) -> &str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        let toolsets = json!({
            "type": "array",
            "items": {"type": "string"},
            "description": "Only these toolsets (default: all it may have)"
        });
        json!({
            "type": "object",
            "properties": {
                "goal": {"type": "string", "description": "What the sub-agent must achieve, self-contained"},
                "context": {"type": "string", "description": "What it needs to know: paths, errors, constraints"},
                "toolsets": toolsets,
                "tasks": {
                    "type": "array",
                    "maxItems": self.max_tasks,
                    "description": "Instead of goal: tasks run in parallel, one sub-agent each; the top-level context is given to all",
                    "items": {
                        "type": "object",
                        "properties": {
                            "goal": {"type": "string"},
                            "context": {"type": "string"},
                            "toolsets": {"type": "array", "items": {"type": "string"}}
                        },
                        "required": ["goal"]
                    }
                }
            }
        })
    }
    fn preview(&self, args: &Value) -> String {
        let goal = |v: &Value| v.get("goal").and_then(Value::as_str).map(str::to_string);
        let text = match args.get("tasks").and_then(Value::as_array) {
            Some(list) if !list.is_empty() => format!(
                "{} tasks: {}",
                list.len(),
                list.iter().filter_map(goal).collect::<Vec<_>>().join(" | ")
            ),
            _ => goal(args).unwrap_or_default(),
        };
        hermes_tools::output::shorten_line(&text, 80)
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let Some(delegation) = &self.delegation else {
            return Err(ToolError::new("delegation is not set up in this session"));
        };
        let tasks = tasks::parse(&args, self.max_tasks, &delegation.tools)?;
        let parent_budget = ctx.budget.clone();
        let runs = tasks.iter().enumerate().map(|(index, task)| {
            let parent_budget = parent_budget.clone();
            async move {
                let permit = tokio::select! {
                    biased;
                    () = ctx.cancel.cancelled() => None,
                    permit = self.slots.acquire() => permit.ok(),
                };
                let Some(_permit) = permit else {
                    return child::failed(index + 1, "interrupted before it started", 0);
                };
                child::run(delegation, index, task, ctx, parent_budget).await
            }
        });
        let results = futures_util::future::join_all(runs).await;
        Ok(json!({ "results": results }))
    }
}
