//! Inline markdown inside one line: `**strong**` / `__strong__`, `*emphasis*` / `_emphasis_`,
//! `~~strike~~`, `` `code` `` (any number of backticks), `[text](url)`, `![alt](url)`,
//! `<https://autolinks>` and backslash escapes. Delimiters follow the flanking rules closely
//! enough that `2 * 3 * 4` and `snake_case_names` stay as written; an unmatched delimiter is
//! plain text.

use super::style::{Span, Style};
use super::theme::Theme;

/// The spans of `text` drawn over `base`.
pub fn spans(text: &str, base: Style, theme: &Theme) -> Vec<Span> {
    let mut out = Vec::new();
    parse(text, base, theme, &mut out);
    merge(out)
}

/// Joins neighbours of the same style (fewer escape sequences, simpler wrapping).
fn merge(spans: Vec<Span>) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans.into_iter().filter(|s| !s.text.is_empty()) {
        match out.last_mut() {
            Some(last) if last.style == s.style => last.text.push_str(&s.text),
            _ => out.push(s),
        }
    }
    out
}

/// What a delimiter adds to the style inside it.
type AddStyle = fn(Style) -> Style;

/// Emphasis-like delimiters, longest first, with the style each adds.
const DELIMITERS: &[(&str, AddStyle)] = &[
    ("**", Style::bold),
    ("__", Style::bold),
    ("~~", Style::strike),
    ("*", Style::italic),
    ("_", Style::italic),
];

fn parse(s: &str, style: Style, theme: &Theme, out: &mut Vec<Span>) {
    let mut plain = String::new();
    let flush = |plain: &mut String, out: &mut Vec<Span>| {
        if !plain.is_empty() {
            out.push(Span::new(std::mem::take(plain), style));
        }
    };
    let mut i = 0;
    let mut prev: Option<char> = None;
    while let Some(c) = s[i..].chars().next() {
        let rest = &s[i..];
        if c == '\\'
            && let Some(next) = rest[1..].chars().next()
            && next.is_ascii_punctuation()
        {
            plain.push(next);
            i += 1 + next.len_utf8();
            prev = Some(next);
            continue;
        }
        if c == '`' {
            let run = rest.len() - rest.trim_start_matches('`').len();
            if let Some((code, used)) = code_span(rest, run) {
                flush(&mut plain, out);
                out.push(Span::new(code, style.patch(theme.code())));
                i += used;
                prev = Some('`');
                continue;
            }
            plain.push_str(&rest[..run]);
            i += run;
            prev = Some('`');
            continue;
        }
        if let Some((delim, add)) = DELIMITERS.iter().find(|(d, _)| rest.starts_with(d))
            && let Some(end) = closing(rest, delim, prev)
        {
            flush(&mut plain, out);
            parse(&rest[delim.len()..end], add(style), theme, out);
            i += end + delim.len();
            prev = delim.chars().last();
            continue;
        }
        if (c == '[' || rest.starts_with("!["))
            && let Some(link) = link(rest)
        {
            flush(&mut plain, out);
            let underlined = style.patch(theme.accent().underline());
            if link.image {
                out.push(Span::new("[image: ", style));
                parse(link.text, underlined, theme, out);
                out.push(Span::new("]", style));
            } else {
                parse(link.text, underlined, theme, out);
            }
            if !link.url.is_empty() && link.url != link.text {
                out.push(Span::new(format!(" ({})", link.url), style.dim()));
            }
            i += link.used;
            prev = Some(')');
            continue;
        }
        if c == '<'
            && let Some(end) = rest.find('>')
            && is_autolink(&rest[1..end])
        {
            flush(&mut plain, out);
            out.push(Span::new(
                &rest[1..end],
                style.patch(theme.accent().underline()),
            ));
            i += end + 1;
            prev = Some('>');
            continue;
        }
        plain.push(c);
        i += c.len_utf8();
        prev = Some(c);
    }
    flush(&mut plain, out);
}

/// A code span opened by `run` backticks: its text and the bytes it used.
fn code_span(rest: &str, run: usize) -> Option<(String, usize)> {
    let body = &rest[run..];
    let mut from = 0;
    while let Some(pos) = body[from..].find('`') {
        let start = from + pos;
        let len = body[start..].len() - body[start..].trim_start_matches('`').len();
        if len == run {
            let inner = &body[..start];
            let trimmed = if inner.len() >= 2 && inner.starts_with(' ') && inner.ends_with(' ') {
                &inner[1..inner.len() - 1]
            } else {
                inner
            };
            return Some((trimmed.to_string(), run + start + len));
        }
        from = start + len;
    }
    None
}

