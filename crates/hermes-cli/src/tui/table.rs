//! Markdown (GFM) tables: recognising rows and the `|---|:--:|` delimiter row, and drawing a
//! finished table with box-drawing borders, bold headers, column alignment, and cells wrapped
//! when the table would be wider than the terminal.

use super::inline;
use super::style::{Line, Span, Style, line_width};
use super::theme::Theme;
use super::wrap::wrap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Center,
    Right,
}

/// The cells of a row: outer pipes optional, `\|` is a literal pipe, cells trimmed.
pub fn split_row(line: &str) -> Vec<String> {
    let trimmed = line.trim();
    let inner = trimmed.strip_prefix('|').unwrap_or(trimmed);
    let inner = match inner.strip_suffix('|') {
        Some(s) if !s.ends_with('\\') => s,
        _ => inner,
    };
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    let mut in_code = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '`' => {
                in_code = !in_code;
                cell.push(c);
            }
            '|' if !in_code => cells.push(std::mem::take(&mut cell).trim().to_string()),
            _ => cell.push(c),
        }
    }
    cells.push(cell.trim().to_string());
    cells
}

/// The alignments of a delimiter row such as `|:---|:--:|---:|`, or `None` if it is not one.
pub fn delimiter_row(line: &str) -> Option<Vec<Align>> {
    if !line.contains('-') {
        return None;
    }
    split_row(line)
        .iter()
        .map(|cell| {
            let dashes = cell.trim_start_matches(':').trim_end_matches(':');
            if dashes.is_empty() || !dashes.chars().all(|c| c == '-') {
                return None;
            }
            Some(match (cell.starts_with(':'), cell.ends_with(':')) {
                (true, true) => Align::Center,
                (false, true) => Align::Right,
                _ => Align::Left,
            })
        })
        .collect()
}

/// A line that could be a table row.
pub fn is_row(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && t.contains('|')
}

/// Draws the table in at most `columns` columns.
pub fn render(
    header: &[String],
    aligns: &[Align],
    rows: &[Vec<String>],
    columns: usize,
    theme: &Theme,
) -> Vec<Line> {
    let count = header
        .len()
        .max(rows.iter().map(Vec::len).max().unwrap_or(0))
        .max(1);
    let cell = |row: &[String], i: usize| row.get(i).cloned().unwrap_or_default();
    let header_cells: Vec<Vec<Span>> = (0..count)
        .map(|i| inline::spans(&cell(header, i), Style::PLAIN.bold(), theme))
        .collect();
    let body: Vec<Vec<Vec<Span>>> = rows
        .iter()
        .map(|r| {
            (0..count)
                .map(|i| inline::spans(&cell(r, i), Style::PLAIN, theme))
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = (0..count)
        .map(|i| {
            std::iter::once(&header_cells[i])
                .chain(body.iter().map(|r| &r[i]))
                .map(|c| line_width(c))
                .max()
                .unwrap_or(0)
                .max(1)
        })
        .collect();
    // Borders take 3 columns per cell plus one; shrink the widest column until it fits.
    let budget = columns.saturating_sub(3 * count + 1).max(count * 3);
    while widths.iter().sum::<usize>() > budget {
        let Some((i, w)) = widths.iter().copied().enumerate().max_by_key(|(_, w)| *w) else {
            break;
        };
        if w <= 3 {
            break;
        }
        widths[i] = w - 1;
    }
    let border = theme.border();
    let rule = |left: &str, mid: &str, right: &str| -> Line {
        let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        vec![Span::new(
            format!("{left}{}{right}", parts.join(mid)),
            border,
        )]
    };
    let mut out = vec![rule("┌", "┬", "┐")];
    out.extend(row_lines(&header_cells, &widths, aligns, border, true));
    out.push(rule("├", "┼", "┤"));
    for r in &body {
        out.extend(row_lines(r, &widths, aligns, border, false));
    }
    out.push(rule("└", "┴", "┘"));
    out
}

/// One table row, as many lines as its tallest wrapped cell.
fn row_lines(
    cells: &[Vec<Span>],
    widths: &[usize],
    aligns: &[Align],
    border: Style,
    header: bool,
) -> Vec<Line> {
    let wrapped: Vec<Vec<Line>> = cells
        .iter()
        .zip(widths)
        .map(|(c, w)| wrap(c, *w, &[], &[]))
        .collect();
    let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
    (0..height)
        .map(|n| {
            let mut line = vec![Span::new("│", border)];
            for (i, w) in widths.iter().enumerate() {
                let content = wrapped[i].get(n).cloned().unwrap_or_default();
                let free = w.saturating_sub(line_width(&content));
                let align = if header {
                    Align::Left
                } else {
                    aligns.get(i).copied().unwrap_or(Align::Left)
                };
                let (left, right) = match align {
                    Align::Left => (0, free),
                    Align::Right => (free, 0),
                    Align::Center => (free / 2, free - free / 2),
                };
                line.push(Span::plain(" ".repeat(left + 1)));
                line.extend(content);
                line.push(Span::plain(" ".repeat(right + 1)));
                line.push(Span::new("│", border));
            }
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_delimiters() {
        assert_eq!(split_row("| a | b \\| c |"), vec!["a", "b | c"]);
        assert_eq!(split_row("a | `x|y` "), vec!["a", "`x|y`"]);
        assert_eq!(
            delimiter_row("|:--|:-:|--:|"),
            Some(vec![Align::Left, Align::Center, Align::Right])
        );
        assert_eq!(delimiter_row("| a | b |"), None);
        assert_eq!(delimiter_row("|---|x|"), None);
        assert!(is_row("a | b") && !is_row("plain"));
    }

    #[test]
    fn a_wide_table_fits_the_width() {
        let theme = Theme::plain();
        let header = vec!["name".to_string(), "description".to_string()];
        let rows = vec![vec![
            "x".to_string(),
            "a rather long description that cannot fit".to_string(),
        ]];
        let lines = render(&header, &[Align::Left, Align::Left], &rows, 30, &theme);
        for l in &lines {
            assert!(line_width(l) <= 30, "{}", theme.paint(l));
        }
        assert!(lines.len() > 5, "the long cell wrapped");
    }
}
