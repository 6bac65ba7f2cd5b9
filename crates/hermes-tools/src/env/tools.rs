//! `read_file`, `write_file`, `patch` (replace and V4A modes) and `search_files` in an environment
//! that is not this machine, through its shell ([`super::shell_fs`]). Arguments, limits and
//! result shapes are the local tools'; paths are the environment's (relative ones against its
//! working directory). The host's protected-path rules do not apply: the container's files
//! are not the user's credentials.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::resolve_posix_in;
use super::shell_fs::{self, GrepMode, Read, ShellFs};
use crate::patch::apply::{self, Prefetched};
use crate::patch::{
    PatchArgs, not_applied, patch_result, replace_args, replace_result, replace_text, v4a,
};
use crate::{ToolContext, ToolError, ToolResult};

fn fs(ctx: &ToolContext) -> ShellFs {
    ShellFs::new(ctx.environment.clone())
}

/// `path` in the environment: connected first, so that the working directory and `~` are the
/// far side's (and a refused connection is the tool's error).
async fn resolve(ctx: &ToolContext, path: &str) -> Result<String, ToolError> {
    let env = &ctx.environment;
    env.connect()
        .await
        .map_err(|e| ToolError::new(e.to_string()))?;
    Ok(resolve_posix_in(&env.cwd(), &env.home(), path))
}

/// Sniffed for NUL bytes, as the local reader does.
const SNIFF_BYTES: usize = 8 * 1024;

pub async fn read_file(ctx: &ToolContext, path: &str, offset: usize, limit: usize) -> ToolResult {
    let path = resolve(ctx, path).await?;
    match fs(ctx).read(&path).await? {
        Read::Missing => Err(ToolError::new(format!("file not found: {path}"))),
        Read::Special => Err(ToolError::new(format!(
            "{path} is not a regular file (a FIFO, socket or device); not read"
        ))),
        Read::Directory(entries) => {
            let total = entries.len();
            Ok(crate::files::directory_result(&path, entries, total))
        }
        Read::File { size, bytes } => {
            if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
                return Err(ToolError::new(format!(
                    "{path} is a binary file ({size} bytes); inspect it with terminal tools such as `file` or `xxd`"
                )));
            }
            let mut result = crate::files::number_lines(
                std::io::Cursor::new(bytes),
                &path,
                size,
                offset,
                limit,
            )?;
            if size > shell_fs::MAX_READ_BYTES {
                result["note"] = json!(format!(
                    "only the first {} bytes of this {size}-byte file were read",
                    shell_fs::MAX_READ_BYTES
                ));
            }
            Ok(result)
        }
    }
}

pub async fn write_file(ctx: &ToolContext, path: &str, content: &str) -> ToolResult {
    let path = resolve(ctx, path).await?;
    let fs = fs(ctx);
    let created = match fs.read(&path).await {
        Ok(Read::Directory(_)) => return Err(ToolError::new(format!("{path} is a directory"))),
        Ok(Read::Missing) => true,
        _ => false,
    };
    fs.write(&path, content.as_bytes()).await?;
    Ok(json!({
        "path": path,
        "bytes_written": content.len(),
        "created": created,
    }))
}

pub(crate) async fn patch(args: &PatchArgs, ctx: &ToolContext) -> ToolResult {
    if args.is_patch_mode() {
        return v4a_patch(args, ctx).await;
    }
    let (shown, old, new) = replace_args(args)?;
    let path = resolve(ctx, shown).await?;
    let fs = fs(ctx);
    let before = match fs.read(&path).await? {
        Read::File { size, bytes } => {
            if size > shell_fs::MAX_READ_BYTES {
                return Err(ToolError::new(format!(
                    "{path} is too large to patch ({size} bytes)"
                )));
            }
            String::from_utf8(bytes)
                .map_err(|_| ToolError::new(format!("{path} is not UTF-8 text")))?
        }
        Read::Missing => {
            return Err(ToolError::new(format!(
                "file not found: {path} (create files with write_file)"
            )));
        }
        _ => return Err(ToolError::new(format!("{path} is not a regular file"))),
    };
    let (after, count, strategy) = replace_text(args, shown, old, new, &before)?;
    fs.write(&path, after.as_bytes()).await?;
    Ok(replace_result(shown, &before, &after, count, strategy))
}

