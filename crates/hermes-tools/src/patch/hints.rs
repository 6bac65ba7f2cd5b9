//! What the model is told when its text is not found, or found more than once: the line
//! numbers of every match, and the lines of the file closest to what it sent, numbered, so the
//! next attempt can copy the real text.

use super::fuzzy::{Located, line_of};
use super::similarity;

/// Snippets shown at most.
const MAX_SNIPPETS: usize = 3;
/// Lines of context around a snippet.
const AROUND: usize = 2;

/// "matches N places (lines a, b, c)" with the first snippets.
pub fn ambiguous(text: &str, found: &Located) -> String {
    let lines: Vec<usize> = found
        .ranges
        .iter()
        .map(|&(s, _)| line_of(text, s))
        .collect();
    let listed: Vec<String> = lines.iter().map(usize::to_string).collect();
    let all: Vec<&str> = text.split('\n').collect();
    let snippets: Vec<String> = found
        .ranges
        .iter()
        .take(MAX_SNIPPETS)
        .map(|&(s, e)| {
            let (first, last) = (line_of(text, s), line_of(text, e));
            numbered(&all, first.saturating_sub(1 + AROUND), last + AROUND)
        })
        .collect();
    format!(
        "the text matches {} places (lines {}); include more surrounding lines so it matches exactly one:\n{}",
        lines.len(),
        listed.join(", "),
        snippets.join("\n---\n")
    )
}

/// "\nClosest lines in the file:" and numbered snippets, or "" when nothing is close.
pub fn closest(text: &str, wanted: &str) -> String {
    let Some(anchor) = wanted.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return String::new();
    };
    let span = wanted.lines().count().max(1);
    let all: Vec<&str> = text.split('\n').collect();
    let mut scored: Vec<(f64, usize)> = all
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (similarity(anchor, l.trim()), i))
        .filter(|(score, _)| *score > 0.3)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut shown: Vec<(usize, usize)> = Vec::new();
    for (_, i) in scored {
        if shown.len() == MAX_SNIPPETS {
            break;
        }
        let range = (i.saturating_sub(AROUND), (i + span + AROUND).min(all.len()));
        if shown.iter().all(|r| range.1 <= r.0 || range.0 >= r.1) {
            shown.push(range);
        }
    }
    if shown.is_empty() {
        return String::new();
    }
    let snippets: Vec<String> = shown.iter().map(|&(a, b)| numbered(&all, a, b)).collect();
    format!(" Closest lines in the file:\n{}", snippets.join("\n---\n"))
}

/// Lines `from..to` (0-based, end exclusive) as `  12| text`.
fn numbered(lines: &[&str], from: usize, to: usize) -> String {
    let to = to.min(lines.len());
    (from.min(to)..to)
        .map(|i| format!("{:>5}| {}", i + 1, lines[i]))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_lines_are_numbered() {
        let text = "fn main() {\n    let total = compute(1);\n    println!(\"{total}\");\n}\n";
        let hint = closest(text, "let totl = compute(2);");
        assert!(
            hint.contains("    2|     let total = compute(1);"),
            "{hint}"
        );
        assert_eq!(closest(text, "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"), "");
    }
}
