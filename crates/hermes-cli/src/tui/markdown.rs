//! Streaming markdown: text arrives in arbitrary pieces and leaves as finished, styled lines.
//! A line is rendered once, when its newline arrives, and never redrawn, so the output cannot
//! flicker; only the state that spans lines is kept: an open code fence (with its highlighter)
//! and a table being collected (drawn whole when it ends, since column widths depend on every
//! row). A line containing `|` waits for the next one to learn whether it starts a table.
//!
//! Block forms: ATX headings, bullet / numbered / task lists (nested by indentation), block
//! quotes, thematic breaks, fenced code (``` or ~~~, highlighted), GFM tables, paragraphs.
//! Everything is wrapped to the width given for each line, so a resized terminal is honoured
//! from the next line on.

use super::highlight::Highlighter;
use super::inline;
use super::style::{Line, Span, Style};
use super::table;
use super::theme::Theme;
use super::wrap::wrap;

/// An open code fence.
struct Fence {
    marker: char,
    len: usize,
    highlighter: Highlighter,
}

/// The renderer's state between pieces of text.
#[derive(Default)]
pub struct MarkdownStream {
    /// Text after the last newline.
    partial: String,
    fence: Option<Fence>,
    /// Lines of a table (or of a line that may start one).
    table: Vec<String>,
    table_confirmed: bool,
}

impl MarkdownStream {
    pub fn new() -> MarkdownStream {
        MarkdownStream::default()
    }

    /// Adds streamed text; returns the lines it completed.
    pub fn push(&mut self, text: &str, theme: &Theme, width: usize) -> Vec<Line> {
        self.partial.push_str(text);
        let mut out = Vec::new();
        while let Some(nl) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=nl).collect();
            self.line(line.trim_end_matches(['\n', '\r']), theme, width, &mut out);
        }
        out
    }

    /// Ends the text: the last partial line, a pending table and an unclosed fence are drawn.
    pub fn finish(&mut self, theme: &Theme, width: usize) -> Vec<Line> {
        let mut out = Vec::new();
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.line(rest.trim_end_matches('\r'), theme, width, &mut out);
        }
        self.flush_table(theme, width, &mut out);
        if self.fence.take().is_some() {
            out.push(fence_bottom(theme));
        }
        out
    }

    /// Whether nothing is waiting to be drawn.
    #[cfg(test)]
    pub fn is_idle(&self) -> bool {
        self.partial.is_empty() && self.table.is_empty() && self.fence.is_none()
    }

    fn line(&mut self, raw: &str, theme: &Theme, width: usize, out: &mut Vec<Line>) {
        if let Some(fence) = &mut self.fence {
            if closes(raw, fence) {
                self.fence = None;
                out.push(fence_bottom(theme));
            } else {
                let mut line = vec![Span::new("│ ", theme.border().dim())];
                line.extend(fence.highlighter.line(&expand_tabs(raw)));
                out.push(line);
            }
            return;
        }
        if !self.table.is_empty() {
            if self.table_confirmed {
                if table::is_row(raw) {
                    self.table.push(raw.to_string());
                    return;
                }
            } else if let Some(aligns) = table::delimiter_row(raw)
                && aligns.len() == table::split_row(&self.table[0]).len()
            {
                self.table.push(raw.to_string());
                self.table_confirmed = true;
                return;
            }
            self.flush_table(theme, width, out);
        }
        if let Some((marker, len, info)) = opens(raw) {
            out.push(fence_top(info, theme));
            self.fence = Some(Fence {
                marker,
                len,
                highlighter: Highlighter::new(info),
            });
            return;
        }
        if table::is_row(raw) {
            self.table.push(raw.to_string());
            return;
        }
        out.extend(block(raw, theme, width));
    }

    /// Draws the collected table, or the lines as text when no delimiter row followed.
    fn flush_table(&mut self, theme: &Theme, width: usize, out: &mut Vec<Line>) {
        let lines = std::mem::take(&mut self.table);
        let confirmed = std::mem::replace(&mut self.table_confirmed, false);
        if !confirmed {
            for l in &lines {
                out.extend(block(l, theme, width));
            }
            return;
        }
        let header = table::split_row(&lines[0]);
        let aligns = table::delimiter_row(&lines[1]).unwrap_or_default();
        let rows: Vec<Vec<String>> = lines[2..].iter().map(|l| table::split_row(l)).collect();
        out.extend(table::render(&header, &aligns, &rows, width, theme));
    }
}

/// A fence opening: ``` or ~~~ (3 or more), possibly indented up to 3 spaces, with its info.
fn opens(raw: &str) -> Option<(char, usize, &str)> {
    let t = raw.trim_start();
    if raw.len() - t.len() > 3 {
        return None;
    }
    let marker = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = t.len() - t.trim_start_matches(marker).len();
    let info = t[len..].trim();
    (len >= 3 && !(marker == '`' && info.contains('`'))).then_some((marker, len, info))
}

fn closes(raw: &str, fence: &Fence) -> bool {
    let t = raw.trim();
    let len = t.len() - t.trim_start_matches(fence.marker).len();
    len >= fence.len && len == t.len()
}

fn fence_top(info: &str, theme: &Theme) -> Line {
    let mut line = vec![Span::new("╭─", theme.border().dim())];
    let lang = info.split_whitespace().next().unwrap_or_default();
    if !lang.is_empty() {
        line.push(Span::new(format!(" {lang}"), theme.label()));
    }
    line
}

