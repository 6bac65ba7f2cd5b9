//! Finding the text a model wants to replace when it did not copy it exactly. Strategies, from
//! strict to loose (the first that finds anything decides): exact, line-trimmed, whitespace
//! collapsed, indentation-flexible, escape-normalised (`\n` typed as two characters),
//! trimmed boundary lines, typographic-Unicode-normalised (smart quotes, dashes), block anchor
//! (first and last lines equal, the middle similar), and context-aware (most lines similar).
//! Matches are byte ranges of the original text; a replacement found by a loose strategy is
//! re-indented to the file's indentation.

use std::collections::HashMap;

use super::{PatchError, similarity};

/// Byte range of one match in the searched text.
pub type Range = (usize, usize);

/// Where a pattern was found, and by which strategy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub strategy: &'static str,
    pub ranges: Vec<Range>,
}

type Strategy = fn(&str, &str) -> Vec<Range>;

const STRATEGIES: &[(&str, Strategy)] = &[
    ("exact", exact),
    ("line_trimmed", line_trimmed),
    ("whitespace_normalized", whitespace_normalized),
    ("indentation_flexible", indentation_flexible),
    ("escape_normalized", escape_normalized),
    ("trimmed_boundary", trimmed_boundary),
    ("unicode_normalized", unicode_normalized),
    ("block_anchor", block_anchor),
    ("context_aware", context_aware),
];

/// The first strategy that finds `pattern` in `content`, with all its (non-overlapping)
/// matches.
pub fn locate(content: &str, pattern: &str) -> Option<Located> {
    if pattern.is_empty() {
        return None;
    }
    // A pattern of only blanks would "match" every empty line under the loose strategies:
    // only an exact occurrence means anything.
    let strategies = if pattern.trim().is_empty() {
        &STRATEGIES[..1]
    } else {
        STRATEGIES
    };
    strategies.iter().find_map(|(name, strategy)| {
        let mut ranges = strategy(content, pattern);
        // An empty span is never something the model meant to replace.
        ranges.retain(|&(start, end)| start < end);
        (!ranges.is_empty()).then_some(Located {
            strategy: name,
            ranges,
        })
    })
}

/// `content` with each range replaced by `new` (adjusted to the file when the match was not
/// exact). Ranges must be sorted and non-overlapping.
pub fn replace(content: &str, found: &Located, old: &str, new: &str) -> Result<String, PatchError> {
    let regions: String = found.ranges.iter().map(|&(s, e)| &content[s..e]).collect();
    let mut new = new.to_string();
    if found.strategy != "exact" {
        // `\'` typed in both strings but absent from the file is a transport artefact.
        for suspect in ["\\'", "\\\""] {
            if new.contains(suspect) && old.contains(suspect) && !regions.contains(suspect) {
                return Err(PatchError::EscapeMismatch { suspect });
            }
        }
    }
    // Models often send a tab as the two characters `\t`; convert only when the file region
    // really has tabs (so a literal "\t" in source code is left alone).
    if new.contains("\\t") && regions.contains('\t') {
        new = new.replace("\\t", "\t");
    }
    if new.contains("\\r") && regions.contains('\r') {
        new = new.replace("\\r", "\r");
    }
    let mut out = String::with_capacity(content.len() + new.len());
    let mut last = 0;
    for &(start, end) in &found.ranges {
        out.push_str(&content[last..start]);
        if found.strategy == "exact" {
            out.push_str(&new);
        } else {
            out.push_str(&reindent(&content[start..end], old, &new));
        }
        last = end;
    }
    out.push_str(&content[last..]);
    Ok(out)
}

/// 1-based line number of byte offset `at`.
pub fn line_of(content: &str, at: usize) -> usize {
    content[..at.min(content.len())].matches('\n').count() + 1
}

