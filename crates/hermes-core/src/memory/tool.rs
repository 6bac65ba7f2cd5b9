//! The `memory` tool: the model's way to change `MEMORY.md` and `USER.md`. One change
//! (`action`, `target`, `content`, `old_text`) or several at once (`operations`), applied
//! all-or-nothing by the [`MemoryStore`]. Calls declare a write on the memories directory, so
//! the executor never runs two of them at the same time.

use std::sync::Arc;

use hermes_tools::{Access, Tool, ToolContext, ToolError, ToolResult};
use serde_json::{Value, json};

use crate::memory::store::{MemoryStore, Op, Target, thousands};

pub struct MemoryTool {
    store: Arc<MemoryStore>,
}

impl MemoryTool {
    pub fn new(store: Arc<MemoryStore>) -> MemoryTool {
        MemoryTool { store }
    }
}

// What is worth saving is said once, in the system prompt's memory guidance (given whenever
// this tool is); the description only says how the tool works.
const DESCRIPTION: &str = "Change persistent memory, which future sessions load into their system prompt: target memory (your notes, the default) or user (the user's profile). replace/remove change the one entry containing old_text. A full store refuses the write and lists its entries; free room in the same call with operations.";

#[async_trait::async_trait]
impl Tool for MemoryTool {
    fn name(&self) -> &str {
        "memory"
    }
    fn toolset(&self) -> &str {
        "memory"
    }
    fn description(&self) -> &str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["add", "replace", "remove"]},
                "target": {"type": "string", "enum": ["memory", "user"]},
                "content": {"type": "string", "description": "The entry, for add and replace"},
                "old_text": {"type": "string", "description": "Unique substring of the entry to replace or remove"},
                "operations": {
                    "type": "array",
                    "description": "Several changes at once, each {action, content, old_text}; all or none apply",
                    "items": {"type": "object"}
                }
            }
        })
    }
    fn access(&self, _args: &Value, _ctx: &ToolContext) -> Access {
        Access::Write(vec![self.store.dir().to_path_buf()])
    }
    fn preview(&self, args: &Value) -> String {
        let target = str_arg(args, "target").unwrap_or("memory");
        match str_arg(args, "action") {
            Some(action) => {
                let what = str_arg(args, "content")
                    .or_else(|| str_arg(args, "old_text"))
                    .unwrap_or("");
                hermes_tools::output::shorten_line(&format!("{action} {target}: {what}"), 60)
            }
            None => {
                let n = args
                    .get("operations")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                format!("{n} changes to {target}")
            }
        }
    }
    async fn call(&self, args: Value, _ctx: &ToolContext) -> ToolResult {
        let (target, ops) = parse_call(&args)?;
        let store = self.store.clone();
        let ops_for_write = ops.clone();
        let applied = tokio::task::spawn_blocking(move || store.apply(target, &ops_for_write))
            .await
            .map_err(|e| ToolError::new(format!("memory write failed: {e}")))?
            .map_err(|e| ToolError::new(e.0))?;
        let percent = (applied.chars * 100)
            .checked_div(applied.limit)
            .unwrap_or(0)
            .min(100);
        Ok(json!({
            "ok": true,
            "message": applied.message,
            "target": target.name(),
            "entries": applied.entries,
            "usage": format!("{} of {} chars ({percent}%)", thousands(applied.chars), thousands(applied.limit)),
        }))
    }
}

/// `null` counts as absent: some providers fill optional fields with it.
fn str_arg<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The target and operations of a call, or an error the model can act on.
pub(crate) fn parse_call(args: &Value) -> Result<(Target, Vec<Op>), ToolError> {
    let target = match args.get("target") {
        None | Some(Value::Null) => Target::Memory,
        Some(Value::String(t)) => Target::parse(t).ok_or_else(|| {
            ToolError::new(format!("unknown target '{t}'; use 'memory' or 'user'"))
        })?,
        Some(other) => {
            return Err(ToolError::new(format!(
                "target must be 'memory' or 'user', got {other}"
            )));
        }
    };
    let ops = match args.get("operations") {
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                parse_op(item).map_err(|e| ToolError::new(format!("operation {}: {}", i + 1, e.0)))
            })
            .collect::<Result<Vec<Op>, ToolError>>()?,
        Some(Value::Array(_)) | None | Some(Value::Null) => vec![parse_op(args)?],
        Some(_) => {
            return Err(ToolError::new(
                "operations must be a list of {action, content, old_text} objects",
            ));
        }
    };
    Ok((target, ops))
}

fn parse_op(v: &Value) -> Result<Op, ToolError> {
    let content = str_arg(v, "content").unwrap_or_default().to_string();
    let old_text = str_arg(v, "old_text").unwrap_or_default().to_string();
    match str_arg(v, "action") {
        Some("add") => Ok(Op::Add { content }),
        Some("replace") => Ok(Op::Replace { old_text, content }),
        Some("remove") => Ok(Op::Remove { old_text }),
        Some(other) => Err(ToolError::new(format!(
            "unknown action '{other}'; use add, replace or remove"
        ))),
        None => Err(ToolError::new(
            "give action (add, replace or remove), or operations",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_single_and_batched_calls() {
        let (t, ops) =
            parse_call(&json!({"action": "add", "content": "x", "target": null})).unwrap();
        assert_eq!(t, Target::Memory);
        assert_eq!(
            ops,
            [Op::Add {
                content: "x".into()
            }]
        );
        let (t, ops) = parse_call(&json!({"target": "user", "operations": [
            {"action": "remove", "old_text": "a"},
            {"action": "replace", "old_text": "b", "content": "c"}
        ]}))
        .unwrap();
        assert_eq!(t, Target::User);
        assert_eq!(ops.len(), 2);
        assert!(parse_call(&json!({"target": "notes", "action": "add"})).is_err());
        assert!(parse_call(&json!({"content": "x"})).is_err());
        let e = parse_call(&json!({"operations": [{"action": "drop"}]})).unwrap_err();
        assert_eq!(
            e.0,
            "operation 1: unknown action 'drop'; use add, replace or remove"
        );
    }
}
