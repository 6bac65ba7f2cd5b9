//! Static expansion of shell words, as far as it can be done without running anything: the
//! variables the command line itself assigns (`R=rm; $R -rf ~`, `for d in / /tmp`), `$IFS`,
//! `${x:-default}` and the other parameter operators on known values, `$((...))` arithmetic,
//! brace expansion (`{/,}`), field splitting of unquoted results, and command substitutions
//! whose output is fixed: `echo`/`printf`/`cat` of literal text piped through decoders
//! (`base64 -d`, `base32 -d`, `xxd -r -p`, `rev`, `tr`). Everything else stays unresolved and
//! is reported as inexact, so the rules can fail closed.

use std::collections::HashMap;

use super::arith::arithmetic;
use super::decode::command_output;
use super::lexer::{Part, Word, lex_word};

/// Fields one word may expand to (brace expansion), and argument lists one command may have.
pub(crate) const MAX_FIELDS: usize = 64;
pub(crate) const MAX_ALTERNATIVES: usize = 16;

/// What the command line has assigned so far. Every assignment adds a possible value: the
/// checker does not follow control flow, so `if ..; then X=rm; else X=ls; fi` leaves both.
#[derive(Debug, Clone, Default)]
pub(crate) struct Vars {
    map: HashMap<String, Value>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Value {
    pub values: Vec<String>,
    /// Also assigned something the checker could not resolve (`read`, `$(curl ...)`).
    pub unknown: bool,
}

impl Vars {
    /// `NAME=value` (`None`: a value the checker could not resolve).
    pub(crate) fn assign(&mut self, name: &str, value: Option<String>) {
        let entry = self.map.entry(name.to_string()).or_default();
        match value {
            Some(v) if entry.values.len() < MAX_ALTERNATIVES => {
                if !entry.values.contains(&v) {
                    entry.values.push(v);
                }
            }
            _ => entry.unknown = true,
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.map.get(name)
    }
}

/// A word or command after expansion: the possible argument lists and whether everything in
/// them was resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expanded {
    pub alts: Vec<Vec<String>>,
    pub exact: bool,
    /// Something unresolved was computed by the command line itself (a substitution, a
    /// variable it assigned from one, `read`), not taken from the user's environment.
    pub computed: bool,
    /// An unquoted glob (`*`, `?`, `[...]`): bash replaces the word by the matching paths.
    pub glob: bool,
}

/// Where a character of an expanded word came from: literal or expansion result, quoted or
/// not (unquoted literals take part in brace expansion, unquoted results in field splitting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Lit { quoted: bool },
    Exp { quoted: bool },
}

type Chars = Vec<(char, Origin)>;

/// The possible values of one part, and whether they are all known.
struct PartValues {
    values: Vec<(String, Origin)>,
    exact: bool,
    computed: bool,
}

/// Expands one word.
pub(crate) fn expand_word(word: &Word, vars: &Vars, depth: usize) -> Expanded {
    let mut exact = true;
    let mut computed = false;
    let mut per_part: Vec<Vec<(String, Origin)>> = Vec::new();
    for part in &word.parts {
        let pv = part_values(part, vars, depth);
        exact &= pv.exact;
        computed |= pv.computed;
        per_part.push(pv.values);
    }
    // The product of the parts' alternatives, bounded.
    let mut combos: Vec<Chars> = vec![Vec::new()];
    for values in &per_part {
        let mut next = Vec::new();
        for combo in &combos {
            for (text, origin) in values {
                if next.len() >= MAX_ALTERNATIVES {
                    exact = false;
                    break;
                }
                let mut c = combo.clone();
                c.extend(text.chars().map(|ch| (ch, *origin)));
                next.push(c);
            }
        }
        if next.is_empty() {
            next.push(combos.first().cloned().unwrap_or_default());
        }
        combos = next;
    }
    let has_quoted = word.parts.iter().any(|p| match p {
        Part::Lit { quoted, .. } => *quoted,
        Part::Param { quoted, .. } | Part::Sub { quoted, .. } | Part::Arith { quoted, .. } => {
            *quoted
        }
        Part::ProcSub { .. } => false,
    });
    let glob = combos.iter().any(has_glob);
    let mut alts = Vec::new();
    for combo in combos {
        let braced = brace_expand(&combo, &mut exact);
        let mut fields = Vec::new();
        for chars in braced {
            fields.extend(split_fields(&chars, has_quoted));
            if fields.len() > MAX_FIELDS {
                fields.truncate(MAX_FIELDS);
                exact = false;
                break;
            }
        }
        if !alts.contains(&fields) {
            alts.push(fields);
        }
    }
    Expanded {
        alts,
        exact,
        computed: computed && !exact,
        glob,
    }
}

