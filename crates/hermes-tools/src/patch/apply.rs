//! Applying edits all-or-nothing: every operation of a patch is computed in memory first
//! (later hunks see earlier ones, several operations on one file compose), every problem is
//! reported at once, and only a fully valid plan is written. If a write still fails, the files
//! already written are restored.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::PatchError;
use super::fuzzy::{self, Located};
use super::v4a::{Hunk, Op};
use crate::ToolError;
use crate::protect::{GuardedWrite, ProtectedPaths};

/// Largest file the patch tool edits.
const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// The planned state of one file: before and after (None: absent).
#[derive(Debug, Clone)]
pub struct Change {
    pub path: PathBuf,
    /// The path as the model wrote it, for messages and diff headers.
    pub shown: String,
    pub before: Option<String>,
    pub after: Option<String>,
    /// The guarded class of the path, which the user approved.
    pub guard: Option<GuardedWrite>,
}

/// Reads a text file for editing; `Ok(None)` when it does not exist. The file is opened and
/// then checked ([`ProtectedPaths::open_read`]): regular files only, no credential stores.
pub fn read_text(path: &Path, protected: &ProtectedPaths) -> Result<Option<String>, PatchError> {
    let unreadable = |source| PatchError::Read {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e)),
        Ok(_) => {}
    }
    let (file, meta) = protected.open_read(path)?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(PatchError::TooLarge {
            path: path.to_path_buf(),
            bytes: Some(meta.len()),
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(PatchError::TooLarge {
            path: path.to_path_buf(),
            bytes: None,
        });
    }
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(PatchError::Binary(path.to_path_buf()));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| PatchError::NotUtf8(path.to_path_buf()))
}

/// Where a plan's files come from: this machine ([`LocalFiles`], checked against the protected
/// paths), or contents read beforehand from another environment ([`Prefetched`]).
pub trait PatchFiles {
    /// The file a patch names, refused when it may not be written.
    fn resolve(&self, shown: &str) -> Result<PathBuf, PatchError>;
    /// Its content now; `None` when it does not exist.
    fn read(&self, path: &Path) -> Result<Option<String>, PatchError>;
    /// The guarded class of a path the user approved writing.
    fn guard(&self, _path: &Path) -> Option<GuardedWrite> {
        None
    }
}

/// `..` is refused in patch paths: a patch names files from the working directory or
/// absolutely, never by climbing out of it.
fn no_parent_dirs(shown: &str) -> Result<(), PatchError> {
    if Path::new(shown)
        .components()
        .any(|c| c == std::path::Component::ParentDir)
    {
        return Err(PatchError::ParentDir(shown.to_string()));
    }
    Ok(())
}

/// The files of this machine under the session's protected-path rules.
pub struct LocalFiles<'a> {
    pub cwd: &'a Path,
    pub protected: &'a ProtectedPaths,
    /// Guarded paths the user approved writing.
    pub approved: &'a [PathBuf],
}

impl PatchFiles for LocalFiles<'_> {
    fn resolve(&self, shown: &str) -> Result<PathBuf, PatchError> {
        no_parent_dirs(shown)?;
        let path = crate::paths::resolve(self.cwd, shown);
        self.protected.check_write(&path)?;
        if let Some(g) = self.protected.guarded_write(&path)
            && !self.approved.contains(&path)
        {
            return Err(PatchError::NeedsApproval {
                shown: shown.to_string(),
                what: g.description(),
            });
        }
        Ok(path)
    }
    fn read(&self, path: &Path) -> Result<Option<String>, PatchError> {
        read_text(path, self.protected)
    }
    fn guard(&self, path: &Path) -> Option<GuardedWrite> {
        self.protected.guarded_write(path)
    }
}

/// Files of another environment, read before planning (paths are that environment's, POSIX).
pub struct Prefetched {
    pub cwd: String,
    pub home: String,
    /// Every path the patch names, resolved, with its content (`None`: absent).
    pub files: BTreeMap<String, Option<String>>,
}

