//! Model markdown as Signal text: Signal renders no markdown but carries styles beside the
//! text (`bodyRanges`, which signal-cli's `send` takes as `textStyle` entries
//! `start:length:STYLE`, counted in UTF-16 units). As the Python Hermes's `signal_format`:
//! `**bold**`/`__bold__` and headings BOLD, `*italic*`/`_italic_` ITALIC, `~~strike~~`
//! STRIKETHROUGH, code spans and fenced blocks MONOSPACE (fences dropped), list markers as
//! `•`, runs of blank lines collapsed; also `||spoiler||` SPOILER and links as
//! `label (url)`. Inline parsing is the shared, bounded [`inline`](crate::platform::markdown)
//! parser, so hostile input stays cheap.

use crate::platform::markdown::{Inline, fence_info, inline_parse};

/// A style over a range of the plain text, in UTF-16 units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    start: usize,
    len: usize,
    style: &'static str,
}

struct Out {
    text: String,
    /// `text`'s length in UTF-16 units.
    units: usize,
    ranges: Vec<Range>,
}

impl Out {
    fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.units += s.encode_utf16().count();
    }

    fn styled(&mut self, style: &'static str, f: impl FnOnce(&mut Out)) {
        let start = self.units;
        f(self);
        if self.units > start {
            self.ranges.push(Range {
                start,
                len: self.units - start,
                style,
            });
        }
    }

    fn inline(&mut self, items: &[Inline]) {
        for item in items {
            match item {
                Inline::Text(t) => self.push(t),
                Inline::Code(t) => self.styled("MONOSPACE", |o| o.push(t)),
                Inline::Bold(c) => self.styled("BOLD", |o| o.inline(c)),
                Inline::Italic(c) => self.styled("ITALIC", |o| o.inline(c)),
                Inline::Strike(c) => self.styled("STRIKETHROUGH", |o| o.inline(c)),
                Inline::Spoiler(c) => self.styled("SPOILER", |o| o.inline(c)),
                Inline::AutoLink(u) => self.push(u),
                Inline::Entity(e) => {
                    self.push("<");
                    self.push(e);
                    self.push(">");
                }
                Inline::Link { label, url } => {
                    self.inline(label);
                    self.push(" (");
                    self.push(url);
                    self.push(")");
                }
            }
        }
    }
}

/// `- item`, `* item`, `+ item` (up to three spaces in) as `• item`.
fn bullet(line: &str) -> Option<(&str, &str)> {
    let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let mut chars = rest.chars();
    let marker = chars.next()?;
    let after = chars.as_str();
    (matches!(marker, '-' | '*' | '+') && after.starts_with([' ', '\t']))
        .then(|| (&line[..indent], after.trim_start_matches([' ', '\t'])))
}

/// A heading's text (`# Title` … `###### Title`).
fn heading(line: &str) -> Option<&str> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &line[hashes..];
    rest.starts_with([' ', '\t']).then(|| rest.trim())
}

/// Markdown into Signal's plain text and `textStyle` entries.
pub(crate) fn to_signal(markdown: &str) -> (String, Vec<String>) {
    let mut out = Out {
        text: String::with_capacity(markdown.len()),
        units: 0,
        ranges: Vec::new(),
    };
    let mut blank_run = 0;
    let mut in_fence = false;
    let mut fence_start = 0;
    let mut first = true;
    for line in markdown.trim().lines() {
        if fence_info(line).is_some() {
            if in_fence {
                // Trailing newline of the block is not part of the style.
                if out.text.ends_with('\n') {
                    out.text.pop();
                    out.units -= 1;
                }
                if out.units > fence_start {
                    out.ranges.push(Range {
                        start: fence_start,
                        len: out.units - fence_start,
                        style: "MONOSPACE",
                    });
                }
                in_fence = false;
                first = false;
            } else {
                if !first {
                    out.push("\n");
                }
                in_fence = true;
                fence_start = out.units;
            }
            continue;
        }
        if in_fence {
            out.push(line);
            out.push("\n");
            continue;
        }
        if line.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        if !first {
            out.push("\n");
        }
        first = false;
        if let Some(title) = heading(line) {
            out.styled("BOLD", |o| o.inline(&inline_parse(title)));
        } else if let Some((indent, item)) = bullet(line) {
            out.push(indent);
            out.push("• ");
            out.inline(&inline_parse(item));
        } else {
            out.inline(&inline_parse(line));
        }
    }
    // An unclosed fence: its text stays, monospaced to the end.
    if in_fence {
        let text = out.text.trim_end_matches('\n').to_string();
        out.units = text.encode_utf16().count();
        out.text = text;
        if out.units > fence_start {
            out.ranges.push(Range {
                start: fence_start,
                len: out.units - fence_start,
                style: "MONOSPACE",
            });
        }
    }
    out.ranges.sort_by_key(|r| (r.start, r.len));
    let styles = out
        .ranges
        .iter()
        .map(|r| format!("{}:{}:{}", r.start, r.len, r.style))
        .collect();
    (out.text, styles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_text_with_styles() {
        let (text, styles) = to_signal("# Title\n\nSome **bold** and *it* and `x`.\n- one\n- two");
        assert_eq!(text, "Title\n\nSome bold and it and x.\n• one\n• two");
        assert_eq!(
            styles,
            vec!["0:5:BOLD", "12:4:BOLD", "21:2:ITALIC", "28:1:MONOSPACE"]
        );
    }

    #[test]
    fn code_blocks_and_utf16_offsets() {
        let (text, styles) = to_signal("😀 **b**\n```rust\nfn x() {}\n- not a bullet\n```\nend");
        assert_eq!(text, "😀 b\nfn x() {}\n- not a bullet\nend");
        // The emoji is two UTF-16 units.
        assert_eq!(styles, vec!["3:1:BOLD", "5:24:MONOSPACE"]);
        let (text, styles) = to_signal("plain text, nothing else\n\n\n\nmore");
        assert_eq!(text, "plain text, nothing else\n\nmore");
        assert!(styles.is_empty());
        let (text, _) = to_signal("see [docs](https://x.y/z) ~~old~~");
        assert_eq!(text, "see docs (https://x.y/z) old");
    }

    #[test]
    fn hostile_input_stays_bounded() {
        let nasty = "*_~`|".repeat(20_000);
        let (text, _) = to_signal(&nasty);
        assert!(!text.is_empty());
        let (text, styles) = to_signal("```\nunclosed");
        assert_eq!(text, "unclosed");
        assert_eq!(styles, vec!["0:8:MONOSPACE"]);
    }
}