/// Unquoted `*`, `?`, or `[` with a closing `]` after it.
fn has_glob(chars: &Chars) -> bool {
    let unquoted = |o: &Origin| {
        matches!(
            o,
            Origin::Lit { quoted: false } | Origin::Exp { quoted: false }
        )
    };
    chars.iter().enumerate().any(|(i, (c, o))| {
        unquoted(o)
            && (matches!(c, '*' | '?')
                || (*c == '[' && chars[i + 1..].iter().any(|(d, p)| *d == ']' && unquoted(p))))
    })
}

/// Expands a word to one string (fields joined by spaces), only when it is fully known and
/// has a single alternative.
pub(crate) fn expand_exact(word: &Word, vars: &Vars, depth: usize) -> Option<String> {
    let e = expand_word(word, vars, depth);
    match (e.exact, e.alts.as_slice()) {
        (true, [one]) => Some(one.join(" ")),
        _ => None,
    }
}

fn raw(part: &Part) -> String {
    match part {
        Part::Lit { text, .. } => text.clone(),
        Part::Param { name, op, arg, .. } => {
            if op.is_empty() {
                format!("${name}")
            } else if op == "#len" {
                format!("${{#{name}}}")
            } else {
                format!("${{{name}{op}{arg}}}")
            }
        }
        Part::Sub { body, .. } => format!("$({body})"),
        Part::Arith { body, .. } => format!("$(({body}))"),
        Part::ProcSub { body } => format!("<({body})"),
    }
}

fn part_values(part: &Part, vars: &Vars, depth: usize) -> PartValues {
    // An unresolved expansion stays as written, as one unsplittable piece.
    let unknown = || PartValues {
        values: vec![(raw(part), Origin::Exp { quoted: true })],
        exact: false,
        computed: true,
    };
    match part {
        Part::Lit { text, quoted } => PartValues {
            values: vec![(text.clone(), Origin::Lit { quoted: *quoted })],
            exact: true,
            computed: false,
        },
        Part::ProcSub { .. } => PartValues {
            values: vec![("/dev/fd/63".into(), Origin::Exp { quoted: true })],
            exact: true,
            computed: false,
        },
        Part::Sub { body, quoted } => match command_output(body, vars, depth + 1) {
            Some(out) => PartValues {
                values: vec![(
                    out.trim_end_matches('\n').to_string(),
                    Origin::Exp { quoted: *quoted },
                )],
                exact: true,
                computed: false,
            },
            None => unknown(),
        },
        Part::Arith { body, quoted } => match arithmetic(body, vars, depth) {
            Some(n) => PartValues {
                values: vec![(n.to_string(), Origin::Exp { quoted: *quoted })],
                exact: true,
                computed: false,
            },
            None => unknown(),
        },
        Part::Param {
            name,
            op,
            arg,
            quoted,
        } => {
            let origin = Origin::Exp { quoted: *quoted };
            let computed = vars.get(name).is_some_and(|v| v.unknown);
            match parameter(name, op, arg, vars, depth) {
                Some((values, exact)) => {
                    let mut values: Vec<(String, Origin)> =
                        values.into_iter().map(|v| (v, origin)).collect();
                    if !exact {
                        values.push((raw(part), Origin::Exp { quoted: true }));
                    }
                    PartValues {
                        values,
                        exact,
                        computed,
                    }
                }
                None => PartValues {
                    computed,
                    ..unknown()
                },
            }
        }
    }
}

