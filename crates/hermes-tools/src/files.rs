//! File tools: `read_file` (numbered lines, paging, caps, binary refusal) and `write_file`
//! (parents created, atomic replace), both refusing protected credential paths. Blocking
//! filesystem work runs on tokio's blocking pool.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Access, Tool, ToolContext, ToolError, ToolResult, paths};

/// Lines returned when the model gives no limit, and the most it may ask for.
const DEFAULT_LIMIT: usize = 500;
const MAX_LIMIT: usize = 2000;
/// Characters of numbered content returned at most per call.
const MAX_CONTENT_CHARS: usize = 100_000;
/// Characters kept of one very long line.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes sniffed for NUL to decide a file is binary.
const SNIFF_BYTES: usize = 8192;

fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::new(format!("invalid arguments: {e}")))
}

fn path_arg(args: &Value, ctx: &ToolContext) -> Option<PathBuf> {
    args.get("path")
        .and_then(Value::as_str)
        .map(|p| paths::resolve(&ctx.cwd, p))
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::new(format!("file operation failed: {e}")))?
}

// ---- read_file ----

pub struct ReadFileTool;

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

#[async_trait::async_trait]
impl Tool for ReadFileTool {
    fn name(&self) -> &str {
        "read_file"
    }
    fn toolset(&self) -> &str {
        "file"
    }
    fn description(&self) -> &str {
        "Read a text file. Returns numbered lines as LINE|CONTENT, 500 lines from `offset` by default; page with offset/limit. Prefer this over cat/head/tail in the terminal."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path (absolute, relative to the working directory, or ~/...)"},
                "offset": {"type": "integer", "description": "First line to read, 1-based (default 1)", "minimum": 1},
                "limit": {"type": "integer", "description": "Lines to read (default 500, max 2000)", "minimum": 1}
            },
            "required": ["path"]
        })
    }
    fn access(&self, args: &Value, ctx: &ToolContext) -> Access {
        Access::Read(path_arg(args, ctx).into_iter().collect())
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: ReadArgs = parse_args(args)?;
        let path = paths::resolve(&ctx.cwd, &args.path);
        ctx.protected.check_read(&path)?;
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        blocking(move || read_lines(&path, offset, limit)).await
    }
}