fn leading_ws(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Shifts `new` from the indentation of `old` to the indentation of the file region. When the
/// region and `old` have the same lines, each indentation level of `old` maps to the file's
/// (2-space nesting sent for a 4-space file lands at 4 spaces); other lines move by the
/// difference of the first lines.
fn reindent(region: &str, old: &str, new: &str) -> String {
    let first = |t: &str| {
        t.split('\n')
            .find(|l| !l.trim().is_empty())
            .map(|l| leading_ws(l).to_string())
    };
    let (Some(old_indent), Some(file_indent)) = (first(old), first(region)) else {
        return new.to_string();
    };
    let mut levels: HashMap<String, Option<String>> = HashMap::new();
    let (old_lines, file_lines): (Vec<&str>, Vec<&str>) =
        (old.split('\n').collect(), region.split('\n').collect());
    if old_lines.len() == file_lines.len() {
        for (o, f) in old_lines.iter().zip(&file_lines) {
            if o.trim().is_empty() || f.trim().is_empty() {
                continue;
            }
            let entry = levels
                .entry(leading_ws(o).to_string())
                .or_insert_with(|| Some(leading_ws(f).to_string()));
            if entry.as_deref() != Some(leading_ws(f)) {
                *entry = None; // inconsistent: fall back to the base shift
            }
        }
    }
    if old_indent == file_indent && levels.iter().all(|(o, f)| f.as_deref() == Some(o.as_str())) {
        return new.to_string();
    }
    new.split('\n')
        .map(|line| {
            let indent = leading_ws(line);
            if line.trim().is_empty() {
                line.to_string()
            } else if let Some(Some(mapped)) = levels.get(indent) {
                format!("{mapped}{}", &line[indent.len()..])
            } else if let Some(rest) = line.strip_prefix(old_indent.as_str()) {
                format!("{file_indent}{rest}")
            } else {
                format!("{file_indent}{}", line.trim_start_matches([' ', '\t']))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// ---- strategies ----

fn exact(content: &str, pattern: &str) -> Vec<Range> {
    content
        .match_indices(pattern)
        .map(|(i, m)| (i, i + m.len()))
        .collect()
}

/// Byte spans of the lines of `text` (split on `\n`, newline excluded).
fn line_spans(text: &str) -> Vec<Range> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        if b == b'\n' {
            spans.push((start, i));
            start = i + 1;
        }
    }
    spans.push((start, text.len()));
    spans
}

/// Windows of consecutive lines where `same(content_line, pattern_line, index)` holds for each.
fn match_lines(
    content: &str,
    pattern: &str,
    same: impl Fn(&str, &str, usize, usize) -> bool,
) -> Vec<Range> {
    let spans = line_spans(content);
    let wanted: Vec<&str> = pattern.split('\n').collect();
    let n = wanted.len();
    let mut out = Vec::new();
    let mut i = 0;
    while i + n <= spans.len() {
        let hit = (0..n).all(|k| {
            let (s, e) = spans[i + k];
            same(&content[s..e], wanted[k], k, n)
        });
        if hit {
            out.push((spans[i].0, spans[i + n - 1].1));
            i += n;
        } else {
            i += 1;
        }
    }
    out
}

fn line_trimmed(content: &str, pattern: &str) -> Vec<Range> {
    match_lines(content, pattern, |c, p, _, _| c.trim() == p.trim())
}

fn indentation_flexible(content: &str, pattern: &str) -> Vec<Range> {
    match_lines(content, pattern, |c, p, _, _| {
        c.trim_start() == p.trim_start()
    })
}

fn trimmed_boundary(content: &str, pattern: &str) -> Vec<Range> {
    match_lines(content, pattern, |c, p, k, n| {
        if k == 0 || k == n - 1 {
            c.trim() == p.trim()
        } else {
            c == p
        }
    })
}

fn escape_normalized(content: &str, pattern: &str) -> Vec<Range> {
    let unescaped = pattern
        .replace("\\n", "\n")
        .replace("\\t", "\t")
        .replace("\\r", "\r");
    if unescaped == pattern {
        return Vec::new();
    }
    exact(content, &unescaped)
}

/// A normalised copy of a text and, for each of its bytes, the offset of the original
/// character it came from (plus the original length at the end).
struct Normalized {
    text: String,
    origin: Vec<usize>,
}

impl Normalized {
    fn new(original: &str, mut map: impl FnMut(char, &mut String)) -> Normalized {
        let mut text = String::with_capacity(original.len());
        let mut origin = Vec::with_capacity(original.len() + 1);
        for (at, c) in original.char_indices() {
            let before = text.len();
            map(c, &mut text);
            origin.extend(std::iter::repeat_n(at, text.len() - before));
        }
        origin.push(original.len());
        Normalized { text, origin }
    }

    fn back(&self, ranges: Vec<Range>) -> Vec<Range> {
        ranges
            .into_iter()
            .map(|(s, e)| (self.origin[s], self.origin[e]))
            .filter(|(s, e)| s < e)
            .collect()
    }
}

fn collapse_blanks(text: &str) -> Normalized {
    let mut in_run = false;
    Normalized::new(text, |c, out| {
        if c == ' ' || c == '\t' {
            if !in_run {
                out.push(' ');
            }
            in_run = true;
        } else {
            in_run = false;
            out.push(c);
        }
    })
}

fn whitespace_normalized(content: &str, pattern: &str) -> Vec<Range> {
    let norm = collapse_blanks(content);
    let wanted = collapse_blanks(pattern).text;
    if wanted.trim().is_empty() {
        return Vec::new();
    }
    norm.back(exact(&norm.text, &wanted))
}

fn typographic(c: char, out: &mut String) {
    match c {
        '\u{201c}' | '\u{201d}' => out.push('"'),
        '\u{2018}' | '\u{2019}' => out.push('\''),
        '\u{2014}' => out.push_str("--"),
        '\u{2013}' => out.push('-'),
        '\u{2026}' => out.push_str("..."),
        '\u{00a0}' => out.push(' '),
        other => out.push(other),
    }
}

fn unicode_normalized(content: &str, pattern: &str) -> Vec<Range> {
    let norm = Normalized::new(content, typographic);
    let wanted = Normalized::new(pattern, typographic).text;
    if norm.text == content && wanted == pattern {
        return Vec::new();
    }
    let mut found = exact(&norm.text, &wanted);
    if found.is_empty() {
        found = line_trimmed(&norm.text, &wanted);
    }
    norm.back(found)
}

/// First and last lines equal (trimmed), the middle similar enough.
fn block_anchor(content: &str, pattern: &str) -> Vec<Range> {
    let wanted: Vec<&str> = pattern.split('\n').collect();
    let n = wanted.len();
    if n < 2 {
        return Vec::new();
    }
    let (first, last) = (wanted[0].trim(), wanted[n - 1].trim());
    if first.is_empty() && last.is_empty() {
        return Vec::new();
    }
    let spans = line_spans(content);
    let line = |i: usize| &content[spans[i].0..spans[i].1];
    let candidates: Vec<usize> = (0..spans.len().saturating_sub(n - 1))
        .filter(|&i| line(i).trim() == first && line(i + n - 1).trim() == last)
        .collect();
    let threshold = if candidates.len() == 1 { 0.5 } else { 0.7 };
    let middle_wanted = wanted[1..n - 1].join("\n");
    let mut out: Vec<Range> = Vec::new();
    for i in candidates {
        if out.last().is_some_and(|&(_, end)| spans[i].0 <= end) {
            continue;
        }
        let score = if n <= 2 {
            1.0
        } else {
            similarity(&content[spans[i + 1].0..spans[i + n - 2].1], &middle_wanted)
        };
        if score >= threshold {
            out.push((spans[i].0, spans[i + n - 1].1));
        }
    }
    out
}

/// Windows where at least half the lines are very similar (80 %). Only for patterns of three
/// lines or more: on one or two lines "similar" is too easily a different line.
fn context_aware(content: &str, pattern: &str) -> Vec<Range> {
    let wanted: Vec<&str> = pattern.split('\n').map(str::trim).collect();
    let n = wanted.len();
    if n < 3 {
        return Vec::new();
    }
    let spans = line_spans(content);
    let trimmed: Vec<&str> = spans.iter().map(|&(s, e)| content[s..e].trim()).collect();
    let needed = n.div_ceil(2);
    let mut out = Vec::new();
    let mut i = 0;
    while i + n <= spans.len() {
        let mut good = 0;
        for k in 0..n {
            if good + (n - k) < needed {
                break;
            }
            if similar_line(trimmed[i + k], wanted[k]) {
                good += 1;
            }
        }
        if good >= needed {
            out.push((spans[i].0, spans[i + n - 1].1));
            i += n;
        } else {
            i += 1;
        }
    }
    out
}

fn similar_line(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (la, lb) = (a.chars().count(), b.chars().count());
    let longest = la.max(lb);
    // The edit distance is at least the length difference: skip hopeless pairs cheaply.
    if longest == 0 || (la.abs_diff(lb) as f64) > 0.2 * longest as f64 {
        return false;
    }
    similarity(a, b) >= 0.8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(content: &str, pattern: &str) -> (&'static str, Vec<String>) {
        let l = locate(content, pattern).unwrap();
        (
            l.strategy,
            l.ranges
                .iter()
                .map(|&(s, e)| content[s..e].to_string())
                .collect(),
        )
    }

    #[test]
    fn strategies_in_order() {
        let file = "fn a() {\n    let x = 1;\n    call(x,   y);\n}\n";
        assert_eq!(
            found(file, "let x = 1;"),
            ("exact", vec!["let x = 1;".into()])
        );
        assert_eq!(
            found(file, "  let x = 1;  \n  call(x,   y);").0,
            "line_trimmed"
        );
        assert_eq!(
            found(file, "call(x, y);"),
            ("whitespace_normalized", vec!["call(x,   y);".into()])
        );
        assert_eq!(found(file, "let x = 1;\\n    call").0, "escape_normalized");
        let smart = "say “hi” — now\n";
        assert_eq!(
            found(smart, "say \"hi\" -- now"),
            ("unicode_normalized", vec!["say “hi” — now".into()])
        );
        let block = "start {\n  alpha();\n  beta();\n  gamma();\nend }\n";
        assert_eq!(
            found(block, "start {\n  alpha();\n  betta();\n  gamma();\nend }").0,
            "block_anchor"
        );
        assert_eq!(
            found(block, "strt {\n  alpha();\n  beta();\n  gama();\nnd }").0,
            "context_aware"
        );
        assert!(locate(block, "nothing like it").is_none());
    }

    /// Regression (found by the property test in CI): a pattern of blanks matched empty lines
    /// as zero-length ranges under the line-based strategies.
    #[test]
    fn blank_patterns_match_only_exactly() {
        assert_eq!(locate("\n\n \n\n\n", "  "), None);
        assert_eq!(found("a\n  \nb", "  "), ("exact", vec!["  ".into()]));
        for (content, pattern) in [("\n\n", "\n"), ("x\n\ny", " \n "), ("\t\n\n", "\t\n")] {
            if let Some(l) = locate(content, pattern) {
                assert!(
                    l.ranges.iter().all(|&(s, e)| s < e),
                    "{content:?} {pattern:?}"
                );
            }
        }
    }

    #[test]
    fn loose_matches_are_reindented() {
        let file = "class A:\n    def f(self):\n        return 1\n";
        let old = "def f(self):\n    return 1";
        let new = "def f(self):\n    return 2";
        let l = locate(file, old).unwrap();
        assert_eq!(l.strategy, "line_trimmed");
        assert_eq!(
            replace(file, &l, old, new).unwrap(),
            "class A:\n    def f(self):\n        return 2\n"
        );
    }

    #[test]
    fn escape_artefacts_are_refused_and_tabs_unescaped() {
        let file = "a()\nprint('x')\nb()\n";
        let old = "a()\nprint(\\'x\\')\nb()";
        let l = locate(file, old).unwrap();
        assert_eq!(l.strategy, "block_anchor");
        let e = replace(file, &l, old, "a()\nprint(\\'y\\')\nb()").unwrap_err();
        assert!(
            matches!(e, PatchError::EscapeMismatch { suspect: "\\'" }),
            "{e}"
        );
        assert!(e.to_string().contains("escaping mistake"), "{e}");
        let file = "x\n\tcall(a,  b)\n";
        let l = locate(file, "\tcall(a,  b)").unwrap();
        assert_eq!(
            replace(file, &l, "\tcall(a,  b)", "\\tcall(c)").unwrap(),
            "x\n\tcall(c)\n"
        );
        let l = locate(file, "call(a, b)").unwrap();
        assert_eq!(l.strategy, "whitespace_normalized");
        assert_eq!(
            replace(file, &l, "call(a, b)", "call(\\'b\\')").unwrap(),
            "x\n\tcall(\\'b\\')\n"
        );
    }
}
