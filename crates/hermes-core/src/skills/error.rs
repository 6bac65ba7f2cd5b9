//! [`SkillError`]: why a skills operation (`skill_view`, `skill_manage`, `/skill-name`, a
//! lookup by name) did not happen. Its text is what the model reads as the tool result and what
//! the user sees, so each message says what to do instead; the variants name the failure
//! classes so callers can tell them apart without reading the text.

use std::path::PathBuf;

use hermes_llm::util::thousands;

use super::curator::CuratorError;
use super::frontmatter::FrontmatterError;
use super::{MAX_CONTENT_CHARS, MAX_FILE_BYTES, MAX_NAME_CHARS, SUPPORT_DIRS};

/// Why a skills operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// `skill_manage` without an action.
    #[error("give an action: create, edit, patch, delete, write_file or remove_file")]
    NoAction,
    #[error("unknown action `{0}`; use create, edit, patch, delete, write_file or remove_file")]
    UnknownAction(String),
    /// An action without an argument it needs (`what` names it, with a hint when useful).
    #[error("{action} needs {what}")]
    MissingArgument {
        action: &'static str,
        what: &'static str,
    },
    #[error("give the skill's name")]
    NoName,
    #[error(
        "`{0}` is not a valid skill name: use lowercase letters, digits and hyphens (e.g. deploy-staging)"
    )]
    InvalidName(String),
    #[error("the name is longer than {MAX_NAME_CHARS} characters")]
    NameTooLong,
    #[error(
        "`{0}` is not a valid category: one folder name in lowercase letters, digits and hyphens"
    )]
    InvalidCategory(String),
    /// A lookup given a path (absolute, `..`) instead of a name.
    #[error("`{0}` is not a skill name: use a name from skills_list, not a path")]
    PathAsName(String),
    /// No skill answers to `name`; `known` lists (some of) the active ones.
    #[error("{}", not_found(name, known))]
    NotFound { name: String, known: Vec<String> },
    /// Several skills answer to `name`; `paths` are theirs below the skills folder.
    #[error("`{name}` names {} skills ({}); use the path of one", paths.len(), paths.join(", "))]
    Ambiguous { name: String, paths: Vec<String> },
    #[error("skill `{0}` is disabled (skills.disabled in config.yaml)")]
    Disabled(String),
    #[error("skill `{name}` is for {} only, not this system", platforms.join(", "))]
    OtherPlatform {
        name: String,
        platforms: Vec<String>,
    },
    /// A `SKILL.md` to be written whose frontmatter is missing or wrong.
    #[error(transparent)]
    Frontmatter(#[from] FrontmatterError),
    #[error("the frontmatter name `{declared}` must be the skill's folder name `{folder}`")]
    NameMismatch { declared: String, folder: String },
    /// Text over [`MAX_CONTENT_CHARS`] characters.
    #[error(
        "{label} has {} characters (limit {}); move details into references/ files",
        thousands(*chars as u64),
        thousands(MAX_CONTENT_CHARS as u64)
    )]
    TooLong { label: String, chars: usize },
    /// A supporting file over [`MAX_FILE_BYTES`] bytes.
    #[error(
        "the file has {} bytes (limit {}); split it",
        thousands(*bytes as u64),
        thousands(MAX_FILE_BYTES as u64)
    )]
    FileTooLarge { bytes: usize },
    /// Text the agent wrote in which the injection scanner found something (`0` describes it).
    #[error(
        "refused: {0} — skills are loaded into later sessions, so they may not carry this. Rewrite without it."
    )]
    Injection(String),
    /// A skill the injection scanner blocks from being loaded; `0` is the `[BLOCKED: ...]` notice.
    #[error("{0}")]
    Blocked(String),
    /// `create` of a name another skill has; `path` is where that one is.
    #[error("a skill named `{name}` already exists ({path}); change it with edit or patch")]
    Exists { name: String, path: String },
    /// `create` into a folder that is already there.
    #[error("{} already exists", .0.display())]
    FolderExists(PathBuf),
    /// A supporting-file path for writing that is not a file under a support folder.
    #[error(
        "file_path must be a file under {dirs}/ (e.g. references/notes.md), not `{0}`",
        dirs = SUPPORT_DIRS.join("/, ")
    )]
    NotSupportFile(String),
    #[error("give a file path inside the skill, such as references/notes.md")]
    NoFilePath,
    /// A file path leading out of the skill's folder (`..`, absolute, through a symlink).
    #[error("{0} is outside the skill's folder: give a path such as references/notes.md")]
    Outside(String),
    #[error("cannot open the skill's folder: {0}")]
    OpenFolder(#[source] std::io::Error),
    /// `skill_view` of a supporting file the skill does not have.
    #[error("skill `{skill}` has no file {rel}; {}", its_files(files))]
    NoFile {
        skill: String,
        rel: String,
        files: Vec<String>,
    },
    /// `remove_file` of a supporting file the skill does not have.
    #[error("`{skill}` has no file {rel}{}", files_suffix(files))]
    NoFileToRemove {
        skill: String,
        rel: String,
        files: Vec<String>,
    },
    /// `patch` whose `old_string` is not in the file (`label`) of `skill`.
    #[error(
        "old_string was not found in {label} of `{skill}`; view it again with skill_view and copy the text exactly"
    )]
    NoMatch { label: String, skill: String },
    /// `patch` whose `old_string` matches at several `lines` without `replace_all`.
    #[error(
        "old_string matches {} places in {label} (lines {}); include more of the surrounding text so it matches one",
        lines.len(),
        joined(lines)
    )]
    ManyMatches { label: String, lines: Vec<usize> },
    /// The matched text cannot take the replacement.
    #[error(transparent)]
    Replace(#[from] hermes_tools::patch::PatchError),
    /// A `patch` of `SKILL.md` whose result would not pass the checks of a new one.
    #[error("the patch would break SKILL.md: {0}")]
    BreaksSkillMd(#[source] Box<SkillError>),
    /// A skill from `skills.external_dirs`, which the agent does not change.
    #[error(
        "`{name}` lives in skills.external_dirs ({}), which this agent does not change",
        dir.display()
    )]
    External { name: String, dir: PathBuf },
    #[error("`{0}` is pinned; the user must unpin it before it can be deleted")]
    Pinned(String),
    #[error("cannot archive `{name}`: {source}")]
    Archive { name: String, source: CuratorError },
    /// Reading the file (`label`) of `skill` that a `patch` changes.
    #[error("cannot read {label} of `{skill}`: {source}")]
    ReadSkillFile {
        label: String,
        skill: String,
        source: std::io::Error,
    },
    /// Reading a supporting file for `skill_view`.
    #[error("cannot read {rel}: {source}")]
    ReadFile { rel: String, source: std::io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot remove {}: {source}", path.display())]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn not_found(name: &str, known: &[String]) -> String {
    if known.is_empty() {
        format!("no skill named `{name}`: there are no skills yet")
    } else {
        format!(
            "no skill named `{name}`; the skills are: {}",
            known.join(", ")
        )
    }
}

