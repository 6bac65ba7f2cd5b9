//! The `patch` tool: targeted edits. Replace mode finds `old_string` (exactly, or with the
//! fuzzy strategies of [`fuzzy`]) and replaces it, once or everywhere; patch mode applies a
//! V4A patch ([`v4a`]) to several files all-or-nothing ([`apply`]). Every successful edit
//! returns the unified diff of what changed; every failure says where the text is closest.
//! Guarded files (the Hermes config and `.env`, shell start-up files, `~/.ssh`, schedulers)
//! are edited only after the session's approval gate says yes, like `write_file`.

pub mod apply;
mod error;
pub mod fuzzy;
mod hints;
pub mod v4a;

pub use error::PatchError;

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};
use similar::TextDiff;

use crate::{Access, Tool, ToolContext, ToolError, ToolResult, paths};

/// Similarity of two texts in 0..=1 (normalised edit distance).
pub(crate) fn similarity(a: &str, b: &str) -> f64 {
    strsim::normalized_levenshtein(a, b)
}

/// A unified diff with `a/` and `b/` headers (`/dev/null` for a created or deleted file).
pub fn unified_diff(shown: &str, before: Option<&str>, after: Option<&str>) -> String {
    let old_header = if before.is_some() {
        format!("a/{shown}")
    } else {
        "/dev/null".into()
    };
    let new_header = if after.is_some() {
        format!("b/{shown}")
    } else {
        "/dev/null".into()
    };
    TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(&old_header, &new_header)
        .to_string()
}

#[derive(Deserialize)]
pub(crate) struct PatchArgs {
    #[serde(default)]
    pub(crate) mode: Option<String>,
    #[serde(default)]
    pub(crate) path: Option<String>,
    #[serde(default)]
    pub(crate) old_string: Option<String>,
    #[serde(default)]
    pub(crate) new_string: Option<String>,
    #[serde(default)]
    pub(crate) replace_all: bool,
    #[serde(default)]
    pub(crate) patch: Option<String>,
}

impl PatchArgs {
    pub(crate) fn is_patch_mode(&self) -> bool {
        match self.mode.as_deref().map(str::trim) {
            Some("patch") => true,
            Some("replace") => false,
            _ => self.patch.is_some() && self.old_string.is_none(),
        }
    }
}

pub struct PatchTool;

#[async_trait::async_trait]
impl Tool for PatchTool {
    fn name(&self) -> &str {
        "patch"
    }
    fn toolset(&self) -> &str {
        "file"
    }
    fn description(&self) -> &str {
        "Edit files. mode=replace (default): replace old_string in path by new_string; old_string must match once (include nearby lines) unless replace_all; whitespace and indentation drift are tolerated. mode=patch: apply a V4A patch to several files at once, all or nothing. Returns the unified diff."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["replace", "patch"]},
                "path": {"type": "string", "description": "replace: the file to edit"},
                "old_string": {"type": "string", "description": "replace: the text to find"},
                "new_string": {"type": "string", "description": "replace: the replacement ('' deletes)"},
                "replace_all": {"type": "boolean", "description": "replace: every occurrence (default false)"},
                "patch": {"type": "string", "description": "patch: *** Begin Patch / *** Update File: PATH (or Add File, Delete File; *** Move to: NEW) / @@ context line / ' ' context, '-' removed, '+' added lines / *** End Patch"}
            }
        })
    }
    fn access(&self, args: &Value, ctx: &ToolContext) -> Access {
        let mut touched: Vec<PathBuf> = Vec::new();
        if let Some(p) = args.get("path").and_then(Value::as_str) {
            touched.push(paths::resolve(&ctx.cwd, p));
        }
        if let Some(patch) = args.get("patch").and_then(Value::as_str) {
            touched.extend(
                v4a::touched_paths(patch)
                    .iter()
                    .map(|p| paths::resolve(&ctx.cwd, p)),
            );
        }
        if touched.is_empty() {
            Access::Exclusive
        } else {
            Access::Write(touched)
        }
    }
    fn preview(&self, args: &Value) -> String {
        let target = match args.get("path").and_then(Value::as_str) {
            Some(p) => p.to_string(),
            None => args
                .get("patch")
                .and_then(Value::as_str)
                .map(|p| v4a::touched_paths(p).join(", "))
                .unwrap_or_default(),
        };
        crate::output::shorten_line(&target, 60)
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: PatchArgs = serde_json::from_value(args)
            .map_err(|e| ToolError::new(format!("invalid arguments: {e}")))?;
        if !ctx.environment.is_local() {
            return crate::env::tools::patch(&args, ctx).await;
        }
        let (approved, notes) = approve_guarded(&args, ctx).await?;
        let ctx = ctx.clone();
        let mut result = tokio::task::spawn_blocking(move || {
            if args.is_patch_mode() {
                patch_mode(&args, &ctx, &approved)
            } else {
                replace_mode(&args, &ctx, &approved)
            }
        })
        .await
        .map_err(|e| ToolError::new(format!("patch failed: {e}")))??;
        if !notes.is_empty() {
            result["approval_note"] = json!(notes.join("; "));
        }
        Ok(result)
    }
}

