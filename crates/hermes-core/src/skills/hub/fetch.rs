//! Bringing a source's files onto the machine, bounded and without trusting them: a git
//! repository with the `git` binary (`git init` + `git fetch --depth 1 <url> <ref>` into a
//! temporary folder, the commit recorded; a ref a shallow fetch cannot name falls back to a
//! full fetch), a tarball from bytes the caller downloaded (gzip or plain tar: every entry
//! must be a regular file or folder with a relative path free of `..`, under size and count
//! caps, or the whole archive is refused), a local folder as it is. Then the skills inside:
//! a folder with `SKILL.md`, found at most a few levels down.

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::HubError;

/// The most files an archive may hold.
pub const MAX_ARCHIVE_ENTRIES: usize = 2_000;
/// The largest file in an archive.
pub const MAX_ARCHIVE_FILE: u64 = 4 * 1024 * 1024;
/// The most an archive may unpack to.
pub const MAX_ARCHIVE_TOTAL: u64 = 64 * 1024 * 1024;
/// How long one git command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(300);
/// How deep skills are looked for below a source's root.
const MAX_DEPTH: usize = 4;

/// Runs `git args` in `dir`, never prompting, within [`GIT_TIMEOUT`]; stderr (its last
/// line) explains a failure.
fn git(dir: &Path, args: &[&str]) -> Result<String, HubError> {
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| HubError::Git(format!("cannot run git: {e}")))?;
    // Drain both pipes on threads so a chatty git never blocks on a full pipe.
    let out = child.stdout.take().map(|s| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = s.take(1 << 20).read_to_end(&mut buf);
            buf
        })
    });
    let err = child.stderr.take().map(|s| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = s.take(1 << 20).read_to_end(&mut buf);
            buf
        })
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > GIT_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(HubError::Git(format!(
                    "git {} took longer than {}s",
                    args.first().unwrap_or(&""),
                    GIT_TIMEOUT.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(HubError::Git(format!("git failed: {e}"))),
        }
    };
    let stdout = out.and_then(|h| h.join().ok()).unwrap_or_default();
    let stderr = err.and_then(|h| h.join().ok()).unwrap_or_default();
    if !status.success() {
        let text = String::from_utf8_lossy(&stderr);
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output");
        return Err(HubError::Git(format!(
            "git {} failed: {}",
            args.first().unwrap_or(&""),
            last.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&stdout).trim().to_string())
}

/// Fetches `reference` (the remote's default branch when `None`) of the repository at `url`
/// into `dest` (an empty folder) and checks it out; returns the commit.
pub fn git_checkout(url: &str, reference: Option<&str>, dest: &Path) -> Result<String, HubError> {
    git(dest, &["init", "-q"])?;
    let want = reference.unwrap_or("HEAD");
    let shallow = git(dest, &["fetch", "-q", "--depth", "1", "--", url, want]);
    if let Err(e) = shallow {
        // A commit id is not fetchable by every server; a full fetch then names it.
        let Some(r) = reference else {
            return Err(e);
        };
        git(
            dest,
            &[
                "fetch",
                "-q",
                "--",
                url,
                "+refs/heads/*:refs/remotes/hub/*",
                "+refs/tags/*:refs/tags/*",
            ],
        )?;
        let sha = git(
            dest,
            &["rev-parse", "--verify", "-q", &format!("{r}^{{commit}}")],
        )
        .or_else(|_| {
            git(
                dest,
                &[
                    "rev-parse",
                    "--verify",
                    "-q",
                    &format!("refs/remotes/hub/{r}^{{commit}}"),
                ],
            )
        })
        .map_err(|_| HubError::Git(format!("no ref or commit `{r}` in {url}")))?;
        git(dest, &["checkout", "-q", "--detach", &sha])?;
        return Ok(sha);
    }
    git(dest, &["checkout", "-q", "--detach", "FETCH_HEAD"])?;
    git(dest, &["rev-parse", "HEAD"])
}

/// Unpacks `bytes` (a `.tar.gz` or `.tar`) into `dest`, refusing the whole archive at the
/// first unsafe entry.
pub fn unpack_tarball(bytes: &[u8], dest: &Path) -> Result<(), HubError> {
    let reader: Box<dyn Read + '_> = if bytes.starts_with(&[0x1f, 0x8b]) {
        Box::new(flate2::read::GzDecoder::new(bytes))
    } else {
        Box::new(bytes)
    };
    // The decompressed stream is capped too: a gzip bomb stops at the total.
    let mut archive = tar::Archive::new(reader.take(MAX_ARCHIVE_TOTAL + 1024 * 1024));
    let entries = archive.entries().map_err(archive_error)?;
    let mut count = 0usize;
    let mut total = 0u64;
    for entry in entries {
        let mut entry = entry.map_err(archive_error)?;
        let kind = entry.header().entry_type();
        let raw_path = entry.path().map_err(archive_error)?.into_owned();
        let shown = raw_path.display().to_string();
        if matches!(
            kind,
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader | tar::EntryType::GNULongName
        ) {
            continue;
        }
        let rel = safe_relative(&raw_path).ok_or_else(|| HubError::UnsafeArchive {
            entry: shown.clone(),
            reason: "the path is absolute or climbs out with `..`".into(),
        })?;
        count += 1;
        if count > MAX_ARCHIVE_ENTRIES {
            return Err(HubError::UnsafeArchive {
                entry: shown,
                reason: format!("more than {MAX_ARCHIVE_ENTRIES} entries"),
            });
        }
        let target = dest.join(&rel);
        match kind {
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&target).map_err(|e| io_error(&target, e))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = entry.header().size().map_err(archive_error)?;
                if size > MAX_ARCHIVE_FILE {
                    return Err(HubError::UnsafeArchive {
                        entry: shown,
                        reason: format!("larger than {} bytes", MAX_ARCHIVE_FILE),
                    });
                }
                total += size;
                if total > MAX_ARCHIVE_TOTAL {
                    return Err(HubError::UnsafeArchive {
                        entry: shown,
                        reason: format!(
                            "the archive unpacks to more than {MAX_ARCHIVE_TOTAL} bytes"
                        ),
                    });
                }
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
                }
                let mut data = Vec::new();
                (&mut entry)
                    .take(MAX_ARCHIVE_FILE + 1)
                    .read_to_end(&mut data)
                    .map_err(archive_error)?;
                // `create_new`: a second entry of the same name cannot overwrite the first.
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&target)
                    .map_err(|e| io_error(&target, e))?;
                std::io::Write::write_all(&mut file, &data).map_err(|e| io_error(&target, e))?;
            }
            tar::EntryType::Symlink | tar::EntryType::Link => {
                return Err(HubError::UnsafeArchive {
                    entry: shown,
                    reason: "links are not allowed in a skill archive".into(),
                });
            }
            other => {
                return Err(HubError::UnsafeArchive {
                    entry: shown,
                    reason: format!("entries of type {other:?} are not allowed"),
                });
            }
        }
    }
    Ok(())
}

