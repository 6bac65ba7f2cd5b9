//! The on-disk format of `MEMORY.md` and `USER.md`, byte-compatible with the Python Hermes:
//! entries joined by `\n§\n` (a line holding only `§`), each entry trimmed, no trailing
//! newline, an empty store written as an empty file. Reading splits on the same separator,
//! trims entries, drops empty ones and keeps the first of exact duplicates. Sizes are counted
//! in characters (Unicode scalar values), as the reference counts them.

use std::path::{Path, PathBuf};

/// Between two entries.
pub const SEPARATOR: &str = "\n§\n";

/// Splits a file's text into entries.
pub fn parse(text: &str) -> Vec<String> {
    let mut entries: Vec<String> = Vec::new();
    for raw in text.split(SEPARATOR) {
        let entry = raw.trim();
        if !entry.is_empty() && !entries.iter().any(|e| e == entry) {
            entries.push(entry.to_string());
        }
    }
    entries
}

/// The file text for `entries`.
pub fn serialize(entries: &[String]) -> String {
    entries.join(SEPARATOR)
}

/// Characters the entries take in the file (what the limits count).
pub fn char_count(entries: &[String]) -> usize {
    if entries.is_empty() {
        return 0;
    }
    entries.iter().map(|e| e.chars().count()).sum::<usize>()
        + (entries.len() - 1) * SEPARATOR.chars().count()
}

/// Whether `content` holds a line that is only `§`: written as one entry it would read back
/// as two.
pub fn contains_separator_line(content: &str) -> bool {
    content.lines().any(|l| l.trim_end_matches('\r') == "§")
}

/// Reads a memory file: a missing file is an empty store; unreadable or non-UTF-8 content is
/// an error (writing over it would destroy it).
pub fn read(path: &Path) -> std::io::Result<Vec<String>> {
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Ok(parse(&text)),
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is not valid UTF-8", path.display()),
            )),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Writes entries atomically. A symlinked memory file (dotfiles setups) is written through
/// the link so the link survives.
pub fn write(path: &Path, entries: &[String]) -> std::io::Result<()> {
    let target: PathBuf = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(path)?,
        _ => path.to_path_buf(),
    };
    hermes_config::atomic_write(&target, serialize(entries).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_serialize_round_trip() {
        let text = "User prefers tabs\n§\nProject uses\nmultiline entries ✓\n§\nlast";
        let entries = parse(text);
        assert_eq!(
            entries,
            [
                "User prefers tabs",
                "Project uses\nmultiline entries ✓",
                "last"
            ]
        );
        assert_eq!(serialize(&entries), text);
    }

    #[test]
    fn parse_trims_drops_empty_and_duplicates() {
        let entries = parse("  a \n§\n\n§\nb\n§\na\n");
        assert_eq!(entries, ["a", "b"]);
        assert!(parse("").is_empty());
        assert!(parse("  \n ").is_empty());
    }

    #[test]
    fn a_section_sign_inside_text_is_not_a_separator() {
        let entries = parse("costs 5 § per unit\n§\nnext");
        assert_eq!(entries, ["costs 5 § per unit", "next"]);
        assert!(!contains_separator_line("costs 5 § per unit"));
        assert!(contains_separator_line("a\n§\nb"));
    }

    #[test]
    fn sizes_count_characters_and_separators() {
        let entries = vec!["é".to_string(), "ab".to_string()];
        assert_eq!(char_count(&entries), 1 + 3 + 2);
        assert_eq!(char_count(&[]), 0);
        assert_eq!(serialize(&entries).chars().count(), char_count(&entries));
    }

    #[test]
    fn missing_file_is_empty_and_bad_utf8_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(&dir.path().join("MEMORY.md")).unwrap().is_empty());
        let bad = dir.path().join("bad.md");
        std::fs::write(&bad, [0xff, 0xfe, 0x00]).unwrap();
        assert!(read(&bad).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn writes_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.md");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("MEMORY.md");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write(&link, &["new".to_string()]).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    }
}
