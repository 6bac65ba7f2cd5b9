//! The arguments of one `delegate_task` call turned into the tasks to run, or into an error the
//! model can fix: no goal, an empty one, a batch larger than the concurrency limit, a toolset a
//! sub-agent cannot have.

use hermes_tools::{Registry, ToolError};
use serde_json::Value;

use super::FORBIDDEN_TOOLSETS;

/// One sub-agent's assignment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Task {
    pub goal: String,
    pub context: Option<String>,
    /// Narrows the sub-agent's tools to these toolsets (validated); `None`: all it may have.
    pub toolsets: Option<Vec<String>>,
}

/// The tasks of a call: `goal` (one) or `tasks` (a batch of at most `max_tasks`). In a batch,
/// the top-level `context` is shared by every task (before its own) and the top-level
/// `toolsets` applies to tasks that name none. Toolsets must be ones `available` (the tools a
/// sub-agent may use) has.
pub(crate) fn parse(
    args: &Value,
    max_tasks: usize,
    available: &Registry,
) -> Result<Vec<Task>, ToolError> {
    let shared_context = text(args, "context", "context")?;
    let shared_toolsets = toolsets(args.get("toolsets"), "toolsets", available)?;
    let goal = text(args, "goal", "goal")?;
    let batch = match args.get("tasks") {
        None | Some(Value::Null) => None,
        // A batch sent as a JSON string.
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(serde_json::from_str::<Value>(s).map_err(|e| {
            ToolError::new(format!("tasks must be an array of {{goal, context}} objects; the string given is not JSON ({e})"))
        })?),
        Some(v) => Some(v.clone()),
    };
    let Some(batch) = batch else {
        let Some(goal) = goal else {
            return Err(missing_goal(args));
        };
        return Ok(vec![Task {
            goal,
            context: shared_context,
            toolsets: shared_toolsets,
        }]);
    };
    let Value::Array(items) = batch else {
        return Err(ToolError::new(
            "tasks must be an array of {goal, context} objects",
        ));
    };
    if items.is_empty() {
        return match goal {
            Some(goal) => Ok(vec![Task {
                goal,
                context: shared_context,
                toolsets: shared_toolsets,
            }]),
            None => Err(missing_goal(args)),
        };
    }
    if goal.is_some() {
        return Err(ToolError::new(
            "give either goal (one task) or tasks (a batch), not both; put the goal in tasks",
        ));
    }
    if items.len() > max_tasks {
        return Err(ToolError::new(format!(
            "too many tasks: {} given, at most {max_tasks} run at once (delegation.max_concurrent_children); split them over several calls",
            items.len()
        )));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            if !item.is_object() {
                return Err(ToolError::new(format!(
                    "tasks[{i}] must be an object with a goal"
                )));
            }
            let Some(goal) = text(item, "goal", &format!("tasks[{i}].goal"))? else {
                return Err(ToolError::new(format!("tasks[{i}] has no goal")));
            };
            let own = text(item, "context", &format!("tasks[{i}].context"))?;
            let context = match (&shared_context, own) {
                (Some(shared), Some(own)) => Some(format!("{shared}\n\n{own}")),
                (shared, own) => own.or_else(|| shared.clone()),
            };
            let toolsets = match toolsets(
                item.get("toolsets"),
                &format!("tasks[{i}].toolsets"),
                available,
            )? {
                Some(own) => Some(own),
                None => shared_toolsets.clone(),
            };
            Ok(Task {
                goal,
                context,
                toolsets,
            })
        })
        .collect()
}

fn missing_goal(args: &Value) -> ToolError {
    let empty = args
        .get("goal")
        .and_then(Value::as_str)
        .is_some_and(|g| g.trim().is_empty());
    ToolError::new(if empty {
        "goal is empty: say what the sub-agent should achieve"
    } else {
        "give a goal (one task) or tasks (a batch of {goal, context} objects)"
    })
}

/// A string argument, trimmed; `None` when absent or blank.
fn text(args: &Value, key: &str, label: &str) -> Result<Option<String>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
        Some(other) => Err(ToolError::new(format!(
            "{label} must be a string, got {other}"
        ))),
    }
}