fn its_files(files: &[String]) -> String {
    if files.is_empty() {
        "it has no supporting files".to_string()
    } else {
        format!("its files: {}", files.join(", "))
    }
}

fn files_suffix(files: &[String]) -> String {
    if files.is_empty() {
        String::new()
    } else {
        format!("; its files: {}", files.join(", "))
    }
}

fn joined(lines: &[usize]) -> String {
    lines
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_to_do() {
        let e = SkillError::NotFound {
            name: "x".into(),
            known: vec![],
        };
        assert_eq!(e.to_string(), "no skill named `x`: there are no skills yet");
        let e = SkillError::NotFound {
            name: "x".into(),
            known: vec!["a".into(), "b".into()],
        };
        assert_eq!(e.to_string(), "no skill named `x`; the skills are: a, b");
        let e = SkillError::ManyMatches {
            label: "SKILL.md".into(),
            lines: vec![3, 9],
        };
        assert_eq!(
            e.to_string(),
            "old_string matches 2 places in SKILL.md (lines 3, 9); include more of the surrounding text so it matches one"
        );
        let e = SkillError::TooLong {
            label: "SKILL.md".into(),
            chars: 100_001,
        };
        assert_eq!(
            e.to_string(),
            "SKILL.md has 100,001 characters (limit 100,000); move details into references/ files"
        );
        let e = SkillError::NoFile {
            skill: "s".into(),
            rel: "references/x.md".into(),
            files: vec![],
        };
        assert_eq!(
            e.to_string(),
            "skill `s` has no file references/x.md; it has no supporting files"
        );
        let e = SkillError::NoFileToRemove {
            skill: "s".into(),
            rel: "references/x.md".into(),
            files: vec!["references/y.md".into()],
        };
        assert_eq!(
            e.to_string(),
            "`s` has no file references/x.md; its files: references/y.md"
        );
        assert_eq!(
            SkillError::NotSupportFile("x".into()).to_string(),
            "file_path must be a file under references/, templates/, scripts/, assets/ (e.g. references/notes.md), not `x`"
        );
    }
}
