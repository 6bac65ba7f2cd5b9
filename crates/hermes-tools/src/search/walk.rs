//! Walking a search root the way ripgrep does: `.gitignore`, `.ignore` and `.git/info/exclude`
//! honoured (also outside a git repository), hidden files and directories skipped (unless the
//! root itself is one), no symlinks followed, entries in name order so paging is stable, and
//! credential paths left out.

use std::path::Path;

use ignore::overrides::OverrideBuilder;
use ignore::{DirEntry, WalkBuilder};

use crate::ToolError;
use crate::protect::ProtectedPaths;

/// Files bigger than this are not searched (logs and dumps of this size are not source).
const MAX_FILE_BYTES: u64 = 50 * 1024 * 1024;

/// The files under `root` (or `root` itself when it is a file), in a stable order.
pub(crate) fn files(
    root: &Path,
    file_glob: Option<&str>,
    protected: &ProtectedPaths,
) -> Result<impl Iterator<Item = DirEntry>, ToolError> {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .max_filesize(Some(MAX_FILE_BYTES))
        .sort_by_file_name(|a, b| a.cmp(b));
    if let Some(glob) = file_glob {
        let mut overrides = OverrideBuilder::new(root);
        overrides
            .add(glob.trim())
            .map_err(|e| ToolError::new(format!("invalid file_glob `{glob}`: {e}")))?;
        let built = overrides
            .build()
            .map_err(|e| ToolError::new(format!("invalid file_glob `{glob}`: {e}")))?;
        builder.overrides(built);
    }
    let protected = protected.clone();
    // Entries are not followed through symlinks, so the resolved root plus the relative part
    // is each entry's real path.
    let real_root = crate::protect::real_path(root);
    let root = root.to_path_buf();
    let resolved = real_root == root;
    Ok(builder.build().filter_map(Result::ok).filter(move |e| {
        if !e.file_type().is_some_and(|t| t.is_file()) {
            return false;
        }
        if resolved {
            return !protected.is_read_protected_resolved(e.path());
        }
        let real = match e.path().strip_prefix(&root) {
            Ok(rel) => real_root.join(rel),
            Err(_) => e.path().to_path_buf(),
        };
        !protected.is_read_protected_resolved(&real)
    }))
}

/// " (did you mean: a, b?)" for a path that does not exist, from its parent's entries.
pub(crate) fn suggest(missing: &Path) -> String {
    let (Some(parent), Some(name)) = (missing.parent(), missing.file_name()) else {
        return String::new();
    };
    let name = name.to_string_lossy().to_lowercase();
    let Ok(entries) = std::fs::read_dir(parent) else {
        return String::new();
    };
    let mut scored: Vec<(f64, String)> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .map(|n| (strsim::normalized_levenshtein(&name, &n.to_lowercase()), n))
        .filter(|(s, _)| *s >= 0.5)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let names: Vec<String> = scored.into_iter().take(3).map(|(_, n)| n).collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(" (did you mean: {}?)", names.join(", "))
    }
}
