//! Paths in tool arguments: `~` expansion, resolution against the working directory, and the
//! overlap test that decides whether two calls may run in parallel.

use std::path::{Component, Path, PathBuf};

/// Resolves a path argument: `~` and `~/x` to the home directory, relative paths against `cwd`,
/// `.` and `..` folded lexically (the file may not exist yet).
pub fn resolve(cwd: &Path, raw: &str) -> PathBuf {
    let expanded = match raw.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest.trim_start_matches('/')),
            None => PathBuf::from(raw),
        },
        _ => PathBuf::from(raw),
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    normalize(&joined)
}

/// Folds `.` and `..` without touching the filesystem.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Two paths overlap when they are equal or one contains the other.
pub fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_resolve_against_cwd() {
        assert_eq!(
            resolve(Path::new("/w"), "a/../b.txt"),
            PathBuf::from("/w/b.txt")
        );
        assert_eq!(resolve(Path::new("/w"), "/etc/x"), PathBuf::from("/etc/x"));
        assert_eq!(resolve(Path::new("/w"), "./x"), PathBuf::from("/w/x"));
    }

    #[test]
    fn overlap_is_containment() {
        assert!(overlaps(Path::new("/a/b"), Path::new("/a")));
        assert!(overlaps(Path::new("/a"), Path::new("/a")));
        assert!(!overlaps(Path::new("/a/b"), Path::new("/a/bc")));
    }
}