/// Asks the session's approval gate for every guarded file the patch touches (the Hermes
/// config and `.env`, shell start-up files, `~/.ssh`, schedulers); returns the approved paths
/// and any notes for the model.
async fn approve_guarded(
    args: &PatchArgs,
    ctx: &ToolContext,
) -> Result<(Vec<PathBuf>, Vec<String>), ToolError> {
    let mut shown: Vec<String> = Vec::new();
    if args.is_patch_mode() {
        shown.extend(
            args.patch
                .as_deref()
                .map(v4a::touched_paths)
                .unwrap_or_default(),
        );
    } else if let Some(p) = args.path.as_deref() {
        shown.push(p.to_string());
    }
    let mut approved = Vec::new();
    let mut notes = Vec::new();
    for p in shown {
        let path = paths::resolve(&ctx.cwd, &p);
        ctx.protected.check_write(&path)?;
        if let Some(g) = ctx.protected.guarded_write(&path) {
            if let Some(note) = ctx
                .approvals
                .check_write(g, "patch", &path, ctx.interaction.as_ref(), &ctx.cancel)
                .await?
            {
                notes.push(note);
            }
            approved.push(path);
        }
    }
    Ok((approved, notes))
}

/// Replace mode's arguments, checked: the shown path, `old_string`, `new_string`.
pub(crate) fn replace_args(args: &PatchArgs) -> Result<(&str, &str, &str), ToolError> {
    let shown = args
        .path
        .as_deref()
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| {
            ToolError::new("replace mode needs `path` (or send mode='patch' with a V4A `patch`)")
        })?;
    let old = args
        .old_string
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ToolError::new("replace mode needs a non-empty `old_string`"))?;
    let new = args
        .new_string
        .as_deref()
        .ok_or_else(|| ToolError::new("replace mode needs `new_string` ('' to delete)"))?;
    if old == new {
        return Err(ToolError::new(
            "old_string and new_string are identical: nothing to change",
        ));
    }
    Ok((shown, old, new))
}

/// The text after replace mode's edit of `before`: the new content, the number of
/// replacements and the matching strategy.
pub(crate) fn replace_text(
    args: &PatchArgs,
    shown: &str,
    old: &str,
    new: &str,
    before: &str,
) -> Result<(String, usize, &'static str), ToolError> {
    // A CRLF file edited with LF strings: edit as LF, write back as CRLF.
    let crlf = before.contains("\r\n") && !old.contains('\r');
    let work = if crlf {
        before.replace("\r\n", "\n")
    } else {
        before.to_string()
    };
    let Some(found) = fuzzy::locate(&work, old) else {
        return Err(ToolError::new(format!(
            "could not find old_string in {shown}; read the file again and copy the text exactly.{}",
            hints::closest(&work, old)
        )));
    };
    if found.ranges.len() > 1 && !args.replace_all {
        return Err(ToolError::new(format!(
            "{}\nOr set replace_all=true to replace every one.",
            hints::ambiguous(&work, &found)
        )));
    }
    let edited = fuzzy::replace(&work, &found, old, new)?;
    let after = if crlf {
        edited.replace('\n', "\r\n")
    } else {
        edited
    };
    Ok((after, found.ranges.len(), found.strategy))
}