/// The values of a parameter expansion and whether they are all there is. `None` when
/// nothing is known.
fn parameter(
    name: &str,
    op: &str,
    arg: &str,
    vars: &Vars,
    depth: usize,
) -> Option<(Vec<String>, bool)> {
    let base: Option<(Vec<String>, bool)> = match vars.get(name) {
        Some(v) => Some((v.values.clone(), !v.unknown)),
        None => match name {
            "IFS" => Some((vec![" \t\n".into()], true)),
            // Kept as written: the path rules fold `$HOME` and `$HERMES_HOME` themselves.
            "HOME" | "HERMES_HOME" if matches!(op, "" | ":-" | "-" | ":=" | "=" | ":?" | "?") => {
                Some((vec![format!("${name}")], true))
            }
            // Process ids: always a positive number.
            "$" | "!" | "PPID" | "BASHPID" if op.is_empty() => {
                Some((vec![format!("${name}")], true))
            }
            _ => None,
        },
    };
    let arg_value = || {
        let w = lex_word(arg);
        let e = expand_word(&w, vars, depth);
        let exact = e.exact && e.alts.len() == 1;
        let values: Vec<String> = e.alts.into_iter().map(|a| a.join(" ")).collect();
        (values, exact)
    };
    match op {
        "" => base,
        ":-" | "-" | ":=" | "=" => match base {
            Some((values, exact)) => {
                let mut out = Vec::new();
                let mut all_exact = exact;
                for v in values {
                    if v.is_empty() && op.starts_with(':') {
                        let (d, e) = arg_value();
                        all_exact &= e;
                        out.extend(d);
                    } else {
                        out.push(v);
                    }
                }
                if !exact {
                    out.extend(arg_value().0);
                }
                Some((out, all_exact))
            }
            // Not assigned here: most likely the default, but the environment may set it.
            None => Some((arg_value().0, false)),
        },
        ":+" | "+" => match base {
            Some((values, exact)) => {
                let (alt, e) = arg_value();
                let mut out = Vec::new();
                for v in values {
                    if v.is_empty() && op == ":+" {
                        out.push(String::new());
                    } else {
                        out.extend(alt.iter().cloned());
                    }
                }
                Some((out, exact && e))
            }
            None => {
                let mut out = arg_value().0;
                out.push(String::new());
                Some((out, false))
            }
        },
        ":?" | "?" => base,
        "#len" => base.map(|(v, e)| (v.iter().map(|s| s.chars().count().to_string()).collect(), e)),
        "#" | "##" | "%" | "%%" => {
            let (values, exact) = base?;
            let (pats, pe) = arg_value();
            let [pat] = pats.as_slice() else {
                return None;
            };
            let out = values.iter().map(|v| strip_pattern(v, pat, op)).collect();
            Some((out, exact && pe))
        }
        "/" | "//" | "/#" | "/%" => {
            let (values, exact) = base?;
            let (pat, rep) = split_unescaped(arg, '/');
            let pat = expand_exact(&lex_word(&pat), vars, depth)?;
            let rep = expand_exact(&lex_word(&rep), vars, depth)?;
            let out = values
                .iter()
                .map(|v| replace_pattern(v, &pat, &rep, op))
                .collect();
            Some((out, exact))
        }
        ":" => {
            let (values, exact) = base?;
            let (off, len) = split_unescaped(arg, ':');
            let off = arithmetic(&off, vars, depth)?;
            let len = if arg.contains(':') {
                Some(arithmetic(&len, vars, depth)?)
            } else {
                None
            };
            let out = values.iter().map(|v| substring(v, off, len)).collect();
            Some((out, exact))
        }
        "^^" | "^" | ",," | "," => {
            let (values, exact) = base?;
            let out = values
                .iter()
                .map(|v| match op {
                    "^^" => v.to_uppercase(),
                    ",," => v.to_lowercase(),
                    "^" => first_char(v, char::to_uppercase),
                    _ => first_char(v, char::to_lowercase),
                })
                .collect();
            Some((out, exact))
        }
        "!" => {
            let (names, exact) = base?;
            let mut out = Vec::new();
            let mut all = exact;
            for n in names {
                match vars.get(&n) {
                    Some(v) => {
                        out.extend(v.values.iter().cloned());
                        all &= !v.unknown;
                    }
                    None => return None,
                }
            }
            Some((out, all))
        }
        _ => None,
    }
}

fn first_char<I: Iterator<Item = char>>(v: &str, f: impl Fn(char) -> I) -> String {
    let mut chars = v.chars();
    match chars.next() {
        Some(c) => f(c).chain(chars).collect(),
        None => String::new(),
    }
}

fn split_unescaped(text: &str, sep: char) -> (String, String) {
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            return (text[..i].to_string(), text[i + c.len_utf8()..].to_string());
        }
    }
    (text.to_string(), String::new())
}

