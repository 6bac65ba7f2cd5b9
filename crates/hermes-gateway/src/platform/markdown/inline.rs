//! Inline markdown of one line as a small tree ([`Inline`]): code spans, links, bold, italic,
//! strikethrough, spoilers, autolinks and Slack entities. Unmatched delimiters stay text, so
//! every input parses. Closing delimiters are searched at most once per delimiter kind and
//! start position (a failed search is remembered), so hostile lines full of `*` stay linear
//! enough, and nesting is capped.

/// One inline element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Inline {
    Text(String),
    /// A code span's content (never formatted).
    Code(String),
    Bold(Vec<Inline>),
    Italic(Vec<Inline>),
    Strike(Vec<Inline>),
    Spoiler(Vec<Inline>),
    Link {
        label: Vec<Inline>,
        url: String,
    },
    /// `<https://…>`, `<mailto:…>`: a URL written as its own label.
    AutoLink(String),
    /// `<@U123>`, `<#C1|name>`, `<!here>`: a Slack entity, kept verbatim where it means
    /// something.
    Entity(String),
}

/// Deepest nesting of formatting parsed; deeper delimiters stay text.
const MAX_DEPTH: usize = 6;
/// Longest link label and destination looked at (bounds the work per `[`).
const MAX_LABEL: usize = 1_000;
const MAX_URL: usize = 2_048;
/// Longest backtick run treated as a code-span delimiter.
const MAX_TICKS: usize = 16;

