//! The editor's file system, when it offers one (`fs.readTextFile` / `fs.writeTextFile` in
//! its capabilities): `read_file` and `write_file` go through the editor, so the model sees
//! unsaved buffer contents and its writes land in the editor's buffers (undo, diff view).
//! Everything else stays ours: the tools' names, schemas and descriptions, the protected
//! path checks, the approval of guarded writes (those, and directories, use the built-in
//! tools), and the result shape the model knows.

use std::path::PathBuf;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};
use hermes_tools::files::{ReadFileTool, WriteFileTool};
use hermes_tools::{Access, Tool, ToolContext, ToolError, ToolResult, paths};
use serde_json::{Value, json};

/// Lines returned when the model gives no limit, and the most it may ask for (as the
/// built-in `read_file`).
const DEFAULT_LIMIT: u32 = 500;
const MAX_LIMIT: u32 = 2000;

fn path_of(args: &Value, ctx: &ToolContext) -> Result<PathBuf, ToolError> {
    args.get("path")
        .and_then(Value::as_str)
        .map(|p| paths::resolve(&ctx.cwd, p))
        .ok_or_else(|| ToolError::new("invalid arguments: missing field `path`"))
}

fn number(args: &Value, key: &str) -> Option<u32> {
    args.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
}

/// `read_file` through the editor's `fs/read_text_file`.
pub struct EditorReadFile {
    pub cx: ConnectionTo<Client>,
}

#[async_trait::async_trait]
impl Tool for EditorReadFile {
    fn name(&self) -> &str {
        ReadFileTool.name()
    }
    fn toolset(&self) -> &str {
        ReadFileTool.toolset()
    }
    fn description(&self) -> &str {
        ReadFileTool.description()
    }
    fn parameters(&self) -> Value {
        ReadFileTool.parameters()
    }
    fn access(&self, args: &Value, ctx: &ToolContext) -> Access {
        ReadFileTool.access(args, ctx)
    }
    fn preview(&self, args: &Value) -> String {
        ReadFileTool.preview(args)
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let path = path_of(&args, ctx)?;
        ctx.protected.check_read(&path)?;
        if path.is_dir() {
            return ReadFileTool.call(args, ctx).await;
        }
        let offset = number(&args, "offset").unwrap_or(1).max(1);
        let limit = number(&args, "limit")
            .unwrap_or(DEFAULT_LIMIT)
            .clamp(1, MAX_LIMIT);
        let request = ReadTextFileRequest::new(ctx.session.id(), path.clone())
            .line(offset)
            .limit(limit);
        let text = match self.cx.send_request(request).block_task().await {
            Ok(r) => r.content,
            // The editor cannot read it (not found, not text): the built-in tool says why
            // in the words the model knows.
            Err(e) => {
                tracing::debug!("acp: fs/read_text_file {} failed: {e}", path.display());
                return ReadFileTool.call(args, ctx).await;
            }
        };
        let lines: Vec<&str> = text.lines().collect();
        let content = lines
            .iter()
            .zip(offset..)
            .map(|(l, n)| format!("{n}|{l}"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut result = json!({ "content": content, "source": "editor" });
        if u32::try_from(lines.len()).is_ok_and(|n| n >= limit) {
            result["truncated"] = json!(true);
            result["next_offset"] = json!(offset + limit);
        }
        Ok(result)
    }
}

/// `write_file` through the editor's `fs/write_text_file`.
pub struct EditorWriteFile {
    pub cx: ConnectionTo<Client>,
}

#[async_trait::async_trait]
impl Tool for EditorWriteFile {
    fn name(&self) -> &str {
        WriteFileTool.name()
    }
    fn toolset(&self) -> &str {
        WriteFileTool.toolset()
    }
    fn description(&self) -> &str {
        WriteFileTool.description()
    }
    fn parameters(&self) -> Value {
        WriteFileTool.parameters()
    }
    fn access(&self, args: &Value, ctx: &ToolContext) -> Access {
        WriteFileTool.access(args, ctx)
    }
    fn preview(&self, args: &Value) -> String {
        WriteFileTool.preview(args)
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let path = path_of(&args, ctx)?;
        ctx.protected.check_write(&path)?;
        // Guarded paths need our approval and checked write; a directory gets our error.
        if ctx.protected.guarded_write(&path).is_some() || path.is_dir() {
            return WriteFileTool.call(args, ctx).await;
        }
        let content = args
            .get("content")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("invalid arguments: missing field `content`"))?
            .to_string();
        let created = !path.exists();
        let bytes = content.len();
        let request = WriteTextFileRequest::new(ctx.session.id(), path.clone(), content);
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map_err(|e| {
                ToolError::new(format!(
                    "the editor could not write {}: {}",
                    path.display(),
                    e.message
                ))
            })?;
        Ok(json!({
            "path": path.display().to_string(),
            "bytes_written": bytes,
            "created": created,
        }))
    }
}