fn substring(v: &str, off: i64, len: Option<i64>) -> String {
    let chars: Vec<char> = v.chars().collect();
    let n = chars.len() as i64;
    let start = if off < 0 {
        (n + off).max(0)
    } else {
        off.min(n)
    };
    let end = match len {
        None => n,
        Some(l) if l < 0 => (n + l).max(start),
        Some(l) => (start + l).min(n),
    };
    chars[start as usize..end.max(start) as usize]
        .iter()
        .collect()
}

/// A tiny glob matcher (`*`, `?`, literal characters) for the `#`/`%`/`/` operators.
fn glob_match(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some(p);
            mark = t;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            t = mark;
        } else {
            return false;
        }
    }
    while p < pattern.len() && pattern[p] == '*' {
        p += 1;
    }
    p == pattern.len()
}

fn strip_pattern(v: &str, pat: &str, op: &str) -> String {
    let chars: Vec<char> = v.chars().collect();
    let pat: Vec<char> = pat.chars().collect();
    let n = chars.len();
    match op {
        "#" => (0..=n)
            .find(|&i| glob_match(&pat, &chars[..i]))
            .map(|i| chars[i..].iter().collect()),
        "##" => (0..=n)
            .rev()
            .find(|&i| glob_match(&pat, &chars[..i]))
            .map(|i| chars[i..].iter().collect()),
        "%" => (0..=n)
            .rev()
            .find(|&i| glob_match(&pat, &chars[i..]))
            .map(|i| chars[..i].iter().collect()),
        _ => (0..=n)
            .find(|&i| glob_match(&pat, &chars[i..]))
            .map(|i| chars[..i].iter().collect()),
    }
    .unwrap_or_else(|| v.to_string())
}

fn replace_pattern(v: &str, pat: &str, rep: &str, op: &str) -> String {
    if pat.is_empty() {
        return v.to_string();
    }
    if pat.contains(['*', '?']) {
        // Globs in replacements: only anchored forms are worth resolving.
        return match op {
            "/#" => strip_pattern(v, pat, "##").pipe_prefix(rep, v),
            "/%" => strip_pattern(v, pat, "%%").pipe_suffix(rep, v),
            _ => v.to_string(),
        };
    }
    match op {
        "//" => v.replace(pat, rep),
        "/#" => match v.strip_prefix(pat) {
            Some(rest) => format!("{rep}{rest}"),
            None => v.to_string(),
        },
        "/%" => match v.strip_suffix(pat) {
            Some(rest) => format!("{rest}{rep}"),
            None => v.to_string(),
        },
        _ => v.replacen(pat, rep, 1),
    }
}

trait Affix {
    fn pipe_prefix(self, rep: &str, original: &str) -> String;
    fn pipe_suffix(self, rep: &str, original: &str) -> String;
}

impl Affix for String {
    fn pipe_prefix(self, rep: &str, original: &str) -> String {
        if self == original {
            self
        } else {
            format!("{rep}{self}")
        }
    }
    fn pipe_suffix(self, rep: &str, original: &str) -> String {
        if self == original {
            self
        } else {
            format!("{self}{rep}")
        }
    }
}

/// Brace expansion over the unquoted literal characters, bounded.
fn brace_expand(chars: &Chars, exact: &mut bool) -> Vec<Chars> {
    let mut out = Vec::new();
    let mut work = vec![chars.clone()];
    while let Some(item) = work.pop() {
        if out.len() + work.len() > MAX_FIELDS {
            *exact = false;
            out.push(item);
            continue;
        }
        match expand_first_brace(&item) {
            Some(parts) => {
                // Keep left-to-right order: push in reverse.
                for p in parts.into_iter().rev() {
                    work.push(p);
                }
            }
            None => out.push(item),
        }
    }
    out
}

fn active(c: &(char, Origin), want: char) -> bool {
    c.0 == want && c.1 == Origin::Lit { quoted: false }
}

