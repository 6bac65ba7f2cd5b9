//! A small, quote-aware shell lexer: enough of bash's grammar to find every command a command
//! line will run. Each word keeps its parts (literal text, quoted or not, parameter
//! expansions, command and arithmetic substitutions, process substitutions) so that
//! [`super::expand`] can expand it the way bash would, and a flattened `text` where quotes and
//! backslashes are removed the way the shell removes them (`r''m` and `\rm` are `rm`) and
//! expansions are kept as written (`$HOME`, `$(cmd)`). `;`, `&&`, `||`, `&`, newlines and
//! parentheses separate commands, `|` joins them into pipelines, redirections are collected
//! with their targets, here-documents and here-strings are attached to their command, `case`
//! patterns are skipped, and the bodies of every substitution (also those nested in `${x:-...}`
//! and `$((...))`) are returned for checking as commands of their own. Quoted text stays data:
//! `grep "rm -rf /" notes` is a `grep` with an argument, not an `rm`.

/// One piece of a word.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// Literal characters. `quoted` when they came from quotes or a backslash escape: globs
    /// and brace expansion do not apply to them.
    Lit { text: String, quoted: bool },
    /// `$NAME`, `${NAME}` or `${NAME<op><arg>}` (`op` empty for the plain forms; `#len` for
    /// `${#NAME}`; `!` for indirection).
    Param {
        name: String,
        op: String,
        arg: String,
        quoted: bool,
    },
    /// `$(...)` or a backquoted command.
    Sub { body: String, quoted: bool },
    /// `$((...))`.
    Arith { body: String, quoted: bool },
    /// `<(...)` or `>(...)`: expands to a `/dev/fd/N` path.
    ProcSub { body: String },
}

/// One word after quote removal. `subs` are the bodies of every substitution it contains.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Word {
    pub text: String,
    pub parts: Vec<Part>,
    pub subs: Vec<String>,
}

impl Word {
    fn push_lit(&mut self, c: char, quoted: bool) {
        self.text.push(c);
        match self.parts.last_mut() {
            Some(Part::Lit { text, quoted: q }) if *q == quoted => text.push(c),
            _ => self.parts.push(Part::Lit {
                text: c.to_string(),
                quoted,
            }),
        }
    }

    fn push_part(&mut self, part: Part, raw: &str) {
        self.text.push_str(raw);
        self.parts.push(part);
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Redirect {
    /// `>`, `>>`, `>|`, `&>`, `<`, `<>`, ...
    pub op: String,
    pub target: Word,
}

/// One command: its words, redirections, and what a here-document or here-string feeds it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SimpleCommand {
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// The text of here-documents and here-strings, as written (expansions not done).
    pub stdin_text: Option<String>,
    /// Here-string words, for expansion.
    pub herestrings: Vec<Word>,
    /// A here-document body that bash expands (`$...` or backquotes in an unquoted one).
    pub stdin_expands: bool,
}

/// Commands joined by `|`; `background` when it ends with a single `&`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Pipeline {
    pub commands: Vec<SimpleCommand>,
    pub background: bool,
}

/// A parsed command line: its pipelines in order, and the bodies of substitutions (which run
/// as commands too).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Script {
    pub pipelines: Vec<Pipeline>,
    pub nested: Vec<String>,
    /// The bodies of `$((...))`: bash runs one as a command substitution of a subshell when
    /// it is not arithmetic (`$((rm -rf /))`).
    pub arithmetic: Vec<String>,
}

/// Words that start compound commands; the command after them is what runs.
const RESERVED: &[&str] = &[
    "{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "function",
    "coproc",
];

/// A here-document waiting for the end of its line: where its command is and how it ends.
struct PendingHeredoc {
    pipeline: usize,
    command: usize,
    delimiter: String,
    strip_tabs: bool,
    expands: bool,
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    script: Script,
    pipeline: Pipeline,
    command: SimpleCommand,
    heredocs: Vec<PendingHeredoc>,
    /// Inside `case WORD` before `in`.
    case_header: bool,
    /// Reading `case` patterns (up to their `)`).
    case_pattern: bool,
    case_depth: usize,
    /// Inside `[[ ... ]]`: a condition, not a command.
    in_cond: bool,
    /// After the `function` keyword: the next word is a name, not a command.
    function_name: bool,
}

