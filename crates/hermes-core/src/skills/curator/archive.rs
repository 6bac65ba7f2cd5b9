//! Moving skills into and out of `skills/.archive/`, laid out as the Python Hermes lays it
//! out: flat (`.archive/<folder>/`, category folders are not kept), a name already taken gets
//! a `-YYYYMMDDHHMMSS` UTC suffix; a restore brings the newest copy back to `skills/<name>/`
//! (the top level) and never overwrites a skill there. The usage record follows: `archived`
//! with `archived_at`, then `active` again.

use std::path::{Path, PathBuf};

use super::CuratorError;
use crate::skills::Usage;
use crate::skills::usage::iso_at;

/// Moves the skill folder `dir` (named `name`) into `root/.archive/` at `now`; removes a
/// category folder left empty. Returns where it went.
pub fn archive(root: &Path, dir: &Path, name: &str, now: f64) -> Result<PathBuf, CuratorError> {
    let archive = root.join(".archive");
    std::fs::create_dir_all(&archive).map_err(|e| CuratorError::io(&archive, e))?;
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.to_string());
    let mut dest = archive.join(&folder);
    if dest.exists() {
        dest = archive.join(format!("{folder}-{}", stamp(now)));
    }
    std::fs::rename(dir, &dest).map_err(|e| CuratorError::io(dir, e))?;
    if let Some(parent) = dir.parent().filter(|p| *p != root)
        && std::fs::read_dir(parent).is_ok_and(|mut d| d.next().is_none())
    {
        let _ = std::fs::remove_dir(parent);
    }
    Usage::new(root).set_state(name, "archived", &iso_at(now));
    Ok(dest)
}

/// Brings the archived skill `name` back to `root/<name>/`, active again.
pub fn restore(root: &Path, name: &str, now: f64) -> Result<PathBuf, CuratorError> {
    let archive = root.join(".archive");
    if !archive.is_dir() {
        return Err(CuratorError::Refused("no archive directory".into()));
    }
    let src = find(&archive, name)
        .ok_or_else(|| CuratorError::Refused(format!("skill '{name}' not found in archive")))?;
    let dest = root.join(name);
    if dest.exists() {
        return Err(CuratorError::Refused(format!(
            "destination already exists: {}",
            dest.display()
        )));
    }
    std::fs::rename(&src, &dest).map_err(|e| CuratorError::io(&src, e))?;
    Usage::new(root).set_state(name, "active", &iso_at(now));
    Ok(dest)
}

/// The names of the archived skills (the folders at the top of `.archive/`).
pub fn archived_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(".archive"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The archived copy of `name`: a folder of that name anywhere below `.archive/` (older
/// layouts nested categories), else the newest `<name>-YYYYMMDDHHMMSS` (only that exact
/// shape, so restoring `git` never takes an archived `git-helpers`).
fn find(archive: &Path, name: &str) -> Option<PathBuf> {
    let mut dirs = Vec::new();
    walk(archive, 0, &mut dirs);
    if let Some(exact) = dirs
        .iter()
        .filter(|d| d.file_name().is_some_and(|n| n == name))
        .min_by_key(|d| d.components().count())
    {
        return Some(exact.clone());
    }
    let prefix = format!("{name}-");
    let mut stamped: Vec<&PathBuf> = dirs
        .iter()
        .filter(|d| {
            d.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(&prefix))
                .is_some_and(|s| s.len() == 14 && s.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    stamped.sort_by_key(|d| d.file_name().map(|n| n.to_os_string()));
    stamped.last().map(|d| (*d).clone())
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 4 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(path.clone());
            walk(&path, depth + 1, out);
        }
    }
}

/// `YYYYMMDDHHMMSS` in UTC.
fn stamp(now: f64) -> String {
    iso_at(now)
        .chars()
        .filter(char::is_ascii_digit)
        .take(14)
        .collect()
}