/// The alternatives of the first expandable `{...}` in `chars`, if any.
fn expand_first_brace(chars: &Chars) -> Option<Vec<Chars>> {
    for open in 0..chars.len() {
        if !active(&chars[open], '{') {
            continue;
        }
        // `${` is not a brace expansion.
        if open > 0 && chars[open - 1].0 == '$' {
            continue;
        }
        let mut depth = 0usize;
        let mut commas = Vec::new();
        let mut close = None;
        for (i, c) in chars.iter().enumerate().skip(open) {
            if active(c, '{') {
                depth += 1;
            } else if active(c, '}') {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            } else if active(c, ',') && depth == 1 {
                commas.push(i);
            }
        }
        let Some(close) = close else { continue };
        let prefix = &chars[..open];
        let suffix = &chars[close + 1..];
        let inner = &chars[open + 1..close];
        let items: Vec<Chars> = if !commas.is_empty() {
            let mut items = Vec::new();
            let mut start = open + 1;
            for &c in commas.iter().chain(std::iter::once(&close)) {
                items.push(chars[start..c].to_vec());
                start = c + 1;
            }
            items
        } else if let Some(seq) = sequence(inner) {
            seq
        } else {
            continue;
        };
        return Some(
            items
                .into_iter()
                .take(MAX_FIELDS + 1)
                .map(|item| {
                    let mut v = prefix.to_vec();
                    v.extend(item);
                    v.extend_from_slice(suffix);
                    v
                })
                .collect(),
        );
    }
    None
}