/// Parses `text`.
pub(crate) fn lex(text: &str) -> Script {
    let mut lx = Lexer {
        chars: text.chars().collect(),
        pos: 0,
        script: Script::default(),
        pipeline: Pipeline::default(),
        command: SimpleCommand::default(),
        heredocs: Vec::new(),
        case_header: false,
        case_pattern: false,
        case_depth: 0,
        in_cond: false,
        function_name: false,
    };
    lx.run();
    lx.script
}

/// One word of `text` (quotes removed, expansions recorded), as if it stood alone; used for
/// the argument of `${x:-word}`.
pub(crate) fn lex_word(text: &str) -> Word {
    let mut lx = Lexer {
        chars: text.chars().collect(),
        pos: 0,
        script: Script::default(),
        pipeline: Pipeline::default(),
        command: SimpleCommand::default(),
        heredocs: Vec::new(),
        case_header: false,
        case_pattern: false,
        case_depth: 0,
        in_cond: false,
        function_name: false,
    };
    let mut word = Word::default();
    while lx.pos < lx.chars.len() {
        let before = lx.pos;
        let piece = lx.read_word();
        merge(&mut word, piece);
        if lx.pos == before {
            // A metacharacter: kept as literal text (a default value may contain spaces).
            if let Some(c) = lx.peek() {
                word.push_lit(c, false);
            }
            lx.pos += 1;
        }
    }
    word
}

fn merge(into: &mut Word, piece: Word) {
    for part in piece.parts {
        match part {
            Part::Lit { text, quoted } => {
                for c in text.chars() {
                    into.push_lit(c, quoted);
                }
            }
            other => into.parts.push(other),
        }
    }
    into.subs.extend(piece.subs);
    into.text = flatten(&into.parts);
}

/// The flattened text of parts (expansions as written).
fn flatten(parts: &[Part]) -> String {
    let mut out = String::new();
    for p in parts {
        match p {
            Part::Lit { text, .. } => out.push_str(text),
            Part::Param { name, op, arg, .. } => {
                if op.is_empty() {
                    out.push_str(&format!("${{{name}}}"));
                } else {
                    out.push_str(&format!("${{{name}{op}{arg}}}"));
                }
            }
            Part::Sub { body, .. } => out.push_str(&format!("$({body})")),
            Part::Arith { body, .. } => out.push_str(&format!("$(({body}))")),
            Part::ProcSub { body } => out.push_str(&format!("<({body})")),
        }
    }
    out
}

/// The `$((...))` bodies in `parts`, also nested in other arithmetic and in `${x:-...}`.
fn collect_arithmetic(parts: &[Part], out: &mut Vec<String>, depth: usize) {
    if depth > 8 || out.len() > 64 {
        return;
    }
    for part in parts {
        let inner = match part {
            Part::Arith { body, .. } => {
                out.push(body.clone());
                body
            }
            Part::Param { arg, .. } => arg,
            _ => continue,
        };
        if inner.contains("$((") {
            collect_arithmetic(&lex_word(inner).parts, out, depth + 1);
        }
    }
}