/// A V4A patch in the environment, all-or-nothing as on this machine: every file it names is
/// read first, the whole patch is planned in memory, then the files are written (a failed
/// write puts back the ones already written).
async fn v4a_patch(args: &PatchArgs, ctx: &ToolContext) -> ToolResult {
    let text = args
        .patch
        .as_deref()
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| ToolError::new("patch mode needs `patch` (V4A text)"))?;
    let ops = v4a::parse(text).map_err(|e| ToolError::new(format!("invalid patch: {e}")))?;
    let env = &ctx.environment;
    env.connect()
        .await
        .map_err(|e| ToolError::new(e.to_string()))?;
    let mut files = Prefetched {
        cwd: env.cwd(),
        home: env.home(),
        files: BTreeMap::new(),
    };
    let fs = fs(ctx);
    let named = ops.iter().flat_map(|op| match op {
        v4a::Op::Update {
            path,
            move_to: Some(dest),
            ..
        } => vec![path.as_str(), dest.as_str()],
        other => vec![other.path()],
    });
    let mut errors = Vec::new();
    for shown in named {
        let path = match files.path_of(shown) {
            Ok(p) => p,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        if files.files.contains_key(&path) {
            continue;
        }
        match read_for_patch(&fs, &path).await {
            Ok(content) => {
                files.files.insert(path, content);
            }
            Err(e) => errors.push(format!("{shown}: {e}")),
        }
    }
    if !errors.is_empty() {
        return Err(not_applied(&errors));
    }
    let changes = apply::plan_in(&ops, &files).map_err(|errors| not_applied(&errors))?;
    for (i, change) in changes.iter().enumerate() {
        if let Err(e) = write_state(&fs, change, change.after.as_deref()).await {
            let mut unrestored = Vec::new();
            for done in changes[..i].iter().rev() {
                if write_state(&fs, done, done.before.as_deref())
                    .await
                    .is_err()
                {
                    unrestored.push(done.shown.clone());
                }
            }
            let rollback = if unrestored.is_empty() {
                "no file was changed".to_string()
            } else {
                format!("could not restore {}; check them", unrestored.join(", "))
            };
            return Err(ToolError::new(format!("{e} ({rollback})")));
        }
    }
    Ok(patch_result(&changes))
}

/// A file's text for a patch; `None` when absent.
async fn read_for_patch(fs: &ShellFs, path: &str) -> Result<Option<String>, String> {
    match fs.read(path).await.map_err(|e| e.to_string())? {
        Read::Missing => Ok(None),
        Read::File { size, bytes } => {
            if size > shell_fs::MAX_READ_BYTES {
                return Err(format!(
                    "too large to patch ({size} bytes); use the terminal"
                ));
            }
            if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
                return Err("a binary file".into());
            }
            String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| "not valid UTF-8 text".into())
        }
        Read::Directory(_) => Err("a directory".into()),
        Read::Special => Err("not a regular file".into()),
    }
}

/// Puts a planned file in the environment: written, or removed when `None`.
async fn write_state(
    fs: &ShellFs,
    change: &apply::Change,
    content: Option<&str>,
) -> Result<(), ToolError> {
    let path = change.path.to_string_lossy();
    match content {
        Some(text) => fs.write(&path, text.as_bytes()).await,
        None => fs.remove(&path).await,
    }
}

/// One search in the environment (the local tool's arguments, validated by it).
pub struct RemoteSearch<'a> {
    pub pattern: &'a str,
    pub files_target: bool,
    pub path: &'a str,
    pub file_glob: Option<&'a str>,
    pub limit: usize,
    pub offset: usize,
    pub mode: GrepMode,
    pub context: usize,
}

pub async fn search(ctx: &ToolContext, q: RemoteSearch<'_>) -> ToolResult {
    let root = resolve(ctx, q.path).await?;
    let fs = fs(ctx);
    if matches!(fs.read_kind(&root).await?, Read::Missing) {
        return Err(ToolError::new(format!("path not found: {root}")));
    }
    let wanted = q.offset + q.limit;
    let cwd = ctx.environment.cwd();
    let show = |p: &str| -> String {
        p.strip_prefix(&format!("{}/", cwd.trim_end_matches('/')))
            .unwrap_or(p)
            .to_string()
    };
    if q.files_target {
        let lines = fs
            .lines(&shell_fs::find_script(&root, q.pattern, wanted + 1))
            .await?;
        let total = lines.len();
        let files: Vec<String> = lines
            .iter()
            .skip(q.offset)
            .take(q.limit)
            .map(|l| show(l))
            .collect();
        let mut result = json!({ "files": files, "total_count": total.min(wanted) });
        if total > wanted {
            result["truncated"] = json!(true);
            result["next_offset"] = json!(wanted);
        }
        return Ok(result);
    }
    let lines = fs
        .lines(&shell_fs::grep_script(
            &root,
            q.pattern,
            q.file_glob,
            q.mode,
            q.context,
            wanted + 1,
        ))
        .await?;
    let more = lines.len() > wanted;
    let page: Vec<&String> = lines.iter().skip(q.offset).take(q.limit).collect();
    let mut result = match q.mode {
        GrepMode::Lines => {
            let text: Vec<String> = page.iter().map(|l| show(l)).collect();
            json!({ "matches": text.join("\n"), "match_count": page.len() })
        }
        GrepMode::Files => {
            json!({ "files": page.iter().map(|l| show(l)).collect::<Vec<_>>() })
        }
        GrepMode::Count => {
            let mut counts = serde_json::Map::new();
            for line in &page {
                if let Some((file, n)) = line.rsplit_once(':')
                    && let Ok(n) = n.parse::<u64>()
                    && n > 0
                {
                    counts.insert(show(file), json!(n));
                }
            }
            json!({ "counts": Value::Object(counts) })
        }
    };
    if more {
        result["truncated"] = json!(true);
        result["next_offset"] = json!(wanted);
    } else if lines.is_empty() {
        result["note"] = json!("no matches");
    }
    Ok(result)
}
