//! Command substitutions whose output is fixed, computed without running anything: a
//! pipeline of `echo`, `printf`, `cat` of a here-document or here-string, and the decoders an
//! obfuscated command goes through (`base64 -d`, `base32 -d`, `basenc`, `openssl base64 -d`,
//! `xxd -r -p`, `rev`, `tr`). `$(echo cm0gLXJmIC8= | base64 -d)` is `rm -rf /`.

use super::expand::{Vars, expand_exact, expand_word};
use super::lexer::lex;

/// The most output a static command substitution may produce.
const MAX_OUTPUT: usize = 64 * 1024;
/// Nesting of substitutions evaluated statically.
const MAX_EVAL_DEPTH: usize = 6;

/// The output of `body` when it is a pipeline of commands whose output is fixed (`echo`,
/// `printf`, `cat` of a here-document, decoders); `None` otherwise.
pub(crate) fn command_output(body: &str, vars: &Vars, depth: usize) -> Option<String> {
    if depth > MAX_EVAL_DEPTH || body.len() > MAX_OUTPUT {
        return None;
    }
    let script = lex(body);
    if script.pipelines.is_empty() && script.nested.is_empty() {
        // `$()`, `` `` ``: nothing runs, nothing is printed.
        return Some(String::new());
    }
    let [pipeline] = script.pipelines.as_slice() else {
        return None;
    };
    let mut data: Option<String> = None;
    for cmd in &pipeline.commands {
        if !cmd.redirects.is_empty() {
            return None;
        }
        let mut argv = Vec::new();
        for w in &cmd.words {
            let e = expand_word(w, vars, depth);
            match (e.exact, e.alts.as_slice()) {
                (true, [one]) => argv.extend(one.iter().cloned()),
                _ => return None,
            }
        }
        let fed = match (&cmd.stdin_text, cmd.herestrings.as_slice()) {
            (None, _) => None,
            (Some(_), [hs]) => Some(format!("{}\n", expand_exact(hs, vars, depth)?)),
            (Some(text), []) if !cmd.stdin_expands => Some(text.clone()),
            _ => return None,
        };
        let input = fed.or(data.take());
        let out = stage_output(&argv, input.as_deref())?;
        if out.len() > MAX_OUTPUT {
            return None;
        }
        data = Some(out);
    }
    data
}

/// What one producer or filter writes, given its input.
pub(crate) fn stage_output(argv: &[String], input: Option<&str>) -> Option<String> {
    let (name, args) = argv.split_first()?;
    let name = name.rsplit('/').next().unwrap_or(name);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match name {
        "echo" => Some(echo(&args)),
        "printf" => printf(&args),
        "cat" if args.iter().all(|a| *a == "-") => input.map(str::to_string),
        "true" | ":" => Some(String::new()),
        "base64" | "base32" | "basenc" => {
            let decode = args.iter().any(|a| {
                *a == "--decode"
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains(['d', 'D']))
            });
            if !decode || args.iter().any(|a| !a.starts_with('-')) {
                return None;
            }
            let bytes = match name {
                "base32" => base32_decode(input?),
                "basenc" if args.contains(&"--base32") => base32_decode(input?),
                "basenc" if args.contains(&"--base16") => hex_decode(input?),
                "basenc" if !args.iter().any(|a| a.starts_with("--base64")) => None,
                _ => base64_decode(input?),
            }?;
            String::from_utf8(bytes).ok()
        }
        "openssl" => {
            let b64 = args
                .iter()
                .any(|a| matches!(*a, "base64" | "-base64" | "-a"));
            let dec = args.contains(&"-d");
            if b64 && dec {
                String::from_utf8(base64_decode(input?)?).ok()
            } else {
                None
            }
        }
        "xxd" => {
            let r = args.iter().any(|a| a.starts_with('-') && a.contains('r'));
            let p = args
                .iter()
                .any(|a| a.starts_with('-') && (a.contains('p') || *a == "-ps" || *a == "-plain"));
            if r && p {
                String::from_utf8(hex_decode(input?)?).ok()
            } else {
                None
            }
        }
        "rev" if args.is_empty() => Some(
            input?
                .split_inclusive('\n')
                .map(|line| {
                    let (body, nl) = match line.strip_suffix('\n') {
                        Some(b) => (b, "\n"),
                        None => (line, ""),
                    };
                    format!("{}{nl}", body.chars().rev().collect::<String>())
                })
                .collect(),
        ),
        "tr" => tr(&args, input?),
        _ => None,
    }
}

fn echo(args: &[&str]) -> String {
    let mut newline = true;
    let mut escapes = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let flags = a
            .strip_prefix('-')
            .filter(|f| !f.is_empty() && f.chars().all(|c| matches!(c, 'n' | 'e' | 'E')));
        let Some(flags) = flags else { break };
        for c in flags.chars() {
            match c {
                'n' => newline = false,
                'e' => escapes = true,
                _ => escapes = false,
            }
        }
        i += 1;
    }
    let text = args[i.min(args.len())..].join(" ");
    let mut out = if escapes {
        unescape(&text, true).0
    } else {
        text
    };
    if newline {
        out.push('\n');
    }
    out
}