fn read_lines(path: &Path, offset: usize, limit: usize) -> ToolResult {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::new(format!("file not found: {shown}")),
        _ => ToolError::new(format!("cannot read {shown}: {e}")),
    })?;
    if meta.is_dir() {
        return Err(ToolError::new(format!(
            "{shown} is a directory; list it with the terminal (ls) or search_files"
        )));
    }
    let mut file = std::fs::File::open(path)
        .map_err(|e| ToolError::new(format!("cannot read {shown}: {e}")))?;
    let mut head = vec![0u8; SNIFF_BYTES];
    let n = read_up_to(&mut file, &mut head)
        .map_err(|e| ToolError::new(format!("cannot read {shown}: {e}")))?;
    head.truncate(n);
    if head.contains(&0) {
        return Err(ToolError::new(format!(
            "{shown} is a binary file ({} bytes); inspect it with terminal tools such as `file` or `xxd`",
            meta.len()
        )));
    }
    let reader = BufReader::new(std::io::Cursor::new(head).chain(file));
    let mut content = String::new();
    let mut total_lines = 0usize;
    let mut next_offset = None;
    for (i, line) in reader.split(b'\n').enumerate() {
        let line = line.map_err(|e| ToolError::new(format!("cannot read {shown}: {e}")))?;
        total_lines = i + 1;
        let number = i + 1;
        if number < offset || number >= offset + limit || next_offset.is_some() {
            if number >= offset + limit && next_offset.is_none() {
                next_offset = Some(number);
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        let rendered = cap_line(text);
        if content.len() + rendered.len() > MAX_CONTENT_CHARS && !content.is_empty() {
            next_offset = Some(number);
            continue;
        }
        content.push_str(&number.to_string());
        content.push('|');
        content.push_str(&rendered);
        content.push('\n');
    }
    if content.ends_with('\n') {
        content.pop();
    }
    let mut result = json!({
        "content": content,
        "total_lines": total_lines,
        "file_size": meta.len(),
    });
    if let Some(next) = next_offset {
        result["truncated"] = json!(true);
        result["next_offset"] = json!(next);
    } else if offset > total_lines.max(1) {
        result["note"] = json!(format!(
            "offset {offset} is past the end of the file ({total_lines} lines)"
        ));
    }
    Ok(result)
}

fn read_up_to(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn cap_line(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_LINE_CHARS || text.chars().count() <= MAX_LINE_CHARS {
        return text.into();
    }
    let kept: String = text.chars().take(MAX_LINE_CHARS).collect();
    format!("{kept}… [line truncated]").into()
}

// ---- write_file ----

pub struct WriteFileTool;

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

#[async_trait::async_trait]
impl Tool for WriteFileTool {
    fn name(&self) -> &str {
        "write_file"
    }
    fn toolset(&self) -> &str {
        "file"
    }
    fn description(&self) -> &str {
        "Write a whole file, replacing it if it exists; parent directories are created. For small edits to existing files use patch."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path"},
                "content": {"type": "string", "description": "The complete new content"}
            },
            "required": ["path", "content"]
        })
    }
    fn access(&self, args: &Value, ctx: &ToolContext) -> Access {
        Access::Write(path_arg(args, ctx).into_iter().collect())
    }
    fn preview(&self, args: &Value) -> String {
        crate::output::shorten_line(args.get("path").and_then(Value::as_str).unwrap_or(""), 60)
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: WriteArgs = parse_args(args)?;
        let path = paths::resolve(&ctx.cwd, &args.path);
        ctx.protected.check_write(&path)?;
        blocking(move || {
            if path.is_dir() {
                return Err(ToolError::new(format!("{} is a directory", path.display())));
            }
            let created = !path.exists();
            hermes_config::atomic_write(&path, args.content.as_bytes())
                .map_err(|e| ToolError::new(format!("cannot write {}: {e}", path.display())))?;
            Ok(json!({
                "path": path.display().to_string(),
                "bytes_written": args.content.len(),
                "created": created,
            }))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.to_path_buf())
    }

    #[tokio::test]
    async fn reads_numbered_lines_with_paging() {
        let tmp = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|i| format!("line {i}\r\n")).collect();
        std::fs::write(tmp.path().join("f.txt"), text).unwrap();
        let out = ReadFileTool
            .call(
                json!({"path": "f.txt", "offset": 3, "limit": 2}),
                &ctx(tmp.path()),
            )
            .await
            .unwrap();
        assert_eq!(out["content"], "3|line 3\n4|line 4");
        assert_eq!(out["total_lines"], 10);
        assert_eq!(out["next_offset"], 5);
        let out = ReadFileTool
            .call(json!({"path": "f.txt", "offset": 50}), &ctx(tmp.path()))
            .await
            .unwrap();
        assert!(out["note"].as_str().unwrap().contains("past the end"));
    }

    #[tokio::test]
    async fn refuses_binary_missing_and_directories() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("b.bin"), [0u8, 1, 2, 3]).unwrap();
        let c = ctx(tmp.path());
        let e = ReadFileTool
            .call(json!({"path": "b.bin"}), &c)
            .await
            .unwrap_err();
        assert!(e.0.contains("binary file"), "{e}");
        let e = ReadFileTool
            .call(json!({"path": "nope"}), &c)
            .await
            .unwrap_err();
        assert!(e.0.contains("not found"), "{e}");
        let e = ReadFileTool
            .call(json!({"path": "."}), &c)
            .await
            .unwrap_err();
        assert!(e.0.contains("directory"), "{e}");
        let e = ReadFileTool
            .call(json!({"offset": 1}), &c)
            .await
            .unwrap_err();
        assert!(e.0.contains("invalid arguments"), "{e}");
    }

    #[tokio::test]
    async fn long_files_are_capped_and_invalid_utf8_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let long_line = "y".repeat(5000);
        let text: String = (0..200).map(|_| format!("{long_line}\n")).collect();
        std::fs::write(tmp.path().join("big.txt"), text).unwrap();
        std::fs::write(tmp.path().join("bad.txt"), b"ok \xff\xfe end\n").unwrap();
        let c = ctx(tmp.path());
        let out = ReadFileTool
            .call(json!({"path": "big.txt", "limit": 2000}), &c)
            .await
            .unwrap();
        let content = out["content"].as_str().unwrap();
        assert!(content.len() <= MAX_CONTENT_CHARS + 100);
        assert!(content.contains("[line truncated]"));
        assert_eq!(out["truncated"], true);
        let out = ReadFileTool
            .call(json!({"path": "bad.txt"}), &c)
            .await
            .unwrap();
        assert_eq!(out["content"], "1|ok \u{fffd}\u{fffd} end");
    }

    #[tokio::test]
    async fn writes_atomically_creating_parents() {
        let tmp = tempfile::tempdir().unwrap();
        let c = ctx(tmp.path());
        let out = WriteFileTool
            .call(json!({"path": "a/b/c.txt", "content": "hi"}), &c)
            .await
            .unwrap();
        assert_eq!(out["created"], true);
        let out = WriteFileTool
            .call(json!({"path": "a/b/c.txt", "content": "hey"}), &c)
            .await
            .unwrap();
        assert_eq!(out["created"], false);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("a/b/c.txt")).unwrap(),
            "hey"
        );
        let e = WriteFileTool
            .call(json!({"path": "a", "content": "x"}), &c)
            .await
            .unwrap_err();
        assert!(e.0.contains("directory"));
    }
}
