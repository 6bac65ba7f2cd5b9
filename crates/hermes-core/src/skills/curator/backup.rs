//! The snapshot taken before a curator pass changes anything, as the Python Hermes's
//! `curator_backup` takes it: `skills/.curator_backups/<id>/skills.tar.gz` (the skills folder
//! without `.curator_backups/` and `.hub/`, paths relative to it, symlinks kept as links) with
//! a `manifest.json` (`id`, `reason`, `created_at`, `archive`, `archive_bytes`,
//! `skill_files`, `cron_jobs`) and a copy of `cron/jobs.json` as `cron-jobs.json` when there is
//! one. The id is the UTC time `2026-05-01T13-05-42Z` (`-01`, `-02`, ... when taken twice in a
//! second); only the newest `curator.backup.keep` snapshots are kept.

use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;
use serde_json::{Value, json};

use super::CuratorError;
use crate::skills::usage::iso_at;

/// Top-level entries of the skills folder never put in a snapshot.
const EXCLUDED: &[&str] = &[".curator_backups", ".hub"];

pub fn backups_dir(root: &Path) -> PathBuf {
    root.join(".curator_backups")
}

/// Snapshots `root` (the skills folder of `home`) at `now` and prunes old snapshots down to
/// `keep`. Returns the snapshot's folder; a partial snapshot is removed on failure.
pub fn snapshot(
    root: &Path,
    home: &Path,
    reason: &str,
    keep: usize,
    now: f64,
) -> Result<PathBuf, CuratorError> {
    let backups = backups_dir(root);
    std::fs::create_dir_all(&backups).map_err(|e| CuratorError::io(&backups, e))?;
    let base = snapshot_id(now);
    let mut id = base.clone();
    let mut n = 1;
    while backups.join(&id).exists() {
        id = format!("{base}-{n:02}");
        n += 1;
    }
    let dest = backups.join(&id);
    std::fs::create_dir(&dest).map_err(|e| CuratorError::io(&dest, e))?;
    let result = write_snapshot(root, home, &dest, &id, reason, now);
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&dest);
        return Err(e);
    }
    prune(&backups, keep);
    Ok(dest)
}

fn write_snapshot(
    root: &Path,
    home: &Path,
    dest: &Path,
    id: &str,
    reason: &str,
    now: f64,
) -> Result<(), CuratorError> {
    let archive = dest.join("skills.tar.gz");
    let io = |e: std::io::Error| CuratorError::io(&archive, e);
    let file = std::fs::File::create(&archive).map_err(io)?;
    let mut tar = tar::Builder::new(GzEncoder::new(file, Compression::new(6)));
    tar.follow_symlinks(false);
    let mut entries: Vec<_> = std::fs::read_dir(root)
        .map_err(|e| CuratorError::io(root, e))?
        .flatten()
        .filter(|e| !EXCLUDED.iter().any(|x| e.file_name() == *x))
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            tar.append_dir_all(entry.file_name(), &path).map_err(io)?;
        } else {
            tar.append_path_with_name(&path, entry.file_name())
                .map_err(io)?;
        }
    }
    tar.into_inner().and_then(|gz| gz.finish()).map_err(io)?;
    let archive_bytes = std::fs::metadata(&archive).map_err(io)?.len();

    let mut cron = json!({"backed_up": false, "jobs_count": 0});
    match std::fs::read_to_string(home.join("cron").join("jobs.json")) {
        Ok(raw) => {
            let raw = raw.trim_start_matches('\u{feff}');
            let jobs = match serde_json::from_str::<Value>(raw) {
                Ok(Value::Object(o)) => o.get("jobs").and_then(Value::as_array).map(Vec::len),
                Ok(Value::Array(a)) => Some(a.len()),
                _ => {
                    cron["parse_warning"] = json!("jobs.json was not valid JSON at snapshot time");
                    None
                }
            };
            let copy = dest.join("cron-jobs.json");
            std::fs::write(&copy, raw).map_err(|e| CuratorError::io(&copy, e))?;
            cron["backed_up"] = json!(true);
            cron["jobs_count"] = json!(jobs.unwrap_or(0));
        }
        Err(_) => cron["reason"] = json!("no cron/jobs.json present"),
    }

    let manifest = json!({
        "id": id,
        "reason": reason,
        "created_at": iso_at(now),
        "archive": "skills.tar.gz",
        "archive_bytes": archive_bytes,
        "skill_files": count_skill_files(root, 0),
        "cron_jobs": cron,
    });
    let path = dest.join("manifest.json");
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| CuratorError::io(&path, std::io::Error::other(e)))?;
    std::fs::write(&path, text).map_err(|e| CuratorError::io(&path, e))
}