/// `NAME=` or `NAME+=`.
fn is_assignment_prefix(text: &str) -> bool {
    let name = text
        .strip_suffix("+=")
        .or_else(|| text.strip_suffix('='))
        .unwrap_or("");
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// The word as a reserved word: one unquoted literal.
fn keyword(word: &Word) -> Option<&str> {
    match word.parts.as_slice() {
        [
            Part::Lit {
                text,
                quoted: false,
            },
        ] => Some(text.as_str()),
        _ => None,
    }
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_meta(c: char) -> bool {
    is_blank(c) || matches!(c, '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>')
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn run(&mut self) {
        while let Some(c) = self.peek() {
            if self.case_pattern {
                match c {
                    '|' | '(' => {
                        self.pos += 1;
                        continue;
                    }
                    ')' => {
                        self.pos += 1;
                        self.case_pattern = false;
                        continue;
                    }
                    _ => {}
                }
            }
            match c {
                ' ' | '\t' => self.pos += 1,
                '\n' => {
                    self.pos += 1;
                    self.in_cond = false;
                    self.end_pipeline(false);
                    self.read_heredoc_bodies();
                }
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                ';' => {
                    self.pos += 1;
                    self.in_cond = false;
                    let mut case_end = false;
                    if self.peek() == Some(';') {
                        self.pos += 1;
                        case_end = true;
                        if self.peek() == Some('&') {
                            self.pos += 1;
                        }
                    } else if self.peek() == Some('&') {
                        self.pos += 1;
                        case_end = true;
                    }
                    self.end_pipeline(false);
                    if case_end && self.case_depth > 0 {
                        self.case_pattern = true;
                    }
                }
                '&' => match self.peek_at(1) {
                    Some('&') => {
                        self.pos += 2;
                        self.end_pipeline(false);
                    }
                    Some('>') => self.redirect(),
                    _ => {
                        self.pos += 1;
                        self.end_pipeline(true);
                    }
                },
                '|' => {
                    if self.peek_at(1) == Some('|') {
                        self.pos += 2;
                        self.end_pipeline(false);
                    } else {
                        self.pos += 1;
                        if self.peek() == Some('&') {
                            self.pos += 1;
                        }
                        self.end_command();
                    }
                }
                '(' if self.peek_at(1) == Some('(') && self.arithmetic_allowed() => {
                    // `(( expr ))` and `for (( ... ))`: arithmetic, not commands; only its
                    // substitutions run.
                    self.pos += 2;
                    let body = self.read_until_close_paren();
                    if self.peek() == Some(')') {
                        self.pos += 1;
                    }
                    self.script.nested.extend(substitutions_in(&body));
                    self.script.arithmetic.push(body);
                    self.command = SimpleCommand::default();
                }
                '(' | ')' => {
                    self.pos += 1;
                    self.end_pipeline(false);
                }
                '<' | '>' if self.peek_at(1) != Some('(') => self.redirect(),
                _ => {
                    let before = self.pos;
                    let word = self.read_word();
                    if self.pos == before {
                        // Nothing consumed (cannot happen with the cases above); never loop.
                        self.pos += 1;
                        continue;
                    }
                    let fd_prefix = !word.text.is_empty()
                        && word.text.chars().all(|c| c.is_ascii_digit())
                        && matches!(self.peek(), Some('<' | '>'))
                        && self.peek_at(1) != Some('(');
                    let array = self.peek() == Some('(')
                        && word.parts.len() == 1
                        && is_assignment_prefix(&word.text);
                    if fd_prefix {
                        self.redirect();
                    } else if array {
                        // `NAME=(a b c)`: an array, not a subshell; its substitutions run.
                        self.pos += 1;
                        let body = self.read_until_close_paren();
                        let inner = lex(&body);
                        self.script.nested.extend(inner.nested);
                        let mut w = Word::default();
                        for c in format!("{}({body})", word.text).chars() {
                            w.push_lit(c, true);
                        }
                        self.push_word(w);
                    } else {
                        self.push_word(word);
                    }
                }
            }
        }
        self.end_pipeline(false);
        self.read_heredoc_bodies();
    }

    /// `((` starts an arithmetic command here (at a command start, or after `for`).
    fn arithmetic_allowed(&self) -> bool {
        match self.command.words.as_slice() {
            [] => true,
            [only] => keyword(only) == Some("for"),
            _ => false,
        }
    }

    fn push_word(&mut self, word: Word) {
        // Substitutions run wherever their word is, even in a skipped `case` subject.
        self.script.nested.extend(word.subs.iter().cloned());
        self.collect_arithmetic(&word);
        if self.function_name {
            self.function_name = false;
            return;
        }
        if self.in_cond {
            if keyword(&word) == Some("]]") {
                self.in_cond = false;
            }
            return;
        }
        if self.case_pattern {
            if keyword(&word) == Some("esac") {
                self.case_pattern = false;
                self.case_depth = self.case_depth.saturating_sub(1);
            }
            return;
        }
        if self.case_header {
            if keyword(&word) == Some("in") {
                self.case_header = false;
                self.case_pattern = true;
            }
            return;
        }
        if self.command.words.is_empty() {
            match keyword(&word) {
                Some("case") => {
                    self.case_header = true;
                    self.case_depth += 1;
                    return;
                }
                Some("esac") => {
                    self.case_depth = self.case_depth.saturating_sub(1);
                    return;
                }
                Some("[[") => {
                    self.in_cond = true;
                    return;
                }
                Some("function") => {
                    self.function_name = true;
                    return;
                }
                Some(k) if RESERVED.contains(&k) => return,
                _ => {}
            }
        }
        self.command.words.push(word);
    }

    fn collect_arithmetic(&mut self, word: &Word) {
        collect_arithmetic(&word.parts, &mut self.script.arithmetic, 0);
    }

    fn end_command(&mut self) {
        let cmd = std::mem::take(&mut self.command);
        if !cmd.words.is_empty() || !cmd.redirects.is_empty() || cmd.stdin_text.is_some() {
            self.pipeline.commands.push(cmd);
        }
    }

    fn end_pipeline(&mut self, background: bool) {
        self.end_command();
        let mut p = std::mem::take(&mut self.pipeline);
        if !p.commands.is_empty() {
            p.background = background;
            self.script.pipelines.push(p);
        }
    }

    /// A redirection operator at `pos` (an fd number before it was already consumed).
    fn redirect(&mut self) {
        let mut op = String::new();
        while let Some(c) = self.peek() {
            let continues = matches!(
                (op.as_str(), c),
                ("", '<' | '>' | '&')
                    | ("&", '>')
                    | (">", '>' | '|' | '&')
                    | ("<", '<' | '>' | '&')
                    | ("<<", '<' | '-')
                    | ("&>", '>')
            );
            if !continues {
                break;
            }
            op.push(c);
            self.pos += 1;
        }
        while self.peek().is_some_and(is_blank) {
            self.pos += 1;
        }
        let target = self.read_word();
        self.script.nested.extend(target.subs.iter().cloned());
        self.collect_arithmetic(&target);
        match op.as_str() {
            "<<" | "<<-" => {
                let quoted = target
                    .parts
                    .iter()
                    .any(|p| matches!(p, Part::Lit { quoted: true, .. }));
                self.heredocs.push(PendingHeredoc {
                    pipeline: self.script.pipelines.len(),
                    command: self.pipeline.commands.len(),
                    delimiter: target.text,
                    strip_tabs: op == "<<-",
                    expands: !quoted,
                });
                // Marks the command as fed, so it is kept even without words.
                self.command.stdin_text.get_or_insert_with(String::new);
            }
            "<<<" => {
                let fed = self.command.stdin_text.get_or_insert_with(String::new);
                fed.push_str(&target.text);
                fed.push('\n');
                self.command.herestrings.push(target);
            }
            _ => {
                let dup = matches!(op.as_str(), ">&" | "<&")
                    && target.text.chars().all(|c| c.is_ascii_digit() || c == '-');
                if !dup {
                    self.command.redirects.push(Redirect { op, target });
                }
            }
        }
    }

    /// After a newline: the bodies of the here-documents opened on the line just ended.
    fn read_heredoc_bodies(&mut self) {
        for doc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            while self.pos < self.chars.len() {
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line: String = self.chars[start..self.pos].iter().collect();
                if self.peek() == Some('\n') {
                    self.pos += 1;
                }
                let cmp = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if cmp == doc.delimiter {
                    break;
                }
                body.push_str(cmp);
                body.push('\n');
            }
            let expands = doc.expands && body.contains(['$', '`']);
            if doc.expands {
                self.script.nested.extend(substitutions_in(&body));
            }
            if let Some(cmd) = self
                .script
                .pipelines
                .get_mut(doc.pipeline)
                .and_then(|p| p.commands.get_mut(doc.command))
            {
                cmd.stdin_text
                    .get_or_insert_with(String::new)
                    .push_str(&body);
                cmd.stdin_expands |= expands;
            }
        }
    }

    /// One word, quotes removed, up to the next unquoted metacharacter.
    fn read_word(&mut self) -> Word {
        let mut word = Word::default();
        while let Some(c) = self.peek() {
            match c {
                '\'' => {
                    self.pos += 1;
                    // An empty '' still makes a (quoted, empty) word.
                    if word.parts.is_empty() {
                        word.parts.push(Part::Lit {
                            text: String::new(),
                            quoted: true,
                        });
                    }
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        if c == '\'' {
                            break;
                        }
                        word.push_lit(c, true);
                    }
                }
                '"' => {
                    self.pos += 1;
                    if word.parts.is_empty() {
                        word.parts.push(Part::Lit {
                            text: String::new(),
                            quoted: true,
                        });
                    }
                    self.read_double_quoted(&mut word);
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(next) => {
                            word.push_lit(next, true);
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '$' => self.read_dollar(&mut word, false),
                '`' => {
                    let body = self.read_backquoted();
                    word.subs.push(body.clone());
                    let raw = format!("`{body}`");
                    word.push_part(
                        Part::Sub {
                            body,
                            quoted: false,
                        },
                        &raw,
                    );
                }
                '<' | '>' if self.peek_at(1) == Some('(') && word.text.is_empty() => {
                    self.pos += 2;
                    let body = self.read_until_close_paren();
                    word.subs.push(body.clone());
                    let raw = format!("{c}({body})");
                    word.push_part(Part::ProcSub { body }, &raw);
                }
                c if is_meta(c) => break,
                c => {
                    word.push_lit(c, false);
                    self.pos += 1;
                }
            }
        }
        // Drop the empty marker of `''` when real parts followed it.
        if word.parts.len() > 1
            && matches!(word.parts.first(), Some(Part::Lit { text, .. }) if text.is_empty())
        {
            word.parts.remove(0);
        }
        word
    }

    fn read_double_quoted(&mut self, word: &mut Word) {
        while let Some(c) = self.peek() {
            match c {
                '"' => {
                    self.pos += 1;
                    return;
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(n @ ('$' | '`' | '"' | '\\')) => {
                            word.push_lit(n, true);
                            self.pos += 1;
                        }
                        Some(n) => {
                            word.push_lit('\\', true);
                            word.push_lit(n, true);
                            self.pos += 1;
                        }
                        None => word.push_lit('\\', true),
                    }
                }
                '$' => self.read_dollar(word, true),
                '`' => {
                    let body = self.read_backquoted();
                    word.subs.push(body.clone());
                    let raw = format!("`{body}`");
                    word.push_part(Part::Sub { body, quoted: true }, &raw);
                }
                c => {
                    word.push_lit(c, true);
                    self.pos += 1;
                }
            }
        }
    }

    /// `$(...)`, `$((...))`, `${...}`, `$'...'`, `$"..."`, `$NAME` or a plain `$`.
    fn read_dollar(&mut self, word: &mut Word, quoted: bool) {
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                self.pos += 3;
                let body = self.read_until_close_paren();
                // `$((` closes with `))`: the second paren is consumed here.
                if self.peek() == Some(')') {
                    self.pos += 1;
                }
                let inner = substitutions_in(&body);
                word.subs.extend(inner);
                let raw = format!("$(({body}))");
                word.push_part(Part::Arith { body, quoted }, &raw);
            }
            Some('(') => {
                self.pos += 2;
                let body = self.read_until_close_paren();
                word.subs.push(body.clone());
                let raw = format!("$({body})");
                word.push_part(Part::Sub { body, quoted }, &raw);
            }
            Some('{') => {
                self.pos += 2;
                let start = self.pos;
                let end = scan_close_brace(&self.chars, start);
                let body: String = self.chars[start..end.min(self.chars.len())]
                    .iter()
                    .collect();
                self.pos = (end + 1).min(self.chars.len());
                let (name, op, arg) = split_parameter(&body);
                word.subs.extend(substitutions_in(&arg));
                let raw = format!("${{{body}}}");
                word.push_part(
                    Part::Param {
                        name,
                        op,
                        arg,
                        quoted,
                    },
                    &raw,
                );
            }
            Some('\'') if !quoted => {
                self.pos += 2;
                self.read_ansi_c(word);
            }
            Some('"') if !quoted => {
                self.pos += 2;
                self.read_double_quoted(word);
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                self.pos += 1;
                let mut name = String::new();
                while let Some(c) = self
                    .peek()
                    .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                {
                    name.push(c);
                    self.pos += 1;
                }
                let raw = format!("${name}");
                word.push_part(
                    Part::Param {
                        name,
                        op: String::new(),
                        arg: String::new(),
                        quoted,
                    },
                    &raw,
                );
            }
            Some(c)
                if c.is_ascii_digit() || matches!(c, '@' | '*' | '#' | '?' | '$' | '!' | '-') =>
            {
                self.pos += 2;
                let raw = format!("${c}");
                word.push_part(
                    Part::Param {
                        name: c.to_string(),
                        op: String::new(),
                        arg: String::new(),
                        quoted,
                    },
                    &raw,
                );
            }
            _ => {
                word.push_lit('$', quoted);
                self.pos += 1;
            }
        }
    }

    /// `$'...'`: backslash escapes decoded as bash decodes them, so `$'\x72\x6d'` is `rm` and
    /// `$'\e'` is a real escape character.
    fn read_ansi_c(&mut self, word: &mut Word) {
        if word.parts.is_empty() {
            word.parts.push(Part::Lit {
                text: String::new(),
                quoted: true,
            });
        }
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\'' => return,
                '\\' => {
                    let Some(e) = self.peek() else { return };
                    self.pos += 1;
                    let decoded = match e {
                        'n' => Some('\n'),
                        't' => Some('\t'),
                        'r' => Some('\r'),
                        'a' => Some('\u{7}'),
                        'b' => Some('\u{8}'),
                        'e' | 'E' => Some('\u{1b}'),
                        'f' => Some('\u{c}'),
                        'v' => Some('\u{b}'),
                        'c' => self.peek().map(|c| {
                            self.pos += 1;
                            char::from((c as u32 & 0x1f) as u8)
                        }),
                        'x' => self.read_radix(16, 2).and_then(char::from_u32),
                        'u' => self.read_radix(16, 4).and_then(char::from_u32),
                        'U' => self.read_radix(16, 8).and_then(char::from_u32),
                        '0'..='7' => {
                            self.pos -= 1;
                            self.read_radix(8, 3).and_then(char::from_u32)
                        }
                        other => Some(other),
                    };
                    if let Some(ch) = decoded {
                        word.push_lit(ch, true);
                    }
                }
                other => word.push_lit(other, true),
            }
        }
    }

    fn read_radix(&mut self, radix: u32, max_digits: usize) -> Option<u32> {
        let mut value: Option<u32> = None;
        for _ in 0..max_digits {
            match self.peek().and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    value = Some(value.unwrap_or(0).saturating_mul(radix).saturating_add(d));
                    self.pos += 1;
                }
                None => break,
            }
        }
        value
    }

    /// The body of a backquoted substitution (the opening backquote at `pos`).
    fn read_backquoted(&mut self) -> String {
        self.pos += 1;
        let mut body = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '`' => break,
                '\\' => match self.peek() {
                    Some(n @ ('`' | '\\' | '$')) => {
                        body.push(n);
                        self.pos += 1;
                    }
                    _ => body.push('\\'),
                },
                c => body.push(c),
            }
        }
        body
    }

    /// The text up to the parenthesis closing one already consumed, respecting quotes and
    /// nesting. The closing parenthesis is consumed.
    fn read_until_close_paren(&mut self) -> String {
        let start = self.pos;
        let end = scan_close_paren(&self.chars, start);
        self.pos = (end + 1).min(self.chars.len());
        self.chars[start..end.min(self.chars.len())]
            .iter()
            .collect()
    }
}

