//! What `hermes skills update` shows before it replaces a skill: a unified diff (three lines
//! of context) of every text file that changed between the installed copy and the fetched
//! one, and one line for each added, removed or binary file. Bounded: a diff longer than
//! [`MAX_DIFF_LINES`] is cut with a note.

use std::collections::{BTreeMap, BTreeSet};

use similar::TextDiff;

/// The most lines a diff shows.
pub const MAX_DIFF_LINES: usize = 2_000;

/// The unified diff from `old` to `new` (relative path → bytes); empty when they are equal.
pub fn unified(old: &BTreeMap<String, Vec<u8>>, new: &BTreeMap<String, Vec<u8>>) -> String {
    let paths: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut out = String::new();
    for path in paths {
        let (a, b) = (old.get(path), new.get(path));
        if a == b {
            continue;
        }
        match (text(a), text(b)) {
            (Some(Some(a)), Some(Some(b))) => {
                let diff = TextDiff::from_lines(a, b);
                out.push_str(
                    &diff
                        .unified_diff()
                        .context_radius(3)
                        .header(&format!("a/{path}"), &format!("b/{path}"))
                        .to_string(),
                );
            }
            (None, Some(Some(b))) => {
                out.push_str(&format!("--- /dev/null\n+++ b/{path}\n"));
                out.push_str(&format!("@@ -0,0 +1,{} @@\n", b.lines().count()));
                for l in b.lines() {
                    out.push_str(&format!("+{l}\n"));
                }
            }
            (Some(Some(_)), None) => out.push_str(&format!("deleted: {path}\n")),
            (None, _) => out.push_str(&format!("added (binary): {path}\n")),
            (_, None) => out.push_str(&format!("deleted: {path}\n")),
            _ => out.push_str(&format!("changed (binary): {path}\n")),
        }
    }
    let lines: Vec<&str> = out.lines().collect();
    if lines.len() > MAX_DIFF_LINES {
        let mut cut = lines[..MAX_DIFF_LINES].join("\n");
        cut.push_str(&format!(
            "\n... ({} more lines of diff not shown)\n",
            lines.len() - MAX_DIFF_LINES
        ));
        return cut;
    }
    out
}

/// `None` for a missing file, `Some(None)` for a binary one.
fn text(bytes: Option<&Vec<u8>>) -> Option<Option<&str>> {
    bytes.map(|b| std::str::from_utf8(b).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn changed_added_and_removed_files_are_shown() {
        let old = files(&[("SKILL.md", "a\nb\nc\n"), ("gone.txt", "x\n")]);
        let new = files(&[("SKILL.md", "a\nB\nc\n"), ("new.sh", "echo\n")]);
        let d = unified(&old, &new);
        assert!(d.contains("--- a/SKILL.md\n+++ b/SKILL.md\n"), "{d}");
        assert!(d.contains("-b\n+B\n"), "{d}");
        assert!(d.contains("deleted: gone.txt"), "{d}");
        assert!(d.contains("+++ b/new.sh\n@@ -0,0 +1,1 @@\n+echo\n"), "{d}");
        assert!(unified(&old, &old).is_empty());
    }
}
