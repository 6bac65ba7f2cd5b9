//! The `search_files` tool, on ripgrep's crates: content search (a regex, [`content`]) and
//! file search (a glob on names, [`files`]), both honouring `.gitignore`/`.ignore` and skipping
//! hidden files, binaries and protected credential paths; `file_glob`, `limit`/`offset`,
//! `output_mode` content | files_only | count, and context lines. The same search four times in
//! a row is refused: the model already has the answer.

mod content;
mod files;
mod walk;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Access, Tool, ToolContext, ToolError, ToolResult, paths};

const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 1_000;
const MAX_CONTEXT: usize = 10;
/// The search repeated this many times in a row is refused.
const REPEAT_LIMIT: u32 = 4;

/// Counts identical searches in a row, per session.
#[derive(Debug, Default)]
pub struct RepeatGuard {
    last: Mutex<(String, u32)>,
}

impl RepeatGuard {
    /// Records a search; returns how many times in a row it has now been made.
    pub fn record(&self, key: &str) -> u32 {
        let Ok(mut last) = self.last.lock() else {
            return 1;
        };
        if last.0 == key {
            last.1 += 1;
        } else {
            *last = (key.to_string(), 1);
        }
        last.1
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputMode {
    Content,
    FilesOnly,
    Count,
}

/// One search, validated.
#[derive(Debug, Clone)]
pub(crate) struct Query {
    pub pattern: String,
    pub root: PathBuf,
    pub file_glob: Option<String>,
    pub limit: usize,
    pub offset: usize,
    pub mode: OutputMode,
    pub context: usize,
    /// Results are shown relative to this directory when inside it.
    pub display_base: PathBuf,
}

impl Query {
    pub(crate) fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.display_base)
            .ok()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(path)
            .display()
            .to_string()
    }
}

#[derive(Deserialize)]
struct SearchArgs {
    pattern: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    file_glob: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    output_mode: Option<String>,
    #[serde(default)]
    context: Option<usize>,
}

pub struct SearchFilesTool;

#[async_trait::async_trait]
impl Tool for SearchFilesTool {
    fn name(&self) -> &str {
        "search_files"
    }
    fn toolset(&self) -> &str {
        "file"
    }
    fn description(&self) -> &str {
        "Search file contents with a regex (target=content) or find files by name glob such as '*.py' (target=files, newest first). Honours .gitignore, skips hidden and binary files. Use instead of grep/find/ls in the terminal."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regex for content, glob for files"},
                "target": {"type": "string", "enum": ["content", "files"], "description": "Default content"},
                "path": {"type": "string", "description": "Directory or file to search (default .)"},
                "file_glob": {"type": "string", "description": "Only search files matching this glob, e.g. '*.rs'"},
                "limit": {"type": "integer", "description": "Results to return (default 50)", "minimum": 1},
                "offset": {"type": "integer", "description": "Results to skip, for paging", "minimum": 0},
                "output_mode": {"type": "string", "enum": ["content", "files_only", "count"], "description": "Content search: matching lines (default), file paths, or counts per file"},
                "context": {"type": "integer", "description": "Lines of context around each match", "minimum": 0}
            },
            "required": ["pattern"]
        })
    }
    fn access(&self, args: &Value, ctx: &ToolContext) -> Access {
        let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
        Access::Read(vec![paths::resolve(&ctx.cwd, path)])
    }
    fn preview(&self, args: &Value) -> String {
        crate::output::shorten_line(
            args.get("pattern").and_then(Value::as_str).unwrap_or(""),
            60,
        )
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: SearchArgs = serde_json::from_value(args)
            .map_err(|e| ToolError::new(format!("invalid arguments: {e}")))?;
        if args.pattern.is_empty() {
            return Err(ToolError::new("pattern is empty"));
        }
        let files_target = match args.target.as_deref().map(str::trim) {
            None | Some("" | "content" | "grep") => false,
            Some("files" | "find" | "file") => true,
            Some(other) => {
                return Err(ToolError::new(format!(
                    "unknown target `{other}` (content or files)"
                )));
            }
        };
        let mode = match args.output_mode.as_deref().map(str::trim) {
            None | Some("" | "content") => OutputMode::Content,
            Some("files_only" | "files") => OutputMode::FilesOnly,
            Some("count") => OutputMode::Count,
            Some(other) => {
                return Err(ToolError::new(format!(
                    "unknown output_mode `{other}` (content, files_only or count)"
                )));
            }
        };
        let key = serde_json::to_string(&json!([
            args.pattern,
            files_target,
            args.path,
            args.file_glob,
            args.limit,
            args.offset,
            args.output_mode,
            args.context
        ]))
        .unwrap_or_default();
        let repeats = ctx.search_guard.record(&key);
        if repeats >= REPEAT_LIMIT {
            return Err(ToolError::new(format!(
                "BLOCKED: you have run this exact search {repeats} times in a row and the results have not changed. Use what you already found, or change the pattern, path or offset."
            )));
        }
        let raw_path = args
            .path
            .as_deref()
            .filter(|p| !p.trim().is_empty())
            .unwrap_or(".");
        if !ctx.environment.is_local() {
            let mut result = crate::env::tools::search(
                ctx,
                crate::env::tools::RemoteSearch {
                    pattern: &args.pattern,
                    files_target,
                    path: raw_path,
                    file_glob: args.file_glob.as_deref().filter(|g| !g.trim().is_empty()),
                    limit: args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
                    offset: args.offset.unwrap_or(0),
                    mode: match mode {
                        OutputMode::Content => crate::env::shell_fs::GrepMode::Lines,
                        OutputMode::FilesOnly => crate::env::shell_fs::GrepMode::Files,
                        OutputMode::Count => crate::env::shell_fs::GrepMode::Count,
                    },
                    context: args.context.unwrap_or(0).min(MAX_CONTEXT),
                },
            )
            .await?;
            if repeats == REPEAT_LIMIT - 1 {
                result["warning"] = json!(
                    "this exact search has now run 3 times in a row; the results will not change"
                );
            }
            return Ok(result);
        }
        let root = paths::resolve(&ctx.cwd, raw_path);
        if !root.exists() {
            return Err(ToolError::new(format!(
                "path not found: {}{}",
                root.display(),
                walk::suggest(&root)
            )));
        }
        ctx.protected.check_read(&root)?;
        let query = Query {
            pattern: args.pattern,
            root,
            file_glob: args.file_glob.filter(|g| !g.trim().is_empty()),
            limit: args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
            offset: args.offset.unwrap_or(0),
            mode,
            context: args.context.unwrap_or(0).min(MAX_CONTEXT),
            display_base: ctx.cwd.clone(),
        };
        let protected = ctx.protected.clone();
        let cancel = ctx.cancel.clone();
        let mut result = tokio::task::spawn_blocking(move || {
            if files_target {
                files::search(&query, &protected, &cancel)
            } else {
                content::search(&query, &protected, &cancel)
            }
        })
        .await
        .map_err(|e| ToolError::new(format!("search failed: {e}")))??;
        if repeats == REPEAT_LIMIT - 1 {
            result["warning"] = json!(
                "this exact search has now run 3 times in a row; the results will not change"
            );
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests;