/// `NAME<op><arg>` of a `${...}` body.
fn split_parameter(body: &str) -> (String, String, String) {
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let mut prefix = String::new();
    if chars.len() > 1 && matches!(chars[0], '#' | '!') {
        prefix.push(chars[0]);
        i = 1;
    }
    let start = i;
    if chars
        .get(i)
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_')
    {
        while chars
            .get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            i += 1;
        }
    } else if chars.get(i).is_some_and(|c| c.is_ascii_digit()) {
        while chars.get(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
    } else if chars.get(i).is_some() {
        i += 1;
    }
    let name: String = chars[start..i.min(chars.len())].iter().collect();
    // An array subscript makes the value unknowable here.
    let mut rest: String = chars[i.min(chars.len())..].iter().collect();
    let mut op = match prefix.as_str() {
        "#" if rest.is_empty() => "#len".to_string(),
        "!" => "!".to_string(),
        _ => String::new(),
    };
    if rest.starts_with('[') {
        op = "[".to_string();
        return (name, op, rest);
    }
    if op.is_empty() {
        for candidate in [
            ":-", ":=", ":+", ":?", "##", "%%", "//", "/#", "/%", "^^", ",,", "-", "=", "+", "?",
            "#", "%", "/", "^", ",", ":", "@",
        ] {
            if let Some(arg) = rest.strip_prefix(candidate) {
                op = candidate.to_string();
                rest = arg.to_string();
                break;
            }
        }
    }
    (name, op, rest)
}