/// A toolsets argument (array of names, or one comma-separated string), each checked against
/// what a sub-agent may use; `None` when absent or empty.
fn toolsets(
    value: Option<&Value>,
    label: &str,
    available: &Registry,
) -> Result<Option<Vec<String>>, ToolError> {
    let names: Vec<String> = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s
            .split([',', ' '])
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str().map(|s| s.trim().to_string()).ok_or_else(|| {
                    ToolError::new(format!("{label} must be a list of toolset names"))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ToolError::new(format!(
                "{label} must be a list of toolset names"
            )));
        }
    };
    let names: Vec<String> = names.into_iter().filter(|n| !n.is_empty()).collect();
    if names.is_empty() {
        return Ok(None);
    }
    let known = available.toolset_names();
    for name in &names {
        if FORBIDDEN_TOOLSETS.contains(&name.as_str()) {
            return Err(ToolError::new(format!(
                "a sub-agent cannot use the `{name}` toolset"
            )));
        }
        if !known.contains(&name.as_str()) {
            return Err(ToolError::new(format!(
                "unknown toolset `{name}` (a sub-agent can use: {})",
                real_toolsets(available).join(", ")
            )));
        }
    }
    Ok(Some(names))
}

/// The toolsets of the tools in `registry`, in order, without composites.
fn real_toolsets(registry: &Registry) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for name in registry.names() {
        if let Some(tool) = registry.get(name)
            && !out.contains(&tool.toolset())
        {
            out.push(tool.toolset());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn available() -> Registry {
        super::super::child_registry(&Registry::builtin())
    }

    fn err(args: Value) -> String {
        parse(&args, 3, &available()).unwrap_err().0
    }

    #[test]
    fn one_goal_with_context_and_toolsets() {
        let tasks = parse(
            &json!({"goal": " find the bug ", "context": "in src/", "toolsets": ["file"]}),
            3,
            &available(),
        )
        .unwrap();
        assert_eq!(
            tasks,
            [Task {
                goal: "find the bug".into(),
                context: Some("in src/".into()),
                toolsets: Some(vec!["file".into()]),
            }]
        );
    }

    #[test]
    fn a_batch_shares_the_top_level_context_and_toolsets() {
        let tasks = parse(
            &json!({
                "context": "repo at /r",
                "toolsets": "file, terminal",
                "tasks": [{"goal": "a"}, {"goal": "b", "context": "only b", "toolsets": ["todo"]}]
            }),
            3,
            &available(),
        )
        .unwrap();
        assert_eq!(tasks[0].context.as_deref(), Some("repo at /r"));
        assert_eq!(
            tasks[0].toolsets,
            Some(vec!["file".into(), "terminal".into()])
        );
        assert_eq!(tasks[1].context.as_deref(), Some("repo at /r\n\nonly b"));
        assert_eq!(tasks[1].toolsets, Some(vec!["todo".into()]));
        // A batch sent as a JSON string.
        let tasks = parse(&json!({"tasks": "[{\"goal\": \"x\"}]"}), 3, &available()).unwrap();
        assert_eq!(tasks[0].goal, "x");
    }

    #[test]
    fn mistakes_the_model_can_fix() {
        assert_eq!(
            err(json!({})),
            "give a goal (one task) or tasks (a batch of {goal, context} objects)"
        );
        assert_eq!(
            err(json!({"goal": "  "})),
            "goal is empty: say what the sub-agent should achieve"
        );
        assert_eq!(
            err(json!({"tasks": [{"goal": "1"}, {"goal": "2"}, {"goal": "3"}, {"goal": "4"}]})),
            "too many tasks: 4 given, at most 3 run at once (delegation.max_concurrent_children); split them over several calls"
        );
        assert_eq!(
            err(json!({"tasks": [{"goal": "1"}, {"context": "no goal"}]})),
            "tasks[1] has no goal"
        );
        assert_eq!(
            err(json!({"goal": "x", "tasks": [{"goal": "y"}]})),
            "give either goal (one task) or tasks (a batch), not both; put the goal in tasks"
        );
        assert_eq!(
            err(json!({"goal": "x", "toolsets": ["teleport"]})),
            "unknown toolset `teleport` (a sub-agent can use: terminal, file, todo)"
        );
        assert_eq!(
            err(json!({"goal": "x", "toolsets": ["memory"]})),
            "a sub-agent cannot use the `memory` toolset"
        );
        assert_eq!(
            err(json!({"goal": "x", "toolsets": ["clarify"]})),
            "a sub-agent cannot use the `clarify` toolset"
        );
        assert_eq!(err(json!({"goal": 3})), "goal must be a string, got 3");
        assert_eq!(
            err(json!({"tasks": "not json"})).split(" (").next(),
            Some("tasks must be an array of {goal, context} objects; the string given is not JSON")
        );
    }
}
