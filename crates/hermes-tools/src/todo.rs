//! The `todo` tool: the session's task list. Writing replaces the list, or with `merge` updates
//! items by id and appends new ones; every call returns the whole list and a count per status.
//! The list lives in the session ([`TodoStore`] in the tool context), not in the conversation.

use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Value, json};

use crate::{Tool, ToolContext, ToolError, ToolResult};

const STATUSES: &[&str] = &["pending", "in_progress", "completed", "cancelled"];
/// Bounds: a plan is a handful of short items; a runaway list must not grow without limit.
const MAX_ITEMS: usize = 256;
const MAX_CONTENT_CHARS: usize = 4_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TodoItem {
    pub id: String,
    pub content: String,
    pub status: String,
}

/// The task list of one session; list order is priority.
#[derive(Debug, Default)]
pub struct TodoStore {
    items: Mutex<Vec<TodoItem>>,
}

impl TodoStore {
    pub fn new() -> TodoStore {
        TodoStore::default()
    }

    pub fn items(&self) -> Vec<TodoItem> {
        self.items.lock().map(|i| i.clone()).unwrap_or_default()
    }

    /// Replaces the list (or merges by id) with `todos` as the model sent them.
    pub fn write(&self, todos: &[Value], merge: bool) -> Result<Vec<TodoItem>, ToolError> {
        let mut items = self
            .items
            .lock()
            .map_err(|_| ToolError::new("the todo list is unavailable"))?;
        if !merge {
            items.clear();
        }
        for raw in todos {
            let Some(obj) = raw.as_object() else {
                return Err(ToolError::new(format!(
                    "each todo must be an object {{id, content, status}}, got {raw}"
                )));
            };
            let text = |k: &str| match obj.get(k) {
                Some(Value::String(s)) => s.trim().to_string(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            let id = text("id");
            let content = cap(&text("content"));
            let status = text("status").to_ascii_lowercase();
            if !status.is_empty() && !STATUSES.contains(&status.as_str()) {
                return Err(ToolError::new(format!(
                    "todo `{id}`: unknown status `{status}` (pending, in_progress, completed, cancelled)"
                )));
            }
            match items.iter_mut().find(|i| !id.is_empty() && i.id == id) {
                // Merge (or a repeated id): update only what was given.
                Some(existing) => {
                    if !content.is_empty() {
                        existing.content = content;
                    }
                    if !status.is_empty() {
                        existing.status = status;
                    }
                }
                None => {
                    if merge && id.is_empty() {
                        return Err(ToolError::new("merge needs an id for every item"));
                    }
                    let id = if id.is_empty() {
                        (items.len() + 1).to_string()
                    } else {
                        id
                    };
                    items.push(TodoItem {
                        id,
                        content: if content.is_empty() {
                            "(no description)".into()
                        } else {
                            content
                        },
                        status: if status.is_empty() {
                            "pending".into()
                        } else {
                            status
                        },
                    });
                }
            }
        }
        items.truncate(MAX_ITEMS);
        Ok(items.clone())
    }
}

fn cap(text: &str) -> String {
    if text.chars().count() <= MAX_CONTENT_CHARS {
        return text.to_string();
    }
    let kept: String = text.chars().take(MAX_CONTENT_CHARS).collect();
    format!("{kept}… [truncated]")
}

pub struct TodoTool;

#[async_trait::async_trait]
impl Tool for TodoTool {
    fn name(&self) -> &str {
        "todo"
    }
    fn toolset(&self) -> &str {
        "todo"
    }
    fn description(&self) -> &str {
        "Your task list for this session, for work of 3+ steps. No arguments: read it. todos replaces the list (merge=true: update items by id, add new ones). Order is priority; keep one item in_progress; mark items completed as soon as they are done. Returns the whole list."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "content": {"type": "string"},
                            "status": {"type": "string", "enum": STATUSES}
                        },
                        "required": ["id", "content", "status"]
                    }
                },
                "merge": {"type": "boolean", "description": "Update by id instead of replacing (default false)"}
            }
        })
    }
    fn preview(&self, args: &Value) -> String {
        match args.get("todos").and_then(Value::as_array) {
            Some(items) => format!("{} items", items.len()),
            None => "read".into(),
        }
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let merge = args.get("merge").and_then(Value::as_bool).unwrap_or(false);
        let items = match args.get("todos") {
            None | Some(Value::Null) => ctx.todos.items(),
            Some(Value::Array(todos)) => ctx.todos.write(todos, merge)?,
            // Models sometimes send the array as a JSON string.
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Array(todos)) => ctx.todos.write(&todos, merge)?,
                _ => {
                    return Err(ToolError::new(
                        "todos must be an array of {id, content, status}",
                    ));
                }
            },
            Some(_) => {
                return Err(ToolError::new(
                    "todos must be an array of {id, content, status}",
                ));
            }
        };
        let count = |s: &str| items.iter().filter(|i| i.status == s).count();
        Ok(json!({
            "todos": items,
            "summary": {
                "total": items.len(),
                "pending": count("pending"),
                "in_progress": count("in_progress"),
                "completed": count("completed"),
                "cancelled": count("cancelled"),
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn replace_merge_and_read() {
        let ctx = ToolContext::new(std::env::temp_dir());
        let out = TodoTool
            .call(
                json!({"todos": [
                    {"id": "a", "content": "plan", "status": "in_progress"},
                    {"id": "b", "content": "build", "status": "pending"}
                ]}),
                &ctx,
            )
            .await
            .unwrap();
        assert_eq!(out["summary"]["total"], 2);
        assert_eq!(out["summary"]["in_progress"], 1);
        let out = TodoTool
            .call(
                json!({"merge": true, "todos": [
                    {"id": "a", "status": "completed"},
                    {"id": "c", "content": "ship", "status": "pending"}
                ]}),
                &ctx,
            )
            .await
            .unwrap();
        assert_eq!(
            out["todos"][0],
            json!({"id": "a", "content": "plan", "status": "completed"})
        );
        assert_eq!(out["todos"][2]["id"], "c");
        assert_eq!(out["summary"]["completed"], 1);
        let read = TodoTool.call(json!({}), &ctx).await.unwrap();
        assert_eq!(read, out);
        let out = TodoTool
            .call(
                json!({"todos": "[{\"id\":\"x\",\"content\":\"only\",\"status\":\"pending\"}]"}),
                &ctx,
            )
            .await
            .unwrap();
        assert_eq!(out["summary"]["total"], 1);
    }

    #[tokio::test]
    async fn bad_input_is_a_clear_error() {
        let ctx = ToolContext::new(std::env::temp_dir());
        let e = TodoTool
            .call(
                json!({"todos": [{"id": "a", "content": "x", "status": "done"}]}),
                &ctx,
            )
            .await
            .unwrap_err();
        assert!(e.0.contains("unknown status `done`"), "{e}");
        let e = TodoTool.call(json!({"todos": 3}), &ctx).await.unwrap_err();
        assert!(e.0.contains("array"), "{e}");
        let e = TodoTool
            .call(json!({"todos": [1]}), &ctx)
            .await
            .unwrap_err();
        assert!(e.0.contains("object"), "{e}");
    }
}