impl Prefetched {
    /// The environment's path of a name in a patch.
    pub fn path_of(&self, shown: &str) -> Result<String, PatchError> {
        no_parent_dirs(shown)?;
        Ok(crate::env::resolve_posix_in(&self.cwd, &self.home, shown))
    }
}

impl PatchFiles for Prefetched {
    fn resolve(&self, shown: &str) -> Result<PathBuf, PatchError> {
        self.path_of(shown).map(PathBuf::from)
    }
    fn read(&self, path: &Path) -> Result<Option<String>, PatchError> {
        self.files
            .get(&path.to_string_lossy().into_owned())
            .cloned()
            .ok_or_else(|| PatchError::NotPrefetched(path.to_path_buf()))
    }
}

/// The files of a plan as they will be: original content kept for the diff and for rollback.
struct Workspace<'a> {
    source: &'a dyn PatchFiles,
    files: BTreeMap<PathBuf, Change>,
    order: Vec<PathBuf>,
}

impl Workspace<'_> {
    /// The current planned content of `shown`.
    fn current(&mut self, shown: &str) -> Result<(PathBuf, Option<String>), PatchError> {
        let path = self.source.resolve(shown)?;
        if !self.files.contains_key(&path) {
            let before = self.source.read(&path)?;
            self.order.push(path.clone());
            self.files.insert(
                path.clone(),
                Change {
                    path: path.clone(),
                    shown: shown.to_string(),
                    before: before.clone(),
                    after: before,
                    guard: self.source.guard(&path),
                },
            );
        }
        let after = self.files.get(&path).and_then(|c| c.after.clone());
        Ok((path, after))
    }

    fn set(&mut self, path: &Path, content: Option<String>) {
        if let Some(c) = self.files.get_mut(path) {
            c.after = content;
        }
    }
}

/// Computes what a V4A patch does; every problem found is listed. Guarded paths are refused.
pub fn plan(
    ops: &[Op],
    cwd: &Path,
    protected: &ProtectedPaths,
) -> Result<Vec<Change>, Vec<PatchError>> {
    plan_approved(ops, cwd, protected, &[])
}

/// [`plan`], with the guarded paths the user approved writing.
pub fn plan_approved(
    ops: &[Op],
    cwd: &Path,
    protected: &ProtectedPaths,
    approved: &[PathBuf],
) -> Result<Vec<Change>, Vec<PatchError>> {
    plan_in(
        ops,
        &LocalFiles {
            cwd,
            protected,
            approved,
        },
    )
}

