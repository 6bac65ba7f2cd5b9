//! Tool progress in the interactive chat: one line per finished call (the skin's prefix, the
//! tool's emoji, its name, the key argument, the duration and ✓ / ✗), and with `/verbose` the
//! call's full arguments and the start of its result under it.

use std::time::Duration;

use serde_json::Value;

use super::style::{Line, Span, Style, line_width, truncate, width};
use super::theme::Theme;

/// Name column width: most tool names fit, longer ones push the preview right.
const NAME_COLUMN: usize = 12;
/// Result lines shown by `/verbose`.
const RESULT_LINES: usize = 8;
/// Argument lines shown by `/verbose`.
const ARGUMENT_LINES: usize = 12;

/// `┊ 💻 terminal     echo hello  0.12s ✓`, cut to `columns`.
pub fn tool_line(
    theme: &Theme,
    name: &str,
    preview: &str,
    duration: Duration,
    ok: bool,
    columns: usize,
) -> Line {
    let skin = &theme.skin;
    let head = format!("{} {} ", skin.tool_prefix, skin.tool_emoji(name));
    let name_cell = format!("{name:<NAME_COLUMN$} ");
    let tail_duration = format!("  {:.2}s ", duration.as_secs_f64());
    let (mark, mark_style) = if ok {
        ("✓", theme.ok())
    } else {
        ("✗", theme.error().bold())
    };
    let fixed = width(&head) + width(&name_cell) + width(&tail_duration) + width(mark);
    let room = columns.saturating_sub(fixed).max(8);
    let preview = truncate(&preview.replace('\n', " "), room);
    let name_style = if ok { theme.label() } else { theme.error() };
    vec![
        Span::new(head, theme.dim()),
        Span::new(name_cell, name_style.bold()),
        Span::plain(preview),
        Span::new(tail_duration, theme.dim()),
        Span::new(mark, mark_style),
    ]
}

/// `/verbose`: the call's arguments, pretty-printed and indented under its line.
pub fn argument_lines(theme: &Theme, arguments: &str, columns: usize) -> Vec<Line> {
    // Sorted keys: the same display whatever serde_json's features.
    let pretty = serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|v| {
            serde_json::to_string_pretty(&hermes_protocol::json_order::sorted_keys(&v)).ok()
        })
        .unwrap_or_else(|| arguments.to_string());
    detail(theme, "args", &pretty, ARGUMENT_LINES, columns)
}

/// `/verbose`: the first lines of a tool's result.
pub fn result_lines(theme: &Theme, name: &str, content: &str, columns: usize) -> Vec<Line> {
    // Results are JSON; show strings unquoted so output reads as it was printed.
    let text = match serde_json::from_str::<Value>(content) {
        // Keys sorted, as the arguments: the same display whatever serde_json's features.
        Ok(Value::Object(map)) => map
            .iter()
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}: {s}"),
                other => format!("{k}: {other}"),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => content.to_string(),
    };
    detail(theme, &format!("{name} →"), &text, RESULT_LINES, columns)
}

fn detail(theme: &Theme, label: &str, text: &str, max_lines: usize, columns: usize) -> Vec<Line> {
    let indent = format!("{}   ", theme.skin.tool_prefix);
    let room = columns.saturating_sub(width(&indent) + 2).max(10);
    let all: Vec<&str> = text.lines().collect();
    let mut out: Vec<Line> = vec![vec![
        Span::new(indent.clone(), theme.dim()),
        Span::new(label.to_string(), theme.label().dim()),
    ]];
    for line in all.iter().take(max_lines) {
        out.push(vec![
            Span::new(format!("{indent}  "), theme.dim()),
            Span::new(truncate(line, room), Style::PLAIN.dim()),
        ]);
    }
    if all.len() > max_lines {
        out.push(vec![
            Span::new(format!("{indent}  "), theme.dim()),
            Span::new(
                format!("… {} more lines", all.len() - max_lines),
                Style::PLAIN.dim().italic(),
            ),
        ]);
    }
    out.retain(|l| line_width(l) > 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_line_fits_and_marks_failure() {
        let theme = Theme::plain();
        let ok = tool_line(
            &theme,
            "terminal",
            "echo hello",
            Duration::from_millis(120),
            true,
            80,
        );
        assert_eq!(theme.paint(&ok), "┊ 💻 terminal     echo hello  0.12s ✓");
        let long = "x".repeat(200);
        let failed = tool_line(&theme, "read_file", &long, Duration::ZERO, false, 60);
        assert!(line_width(&failed) <= 60);
        assert!(theme.paint(&failed).ends_with("0.00s ✗"));
    }
}