/// Replace mode's result.
pub(crate) fn replace_result(
    shown: &str,
    before: &str,
    after: &str,
    count: usize,
    strategy: &str,
) -> Value {
    let mut result = json!({
        "path": shown,
        "replacements": count,
        "diff": unified_diff(shown, Some(before), Some(after)),
    });
    if strategy != "exact" {
        result["match"] = json!(strategy);
    }
    result
}

fn replace_mode(args: &PatchArgs, ctx: &ToolContext, approved: &[PathBuf]) -> ToolResult {
    let (shown, old, new) = replace_args(args)?;
    let path = paths::resolve(&ctx.cwd, shown);
    ctx.protected.check_write(&path)?;
    let guard = ctx.protected.guarded_write(&path);
    if let Some(g) = guard
        && !approved.contains(&path)
    {
        return Err(ToolError::new(format!(
            "{shown}: needs the user's approval ({})",
            g.description()
        )));
    }
    let Some(before) = apply::read_text(&path, &ctx.protected)? else {
        return Err(ToolError::new(format!(
            "file not found: {} (create files with write_file)",
            path.display()
        )));
    };
    let (after, count, strategy) = replace_text(args, shown, old, new, &before)?;
    crate::files::write_checked(&ctx.protected, &path, after.as_bytes(), guard)?;
    Ok(replace_result(shown, &before, &after, count, strategy))
}

fn patch_mode(args: &PatchArgs, ctx: &ToolContext, approved: &[PathBuf]) -> ToolResult {
    let text = args
        .patch
        .as_deref()
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| ToolError::new("patch mode needs `patch` (V4A text)"))?;
    let ops = v4a::parse(text).map_err(|e| ToolError::new(format!("invalid patch: {e}")))?;
    let changes = apply::plan_approved(&ops, &ctx.cwd, &ctx.protected, approved)
        .map_err(|errors| not_applied(&errors))?;
    apply::commit(&changes, &ctx.protected)?;
    Ok(patch_result(&changes))
}

/// The V4A patch tool's text for a list of problems.
pub(crate) fn not_applied(errors: &[impl std::fmt::Display]) -> ToolError {
    let list: Vec<String> = errors.iter().map(|e| format!("  • {e}")).collect();
    ToolError::new(format!(
        "patch not applied (no file was changed):\n{}",
        list.join("\n")
    ))
}

/// What an applied V4A patch did: the diff, and the files created, modified and deleted.
pub(crate) fn patch_result(changes: &[apply::Change]) -> Value {
    let mut created = Vec::new();
    let mut modified = Vec::new();
    let mut deleted = Vec::new();
    let mut diff = String::new();
    for c in changes {
        match (&c.before, &c.after) {
            (None, Some(_)) => created.push(c.shown.clone()),
            (Some(_), None) => deleted.push(c.shown.clone()),
            _ => modified.push(c.shown.clone()),
        }
        diff.push_str(&unified_diff(
            &c.shown,
            c.before.as_deref(),
            c.after.as_deref(),
        ));
    }
    let mut result = json!({ "diff": diff });
    for (key, list) in [
        ("files_modified", modified),
        ("files_created", created),
        ("files_deleted", deleted),
    ] {
        if !list.is_empty() {
            result[key] = json!(list);
        }
    }
    result
}

#[cfg(test)]
mod tests;