/// Index of the `}` closing a `${` opened just before `start` (or the end of input).
fn scan_close_brace(chars: &[char], start: usize) -> usize {
    let mut depth = 1usize;
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                i = scan_close_paren(chars, i + 2);
            }
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

/// Index of the `)` closing a parenthesis opened just before `start` (or the end of input).
fn scan_close_paren(chars: &[char], start: usize) -> usize {
    let mut depth = 1usize;
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

/// The `$(...)` and backquoted bodies in text where quotes do not protect them (an unquoted
/// here-document body, the inside of `$((...))` or `${x:-...}`).
pub(crate) fn substitutions_in(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '$' if chars.get(i + 1) == Some(&'(') && chars.get(i + 2) != Some(&'(') => {
                let end = scan_close_paren(&chars, i + 2);
                found.push(chars[i + 2..end.min(chars.len())].iter().collect());
                i = end;
            }
            '<' | '>' if chars.get(i + 1) == Some(&'(') => {
                let end = scan_close_paren(&chars, i + 2);
                found.push(chars[i + 2..end.min(chars.len())].iter().collect());
                i = end;
            }
            '`' => {
                let start = i + 1;
                let mut j = start;
                while j < chars.len() && chars[j] != '`' {
                    j += 1;
                }
                found.push(chars[start..j.min(chars.len())].iter().collect());
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(script: &Script) -> Vec<Vec<String>> {
        script
            .pipelines
            .iter()
            .flat_map(|p| &p.commands)
            .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
            .collect()
    }

    #[test]
    fn quotes_and_escapes_are_removed_like_the_shell_does() {
        let s = lex(r#"r''m -rf "/" ; \rm '-r' x; "r"m y; $'\x72\x6d' z"#);
        assert_eq!(
            words(&s),
            vec![
                vec!["rm", "-rf", "/"],
                vec!["rm", "-r", "x"],
                vec!["rm", "y"],
                vec!["rm", "z"]
            ]
        );
    }

    #[test]
    fn separators_pipelines_and_groups() {
        let s = lex("a && b || c | d; (e); { f; } & g\nh");
        let shape: Vec<usize> = s.pipelines.iter().map(|p| p.commands.len()).collect();
        assert_eq!(shape, vec![1, 1, 2, 1, 1, 1, 1]);
        assert_eq!(
            words(&s),
            vec![
                vec!["a"],
                vec!["b"],
                vec!["c"],
                vec!["d"],
                vec!["e"],
                vec!["f"],
                vec!["g"],
                vec!["h"]
            ]
        );
        assert!(!s.pipelines[5].background);
        let s = lex("f & g; h");
        let bg: Vec<bool> = s.pipelines.iter().map(|p| p.background).collect();
        assert_eq!(bg, [true, false, false]);
    }

    #[test]
    fn quoted_text_stays_one_argument() {
        let s = lex(r#"grep "rm -rf /" notes.txt # rm -rf /"#);
        assert_eq!(words(&s), vec![vec!["grep", "rm -rf /", "notes.txt"]]);
        assert!(s.nested.is_empty());
    }

    #[test]
    fn substitutions_are_collected_also_nested_in_expansions() {
        let s =
            lex("echo $(rm -rf /) `reboot` \"$(a \"b\")\" <(curl x) $((1+$(id -u))) ${x:-$(halt)}");
        assert_eq!(
            s.nested,
            vec!["rm -rf /", "reboot", "a \"b\"", "curl x", "id -u", "halt"]
        );
    }

    #[test]
    fn parameters_keep_their_operator() {
        let s = lex("echo $HOME ${x:-rm} ${#y} $1 \"$@\"");
        let parts: Vec<Part> = s.pipelines[0].commands[0]
            .words
            .iter()
            .skip(1)
            .flat_map(|w| w.parts.clone())
            .collect();
        let names: Vec<(String, String, String)> = parts
            .iter()
            .filter_map(|p| match p {
                Part::Param { name, op, arg, .. } => Some((name.clone(), op.clone(), arg.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("HOME".into(), "".into(), "".into()),
                ("x".into(), ":-".into(), "rm".into()),
                ("y".into(), "#len".into(), "".into()),
                ("1".into(), "".into(), "".into()),
                ("@".into(), "".into(), "".into()),
            ]
        );
    }

    #[test]
    fn redirections_heredocs_and_herestrings() {
        let s = lex(
            "cat > out.txt 2>&1 <<'EOF'\nrm -rf /\n$(reboot)\nEOF\nbash <<< \"ls\"; echo x >>/etc/hosts",
        );
        let cmds: Vec<&SimpleCommand> = s.pipelines.iter().flat_map(|p| &p.commands).collect();
        assert_eq!(cmds[0].redirects.len(), 1);
        assert_eq!(cmds[0].redirects[0].op, ">");
        assert_eq!(cmds[0].redirects[0].target.text, "out.txt");
        assert_eq!(cmds[0].stdin_text.as_deref(), Some("rm -rf /\n$(reboot)\n"));
        assert!(!cmds[0].stdin_expands);
        assert!(s.nested.is_empty(), "quoted delimiter: no expansion");
        assert_eq!(cmds[1].stdin_text.as_deref(), Some("ls\n"));
        assert_eq!(cmds[2].redirects[0].target.text, "/etc/hosts");
        let s = lex("cat <<EOF\n$(reboot)\nEOF\n");
        assert_eq!(s.nested, vec!["reboot"]);
        assert!(s.pipelines[0].commands[0].stdin_expands);
    }

    #[test]
    fn case_patterns_are_not_commands() {
        let s = lex("case $x in a|b) rm -rf y ;; *) echo z ;; esac; ls");
        assert_eq!(
            words(&s),
            vec![vec!["rm", "-rf", "y"], vec!["echo", "z"], vec!["ls"]]
        );
    }

    #[test]
    fn ansi_c_strings_keep_control_characters() {
        let s = lex("$'\\e[31m' x");
        assert_eq!(words(&s), vec![vec!["\u{1b}[31m", "x"]]);
    }

    #[test]
    fn line_continuations_join_words() {
        let s = lex("rm -rf \\\n/");
        assert_eq!(words(&s), vec![vec!["rm", "-rf", "/"]]);
    }

    #[test]
    fn garbage_never_panics() {
        for text in [
            "$(",
            "`",
            "'",
            "\"",
            "$'\\",
            "<<",
            "a <<- x",
            "$((",
            "${",
            "2>",
            ")))(((",
            "${#",
            "${!",
            "case",
            "case x in",
            ";;",
            "$'\\c",
            "${x:-",
            "<(",
        ] {
            let _ = lex(text);
            let _ = lex_word(text);
        }
    }
}