fn archive_error(e: std::io::Error) -> HubError {
    HubError::UnsafeArchive {
        entry: String::new(),
        reason: format!("not a readable tar archive: {e}"),
    }
}

pub(crate) fn io_error(path: &Path, e: std::io::Error) -> HubError {
    HubError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// `path` as plain relative components, or `None` if it is absolute or has `..`.
fn safe_relative(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// The skill folders under `root`, as paths relative to it (`""` when `root` is one), the
/// shallowest first. A folder holding `SKILL.md` is a skill and not searched further;
/// dot-folders are skipped; links are never followed.
pub fn find_skills(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut queue = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = queue.pop() {
        if dir.join("SKILL.md").is_file() {
            found.push(
                dir.strip_prefix(root)
                    .map(|p| {
                        p.components()
                            .map(|c| c.as_os_str().to_string_lossy().into_owned())
                            .collect::<Vec<_>>()
                            .join("/")
                    })
                    .unwrap_or_default(),
            );
            continue;
        }
        if depth >= MAX_DEPTH {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut subdirs: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                !n.starts_with('.') && n != "node_modules" && n != "__pycache__"
            })
            .map(|e| e.path())
            .collect();
        subdirs.sort();
        subdirs.reverse();
        queue.extend(subdirs.into_iter().map(|d| (d, depth + 1)));
    }
    found.sort_by_key(|p| {
        (
            p.matches('/').count() + usize::from(!p.is_empty()),
            p.clone(),
        )
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tarball(entries: &[(&str, &[u8], tar::EntryType)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, data, kind) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            // Written raw so a hostile name is kept as it is.
            let name = header.as_old_mut();
            name.name[..path.len()].copy_from_slice(path.as_bytes());
            if *kind == tar::EntryType::Symlink {
                header.set_link_name("/etc/passwd").unwrap();
            }
            header.set_cksum();
            builder.append(&header, *data).unwrap();
        }
        let raw = builder.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &raw).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn a_plain_skill_archive_unpacks() {
        let bytes = tarball(&[
            (
                "pkg/SKILL.md",
                b"---\nname: a\n---\nbody\n",
                tar::EntryType::Regular,
            ),
            ("pkg/scripts/run.sh", b"echo hi\n", tar::EntryType::Regular),
        ]);
        let dir = tempfile::tempdir().unwrap();
        unpack_tarball(&bytes, dir.path()).unwrap();
        assert!(dir.path().join("pkg/scripts/run.sh").is_file());
        assert_eq!(find_skills(dir.path()), ["pkg"]);
    }

    #[test]
    fn traversal_links_and_devices_are_refused() {
        for (path, kind) in [
            ("../evil.sh", tar::EntryType::Regular),
            ("pkg/../../evil.sh", tar::EntryType::Regular),
            ("/etc/evil", tar::EntryType::Regular),
            ("pkg/link", tar::EntryType::Symlink),
            ("pkg/hard", tar::EntryType::Link),
            ("pkg/fifo", tar::EntryType::Fifo),
        ] {
            let bytes = tarball(&[
                ("pkg/SKILL.md", b"x", tar::EntryType::Regular),
                (path, b"", kind),
            ]);
            let dir = tempfile::tempdir().unwrap();
            let err = unpack_tarball(&bytes, dir.path()).unwrap_err();
            assert!(
                matches!(err, HubError::UnsafeArchive { .. }),
                "{path}: {err}"
            );
            assert!(!dir.path().parent().unwrap().join("evil.sh").exists());
        }
    }

    #[test]
    fn oversized_and_garbage_archives_are_refused() {
        let big = vec![b'a'; (MAX_ARCHIVE_FILE + 1) as usize];
        let bytes = tarball(&[("pkg/big.txt", &big, tar::EntryType::Regular)]);
        let dir = tempfile::tempdir().unwrap();
        assert!(unpack_tarball(&bytes, dir.path()).is_err());
        assert!(unpack_tarball(b"\x1f\x8bnot gzip at all", dir.path()).is_err());
    }

    #[test]
    fn skills_are_found_shallowest_first() {
        let dir = tempfile::tempdir().unwrap();
        for p in [
            "skills/b/SKILL.md",
            "skills/a/SKILL.md",
            "skills/a/inner/SKILL.md",
            ".hidden/x/SKILL.md",
        ] {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        assert_eq!(find_skills(dir.path()), ["skills/a", "skills/b"]);
    }
}