/// What a V4A patch does to the files of `source`.
pub fn plan_in(ops: &[Op], source: &dyn PatchFiles) -> Result<Vec<Change>, Vec<PatchError>> {
    let mut ws = Workspace {
        source,
        files: BTreeMap::new(),
        order: Vec::new(),
    };
    let mut errors = Vec::new();
    for op in ops {
        if let Err(e) = apply_op(&mut ws, op) {
            errors.push(e);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let changes: Vec<Change> = ws
        .order
        .iter()
        .filter_map(|p| ws.files.remove(p))
        .filter(|c| c.before != c.after)
        .collect();
    if changes.is_empty() {
        return Err(vec![PatchError::NoChange]);
    }
    Ok(changes)
}

fn apply_op(ws: &mut Workspace<'_>, op: &Op) -> Result<(), PatchError> {
    match op {
        Op::Add { path, lines } => {
            let (p, current) = ws.current(path)?;
            if current.is_some() {
                return Err(PatchError::AddExisting(path.clone()));
            }
            let mut text = lines.join("\n");
            if !text.is_empty() {
                text.push('\n');
            }
            ws.set(&p, Some(text));
        }
        Op::Delete { path } => {
            let (p, current) = ws.current(path)?;
            if current.is_none() {
                return Err(PatchError::DeleteMissing(path.clone()));
            }
            ws.set(&p, None);
        }
        Op::Update {
            path,
            move_to,
            hunks,
        } => {
            let (p, current) = ws.current(path)?;
            let Some(mut text) = current else {
                return Err(PatchError::UpdateMissing(path.clone()));
            };
            for (i, hunk) in hunks.iter().enumerate() {
                text = apply_hunk(&text, hunk).map_err(|e| PatchError::Hunk {
                    path: path.clone(),
                    number: i + 1,
                    hint: hunk.hint.clone(),
                    source: Box::new(e),
                })?;
            }
            match move_to {
                Some(dest) => {
                    let (d, existing) = ws.current(dest)?;
                    if existing.is_some() && d != p {
                        return Err(PatchError::MoveOntoExisting {
                            path: path.clone(),
                            dest: dest.clone(),
                        });
                    }
                    ws.set(&p, None);
                    ws.set(&d, Some(text));
                }
                None => ws.set(&p, Some(text)),
            }
        }
    }
    Ok(())
}

/// One hunk applied to a file's text. CRLF files are edited as LF and converted back.
fn apply_hunk(text: &str, hunk: &Hunk) -> Result<String, PatchError> {
    let crlf = text.contains("\r\n");
    let work = if crlf {
        text.replace("\r\n", "\n")
    } else {
        text.to_string()
    };
    let pick = |kinds: &[char]| -> String {
        hunk.lines
            .iter()
            .filter(|(k, _)| kinds.contains(k))
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (old, new) = (pick(&[' ', '-']), pick(&[' ', '+']));
    let out = if old.is_empty() {
        insert_only(&work, hunk.hint.as_deref(), &new)?
    } else if old == new {
        work
    } else {
        let found = locate_near_hint(&work, &old, hunk.hint.as_deref())?;
        fuzzy::replace(&work, &found, &old, &new)?
    };
    Ok(if crlf { out.replace('\n', "\r\n") } else { out })
}

/// The one place `old` matches: after the hint line when there is one (the first match there),
/// else a unique match in the whole file.
fn locate_near_hint(text: &str, old: &str, hint: Option<&str>) -> Result<Located, PatchError> {
    if let Some(hint) = hint
        && let Some(at) = text.find(hint)
    {
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        if let Some(mut found) = fuzzy::locate(&text[line_start..], old) {
            found.ranges.truncate(1);
            for r in &mut found.ranges {
                *r = (r.0 + line_start, r.1 + line_start);
            }
            return Ok(found);
        }
    }
    match fuzzy::locate(text, old) {
        Some(found) if found.ranges.len() == 1 => Ok(found),
        Some(found) => Err(PatchError::Ambiguous {
            detail: super::hints::ambiguous(text, &found),
        }),
        None => Err(PatchError::NotFound {
            closest: super::hints::closest(text, old),
        }),
    }
}

/// A hunk with only `+` lines: after the hint's line, or at the end of the file.
fn insert_only(text: &str, hint: Option<&str>, new: &str) -> Result<String, PatchError> {
    let Some(hint) = hint else {
        let mut out = text.trim_end_matches('\n').to_string();
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(new);
        out.push('\n');
        return Ok(out);
    };
    match text.matches(hint).count() {
        0 => Err(PatchError::HintMissing(hint.to_string())),
        1 => {
            let at = text.find(hint).unwrap_or(0);
            let eol = text[at..]
                .find('\n')
                .map(|i| at + i + 1)
                .unwrap_or(text.len());
            let mut out = text[..eol].to_string();
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(new);
            out.push('\n');
            out.push_str(&text[eol..]);
            Ok(out)
        }
        count => Err(PatchError::HintRepeated {
            hint: hint.to_string(),
            count,
        }),
    }
}

/// Writes a plan, each file through the directory actually opened (as `write_file` does). On a
/// failure, files already written are restored to their previous state.
pub fn commit(changes: &[Change], protected: &ProtectedPaths) -> Result<(), PatchError> {
    for (i, change) in changes.iter().enumerate() {
        if let Err(source) = write_state(change, change.after.as_deref(), protected) {
            let mut unrestored = Vec::new();
            for done in changes[..i].iter().rev() {
                if write_state(done, done.before.as_deref(), protected).is_err() {
                    unrestored.push(done.shown.clone());
                }
            }
            return Err(PatchError::Write {
                shown: change.shown.clone(),
                source,
                unrestored,
            });
        }
    }
    Ok(())
}

/// Puts one file in the state `content` (`None`: absent). The error is the write guard's
/// refusal, or the removal's I/O error as its text.
fn write_state(
    change: &Change,
    content: Option<&str>,
    protected: &ProtectedPaths,
) -> Result<(), ToolError> {
    match content {
        Some(text) => {
            crate::files::write_checked(protected, &change.path, text.as_bytes(), change.guard)
        }
        None => match std::fs::remove_file(&change.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other.map_err(|e| ToolError::new(e.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::v4a::parse;

    fn plan_in(dir: &Path, patch: &str) -> Result<Vec<Change>, Vec<String>> {
        plan(&parse(patch).unwrap(), dir, &ProtectedPaths::default())
            .map_err(|errors| errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn hunks_compose_and_hints_disambiguate() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("a.py"),
            "def f():\n    return 1\n\ndef g():\n    return 1\n",
        )
        .unwrap();
        let changes = plan_in(
            tmp.path(),
            "*** Update File: a.py\n@@ def g():\n-    return 1\n+    return 2\n@@ def f():\n-    return 1\n+    return 3\n",
        )
        .unwrap();
        assert_eq!(
            changes[0].after.as_deref(),
            Some("def f():\n    return 3\n\ndef g():\n    return 2\n")
        );
        let errors = plan_in(
            tmp.path(),
            "*** Update File: a.py\n-    return 1\n+    return 2\n",
        )
        .unwrap_err();
        assert!(
            errors[0].contains("2 places") && errors[0].contains("lines 2, 5"),
            "{errors:?}"
        );
    }

    #[test]
    fn crlf_files_stay_crlf_and_insertions_work() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("w.txt"), "one\r\ntwo\r\n").unwrap();
        let changes = plan_in(
            tmp.path(),
            "*** Update File: w.txt\n one\n-two\n+deux\n@@ one\n+un\n",
        )
        .unwrap();
        assert_eq!(changes[0].after.as_deref(), Some("one\r\nun\r\ndeux\r\n"));
    }

    #[test]
    fn every_problem_is_reported_and_nothing_planned() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("x"), "x\n").unwrap();
        let errors = plan_in(
            tmp.path(),
            "*** Add File: x\n+dup\n*** Delete File: missing\n*** Update File: ../escape\n+a\n*** Update File: x\n-nothere\n+y\n",
        )
        .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(errors[0].contains("already exists"));
        assert!(errors[1].contains("does not exist"));
        assert!(errors[2].contains("`..` is not allowed"));
        assert!(errors[3].contains("could not find"));
    }

    #[test]
    fn problems_are_typed() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("x"), "a\nb\na\n").unwrap();
        let patch = "*** Add File: x\n+dup\n*** Update File: ../escape\n+a\n*** Update File: x\n@@ nowhere\n+y\n*** Update File: x\n-a\n+c\n";
        let errors = plan(
            &parse(patch).unwrap(),
            tmp.path(),
            &ProtectedPaths::default(),
        )
        .unwrap_err();
        assert!(
            matches!(&errors[0], PatchError::AddExisting(p) if p == "x"),
            "{errors:?}"
        );
        assert!(matches!(&errors[1], PatchError::ParentDir(p) if p == "../escape"));
        let PatchError::Hunk {
            number: 1,
            hint: Some(hint),
            source,
            ..
        } = &errors[2]
        else {
            panic!("{errors:?}");
        };
        assert_eq!(hint, "nowhere");
        assert!(matches!(**source, PatchError::HintMissing(_)));
        assert_eq!(
            errors[2].to_string(),
            "x: hunk 1 (@@ nowhere): the @@ line `nowhere` is not in the file"
        );
        let PatchError::Hunk { source, .. } = &errors[3] else {
            panic!("{errors:?}");
        };
        assert!(matches!(**source, PatchError::Ambiguous { .. }), "{source}");
        let unchanged = "*** Update File: x\n a\n";
        assert!(matches!(
            plan(
                &parse(unchanged).unwrap(),
                tmp.path(),
                &ProtectedPaths::default()
            )
            .unwrap_err()
            .as_slice(),
            [PatchError::NoChange]
        ));
    }
}
