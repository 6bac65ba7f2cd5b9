//! Word wrapping of styled text to a number of columns, with a prefix on the first line and
//! another on the lines after it (hanging indents for list items, gutters for quotes). Words
//! wider than a whole line are split by character; widths are display columns.

use unicode_width::UnicodeWidthChar;

use super::style::{Line, Span, line_width, width};

/// `content` wrapped so that every line, prefix included, fits in `columns`.
pub fn wrap(content: &[Span], columns: usize, first: &[Span], rest: &[Span]) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    let mut current: Line = first.to_vec();
    let mut used = line_width(first);
    let mut has_text = false;
    let new_line = |lines: &mut Vec<Line>, current: &mut Line, used: &mut usize| {
        lines.push(std::mem::replace(current, rest.to_vec()));
        *used = line_width(rest);
    };
    for (text, style, is_space) in tokens(content) {
        let w = width(&text);
        if is_space {
            // Spaces at a break are dropped; elsewhere they are kept.
            if used + w <= columns {
                push(&mut current, &text, style);
                used += w;
            } else {
                new_line(&mut lines, &mut current, &mut used);
                has_text = false;
            }
            continue;
        }
        if used + w > columns && has_text {
            trim_trailing_spaces(&mut current);
            new_line(&mut lines, &mut current, &mut used);
        }
        if used + w <= columns {
            push(&mut current, &text, style);
            used += w;
            has_text = true;
            continue;
        }
        // A word longer than a line: split it.
        for c in text.chars() {
            let cw = c.width().unwrap_or(0);
            if used + cw > columns && has_text {
                new_line(&mut lines, &mut current, &mut used);
            }
            push(&mut current, &c.to_string(), style);
            used += cw;
            has_text = true;
        }
    }
    trim_trailing_spaces(&mut current);
    lines.push(current);
    lines
}

/// Words and runs of spaces, each with its style (a word may span several styles only when
/// they touch, so a styled run is split at its own spaces).
fn tokens(content: &[Span]) -> Vec<(String, super::style::Style, bool)> {
    let mut out = Vec::new();
    for span in content {
        let mut word = String::new();
        let mut space = String::new();
        for c in span.text.chars() {
            if c == ' ' {
                if !word.is_empty() {
                    out.push((std::mem::take(&mut word), span.style, false));
                }
                space.push(c);
            } else {
                if !space.is_empty() {
                    out.push((std::mem::take(&mut space), span.style, true));
                }
                word.push(c);
            }
        }
        if !word.is_empty() {
            out.push((word, span.style, false));
        }
        if !space.is_empty() {
            out.push((space, span.style, true));
        }
    }
    out
}

fn push(line: &mut Line, text: &str, style: super::style::Style) {
    match line.last_mut() {
        Some(last) if last.style == style => last.text.push_str(text),
        _ => line.push(Span::new(text, style)),
    }
}

fn trim_trailing_spaces(line: &mut Line) {
    while let Some(last) = line.last_mut() {
        let trimmed = last.text.trim_end_matches(' ').len();
        if trimmed == 0 && !last.text.is_empty() {
            line.pop();
            continue;
        }
        last.text.truncate(trimmed);
        break;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::style::Style;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.iter().map(|s| s.text.as_str()).collect())
            .collect()
    }

    #[test]
    fn wraps_at_word_boundaries_with_hanging_indent() {
        let content = vec![Span::plain("the quick brown fox jumps over the lazy dog")];
        let lines = wrap(&content, 16, &[Span::plain("• ")], &[Span::plain("  ")]);
        assert_eq!(
            texts(&lines),
            vec![
                "• the quick",
                "  brown fox",
                "  jumps over the",
                "  lazy dog"
            ]
        );
        for l in &lines {
            assert!(line_width(l) <= 16);
        }
    }

    #[test]
    fn long_words_are_split_and_styles_kept() {
        let content = vec![
            Span::new("bold", Style::PLAIN.bold()),
            Span::plain(" abcdefghijklmnop"),
        ];
        let lines = wrap(&content, 8, &[], &[]);
        assert_eq!(texts(&lines), vec!["bold", "abcdefgh", "ijklmnop"]);
        assert!(lines[0][0].style.bold);
        assert_eq!(texts(&wrap(&[], 10, &[], &[])), vec![""]);
    }
}