/// Backslash escapes as `printf` and `echo -e` decode them; the flag says `\c` stopped output.
fn unescape(text: &str, echo_style: bool) -> (String, bool) {
    let mut out = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'v' => out.push('\u{b}'),
            '\\' => out.push('\\'),
            'c' => return (out, true),
            'x' => {
                let mut v = 0u32;
                let mut n = 0;
                while n < 2 && i < chars.len() && chars[i].is_ascii_hexdigit() {
                    v = v * 16 + chars[i].to_digit(16).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                if n == 0 {
                    out.push_str("\\x");
                } else if let Some(ch) = char::from_u32(v) {
                    out.push(ch);
                }
            }
            '0'..='7' => {
                // printf: \NNN; echo -e: \0NNN.
                let mut v = 0u32;
                let mut n = 0;
                let max = if echo_style && e == '0' { 3 } else { 2 };
                if !(echo_style && e == '0') {
                    v = e.to_digit(8).unwrap_or(0);
                }
                while n < max && i < chars.len() && chars[i].is_digit(8) {
                    v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                if let Some(ch) = char::from_u32(v) {
                    out.push(ch);
                }
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    (out, false)
}

fn printf(args: &[&str]) -> Option<String> {
    let (fmt, rest) = args.split_first()?;
    if fmt.starts_with('-') && *fmt != "-" {
        if *fmt == "--" {
            return printf(rest);
        }
        return None;
    }
    let fmt: Vec<char> = fmt.chars().collect();
    let mut out = String::new();
    let mut queue = rest.iter();
    let mut consumed_any;
    loop {
        consumed_any = false;
        let mut i = 0;
        while i < fmt.len() {
            let c = fmt[i];
            i += 1;
            if c == '\\' {
                // One escape: `\xHH`, `\NNN` or a single character.
                let mut end = (i + 1).min(fmt.len());
                match fmt.get(i) {
                    Some('x') => {
                        while end < fmt.len() && end < i + 3 && fmt[end].is_ascii_hexdigit() {
                            end += 1;
                        }
                    }
                    Some(d) if d.is_digit(8) => {
                        while end < fmt.len() && end < i + 3 && fmt[end].is_digit(8) {
                            end += 1;
                        }
                    }
                    _ => {}
                }
                let esc: String = std::iter::once('\\')
                    .chain(fmt[i..end].iter().copied())
                    .collect();
                i = end;
                let (s, stop) = unescape(&esc, false);
                out.push_str(&s);
                if stop {
                    return Some(out);
                }
                continue;
            }
            if c != '%' {
                out.push(c);
                continue;
            }
            let conv = *fmt.get(i)?;
            i += 1;
            match conv {
                '%' => out.push('%'),
                's' | 'b' | 'c' | 'd' | 'i' => {
                    let arg = queue.next().copied().unwrap_or("");
                    consumed_any = true;
                    match conv {
                        's' => out.push_str(arg),
                        'b' => {
                            let (s, stop) = unescape(arg, true);
                            out.push_str(&s);
                            if stop {
                                return Some(out);
                            }
                        }
                        'c' => out.extend(arg.chars().next()),
                        _ => out.push_str(&arg.parse::<i64>().unwrap_or(0).to_string()),
                    }
                }
                _ => return None,
            }
        }
        if !consumed_any || queue.len() == 0 {
            break;
        }
        if out.len() > MAX_OUTPUT {
            return None;
        }
    }
    Some(out)
}

fn tr_set(spec: &str) -> Option<Vec<char>> {
    let (text, _) = unescape(spec, false);
    let chars: Vec<char> = text.chars().collect();
    if chars.contains(&'[') && spec.contains("[:") {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if i + 2 < chars.len() && chars[i + 1] == '-' {
            let (a, b) = (chars[i] as u32, chars[i + 2] as u32);
            if a > b || b - a > 4096 {
                return None;
            }
            out.extend((a..=b).filter_map(char::from_u32));
            i += 3;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    Some(out)
}

fn tr(args: &[&str], input: &str) -> Option<String> {
    match args {
        ["-d", set] => {
            let set = tr_set(set)?;
            Some(input.chars().filter(|c| !set.contains(c)).collect())
        }
        [from, to] if !from.starts_with('-') => {
            let from = tr_set(from)?;
            let to = tr_set(to)?;
            let last = *to.last()?;
            Some(
                input
                    .chars()
                    .map(|c| match from.iter().rposition(|f| *f == c) {
                        Some(i) => to.get(i).copied().unwrap_or(last),
                        None => c,
                    })
                    .collect(),
            )
        }
        _ => None,
    }
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in text.chars() {
        let v = match c {
            'A'..='Z' => c as u32 - 'A' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 26,
            '0'..='9' => c as u32 - '0' as u32 + 52,
            '+' | '-' => 62,
            '/' | '_' => 63,
            '=' => break,
            c if c.is_whitespace() => continue,
            _ => return None,
        };
        bits = (bits << 6) | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push(((bits >> n) & 0xff) as u8);
        }
    }
    Some(out)
}

fn base32_decode(text: &str) -> Option<Vec<u8>> {
    let mut bits = 0u64;
    let mut n = 0;
    let mut out = Vec::new();
    for c in text.chars() {
        let v = match c.to_ascii_uppercase() {
            c @ 'A'..='Z' => c as u64 - 'A' as u64,
            c @ '2'..='7' => c as u64 - '2' as u64 + 26,
            '=' => break,
            c if c.is_whitespace() => continue,
            _ => return None,
        };
        bits = ((bits << 5) | v) & 0xffff_ffff;
        n += 5;
        if n >= 8 {
            n -= 8;
            out.push(((bits >> n) & 0xff) as u8);
        }
    }
    Some(out)
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u32> = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| c.to_digit(16))
        .collect::<Option<Vec<_>>>()?;
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    Some(
        digits
            .chunks(2)
            .map(|p| ((p[0] << 4) | p[1]) as u8)
            .collect(),
    )
}