fn fence_bottom(theme: &Theme) -> Line {
    vec![Span::new("╰─", theme.border().dim())]
}

fn expand_tabs(s: &str) -> String {
    s.replace('\t', "    ")
}

/// One line outside fences and tables.
fn block(raw: &str, theme: &Theme, width: usize) -> Vec<Line> {
    let raw = expand_tabs(raw);
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return vec![Vec::new()];
    }
    let indent = raw.len() - raw.trim_start().len();
    if let Some((level, text)) = heading(trimmed) {
        let style = theme.heading(level);
        return wrap(&inline::spans(text, style, theme), width, &[], &[]);
    }
    if is_break(trimmed) {
        return vec![vec![Span::new(
            "─".repeat(width.min(80)),
            theme.border().dim(),
        )]];
    }
    if trimmed.starts_with('>') {
        let mut depth = 0;
        let mut text = trimmed;
        while let Some(rest) = text.strip_prefix('>') {
            depth += 1;
            text = rest.trim_start();
        }
        let bar = vec![Span::new("│ ".repeat(depth), theme.border().dim())];
        let content = inline::spans(text, Style::PLAIN.italic(), theme);
        return wrap(&content, width, &bar, &bar);
    }
    let pad = " ".repeat(indent);
    if let Some((marker, text)) = list_item(trimmed) {
        let (bullet, style) = match marker {
            Marker::Bullet => (
                if indent >= 2 { "◦ " } else { "• " }.to_string(),
                theme.accent(),
            ),
            Marker::Task(true) => ("☑ ".to_string(), theme.ok()),
            Marker::Task(false) => ("☐ ".to_string(), theme.accent()),
            Marker::Number(n) => (format!("{n} "), theme.accent()),
        };
        let hang = " ".repeat(indent + super::style::width(&bullet));
        let first = vec![Span::plain(pad), Span::new(bullet, style)];
        let content = inline::spans(text, Style::PLAIN, theme);
        return wrap(&content, width, &first, &[Span::plain(hang)]);
    }
    let content = inline::spans(trimmed, Style::PLAIN, theme);
    wrap(
        &content,
        width,
        &[Span::plain(pad.clone())],
        &[Span::plain(pad)],
    )
}

fn heading(t: &str) -> Option<(usize, &str)> {
    let level = t.len() - t.trim_start_matches('#').len();
    let rest = &t[level..];
    if !(1..=6).contains(&level) || !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim_end()))
}

fn is_break(t: &str) -> bool {
    let compact: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    compact.len() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|m| compact.chars().all(|c| c == *m))
}

enum Marker {
    Bullet,
    Task(bool),
    /// `1.` or `1)`, kept as written.
    Number(String),
}

fn list_item(t: &str) -> Option<(Marker, &str)> {
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = t.strip_prefix(bullet) {
            for (box_, done) in [("[ ] ", false), ("[x] ", true), ("[X] ", true)] {
                if let Some(task) = rest.strip_prefix(box_) {
                    return Some((Marker::Task(done), task));
                }
            }
            return Some((Marker::Bullet, rest));
        }
    }
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if (1..=9).contains(&digits) {
        let rest = &t[digits..];
        if let Some(text) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some((Marker::Number(t[..digits + 1].to_string()), text));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(chunks: &[&str], width: usize) -> String {
        let theme = Theme::plain();
        let mut md = MarkdownStream::new();
        let mut lines = Vec::new();
        for c in chunks {
            lines.extend(md.push(c, &theme, width));
        }
        lines.extend(md.finish(&theme, width));
        theme.paint_lines(&lines)
    }

    #[test]
    fn lines_are_committed_only_when_complete() {
        let theme = Theme::plain();
        let mut md = MarkdownStream::new();
        assert!(md.push("Hello **wor", &theme, 80).is_empty());
        let lines = md.push("ld**\nnext", &theme, 80);
        assert_eq!(theme.paint_lines(&lines), "Hello world\n");
        assert!(!md.is_idle());
        assert_eq!(theme.paint_lines(&md.finish(&theme, 80)), "next\n");
        assert!(md.is_idle());
    }

    #[test]
    fn a_table_is_drawn_when_it_ends_and_a_lone_pipe_line_is_text() {
        let out = render(&["| a | b |\n|---|--:|\n| 1 | 22 |\n", "after\n"], 80);
        assert_eq!(
            out,
            "┌───┬────┐\n│ a │ b  │\n├───┼────┤\n│ 1 │ 22 │\n└───┴────┘\nafter\n"
        );
        assert_eq!(
            render(&["use a | b here\n", "fine\n"], 80),
            "use a | b here\nfine\n"
        );
    }

    #[test]
    fn code_fences_keep_their_content_verbatim() {
        let out = render(&["```\n# not a heading\n| not | table |\n```\ndone\n"], 80);
        assert_eq!(out, "╭─\n│ # not a heading\n│ | not | table |\n╰─\ndone\n");
        assert_eq!(render(&["~~~py\nx = 1\n"], 80), "╭─ py\n│ x = 1\n╰─\n");
    }

    #[test]
    fn blocks_and_wrapping() {
        let out = render(
            &[
                "# Title\n- one\n  - nested\n3. three\n- [x] done\n> quoted\n---\nplain text that wraps here\n",
            ],
            16,
        );
        assert_eq!(
            out,
            "Title\n• one\n  ◦ nested\n3. three\n☑ done\n│ quoted\n────────────────\nplain text that\nwraps here\n"
        );
    }
}
