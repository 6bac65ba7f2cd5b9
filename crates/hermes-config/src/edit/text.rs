//! The text machinery under [`super`]'s edits: values formatted as YAML scalars or flow
//! collections, `key: value` lines taken apart (quoted keys, trailing comments), and the
//! document as lines with its nested block mappings found by indentation (where a key is, what
//! it holds, where a new key goes).

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Quote {
    None,
    Single,
    Double,
}

pub(super) fn format_value(value: &Value, quoting: Quoting, quote: Quote, in_flow: bool) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format_string(s, quoting, quote, in_flow),
        Value::Array(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|v| format_value(v, quoting, Quote::None, true))
                .collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let pairs: Vec<String> = map
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}: {}",
                        format_string(k, Quoting::Minimal, Quote::None, true),
                        format_value(v, quoting, Quote::None, true)
                    )
                })
                .collect();
            format!("{{{}}}", pairs.join(", "))
        }
    }
}

fn format_string(s: &str, quoting: Quoting, quote: Quote, in_flow: bool) -> String {
    let printable = !s.chars().any(char::is_control);
    match quote {
        Quote::Single if printable => return format!("'{}'", s.replace('\'', "''")),
        Quote::None if quoting == Quoting::Minimal && is_plain_safe(s, in_flow) => {
            return s.to_string();
        }
        _ => {}
    }
    // JSON's escapes are all valid in a YAML double-quoted scalar.
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{}\"", s.escape_default()))
}

/// A key as written on a new line.
fn format_key(key: &str) -> String {
    format_string(key, Quoting::Minimal, Quote::None, false)
}

/// One `key: value` line, taken apart.
#[derive(Debug, Clone)]
pub(super) struct KeyLine {
    /// The key, unquoted.
    key: String,
    /// Byte length of the line up to and including the `:`.
    head: usize,
    /// The space between the `:` and the value.
    gap: String,
    /// The value as written (may be empty: a block follows, or null).
    value: String,
    /// Spaces and `# ...` after the value, or empty.
    comment: String,
}

impl KeyLine {
    fn parse(line: &str) -> Option<KeyLine> {
        let start = indent_of(line);
        let s = &line[start..];
        let (key, key_end) = if s.starts_with(['"', '\'']) {
            let end = quoted_end(s)?;
            (serde_saphyr::from_str::<String>(&s[..end]).ok()?, end)
        } else {
            if s.starts_with("- ")
                || s == "-"
                || s.starts_with("? ")
                || s.starts_with("---")
                || s.starts_with("...")
                || s.starts_with(['#', '[', '{', '&', '*', '!', '|', '>', '%', '@', '`', ','])
            {
                return None;
            }
            let end = plain_key_end(s)?;
            (s[..end].trim_end().to_string(), end)
        };
        let after_key = s[key_end..].trim_start_matches([' ', '\t']);
        let after = after_key.strip_prefix(':')?;
        if !(after.is_empty() || after.starts_with([' ', '\t'])) {
            return None;
        }
        let head = line.len() - after.len();
        let value_part = &after[..comment_start(after).unwrap_or(after.len())];
        let value = value_part.trim();
        let gap_len = value_part.len() - value_part.trim_start().len();
        let (gap, comment) = if value.is_empty() {
            (String::new(), after.to_string())
        } else {
            let value_end = value_part.trim_end().len();
            (after[..gap_len].to_string(), after[value_end..].to_string())
        };
        Some(KeyLine {
            key,
            head,
            gap,
            value: value.to_string(),
            comment,
        })
    }

    /// The value without anchors (`&a`) and tags (`!!map`) in front.
    fn bare_value(&self) -> &str {
        let mut v = self.value.as_str();
        while v.starts_with(['&', '!']) {
            v = v
                .split_once([' ', '\t'])
                .map_or("", |(_, rest)| rest.trim_start());
        }
        v
    }

    fn is_null(&self) -> bool {
        matches!(self.bare_value(), "~" | "null" | "Null" | "NULL")
    }
}

/// The byte index just after the closing quote of the quoted scalar `s` starts with.
fn quoted_end(s: &str) -> Option<usize> {
    let quote = s.chars().next()?;
    let mut chars = s.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            ('"', '\\') => {
                chars.next();
            }
            ('\'', '\'') if chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                chars.next();
            }
            (q, c) if q == c => return Some(i + c.len_utf8()),
            _ => {}
        }
    }
    None
}

/// Where a plain key ends: the first `:` followed by a space or the end of the line.
fn plain_key_end(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'#' && i > 0 && matches!(bytes[i - 1], b' ' | b'\t') {
            return None;
        }
        if b == b':' && bytes.get(i + 1).is_none_or(|n| matches!(n, b' ' | b'\t')) {
            return (i > 0).then_some(i);
        }
    }
    None
}

