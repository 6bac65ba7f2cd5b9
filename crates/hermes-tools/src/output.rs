//! Shaping text: head+tail truncation with a marker, ANSI escape removal for tool output,
//! short previews of arguments for progress lines, and [`TerminalSanitizer`] /
//! [`terminal_safe`]: the one function through which model-provided text (answers, reasoning,
//! tool names and previews, tool output) passes before it reaches a terminal, so it can never
//! carry control sequences (OSC 52 clipboard writes, titles, cursor moves, clears, device
//! strings, raw escapes, C1 controls, bell, backspace and carriage-return overwrites).

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

/// What the sanitizer is in the middle of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Seq {
    #[default]
    Text,
    /// After ESC.
    Esc,
    /// ESC followed by intermediate bytes (`ESC ( B`): up to the final byte.
    EscIntermediate,
    /// CSI: parameters up to a final byte.
    Csi,
    /// OSC, DCS, SOS, PM, APC: a string up to BEL (OSC only) or ST (`ESC \`, U+009C).
    Str { osc: bool, saw_esc: bool },
}

/// Longest control sequence swallowed before giving up on it (a sequence that never ends
/// must not hide the rest of a long answer).
const MAX_SEQUENCE_CHARS: usize = 4096;

/// Removes terminal control sequences from streamed text. Pieces may split a sequence
/// anywhere: the state carries over, so `ESC ]52;c;` in one delta and its payload in the next
/// are both dropped. Newlines and tabs are kept; everything else below U+0020, DEL and the C1
/// controls (U+0080..U+009F) go.
#[derive(Debug, Clone, Default)]
pub struct TerminalSanitizer {
    seq: Seq,
    seq_len: usize,
}

impl TerminalSanitizer {
    pub fn new() -> TerminalSanitizer {
        TerminalSanitizer::default()
    }

    /// The displayable part of `text`, given what came before.
    pub fn push(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            self.feed(c, &mut out);
        }
        out
    }

    /// The stream ended: an unfinished sequence is dropped.
    pub fn finish(&mut self) {
        self.seq = Seq::Text;
        self.seq_len = 0;
    }

    fn enter(&mut self, seq: Seq) {
        self.seq = seq;
        self.seq_len = 0;
    }

    fn feed(&mut self, c: char, out: &mut String) {
        if self.seq != Seq::Text {
            self.seq_len += 1;
            if self.seq_len > MAX_SEQUENCE_CHARS {
                self.enter(Seq::Text);
            }
        }
        match self.seq {
            Seq::Text => match c {
                '\n' | '\t' => out.push(c),
                '\u{1b}' => self.enter(Seq::Esc),
                '\u{9b}' => self.enter(Seq::Csi),
                '\u{9d}' => self.enter(Seq::Str {
                    osc: true,
                    saw_esc: false,
                }),
                '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => self.enter(Seq::Str {
                    osc: false,
                    saw_esc: false,
                }),
                c if c.is_control() => {}
                c => out.push(c),
            },
            Seq::Esc => match c {
                '[' => self.enter(Seq::Csi),
                ']' => self.enter(Seq::Str {
                    osc: true,
                    saw_esc: false,
                }),
                'P' | 'X' | '^' | '_' => self.enter(Seq::Str {
                    osc: false,
                    saw_esc: false,
                }),
                '\u{20}'..='\u{2f}' => self.enter(Seq::EscIntermediate),
                '\u{1b}' => self.enter(Seq::Esc),
                // A two-character sequence (ESC c, ESC 7, ESC M, ...), or a stray ESC.
                _ => self.enter(Seq::Text),
            },
            Seq::EscIntermediate => {
                if !('\u{20}'..='\u{2f}').contains(&c) {
                    self.enter(Seq::Text);
                }
            }
            Seq::Csi => {
                if ('\u{40}'..='\u{7e}').contains(&c) || !('\u{20}'..='\u{3f}').contains(&c) {
                    self.enter(Seq::Text);
                }
            }
            Seq::Str { osc, saw_esc } => match c {
                '\\' if saw_esc => self.enter(Seq::Text),
                '\u{9c}' => self.enter(Seq::Text),
                '\u{7}' if osc => self.enter(Seq::Text),
                '\u{1b}' => self.seq = Seq::Str { osc, saw_esc: true },
                _ => {
                    self.seq = Seq::Str {
                        osc,
                        saw_esc: false,
                    }
                }
            },
        }
    }
}

/// `text` without terminal control sequences (see [`TerminalSanitizer`]); borrowed when there
/// is nothing to remove.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(TerminalSanitizer::new().push(text))
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
    fn control_sequences_never_reach_the_terminal() {
        let cases = [
            ("a\u{1b}]52;c;SGVsbG8=\u{7}b", "ab"),
            ("\u{1b}]0;pwned title\u{1b}\\ok", "ok"),
            ("\u{1b}[2J\u{1b}[H\u{1b}[31mred\u{1b}[0m", "red"),
            ("\u{1b}P1$qm\u{1b}\\x", "x"),
            ("\u{9b}31mC1\u{9d}2;t\u{9c}!", "C1!"),
            (
                "bell\u{7} back\u{8}\u{8}space\rcr\r\n",
                "bell backspacecr\n",
            ),
            (
                "\u{1b}(Bcharset \u{1b}c reset \u{1b}7saved",
                "charset  reset saved",
            ),
            ("tab\tnew\nline ü 中", "tab\tnew\nline ü 中"),
        ];
        for (input, want) in cases {
            assert_eq!(terminal_safe(input), want, "{input:?}");
        }
        assert!(matches!(
            terminal_safe("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
        // Split anywhere, the same result.
        let input = "x\u{1b}]52;c;QUJD\u{7}y\u{1b}[1;1Hz";
        for cut in 0..input.len() {
            if !input.is_char_boundary(cut) {
                continue;
            }
            let mut s = TerminalSanitizer::new();
            let mut got = s.push(&input[..cut]);
            got.push_str(&s.push(&input[cut..]));
            assert_eq!(got, "xyz", "cut at {cut}");
        }
        // An endless sequence gives up after a bound rather than hide everything.
        let long = format!("\u{1b}]{}end", "a".repeat(MAX_SEQUENCE_CHARS + 10));
        assert!(terminal_safe(&long).ends_with("end"));
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
