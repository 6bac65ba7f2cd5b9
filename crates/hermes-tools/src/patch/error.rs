//! [`PatchError`]: why an edit of the `patch` tool (or of a skill, which uses its matcher) was
//! not made: the V4A text does not parse, a file may not or cannot be edited, a hunk does not
//! fit, or a write failed. The text is the tool result the model reads, so each message says
//! what to do instead.

use std::path::PathBuf;

use crate::ToolError;

/// Why a patch could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    // --- The V4A text.
    #[error("line {line}: a second *** Begin Patch")]
    SecondBegin { line: usize },
    #[error("line {line}: *** Move to: must follow *** Update File:")]
    StrayMoveTo { line: usize },
    /// A body line before any file header; `text` is the line, shortened.
    #[error(
        "line {line}: `{text}` is outside any file section (start one with *** Update File: PATH)"
    )]
    OutsideSection { line: usize, text: String },
    #[error("line {line}: *** Delete File: {path} takes no content")]
    DeleteWithContent { line: usize, path: String },
    #[error("the patch has no *** Add File:, *** Update File: or *** Delete File: section")]
    NoSections,
    #[error("a file section has an empty path")]
    EmptyPath,
    #[error("*** Update File: {0} has no changes (no @@ hunk with - or + lines)")]
    EmptyUpdate(String),
    #[error("*** Update File: {0}: empty *** Move to: path")]
    EmptyMoveTo(String),

    // --- The files it names.
    /// A path with `..` (`0` as the patch wrote it).
    #[error(
        "{0}: `..` is not allowed in patch paths; use a path from the working directory or an absolute one"
    )]
    ParentDir(String),
    /// The protected-path rules refuse the file (their message).
    #[error(transparent)]
    Protected(#[from] ToolError),
    /// A guarded file (`what` describes its class) the user has not approved writing.
    #[error("{shown}: needs the user's approval ({what})")]
    NeedsApproval { shown: String, what: &'static str },
    /// A file of another environment that was not fetched before planning.
    #[error("{} was not read before planning", .0.display())]
    NotPrefetched(PathBuf),
    /// Reading the file failed.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Over the size the tool edits (`bytes` when the file's metadata said so).
    #[error("{} is too large to patch{}; use the terminal", path.display(), match bytes {
        Some(n) => format!(" ({n} bytes)"),
        None => String::new(),
    })]
    TooLarge { path: PathBuf, bytes: Option<u64> },
    #[error("{} is a binary file", .0.display())]
    Binary(PathBuf),
    #[error("{} is not valid UTF-8 text", .0.display())]
    NotUtf8(PathBuf),

    // --- Planning the operations.
    #[error("{0}: already exists; change it with *** Update File:")]
    AddExisting(String),
    #[error("{0}: cannot delete, the file does not exist")]
    DeleteMissing(String),
    #[error("{0}: cannot update, the file does not exist (use *** Add File:)")]
    UpdateMissing(String),
    #[error("{path}: cannot move to {dest}, which already exists")]
    MoveOntoExisting { path: String, dest: String },
    /// Hunk `number` (1-based, with its `@@` hint) of the update of `path` does not fit.
    #[error("{path}: hunk {number}{}: {source}", match hint {
        Some(h) => format!(" (@@ {h})"),
        None => String::new(),
    })]
    Hunk {
        path: String,
        number: usize,
        hint: Option<String>,
        source: Box<PatchError>,
    },
    /// The lines to change match several places; `detail` lists them with snippets.
    #[error("{detail}")]
    Ambiguous { detail: String },
    /// The lines to change are not in the file; `closest` shows what is near, or is empty.
    #[error("could not find the lines to change.{closest}")]
    NotFound { closest: String },
    #[error("the @@ line `{0}` is not in the file")]
    HintMissing(String),
    #[error("the @@ line `{hint}` appears {count} times; add context lines around the insertion")]
    HintRepeated { hint: String, count: usize },
    #[error("the patch changes nothing (only context lines, or the files already read like this)")]
    NoChange,
    /// `old_string` and `new_string` both carry an escape (`suspect`, e.g. `\'`) that the
    /// matched text does not: the model escaped the strings once too often.
    #[error(
        "old_string and new_string contain {suspect} but the matched text does not: the backslash is an escaping mistake. Re-read the file and send the strings without it."
    )]
    EscapeMismatch { suspect: &'static str },

    // --- Writing.
    /// Writing `shown` failed; `unrestored` are the files written before it that could not be
    /// put back.
    #[error("cannot write {shown}: {source} ({})", rollback(unrestored))]
    Write {
        shown: String,
        source: ToolError,
        unrestored: Vec<String>,
    },
}

fn rollback(unrestored: &[String]) -> String {
    if unrestored.is_empty() {
        "no file was changed".to_string()
    } else {
        format!("could not restore {}; check them", unrestored.join(", "))
    }
}

impl From<PatchError> for ToolError {
    fn from(e: PatchError) -> ToolError {
        match e {
            PatchError::Protected(inner) => inner,
            other => ToolError::new(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        let e = PatchError::Hunk {
            path: "a.py".into(),
            number: 2,
            hint: Some("def g():".into()),
            source: Box::new(PatchError::HintMissing("x".into())),
        };
        assert_eq!(
            e.to_string(),
            "a.py: hunk 2 (@@ def g():): the @@ line `x` is not in the file"
        );
        let e = PatchError::TooLarge {
            path: "/f".into(),
            bytes: Some(9),
        };
        assert_eq!(
            e.to_string(),
            "/f is too large to patch (9 bytes); use the terminal"
        );
        let e = PatchError::Write {
            shown: "b".into(),
            source: ToolError::new("denied"),
            unrestored: vec!["a".into()],
        };
        assert_eq!(
            e.to_string(),
            "cannot write b: denied (could not restore a; check them)"
        );
        let t: ToolError = PatchError::Protected(ToolError::new("nope")).into();
        assert_eq!(t, ToolError::new("nope"));
    }
}