/// Where a `# comment` starts in the text after a key's `:`, outside quotes.
fn comment_start(after: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut prev: Option<char> = None;
    let mut last_solid: Option<char> = None;
    let mut chars = after.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match quote {
            Some('"') if c == '\\' => {
                chars.next();
            }
            Some('\'') if c == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                chars.next();
            }
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => {
                if c == '#' && prev.is_none_or(|p| p == ' ' || p == '\t') {
                    return Some(i);
                }
                if matches!(c, '"' | '\'')
                    && last_solid.is_none_or(|p| matches!(p, '[' | '{' | ',' | ':' | '?' | '-'))
                {
                    quote = Some(c);
                }
            }
        }
        prev = Some(c);
        if !c.is_whitespace() {
            last_solid = Some(c);
        }
    }
    None
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Neither blank nor a comment.
fn is_content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

fn is_seq_item(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("- ") || t.trim_end() == "-"
}

/// Where the keys of a mapping are, and where new ones go.
#[derive(Debug, Clone)]
struct Scope {
    /// The mapping's lines: `start..end` (`end` is just after its last content line).
    start: usize,
    end: usize,
    /// The column of its keys; `None` when it has none yet.
    indent: Option<usize>,
    /// The column for the first key of an empty mapping.
    new_indent: usize,
    /// The parent's `key: ~` line, rewritten to `key:` when a first key is added.
    null_line: Option<usize>,
}

/// What a key holds, as far as descending into it goes.
enum Held {
    Mapping(Scope),
    Flow(String),
    List,
    Scalar(String),
}

/// The document as lines (without their line ends).
pub(super) struct Doc {
    lines: Vec<String>,
    newline: &'static str,
    trailing_newline: bool,
    unit: usize,
}

impl Doc {
    pub(super) fn new(text: &str) -> Doc {
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let unit = indent_unit(&lines);
        Doc {
            lines,
            newline: if text.contains("\r\n") { "\r\n" } else { "\n" },
            trailing_newline: text.ends_with('\n'),
            unit,
        }
    }

    pub(super) fn render(&self) -> String {
        let mut out = self.lines.join(self.newline);
        if self.trailing_newline && !self.lines.is_empty() {
            out.push_str(self.newline);
        }
        out
    }

    fn top(&self) -> Scope {
        let indent = self
            .lines
            .iter()
            .find(|l| is_content(l))
            .map(|l| indent_of(l));
        Scope {
            start: 0,
            end: self.lines.len(),
            indent,
            new_indent: indent.unwrap_or(0),
            null_line: None,
        }
    }

    fn find(&self, scope: &Scope, key: &str) -> Option<(usize, KeyLine)> {
        let indent = scope.indent?;
        (scope.start..scope.end).find_map(|i| {
            let line = &self.lines[i];
            if !is_content(line) || indent_of(line) != indent {
                return None;
            }
            KeyLine::parse(line)
                .filter(|k| k.key == key)
                .map(|k| (i, k))
        })
    }

    /// The index just after the last line of the value of the key on line `i`.
    fn value_end(&self, i: usize, block: bool) -> usize {
        let indent = indent_of(&self.lines[i]);
        let mut end = i + 1;
        for (j, line) in self.lines.iter().enumerate().skip(i + 1) {
            if !is_content(line) {
                continue;
            }
            let deeper = indent_of(line) > indent;
            // `key:` may be followed by its list at the same column.
            let same_column_list = block && indent_of(line) == indent && is_seq_item(line);
            if !(deeper || same_column_list) {
                break;
            }
            end = j + 1;
        }
        end
    }

    fn held(&self, i: usize, k: &KeyLine) -> Held {
        let bare = k.bare_value();
        if k.is_null() {
            let new_indent = indent_of(&self.lines[i]) + self.unit;
            return Held::Mapping(Scope {
                start: i + 1,
                end: i + 1,
                indent: None,
                new_indent,
                null_line: Some(i),
            });
        }
        if bare.starts_with('{') {
            return Held::Flow(k.value.clone());
        }
        if bare.starts_with('[') {
            return Held::List;
        }
        if !bare.is_empty() {
            return Held::Scalar(k.value.clone());
        }
        let end = self.value_end(i, true);
        match (i + 1..end).find(|&j| is_content(&self.lines[j])) {
            Some(j) if is_seq_item(&self.lines[j]) => Held::List,
            Some(j) => {
                let indent = indent_of(&self.lines[j]);
                Held::Mapping(Scope {
                    start: i + 1,
                    end,
                    indent: Some(indent),
                    new_indent: indent,
                    null_line: None,
                })
            }
            None => Held::Mapping(Scope {
                start: i + 1,
                end: i + 1,
                indent: None,
                new_indent: indent_of(&self.lines[i]) + self.unit,
                null_line: None,
            }),
        }
    }