/// Searches that already failed up to the end of the line: from a position at or after the
/// recorded one they fail again, so they are not repeated.
struct Memo {
    /// Per emphasis delimiter.
    delim: [usize; 7],
    /// Per backtick run length.
    code: [usize; MAX_TICKS + 1],
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Delim {
    Star1,
    Star2,
    Star3,
    Under1,
    Under2,
    Tilde2,
    Pipe2,
}

impl Delim {
    fn text(self) -> &'static str {
        match self {
            Delim::Star1 => "*",
            Delim::Star2 => "**",
            Delim::Star3 => "***",
            Delim::Under1 => "_",
            Delim::Under2 => "__",
            Delim::Tilde2 => "~~",
            Delim::Pipe2 => "||",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Parses one line of inline markdown.
pub(crate) fn parse(line: &str) -> Vec<Inline> {
    let mut memo = Memo {
        delim: [usize::MAX; 7],
        code: [usize::MAX; MAX_TICKS + 1],
    };
    let mut out = Vec::new();
    parse_range(line, 0, line.len(), 0, &mut memo, &mut out);
    merge_text(out)
}

fn push_text(out: &mut Vec<Inline>, s: &str) {
    if s.is_empty() {
        return;
    }
    if let Some(Inline::Text(t)) = out.last_mut() {
        t.push_str(s);
    } else {
        out.push(Inline::Text(s.to_string()));
    }
}

fn merge_text(items: Vec<Inline>) -> Vec<Inline> {
    let mut out: Vec<Inline> = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Inline::Text(t) => push_text(&mut out, &t),
            other => out.push(other),
        }
    }
    out
}

fn is_word_char(c: Option<char>) -> bool {
    c.is_some_and(char::is_alphanumeric)
}

/// Parses `s[start..end]` into `out`.
fn parse_range(
    s: &str,
    start: usize,
    end: usize,
    depth: usize,
    memo: &mut Memo,
    out: &mut Vec<Inline>,
) {
    let bytes = s.as_bytes();
    let mut i = start;
    let mut text_start = start;
    while i < end {
        let b = bytes[i];
        let consumed = match b {
            b'\\' if i + 1 < end && bytes[i + 1].is_ascii_punctuation() => {
                push_text(out, &s[text_start..i]);
                push_text(out, &s[i + 1..i + 2]);
                Some(i + 2)
            }
            b'`' => code_span(s, i, end, memo).map(|(content, next)| {
                push_text(out, &s[text_start..i]);
                out.push(Inline::Code(content));
                next
            }),
            b'[' | b'!' => link(s, i, end, depth, memo).map(|(inline, next)| {
                push_text(out, &s[text_start..i]);
                out.push(inline);
                next
            }),
            b'<' => angle(s, i, end).map(|(inline, next)| {
                push_text(out, &s[text_start..i]);
                out.push(inline);
                next
            }),
            b'*' | b'_' | b'~' | b'|' if depth < MAX_DEPTH => {
                emphasis(s, i, end, depth, memo).map(|(inline, next)| {
                    push_text(out, &s[text_start..i]);
                    out.push(inline);
                    next
                })
            }
            _ => None,
        };
        match consumed {
            Some(next) => {
                i = next;
                text_start = next;
            }
            None => {
                // Skip a whole delimiter run so `***` that failed is not retried as `**`+`*`.
                let mut j = i + 1;
                if matches!(b, b'*' | b'_' | b'~' | b'|' | b'`') {
                    while j < end && bytes[j] == b {
                        j += 1;
                    }
                }
                while j < end && !s.is_char_boundary(j) {
                    j += 1;
                }
                i = j;
            }
        }
    }
    push_text(out, &s[text_start..end]);
}

/// A code span opened by the backtick run at `i`: the matching run of the same length.
fn code_span(s: &str, i: usize, end: usize, memo: &mut Memo) -> Option<(String, usize)> {
    let bytes = s.as_bytes();
    let mut n = 0;
    while i + n < end && bytes[i + n] == b'`' {
        n += 1;
    }
    if n > MAX_TICKS || memo.code[n] <= i {
        return None;
    }
    let mut j = i + n;
    while j < end {
        if bytes[j] == b'`' {
            let mut m = 0;
            while j + m < end && bytes[j + m] == b'`' {
                m += 1;
            }
            if m == n {
                let content = &s[i + n..j];
                let content = if content.len() >= 2
                    && content.starts_with(' ')
                    && content.ends_with(' ')
                    && !content.trim().is_empty()
                {
                    &content[1..content.len() - 1]
                } else {
                    content
                };
                if content.is_empty() {
                    return None;
                }
                return Some((content.to_string(), j + m));
            }
            j += m;
        } else {
            j += 1;
        }
    }
    if end == s.len() {
        memo.code[n] = memo.code[n].min(i);
    }
    None
}

/// `[label](url)` or `![alt](url)` at `i`.
fn link(s: &str, i: usize, end: usize, depth: usize, memo: &mut Memo) -> Option<(Inline, usize)> {
    let bytes = s.as_bytes();
    let open = if bytes[i] == b'!' {
        if i + 1 < end && bytes[i + 1] == b'[' {
            i + 1
        } else {
            return None;
        }
    } else {
        i
    };
    // The label: brackets may nest; a code span inside is skipped whole.
    let label_end = end.min(open + 1 + MAX_LABEL);
    let mut j = open + 1;
    let mut level = 1;
    while j < label_end {
        match bytes[j] {
            b'\\' => j += 1,
            b'`' => {
                if let Some((_, next)) = code_span(s, j, label_end, memo) {
                    j = next;
                    continue;
                }
            }
            b'[' => level += 1,
            b']' => {
                level -= 1;
                if level == 0 {
                    break;
                }
            }
            _ => {}
        }
        j += 1;
    }
    if j >= label_end || level != 0 || j + 1 >= end || bytes[j + 1] != b'(' {
        return None;
    }
    let label_range = (open + 1, j);
    // The destination: parentheses may nest one level deep or more, balanced.
    let url_end = end.min(j + 2 + MAX_URL);
    let mut k = j + 2;
    let mut parens = 1;
    while k < url_end {
        match bytes[k] {
            b'\\' => k += 1,
            b'(' => parens += 1,
            b')' => {
                parens -= 1;
                if parens == 0 {
                    break;
                }
            }
            b' ' | b'\t' if parens == 1 && !s[j + 2..k].trim().is_empty() => {
                // A title may follow the URL: `[a](url "title")`; the URL ends here.
            }
            _ => {}
        }
        k += 1;
    }
    if k >= url_end || parens != 0 {
        return None;
    }
    let dest = s[j + 2..k].trim();
    let url = dest
        .split_once([' ', '\t'])
        .map_or(dest, |(u, _)| u)
        .trim_start_matches('<')
        .trim_end_matches('>');
    if url.is_empty() || label_range.0 >= label_range.1 {
        return None;
    }
    let mut label = Vec::new();
    parse_range(s, label_range.0, label_range.1, depth + 1, memo, &mut label);
    Some((
        Inline::Link {
            label: merge_text(label),
            url: url.to_string(),
        },
        k + 1,
    ))
}

/// `<scheme:…>` autolinks and Slack entities (`<@U…>`, `<#C…>`, `<!…>`).
fn angle(s: &str, i: usize, end: usize) -> Option<(Inline, usize)> {
    let rest = &s[i + 1..end];
    let close = rest.find('>')?;
    let inner = &rest[..close];
    if inner.is_empty() || inner.contains(['<', ' ', '\t']) && !inner.starts_with(['@', '#', '!']) {
        return None;
    }
    let next = i + 1 + close + 1;
    if inner.starts_with(['@', '#', '!']) && inner.len() > 1 && !inner.contains('<') {
        return Some((Inline::Entity(inner.to_string()), next));
    }
    let lower = inner.to_ascii_lowercase();
    if ["http://", "https://", "mailto:", "tel:"]
        .iter()
        .any(|p| lower.starts_with(p))
    {
        return Some((Inline::AutoLink(inner.to_string()), next));
    }
    None
}

/// Bold, italic, strikethrough or spoiler opened at `i`.
fn emphasis(
    s: &str,
    i: usize,
    end: usize,
    depth: usize,
    memo: &mut Memo,
) -> Option<(Inline, usize)> {
    let bytes = s.as_bytes();
    let c = bytes[i];
    let mut run = 0;
    while i + run < end && bytes[i + run] == c {
        run += 1;
    }
    let delim = match (c, run) {
        (b'*', 1) => Delim::Star1,
        (b'*', 2) => Delim::Star2,
        (b'*', 3) => Delim::Star3,
        (b'_', 1) => Delim::Under1,
        (b'_', 2) => Delim::Under2,
        (b'~', 2) => Delim::Tilde2,
        (b'|', 2) => Delim::Pipe2,
        _ => return None,
    };
    let d = delim.text();
    let content_start = i + d.len();
    let before = s[..i].chars().next_back();
    if matches!(delim, Delim::Under1 | Delim::Under2) && is_word_char(before) {
        return None;
    }
    let first = s[content_start..end].chars().next()?;
    if first.is_whitespace() {
        return None;
    }
    if memo.delim[delim.index()] <= content_start {
        return None;
    }
    let Some(close) = find_closer(s, content_start, end, delim, memo) else {
        if end == s.len() {
            memo.delim[delim.index()] = memo.delim[delim.index()].min(content_start);
        }
        return None;
    };
    let mut children = Vec::new();
    parse_range(s, content_start, close, depth + 1, memo, &mut children);
    let children = merge_text(children);
    let inline = match delim {
        Delim::Star1 | Delim::Under1 => Inline::Italic(children),
        Delim::Star2 | Delim::Under2 => Inline::Bold(children),
        Delim::Star3 => Inline::Bold(vec![Inline::Italic(children)]),
        Delim::Tilde2 => Inline::Strike(children),
        Delim::Pipe2 => Inline::Spoiler(children),
    };
    Some((inline, close + d.len()))
}

/// The position of the delimiter that closes `delim`, skipping code spans and escapes.
fn find_closer(s: &str, from: usize, end: usize, delim: Delim, memo: &mut Memo) -> Option<usize> {
    let bytes = s.as_bytes();
    let d = delim.text().as_bytes();
    let c = d[0];
    let mut j = from;
    while j < end {
        let b = bytes[j];
        if b == b'\\' {
            j += 2;
            continue;
        }
        if b == b'`' {
            if let Some((_, next)) = code_span(s, j, end, memo) {
                j = next;
                continue;
            }
            j += 1;
            continue;
        }
        if b == c {
            let mut run = 0;
            while j + run < end && bytes[j + run] == c {
                run += 1;
            }
            let prev = s[..j].chars().next_back();
            let after = s[j + run..].chars().next();
            let fits = run == d.len()
                || (matches!(delim, Delim::Star1 | Delim::Under1) && run == 3)
                || (matches!(delim, Delim::Star2 | Delim::Under2) && run == 3);
            let closes = fits
                && j > from
                && !prev.is_some_and(char::is_whitespace)
                && !(matches!(delim, Delim::Under1 | Delim::Under2) && is_word_char(after));
            if closes {
                // `***` closing a `*` opener: the closer is the last star of the run.
                return Some(if run > d.len() { j + run - d.len() } else { j });
            }
            j += run;
            continue;
        }
        j += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::Inline::*;
    use super::*;

    fn t(s: &str) -> Inline {
        Text(s.into())
    }

    #[test]
    fn emphasis_kinds() {
        assert_eq!(
            parse("a **b** *c* _d_ ~~e~~ ||f||"),
            vec![
                t("a "),
                Bold(vec![t("b")]),
                t(" "),
                Italic(vec![t("c")]),
                t(" "),
                Italic(vec![t("d")]),
                t(" "),
                Strike(vec![t("e")]),
                t(" "),
                Spoiler(vec![t("f")]),
            ]
        );
        assert_eq!(parse("***x***"), vec![Bold(vec![Italic(vec![t("x")])])]);
        assert_eq!(
            parse("**bold *it* x**"),
            vec![Bold(vec![t("bold "), Italic(vec![t("it")]), t(" x")])]
        );
    }

    #[test]
    fn literal_delimiters_stay_text() {
        assert_eq!(parse("a * b * c"), vec![t("a * b * c")]);
        assert_eq!(parse("snake_case_name"), vec![t("snake_case_name")]);
        assert_eq!(parse("2*3 = 6"), vec![t("2*3 = 6")]);
        assert_eq!(parse("**unclosed"), vec![t("**unclosed")]);
        assert_eq!(parse(r"\*not\*"), vec![t("*not*")]);
    }

    #[test]
    fn code_spans_protect_their_content() {
        assert_eq!(
            parse("run `a*b*c` now"),
            vec![t("run "), Code("a*b*c".into()), t(" now")]
        );
        assert_eq!(parse("``a ` b``"), vec![Code("a ` b".into())]);
        assert_eq!(parse("a `unclosed"), vec![t("a `unclosed")]);
        assert_eq!(
            parse("**x `**` y**"),
            vec![Bold(vec![t("x "), Code("**".into()), t(" y")])]
        );
    }

    #[test]
    fn links_and_angles() {
        assert_eq!(
            parse("see [the docs](https://x.y/a_(b)) and ![img](http://i/p.png)"),
            vec![
                t("see "),
                Link {
                    label: vec![t("the docs")],
                    url: "https://x.y/a_(b)".into()
                },
                t(" and "),
                Link {
                    label: vec![t("img")],
                    url: "http://i/p.png".into()
                },
            ]
        );
        assert_eq!(
            parse("hi <@U123> at <https://a.b>"),
            vec![
                t("hi "),
                Entity("@U123".into()),
                t(" at "),
                AutoLink("https://a.b".into())
            ]
        );
        assert_eq!(parse("a < b > c"), vec![t("a < b > c")]);
        assert_eq!(parse("[not a link]"), vec![t("[not a link]")]);
    }

    #[test]
    fn hostile_lines_terminate() {
        let stars = "*".repeat(20_000);
        assert_eq!(parse(&stars), vec![t(&stars)]);
        let mixed = "*a _b ~~c ||d [e `f ](".repeat(2_000);
        let parsed = parse(&mixed);
        assert!(!parsed.is_empty());
        let deep = format!("{}x{}", "**".repeat(50), "**".repeat(50));
        assert!(!parse(&deep).is_empty());
    }
}