/// `{1..5}`, `{a..e}`, `{10..1..2}`.
fn sequence(inner: &[(char, Origin)]) -> Option<Vec<Chars>> {
    let text: String = inner.iter().map(|c| c.0).collect();
    let lit = Origin::Lit { quoted: false };
    let parts: Vec<&str> = text.split("..").collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let step: i64 = match parts.get(2) {
        Some(s) => s.parse::<i64>().ok()?.checked_abs()?.max(1),
        None => 1,
    };
    let to_chars = |s: String| -> Chars { s.chars().map(|c| (c, lit)).collect() };
    if let (Ok(a), Ok(b)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        let mut out = Vec::new();
        let mut i = a;
        while out.len() <= MAX_FIELDS {
            out.push(to_chars(i.to_string()));
            if i == b {
                break;
            }
            i = if a <= b {
                i.checked_add(step)?
            } else {
                i.checked_sub(step)?
            };
            if (a <= b && i > b) || (a > b && i < b) {
                break;
            }
        }
        return Some(out);
    }
    let (mut a, mut b) = (parts[0].chars(), parts[1].chars());
    match (a.next(), a.next(), b.next(), b.next()) {
        (Some(x), None, Some(y), None) if x.is_ascii_alphabetic() && y.is_ascii_alphabetic() => {
            let (lo, hi) = (x as u8, y as u8);
            let range: Vec<u8> = if lo <= hi {
                (lo..=hi).step_by(step as usize).collect()
            } else {
                (hi..=lo).rev().step_by(step as usize).collect()
            };
            Some(
                range
                    .into_iter()
                    .take(MAX_FIELDS + 1)
                    .map(|c| vec![(char::from(c), lit)])
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Splits on whitespace produced by unquoted expansions; drops empty unquoted fields.
fn split_fields(chars: &Chars, has_quoted: bool) -> Vec<String> {
    let mut fields = Vec::new();
    let mut current = String::new();
    let mut keep = false;
    for &(c, origin) in chars {
        let splits = origin == Origin::Exp { quoted: false } && matches!(c, ' ' | '\t' | '\n');
        if splits {
            if !current.is_empty() || keep {
                fields.push(std::mem::take(&mut current));
            }
            keep = false;
            continue;
        }
        if matches!(
            origin,
            Origin::Lit { quoted: true } | Origin::Exp { quoted: true }
        ) {
            keep = true;
        }
        current.push(c);
    }
    if !current.is_empty() || keep || (fields.is_empty() && has_quoted && chars.is_empty()) {
        fields.push(current);
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::arith::{arithmetic, looks_arithmetic};
    use crate::approval::decode::command_output;
    use crate::approval::lexer::lex;

    fn fields(text: &str, vars: &Vars) -> Expanded {
        let script = lex(text);
        let words = &script.pipelines[0].commands[0].words;
        let mut alts: Vec<Vec<String>> = vec![Vec::new()];
        let mut exact = true;
        for w in words {
            let e = expand_word(w, vars, 0);
            exact &= e.exact;
            let mut next = Vec::new();
            for a in &alts {
                for b in &e.alts {
                    let mut v = a.clone();
                    v.extend(b.iter().cloned());
                    next.push(v);
                }
            }
            alts = next;
        }
        Expanded {
            alts,
            exact,
            computed: false,
            glob: false,
        }
    }

    fn one(text: &str) -> Vec<String> {
        let e = fields(text, &Vars::default());
        assert!(e.exact, "{text}: {e:?}");
        e.alts[0].clone()
    }

    #[test]
    fn braces_ifs_and_quotes() {
        assert_eq!(one("rm -rf {/,}"), ["rm", "-rf", "/"]);
        assert_eq!(one("{rm,-rf,/}"), ["rm", "-rf", "/"]);
        assert_eq!(one("rm${IFS}-rf${IFS}/"), ["rm", "-rf", "/"]);
        assert_eq!(one("echo '{a,b}' \"x y\" ''"), ["echo", "{a,b}", "x y", ""]);
        assert_eq!(
            one("echo {1..3} {a..c}"),
            ["echo", "1", "2", "3", "a", "b", "c"]
        );
    }

    #[test]
    fn variables_defaults_and_operators() {
        let mut vars = Vars::default();
        vars.assign("R", Some("rm".into()));
        vars.assign("X", Some("xrmx".into()));
        assert_eq!(fields("$R -rf /", &vars).alts, [["rm", "-rf", "/"]]);
        assert_eq!(fields("${X#x} ${X%x}", &vars).alts, [["rmx", "xrm"]]);
        assert_eq!(fields("${X/x/} ${X//x/}", &vars).alts, [["rmx", "rm"]]);
        assert_eq!(fields("${X:1:2} ${R^^}", &vars).alts, [["rm", "RM"]]);
        let e = fields("${nope:-rm} -rf", &vars);
        assert!(!e.exact);
        assert_eq!(e.alts[0], ["rm", "-rf"]);
        let e = fields("$nope", &vars);
        assert!(!e.exact);
        assert_eq!(e.alts, [["$nope"]]);
        vars.assign("R", Some("ls".into()));
        assert_eq!(fields("$R", &vars).alts, [["rm"], ["ls"]]);
    }

    #[test]
    fn substitutions_with_fixed_output() {
        let v = Vars::default();
        assert_eq!(one("$(echo rm) -rf /"), ["rm", "-rf", "/"]);
        assert_eq!(one("`printf '%s' r m`"), ["rm"]);
        assert_eq!(one("\"$(echo cm0gLXJmIC8= | base64 -d)\""), ["rm -rf /"]);
        assert_eq!(
            one("$(echo 'eq -ev /' | tr 'eqv' 'rmf')"),
            ["rm", "-rf", "/"]
        );
        assert_eq!(one("$(echo '/ fr- mr' | rev)"), ["rm", "-rf", "/"]);
        assert_eq!(one("$(echo 726d | xxd -r -p)"), ["rm"]);
        assert_eq!(one("$(base64 -d <<< cm0=)"), ["rm"]);
        assert_eq!(one("$(cat <<EOF\nrm\nEOF\n)"), ["rm"]);
        assert!(!fields("$(curl x)", &v).exact);
        assert_eq!(
            command_output("printf 'a\\x41%s\\n' b c", &v, 0).as_deref(),
            Some("aAb\naAc\n")
        );
    }

    #[test]
    fn arithmetic_is_evaluated() {
        let v = Vars::default();
        assert_eq!(arithmetic("1", &v, 0), Some(1));
        assert_eq!(arithmetic("2*(3+4)-0x10", &v, 0), Some(-2));
        assert_eq!(arithmetic("-01", &v, 0), Some(-1));
        assert_eq!(arithmetic("$((1))", &v, 0), Some(1));
        assert_eq!(arithmetic("x+1", &v, 0), None);
        assert_eq!(arithmetic("1/0", &v, 0), None);
        for ok in [
            "1+2",
            "a*b",
            "i++",
            "x = 1",
            "x > 0 ? 1 : 2",
            "-x",
            "$x + ${y:-1}",
            "(a)",
        ] {
            assert!(looks_arithmetic(ok), "{ok}");
        }
        for not in [
            "rm -rf /",
            "(rm -rf /)",
            "taskset 1 rm -rf /",
            "reboot now",
            "",
            "a b",
        ] {
            assert!(!looks_arithmetic(not), "{not}");
        }
        assert_eq!(one("kill -9 -$((1))"), ["kill", "-9", "-1"]);
    }

    #[test]
    fn bounded_on_hostile_input() {
        let e = fields(&"{a,b}".repeat(30), &Vars::default());
        assert!(!e.exact);
        assert!(e.alts[0].len() <= MAX_FIELDS);
        let _ = fields("{1..99999999999}", &Vars::default());
        let _ = arithmetic("2**99", &Vars::default(), 0);
        let deep = "$(echo ".repeat(20) + "x" + &")".repeat(20);
        let _ = fields(&deep, &Vars::default());
    }
}