/// Where the delimiter opening `rest` closes (byte offset in `rest`), if it does.
fn closing(rest: &str, delim: &str, prev: Option<char>) -> Option<usize> {
    let d = delim.len();
    let after = rest[d..].chars().next()?;
    if after.is_whitespace() {
        return None;
    }
    let single = d == 1;
    let underscore = delim.starts_with('_');
    if underscore && prev.is_some_and(char::is_alphanumeric) {
        return None;
    }
    if single && rest[d..].starts_with(delim) {
        return None;
    }
    let mut from = d + after.len_utf8();
    while let Some(pos) = rest[from..].find(delim) {
        let at = from + pos;
        let before = rest[..at].chars().last();
        let next = rest[at + d..].chars().next();
        let doubled = single && (next == delim.chars().next() || before == delim.chars().next());
        let intraword = underscore && next.is_some_and(char::is_alphanumeric);
        if before.is_some_and(|b| !b.is_whitespace()) && !doubled && !intraword {
            return Some(at);
        }
        from = at + d;
    }
    None
}

struct Link<'a> {
    text: &'a str,
    url: &'a str,
    image: bool,
    used: usize,
}

fn link(rest: &str) -> Option<Link<'_>> {
    let image = rest.starts_with("![");
    let open = if image { 2 } else { 1 };
    let close = rest[open..].find(']')? + open;
    if !rest[close + 1..].starts_with('(') {
        return None;
    }
    let end = rest[close + 2..].find(')')? + close + 2;
    let url = rest[close + 2..end].trim();
    let url = url.split_whitespace().next().unwrap_or_default();
    Some(Link {
        text: &rest[open..close],
        url,
        image,
        used: end + 1,
    })
}

fn is_autolink(inner: &str) -> bool {
    (inner.starts_with("http://") || inner.starts_with("https://") || inner.starts_with("mailto:"))
        && !inner.contains(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(text: &str) -> String {
        let theme = Theme::plain();
        spans(text, Style::PLAIN, &theme)
            .iter()
            .map(|s| {
                let mut marks = String::new();
                if s.style.bold {
                    marks.push('B');
                }
                if s.style.italic {
                    marks.push('I');
                }
                if s.style.strike {
                    marks.push('S');
                }
                if s.style.underline {
                    marks.push('U');
                }
                if s.style.dim {
                    marks.push('D');
                }
                if s.style == theme.code() {
                    marks.push('C');
                }
                if marks.is_empty() {
                    s.text.clone()
                } else {
                    format!("<{marks}:{}>", s.text)
                }
            })
            .collect()
    }

    #[test]
    fn emphasis_code_and_links() {
        assert_eq!(show("a **b** c"), "a <B:b> c");
        assert_eq!(show("*it* and __bold__"), "<I:it> and <B:bold>");
        assert_eq!(show("**bold _both_**"), "<B:bold ><BI:both>");
        assert_eq!(show("~~gone~~"), "<S:gone>");
        assert_eq!(show("run `cargo test` now"), "run <C:cargo test> now");
        assert_eq!(show("``a ` b``"), "<C:a ` b>");
        assert_eq!(
            show("see [docs](https://x.io) now"),
            "see <U:docs><D: (https://x.io)> now"
        );
        assert_eq!(show("<https://x.io>"), "<U:https://x.io>");
        assert_eq!(show("![logo](a.png)"), "[image: <U:logo>]<D: (a.png)>");
    }

    #[test]
    fn lookalikes_stay_plain() {
        assert_eq!(show("2 * 3 * 4"), "2 * 3 * 4");
        assert_eq!(show("snake_case_name"), "snake_case_name");
        assert_eq!(show("**unclosed"), "**unclosed");
        assert_eq!(show("a ` b"), "a ` b");
        assert_eq!(show(r"\*not\*"), "*not*");
        assert_eq!(show("[not a link]"), "[not a link]");
        assert_eq!(show("x < y > z"), "x < y > z");
    }
}
