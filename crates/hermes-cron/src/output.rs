//! What a run leaves behind and whether its answer is delivered: the run's document in
//! `cron/output/<job id>/<YYYY-MM-DD_HH-MM-SS>.md` (the Python Hermes's layout; the newest 50
//! per job are kept, `cron.output_retention` to change it), and the `[SILENT]` convention: an
//! answer that is a silence marker (`[SILENT]`, `SILENT`, `NO_REPLY`), has one as its first or
//! last line, or starts with `[SILENT]`, is saved but not delivered.

use std::path::{Path, PathBuf};

use chrono::{DateTime, FixedOffset};

use crate::CronError;

/// Output files kept per job unless `cron.output_retention` says otherwise.
pub const DEFAULT_KEEP: usize = 50;

/// Whether an answer asks not to be delivered.
pub fn is_silent(text: &str) -> bool {
    let stripped = text.trim();
    if stripped.is_empty() {
        return false;
    }
    let is_token = |line: &str| {
        let words: Vec<String> = line.split_whitespace().map(str::to_uppercase).collect();
        matches!(
            words.join(" ").as_str(),
            "[SILENT]" | "SILENT" | "NO_REPLY" | "NO REPLY"
        )
    };
    if is_token(stripped) {
        return true;
    }
    let lines: Vec<&str> = stripped.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.first().is_some_and(|l| is_token(l)) || lines.last().is_some_and(|l| is_token(l)) {
        return true;
    }
    stripped.to_uppercase().starts_with("[SILENT]")
}

/// The folder of one job's outputs; ids that could leave `output/` are refused.
pub fn job_dir(output_root: &Path, job_id: &str) -> Result<PathBuf, CronError> {
    let id = job_id.trim();
    if id.is_empty() || id == "." || id == ".." || id.contains(['/', '\\']) {
        return Err(CronError::Invalid(format!(
            "invalid cron job id for an output path: {job_id:?}"
        )));
    }
    Ok(output_root.join(id))
}

/// Writes one run's document and prunes the oldest beyond `keep` (0: keep all).
pub fn save(
    output_root: &Path,
    job_id: &str,
    text: &str,
    at: &DateTime<FixedOffset>,
    keep: usize,
) -> Result<PathBuf, CronError> {
    let dir = job_dir(output_root, job_id)?;
    std::fs::create_dir_all(&dir).map_err(|e| CronError::io(&dir, e))?;
    crate::store::secure_dir(&dir);
    let path = dir.join(format!("{}.md", at.format("%Y-%m-%d_%H-%M-%S")));
    hermes_config::atomic_write(&path, text.as_bytes()).map_err(|e| CronError::io(&path, e))?;
    prune(&dir, keep);
    Ok(path)
}

/// The newest output of a job, if any.
pub fn latest(output_root: &Path, job_id: &str) -> Option<PathBuf> {
    let dir = job_dir(output_root, job_id).ok()?;
    let mut files = md_files(&dir);
    files.sort();
    files.pop()
}

fn md_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "md"))
                .collect()
        })
        .unwrap_or_default()
}

fn prune(dir: &Path, keep: usize) {
    if keep == 0 {
        return;
    }
    let mut files = md_files(dir);
    // Names are timestamps: the lexical order is the time order.
    files.sort();
    let excess = files.len().saturating_sub(keep);
    for old in files.into_iter().take(excess) {
        let _ = std::fs::remove_file(old);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn silence_markers_like_python() {
        for silent in [
            "[SILENT]",
            "  [silent]\n",
            "SILENT",
            "no_reply",
            "No  Reply",
            "2 deals filtered\n\n[SILENT]",
            "[SILENT]\nnothing new",
            "[SILENT] No changes detected",
        ] {
            assert!(is_silent(silent), "{silent:?}");
        }
        for loud in [
            "",
            "   ",
            "I considered staying [SILENT] but here is the summary",
            "Silent retry succeeded",
            "The report: SILENT mode was off",
        ] {
            assert!(!is_silent(loud), "{loud:?}");
        }
    }

    #[test]
    fn saves_under_the_job_and_keeps_the_newest() {
        let tmp = tempfile::tempdir().unwrap();
        let at = |s: &str| crate::clock::parse_instant(s).unwrap();
        let first = save(
            tmp.path(),
            "abc123",
            "one",
            &at("2026-02-03T10:00:00+01:00"),
            2,
        )
        .unwrap();
        assert_eq!(first, tmp.path().join("abc123/2026-02-03_10-00-00.md"));
        save(
            tmp.path(),
            "abc123",
            "two",
            &at("2026-02-03T11:00:00+01:00"),
            2,
        )
        .unwrap();
        let third = save(
            tmp.path(),
            "abc123",
            "three",
            &at("2026-02-03T12:00:00+01:00"),
            2,
        )
        .unwrap();
        assert!(!first.exists());
        assert_eq!(latest(tmp.path(), "abc123"), Some(third.clone()));
        assert_eq!(std::fs::read_to_string(third).unwrap(), "three");
        for bad in ["", "..", "a/b", "..\\x"] {
            assert!(save(tmp.path(), bad, "x", &at("2026-02-03T10:00:00Z"), 0).is_err());
        }
    }
}