    pub(super) fn set(
        &mut self,
        parts: &[&str],
        value: &Value,
        quoting: Quoting,
    ) -> Result<(), String> {
        let mut scope = self.top();
        for (depth, part) in parts.iter().enumerate() {
            let here = parts[..=depth].join(".");
            let Some((i, k)) = self.find(&scope, part) else {
                self.insert(&scope, &parts[depth..], value, quoting);
                return Ok(());
            };
            if depth + 1 == parts.len() {
                self.replace(i, &k, value, quoting);
                return Ok(());
            }
            scope = match self.held(i, &k) {
                Held::Mapping(s) => s,
                Held::Flow(v) => return Err(flow_reason(&here, &v)),
                Held::List => return Err(format!("`{here}` is a list, not a section")),
                Held::Scalar(v) => {
                    return Err(format!(
                        "`{here}` holds a single value (`{v}`), not a section: unset it first"
                    ));
                }
            };
        }
        Ok(())
    }

    pub(super) fn unset(&mut self, parts: &[&str]) -> Result<bool, String> {
        let mut scope = self.top();
        let mut parents: Vec<usize> = Vec::new();
        for (depth, part) in parts.iter().enumerate() {
            let here = parts[..=depth].join(".");
            let Some((i, k)) = self.find(&scope, part) else {
                return Ok(false);
            };
            if depth + 1 == parts.len() {
                let end = self.value_end(i, k.bare_value().is_empty());
                self.lines.drain(i..end);
                // Sections left without keys go too (comments inside them stay).
                for &p in parents.iter().rev() {
                    let end = self.value_end(p, true);
                    if (p + 1..end).any(|j| is_content(&self.lines[j])) {
                        break;
                    }
                    self.lines.remove(p);
                }
                return Ok(true);
            }
            scope = match self.held(i, &k) {
                Held::Mapping(s) if s.indent.is_some() => s,
                Held::Mapping(_) | Held::Scalar(_) => return Ok(false),
                Held::Flow(v) => return Err(flow_reason(&here, &v)),
                Held::List => return Err(format!("`{here}` is a list, not a section")),
            };
            parents.push(i);
        }
        Ok(false)
    }

    /// Replaces the value of the key on line `i` (and the lines it spans).
    fn replace(&mut self, i: usize, k: &KeyLine, value: &Value, quoting: Quoting) {
        let end = self.value_end(i, k.bare_value().is_empty());
        let quote = match k.value.chars().next() {
            Some('\'') => Quote::Single,
            Some('"') => Quote::Double,
            _ => Quote::None,
        };
        let gap = if k.value.is_empty() { " " } else { &k.gap };
        let line = format!(
            "{}{gap}{}{}",
            &self.lines[i][..k.head],
            format_value(value, quoting, quote, false),
            k.comment
        );
        if end >= self.lines.len() {
            self.trailing_newline = true;
        }
        self.lines.splice(i..end, [line]);
    }

    /// Adds `parts` (the first missing key and the ones under it) at the end of `scope`.
    fn insert(&mut self, scope: &Scope, parts: &[&str], value: &Value, quoting: Quoting) {
        if let Some(n) = scope.null_line
            && let Some(k) = KeyLine::parse(&self.lines[n])
        {
            let comment = k.comment.trim_start();
            let sep = if comment.is_empty() { "" } else { " " };
            self.lines[n] = format!("{}{sep}{comment}", &self.lines[n][..k.head]);
        }
        let base = scope.indent.unwrap_or(scope.new_indent);
        let last = parts.len() - 1;
        let new: Vec<String> = parts
            .iter()
            .enumerate()
            .map(|(d, part)| {
                let pad = " ".repeat(base + d * self.unit);
                if d == last {
                    format!(
                        "{pad}{}: {}",
                        format_key(part),
                        format_value(value, quoting, Quote::None, false)
                    )
                } else {
                    format!("{pad}{}:", format_key(part))
                }
            })
            .collect();
        if scope.end >= self.lines.len() {
            self.trailing_newline = true;
        }
        self.lines.splice(scope.end..scope.end, new);
    }
}

fn flow_reason(here: &str, value: &str) -> String {
    format!(
        "`{here}` is written in flow style (`{value}`), which this editor does not change; edit that line by hand"
    )
}

/// The file's indentation step: how far the first nested key is indented under its parent.
fn indent_unit(lines: &[String]) -> usize {
    let content: Vec<&String> = lines.iter().filter(|l| is_content(l)).collect();
    for pair in content.windows(2) {
        let (parent, child) = (pair[0], pair[1]);
        let (pi, ci) = (indent_of(parent), indent_of(child));
        if ci > pi && KeyLine::parse(parent).is_some_and(|k| k.value.is_empty()) {
            return (ci - pi).clamp(1, 8);
        }
    }
    2
}

/// A `key: value` line taken apart by [`parse_key_line`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineKey {
    /// The key, unquoted.
    pub key: String,
    /// Where the value is written in the line (empty when a block follows or the value is
    /// missing); a trailing `# comment` is not part of it.
    pub value: std::ops::Range<usize>,
}

/// The key of a `key: value` line (any indentation; not a list item `- ...` or a comment).
pub fn parse_key_line(line: &str) -> Option<LineKey> {
    let k = KeyLine::parse(line)?;
    let start = if k.value.is_empty() {
        k.head
    } else {
        k.head + k.gap.len()
    };
    Some(LineKey {
        key: k.key,
        value: start..start + k.value.len(),
    })
}