/// `2026-05-01T13-05-42Z`: the UTC time without fractions, colons made dashes.
fn snapshot_id(now: f64) -> String {
    let iso = iso_at(now);
    format!("{}Z", iso[..19].replace(':', "-"))
}

/// Whether `name` has the shape of a snapshot id.
fn is_snapshot_id(name: &str) -> bool {
    let b = name.as_bytes();
    let shape = b"dddd-dd-ddTdd-dd-ddZ";
    let head_ok = b.len() >= shape.len()
        && shape.iter().zip(b).all(|(s, c)| match s {
            b'd' => c.is_ascii_digit(),
            s => s == c,
        });
    let tail = &b[shape.len().min(b.len())..];
    head_ok
        && (tail.is_empty()
            || (tail.len() == 3 && tail[0] == b'-' && tail[1..].iter().all(u8::is_ascii_digit)))
}

/// Removes all but the newest `keep` snapshots, and any leftover rollback staging folder.
fn prune(backups: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(backups) else {
        return;
    };
    let mut ids = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !entry.path().is_dir() {
            continue;
        }
        if name.starts_with(".rollback-staging-") {
            let _ = std::fs::remove_dir_all(entry.path());
        } else if is_snapshot_id(&name) {
            ids.push(name);
        }
    }
    ids.sort_by(|a, b| b.cmp(a));
    for old in ids.iter().skip(keep.max(1)) {
        let _ = std::fs::remove_dir_all(backups.join(old));
    }
}

/// `SKILL.md` files below `dir`, outside dot-folders.
fn count_skill_files(dir: &Path, depth: usize) -> usize {
    if depth > 8 {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let name = e.file_name();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if name.to_string_lossy().starts_with('.') {
                    0
                } else {
                    count_skill_files(&e.path(), depth + 1)
                }
            } else {
                usize::from(name == "SKILL.md")
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_hold_the_skills_folder_and_rotate() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path();
        let root = home.join("skills");
        std::fs::create_dir_all(root.join("cat/one")).unwrap();
        std::fs::write(root.join("cat/one/SKILL.md"), "---\nname: one\n---\n").unwrap();
        std::fs::write(root.join(".usage.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join(".hub")).unwrap();
        std::fs::write(root.join(".hub/lock.json"), "{}").unwrap();
        std::fs::create_dir_all(home.join("cron")).unwrap();
        std::fs::write(home.join("cron/jobs.json"), r#"{"jobs": [{}, {}]}"#).unwrap();
        let now = 1_777_640_742.5;
        let first = snapshot(&root, home, "pre-curator-run", 2, now).unwrap();
        assert_eq!(first, root.join(".curator_backups/2026-05-01T13-05-42Z"));
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(first.join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(manifest["id"], "2026-05-01T13-05-42Z");
        assert_eq!(manifest["reason"], "pre-curator-run");
        assert_eq!(manifest["skill_files"], 1);
        assert_eq!(
            manifest["cron_jobs"],
            json!({"backed_up": true, "jobs_count": 2})
        );
        let gz = std::fs::File::open(first.join("skills.tar.gz")).unwrap();
        let mut names: Vec<String> = tar::Archive::new(flate2::read::GzDecoder::new(gz))
            .entries()
            .unwrap()
            .map(|e| {
                let path = e.unwrap().path().unwrap().display().to_string();
                path.trim_end_matches('/').to_string()
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            [".usage.json", "cat", "cat/one", "cat/one/SKILL.md"],
            "no .hub, no backups"
        );
        let second = snapshot(&root, home, "r", 2, now).unwrap();
        assert!(second.ends_with("2026-05-01T13-05-42Z-01"));
        snapshot(&root, home, "r", 2, now + 60.0).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(backups_dir(&root))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["2026-05-01T13-05-42Z-01", "2026-05-01T13-06-42Z"]);
        assert!(is_snapshot_id("2026-05-01T13-05-42Z"));
        assert!(!is_snapshot_id("2026-05-01T13-05-42Z-1"));
        assert!(!is_snapshot_id("notes"));
    }
}
