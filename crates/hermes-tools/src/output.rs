//! Shaping tool output for the model: head+tail truncation with a marker, ANSI escape removal,
//! and short previews of arguments for progress lines.

use serde_json::Value;

/// Default cap of one serialised tool result.
pub const DEFAULT_MAX_RESULT_CHARS: usize = 100_000;

/// Keeps the first `head_share` of `max` characters and the rest from the end, with a marker
/// saying how much was left out. Never splits a UTF-8 character.
pub fn truncate_middle(text: &str, max: usize, head_share: f64) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let head = ((max as f64) * head_share.clamp(0.0, 1.0)) as usize;
    let tail = max.saturating_sub(head);
    let omitted = total - head - tail;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - tail)
        .map_or(text.len(), |(i, _)| i);
    format!(
        "{}\n\n... [{omitted} of {total} characters omitted] ...\n\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

/// Removes terminal escape sequences (colours, cursor moves, titles) so the model never copies
/// them into files.
pub fn strip_ansi(text: &str) -> String {
    if !text.contains('\u{1b}') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            // CSI: parameters, then one final byte in @..~
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ESC \
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            // Two-character sequences (ESC c, ESC 7, charset selection ESC ( B, ...)
            Some('(' | ')') => {
                chars.next();
            }
            _ => {}
        }
    }
    out
}

/// The first string argument (or the whole argument object), shortened for one display line.
pub fn first_string_arg(args: &Value) -> String {
    let text = match args {
        Value::Object(map) => map
            .values()
            .find_map(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| args.to_string()),
        other => other.to_string(),
    };
    shorten_line(&text, 60)
}

/// One line of at most `max` characters, with an ellipsis when cut.
pub fn shorten_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    let multi = text.lines().nth(1).is_some();
    if line.chars().count() <= max && !multi {
        return line.to_string();
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_head_and_tail() {
        let text: String = (0..1000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let t = truncate_middle(&text, 100, 0.4);
        assert!(t.starts_with(&text[..40]));
        assert!(t.ends_with(&text[940..]));
        assert!(t.contains("[900 of 1000 characters omitted]"));
        assert_eq!(truncate_middle("short", 100, 0.4), "short");
        let wide = "é".repeat(50);
        assert!(truncate_middle(&wide, 10, 0.5).starts_with("ééééé\n"));
    }

    #[test]
    fn ansi_sequences_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[1;31mred\u{1b}[0m ok"), "red ok");
        assert_eq!(strip_ansi("\u{1b}]0;title\u{7}x"), "x");
        assert_eq!(strip_ansi("\u{1b}(Bplain"), "plain");
        assert_eq!(strip_ansi("trailing\u{1b}"), "trailing");
    }

    #[test]
    fn previews_are_one_short_line() {
        assert_eq!(
            first_string_arg(&serde_json::json!({"command": "ls -la"})),
            "ls -la"
        );
        assert_eq!(shorten_line("a\nb", 10), "a…");
        assert_eq!(shorten_line(&"x".repeat(100), 10).chars().count(), 10);
    }
}
