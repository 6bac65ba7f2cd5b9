//! The skills hub: installing skills from outside the home, the Python Hermes's way and in its
//! files. A source ([`source`]: a local folder, a git repository, a tarball URL) is fetched
//! ([`fetch`]) into a temporary folder; each skill found there is read into a [`Bundle`],
//! written to `skills/.hub/quarantine/<name>/`, scanned by the guard ([`guard`]: Python's
//! threat rules, the injection scanner on markdown, the script audit of [`audit`]) and, when
//! the source's trust level and the verdict allow it, moved into `skills/[category/]<name>/`
//! with one rename ([`install`]), recorded in `skills/.hub/lock.json` with its commit or
//! archive hash and logged to `skills/.hub/audit.log` ([`lock`]). `update` fetches again and
//! shows a unified diff ([`diff`]); `search` reads the Hermes skills index ([`index`]) and
//! the skills inside a source.

pub mod audit;
pub mod diff;
pub mod fetch;
pub mod guard;
pub mod index;
pub mod install;
pub mod lock;
mod patterns;
pub mod source;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

pub use guard::{Decision, Finding, Scan, Severity, Trust, Verdict};
pub use install::Hub;
pub use lock::LockFile;
pub use source::Source;

/// The most files a skill may bring.
pub const MAX_BUNDLE_FILES: usize = 500;
/// The most bytes a skill may bring.
pub const MAX_BUNDLE_BYTES: u64 = 16 * 1024 * 1024;

/// What can go wrong in the hub.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("`{source_text}` is not a usable source: {reason}")]
    Source { source_text: String, reason: String },
    #[error("{0}")]
    Git(String),
    #[error("the archive was refused{}: {reason}", if entry.is_empty() { String::new() } else { format!(" at `{entry}`") })]
    UnsafeArchive { entry: String, reason: String },
    #[error("the skill was refused: {0}")]
    UnsafeSkill(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("skills/.hub/lock.json: {0}")]
    Lock(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Refused(String),
    /// The name given for the skill is not a valid skill name.
    #[error(transparent)]
    InvalidName(#[from] super::SkillError),
}

/// One skill's files as fetched, before anything is written into the home.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The name it installs under (its frontmatter `name`, else its folder's).
    pub name: String,
    pub description: String,
    /// Relative `/`-separated path → bytes.
    pub files: BTreeMap<String, Vec<u8>>,
    /// The files that had an executable bit (kept when they are written out).
    pub executable: std::collections::BTreeSet<String>,
}

impl Bundle {
    /// Reads the skill folder `dir` (`.git` skipped); a link, or more than
    /// [`MAX_BUNDLE_FILES`] files or [`MAX_BUNDLE_BYTES`] bytes, refuses it. `name` overrides
    /// the skill's own.
    pub fn read(dir: &Path, name: Option<&str>) -> Result<Bundle, HubError> {
        let mut files = BTreeMap::new();
        let mut executable = std::collections::BTreeSet::new();
        let mut total = 0u64;
        read_into(dir, dir, &mut files, &mut executable, &mut total)?;
        let skill_md = files
            .get("SKILL.md")
            .ok_or_else(|| HubError::UnsafeSkill(format!("{} has no SKILL.md", dir.display())))?;
        let parsed = super::frontmatter::parse(&String::from_utf8_lossy(skill_md));
        let own = super::frontmatter::text_field(&parsed.fields, "name");
        let folder = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let candidates = [name.map(String::from), own, Some(folder)];
        let chosen = match name {
            Some(n) => {
                super::manage::validate_name(n)?;
                n.to_string()
            }
            None => candidates
                .into_iter()
                .flatten()
                .find(|n| super::manage::validate_name(n).is_ok())
                .ok_or_else(|| {
                    HubError::Refused(
                        "the skill has no usable name (lowercase letters, digits, `-_.`); give one with --name".into(),
                    )
                })?,
        };
        Ok(Bundle {
            name: chosen,
            description: super::frontmatter::text_field(&parsed.fields, "description")
                .unwrap_or_default(),
            files,
            executable,
        })
    }

    /// `(path, bytes)` pairs for hashing.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.files.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    /// Python's `content_hash` of these files.
    pub fn content_hash(&self) -> String {
        lock::content_hash(self.pairs())
    }

    /// The SKILL.md text.
    pub fn skill_md(&self) -> String {
        self.files
            .get("SKILL.md")
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    }
}

fn read_into(
    root: &Path,
    dir: &Path,
    files: &mut BTreeMap<String, Vec<u8>>,
    executable: &mut std::collections::BTreeSet<String>,
    total: &mut u64,
) -> Result<(), HubError> {
    let entries = std::fs::read_dir(dir).map_err(|e| fetch::io_error(dir, e))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).map_err(|e| fetch::io_error(&path, e))?;
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        if meta.file_type().is_symlink() {
            return Err(HubError::UnsafeSkill(format!(
                "`{rel}` is a link; skills with links are not installed"
            )));
        }
        if meta.is_dir() {
            read_into(root, &path, files, executable, total)?;
            continue;
        }
        if !meta.is_file() {
            return Err(HubError::UnsafeSkill(format!(
                "`{rel}` is not a regular file"
            )));
        }
        *total += meta.len();
        if files.len() >= MAX_BUNDLE_FILES || *total > MAX_BUNDLE_BYTES {
            return Err(HubError::UnsafeSkill(format!(
                "more than {MAX_BUNDLE_FILES} files or {MAX_BUNDLE_BYTES} bytes"
            )));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_BUNDLE_BYTES).read_to_end(&mut bytes))
            .map_err(|e| fetch::io_error(&path, e))?;
        if is_executable(&meta) {
            executable.insert(rel.clone());
        }
        files.insert(rel, bytes);
    }
    Ok(())
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    false
}
