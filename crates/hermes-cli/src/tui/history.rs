//! The input history file, `$HERMES_HOME/.hermes_history`, in the format the Python Hermes
//! writes (prompt_toolkit's): each entry is a `# <timestamp>` line followed by its lines, each
//! prefixed with `+`, after a blank line. Sharing the file keeps a user's history across both.

use std::io::Write;
use std::path::Path;

/// Entries kept in the editor.
pub const MAX_ENTRIES: usize = 1000;

/// The entries of the file, oldest first (at most the last [`MAX_ENTRIES`]); a missing or
/// unreadable file is an empty history.
pub fn load(path: &Path) -> Vec<String> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut entries = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut finish = |current: &mut Vec<&str>| {
        if !current.is_empty() {
            entries.push(current.join("\n"));
            current.clear();
        }
    };
    for line in text.lines() {
        if let Some(content) = line.strip_prefix('+') {
            current.push(content);
        } else {
            finish(&mut current);
        }
    }
    finish(&mut current);
    let skip = entries.len().saturating_sub(MAX_ENTRIES);
    entries.split_off(skip)
}

/// Appends one entry; failures are ignored (history is a convenience, never a reason to stop).
pub fn append(path: &Path, entry: &str) {
    if entry.trim().is_empty() {
        return;
    }
    let mut text = format!("\n# {}\n", timestamp());
    for line in entry.lines() {
        text.push('+');
        text.push_str(line);
        text.push('\n');
    }
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
}

/// `2026-01-02 03:04:05.000000` (UTC).
fn timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = i64::try_from(now.as_secs()).unwrap_or(0);
    let (y, m, d) = hermes_llm::util::civil_from_days(secs.div_euclid(86_400));
    let day = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:06}",
        day / 3600,
        day % 3600 / 60,
        day % 60,
        now.subsec_micros()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_python_format_and_appends_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".hermes_history");
        std::fs::write(
            &path,
            "\n# 2025-01-01 10:00:00.000000\n+first\n\n# 2025-01-01 10:01:00.000000\n+two\n+lines\n",
        )
        .unwrap();
        assert_eq!(load(&path), vec!["first", "two\nlines"]);
        append(&path, "third");
        append(&path, "  ");
        assert_eq!(load(&path), vec!["first", "two\nlines", "third"]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("\n+third\n"), "{text}");
        assert!(text.contains("\n# 20"), "{text}");
        assert!(load(&dir.path().join("missing")).is_empty());
    }
}
