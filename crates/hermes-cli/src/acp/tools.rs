//! How a Hermes tool call looks in an editor: its ACP kind (read, edit, execute, search,
//! fetch, ...), a one-line title, the files it touches (locations) and, for the file-editing
//! tools, which files to snapshot so the finished call can carry an old/new diff.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{ToolCallLocation, ToolKind};
use serde_json::Value;

/// The ACP kind of a Hermes tool (the Python adapter's table; unknown tools are `other`).
pub fn kind(tool: &str) -> ToolKind {
    match tool {
        "read_file" | "skill_view" | "skills_list" | "browser_snapshot" | "browser_vision"
        | "browser_get_images" | "vision_analyze" | "session_search" => ToolKind::Read,
        "write_file" | "patch" | "skill_manage" => ToolKind::Edit,
        "search_files" => ToolKind::Search,
        "terminal" | "process" | "execute_code" | "browser_click" | "browser_type"
        | "browser_scroll" | "browser_press" | "browser_back" | "delegate_task"
        | "image_generate" | "text_to_speech" => ToolKind::Execute,
        "web_search" | "web_extract" | "browser_navigate" => ToolKind::Fetch,
        _ => ToolKind::Other,
    }
}

/// The title an editor shows for the call: the tool and its key argument.
pub fn title(tool: &str, args: &Value, preview: &str) -> String {
    let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default();
    let shown = match tool {
        "terminal" => arg("command").to_string(),
        "read_file" | "write_file" => arg("path").to_string(),
        "patch" => edited_paths(args)
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        "search_files" => arg("pattern").to_string(),
        "web_search" => arg("query").to_string(),
        _ => preview.to_string(),
    };
    let shown = shorten(shown.trim(), 80);
    if shown.is_empty() {
        tool.to_string()
    } else {
        format!("{tool}: {shown}")
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(3)).collect();
    out.push_str("...");
    out
}

/// The files the call reads or writes, absolute (relative paths start at `cwd`), with the
/// first line when the tool names one (`read_file`'s `offset`).
pub fn locations(tool: &str, args: &Value, cwd: &Path) -> Vec<ToolCallLocation> {
    let arg_path = || args.get("path").and_then(Value::as_str).map(PathBuf::from);
    let paths: Vec<PathBuf> = match tool {
        "read_file" | "write_file" | "search_files" => arg_path().into_iter().collect(),
        "patch" => edited_paths(args),
        _ => Vec::new(),
    };
    let line = args
        .get("offset")
        .and_then(Value::as_u64)
        .and_then(|l| u32::try_from(l).ok())
        .filter(|_| tool == "read_file");
    paths
        .into_iter()
        .map(|p| ToolCallLocation::new(cwd.join(p)).line(line))
        .collect()
}

/// The files a `write_file` or `patch` call changes (relative as the model wrote them);
/// empty for every other tool.
pub fn edited_paths(args: &Value) -> Vec<PathBuf> {
    if let Some(patch) = args.get("patch").and_then(Value::as_str)
        && args.get("mode").and_then(Value::as_str) == Some("patch")
    {
        return patch
            .lines()
            .filter_map(|l| {
                [
                    "*** Update File:",
                    "*** Add File:",
                    "*** Delete File:",
                    "*** Move to:",
                ]
                .iter()
                .find_map(|h| l.strip_prefix(h))
            })
            .map(|p| PathBuf::from(p.trim()))
            .collect();
    }
    args.get("path")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .into_iter()
        .collect()
}

/// Whether the tool edits files (its finished call carries diffs).
pub fn edits_files(tool: &str) -> bool {
    matches!(tool, "write_file" | "patch")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patch_mode_names_every_file_of_the_patch() {
        let args = json!({"mode": "patch", "patch": "*** Begin Patch\n*** Update File: a.rs\n@@\n-x\n+y\n*** Add File: b.rs\n+z\n*** End Patch"});
        assert_eq!(
            edited_paths(&args),
            [PathBuf::from("a.rs"), PathBuf::from("b.rs")]
        );
        assert_eq!(title("patch", &args, ""), "patch: a.rs, b.rs");
    }

    #[test]
    fn kinds_and_titles_follow_the_tool() {
        assert_eq!(kind("terminal"), ToolKind::Execute);
        assert_eq!(kind("write_file"), ToolKind::Edit);
        assert_eq!(kind("web_extract"), ToolKind::Fetch);
        assert_eq!(kind("mystery"), ToolKind::Other);
        assert_eq!(
            title("terminal", &json!({"command": "ls -la"}), "ls"),
            "terminal: ls -la"
        );
        assert_eq!(title("todo", &json!({}), ""), "todo");
        let loc = locations(
            "read_file",
            &json!({"path": "src/x.rs", "offset": 5}),
            Path::new("/w"),
        );
        assert_eq!(loc[0].path, PathBuf::from("/w/src/x.rs"));
        assert_eq!(loc[0].line, Some(5));
    }
}
