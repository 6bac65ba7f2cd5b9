//! File search: a glob over file names (or over relative paths when the pattern has a `/`),
//! case-insensitive; a pattern without glob characters matches names containing it. Results
//! are sorted newest first (what was just edited is usually what is wanted), then paged.

use std::time::SystemTime;

use globset::GlobBuilder;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Query, walk};
use crate::ToolError;
use crate::protect::ProtectedPaths;

pub(crate) fn search(
    q: &Query,
    protected: &ProtectedPaths,
    cancel: &CancellationToken,
) -> Result<Value, ToolError> {
    let pattern = q.pattern.trim();
    let on_path = pattern.contains('/');
    let glob = if pattern.contains(['*', '?', '[', '{']) {
        pattern.to_string()
    } else {
        format!("*{pattern}*")
    };
    let matcher = GlobBuilder::new(glob.trim_start_matches("./"))
        .case_insensitive(true)
        .literal_separator(on_path)
        .build()
        .map_err(|e| ToolError::new(format!("invalid glob `{pattern}`: {e}")))?
        .compile_matcher();
    let mut found: Vec<(SystemTime, String)> = Vec::new();
    for entry in walk::files(&q.root, q.file_glob.as_deref(), protected)? {
        if cancel.is_cancelled() {
            return Err(ToolError::new("search interrupted by the user"));
        }
        let hit = if on_path {
            let rel = entry.path().strip_prefix(&q.root).unwrap_or(entry.path());
            matcher.is_match(rel) || matcher.is_match(entry.path())
        } else {
            matcher.is_match(entry.file_name())
        };
        if hit {
            let modified = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((modified, q.display(entry.path())));
        }
    }
    // Newest first; equal times by name, so paging is stable.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let files: Vec<String> = found
        .into_iter()
        .skip(q.offset)
        .take(q.limit)
        .map(|(_, p)| p)
        .collect();
    let mut result = json!({ "files": files, "total_count": total });
    if q.offset + q.limit < total {
        result["truncated"] = json!(true);
        result["next_offset"] = json!(q.offset + q.limit);
    }
    Ok(result)
}
