//! A small, quote-aware shell lexer: enough of bash's grammar to find every command a command
//! line will run. Quotes and backslashes are removed the way the shell removes them (`r''m` and
//! `\rm` are `rm`), `;`, `&&`, `||`, `&`, newlines and parentheses separate commands, `|` joins
//! them into pipelines, redirections are collected with their targets, here-documents and
//! here-strings are attached to their command, and the bodies of `$(...)`, backquotes and
//! `<(...)` are returned for checking as commands of their own. Quoted text stays data: `grep
//! "rm -rf /" notes` is a `grep` with an argument, not an `rm`.

/// One word after quote removal. `subs` are the command substitutions it contains.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Word {
    pub text: String,
    pub subs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Redirect {
    /// `>`, `>>`, `>|`, `&>`, `<`, `<>`, ...
    pub op: String,
    pub target: String,
}

/// One command: its words, redirections, and what a here-document or here-string feeds it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct SimpleCommand {
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    pub stdin_text: Option<String>,
}

/// Commands joined by `|`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Pipeline {
    pub commands: Vec<SimpleCommand>,
}

/// A parsed command line: its pipelines in order, and the bodies of substitutions (which run
/// as commands too).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Script {
    pub pipelines: Vec<Pipeline>,
    pub nested: Vec<String>,
}

/// Words that start compound commands; the command after them is what runs.
const RESERVED: &[&str] = &[
    "{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "case",
    "esac", "in", "function", "select", "[[", "]]",
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
}

/// Parses `text` (already normalised).
pub(crate) fn lex(text: &str) -> Script {
    let mut lx = Lexer {
        chars: text.chars().collect(),
        pos: 0,
        script: Script::default(),
        pipeline: Pipeline::default(),
        command: SimpleCommand::default(),
        heredocs: Vec::new(),
    };
    lx.run();
    lx.script
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\r'
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
            match c {
                ' ' | '\t' | '\r' => self.pos += 1,
                '\n' => {
                    self.pos += 1;
                    self.end_pipeline();
                    self.read_heredoc_bodies();
                }
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                ';' => {
                    self.pos += 1;
                    if self.peek() == Some(';') {
                        self.pos += 1;
                    }
                    self.end_pipeline();
                }
                '&' => match self.peek_at(1) {
                    Some('&') => {
                        self.pos += 2;
                        self.end_pipeline();
                    }
                    Some('>') => self.redirect(),
                    _ => {
                        self.pos += 1;
                        self.end_pipeline();
                    }
                },
                '|' => {
                    if self.peek_at(1) == Some('|') {
                        self.pos += 2;
                        self.end_pipeline();
                    } else {
                        self.pos += 1;
                        if self.peek() == Some('&') {
                            self.pos += 1;
                        }
                        self.end_command();
                    }
                }
                '(' | ')' => {
                    self.pos += 1;
                    self.end_pipeline();
                }
                '<' | '>' if self.peek_at(1) != Some('(') => self.redirect(),
                _ => {
                    let word = self.read_word();
                    let fd_prefix = !word.text.is_empty()
                        && word.text.chars().all(|c| c.is_ascii_digit())
                        && matches!(self.peek(), Some('<' | '>'))
                        && self.peek_at(1) != Some('(');
                    if fd_prefix {
                        self.redirect();
                    } else {
                        self.push_word(word);
                    }
                }
            }
        }
        self.end_pipeline();
        self.read_heredoc_bodies();
    }

    fn push_word(&mut self, word: Word) {
        if self.command.words.is_empty() && RESERVED.contains(&word.text.as_str()) {
            return;
        }
        self.script.nested.extend(word.subs.iter().cloned());
        self.command.words.push(word);
    }

    fn end_command(&mut self) {
        let cmd = std::mem::take(&mut self.command);
        if !cmd.words.is_empty() || !cmd.redirects.is_empty() || cmd.stdin_text.is_some() {
            self.pipeline.commands.push(cmd);
        }
    }

    fn end_pipeline(&mut self) {
        self.end_command();
        let p = std::mem::take(&mut self.pipeline);
        if !p.commands.is_empty() {
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
        let start = self.pos;
        let target = self.read_word();
        match op.as_str() {
            "<<" | "<<-" => {
                let raw: String = self.chars[start..self.pos].iter().collect();
                let expands = !raw.contains(['\'', '"', '\\']);
                self.heredocs.push(PendingHeredoc {
                    pipeline: self.script.pipelines.len(),
                    command: self.pipeline.commands.len(),
                    delimiter: target.text,
                    strip_tabs: op == "<<-",
                    expands,
                });
                // Marks the command as fed, so it is kept even without words.
                self.command.stdin_text.get_or_insert_with(String::new);
            }
            "<<<" => {
                self.script.nested.extend(target.subs.iter().cloned());
                let fed = self.command.stdin_text.get_or_insert_with(String::new);
                fed.push_str(&target.text);
                fed.push('\n');
            }
            _ => {
                self.script.nested.extend(target.subs.iter().cloned());
                let dup = matches!(op.as_str(), ">&" | "<&")
                    && target.text.chars().all(|c| c.is_ascii_digit() || c == '-');
                if !dup {
                    self.command.redirects.push(Redirect {
                        op,
                        target: target.text,
                    });
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
                body.push_str(&line);
                body.push('\n');
            }
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
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        if c == '\'' {
                            break;
                        }
                        word.text.push(c);
                    }
                }
                '"' => {
                    self.pos += 1;
                    self.read_double_quoted(&mut word);
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(next) => {
                            word.text.push(next);
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '$' => self.read_dollar(&mut word),
                '`' => {
                    let body = self.read_backquoted();
                    word.text.push_str(&format!("`{body}`"));
                    word.subs.push(body);
                }
                '<' | '>' if self.peek_at(1) == Some('(') && word.text.is_empty() => {
                    self.pos += 2;
                    let body = self.read_until_close_paren();
                    word.text.push_str(&format!("{c}({body})"));
                    word.subs.push(body);
                }
                c if is_meta(c) => break,
                c => {
                    word.text.push(c);
                    self.pos += 1;
                }
            }
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
                            word.text.push(n);
                            self.pos += 1;
                        }
                        Some(n) => {
                            word.text.push('\\');
                            word.text.push(n);
                            self.pos += 1;
                        }
                        None => word.text.push('\\'),
                    }
                }
                '$' => self.read_dollar(word),
                '`' => {
                    let body = self.read_backquoted();
                    word.text.push_str(&format!("`{body}`"));
                    word.subs.push(body);
                }
                c => {
                    word.text.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// `$(...)`, `$((...))`, `${...}`, `$'...'` or a plain `$`.
    fn read_dollar(&mut self, word: &mut Word) {
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                self.pos += 3;
                let body = self.read_until_close_paren();
                // `$((` closes with `))`: the second paren is consumed here.
                if self.peek() == Some(')') {
                    self.pos += 1;
                }
                word.text.push_str(&format!("$(({body}))"));
            }
            Some('(') => {
                self.pos += 2;
                let body = self.read_until_close_paren();
                word.text.push_str(&format!("$({body})"));
                word.subs.push(body);
            }
            Some('{') => {
                self.pos += 2;
                let mut depth = 1;
                let mut raw = String::from("${");
                while let Some(c) = self.peek() {
                    self.pos += 1;
                    raw.push(c);
                    if c == '{' {
                        depth += 1;
                    } else if c == '}' {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                }
                word.text.push_str(&raw);
            }
            Some('\'') => {
                self.pos += 2;
                self.read_ansi_c(word);
            }
            Some('"') => {
                self.pos += 2;
                self.read_double_quoted(word);
            }
            _ => {
                word.text.push('$');
                self.pos += 1;
            }
        }
    }

    /// `$'...'`: backslash escapes decoded, so `$'\x72\x6d'` is `rm`.
    fn read_ansi_c(&mut self, word: &mut Word) {
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\'' => return,
                '\\' => {
                    let Some(e) = self.peek() else { return };
                    self.pos += 1;
                    match e {
                        'n' => word.text.push('\n'),
                        't' => word.text.push('\t'),
                        'r' => word.text.push('\r'),
                        'a' | 'b' | 'e' | 'E' | 'f' | 'v' => {}
                        'x' => {
                            let v = self.read_radix(16, 2);
                            push_code(word, v);
                        }
                        'u' => {
                            let v = self.read_radix(16, 4);
                            push_code(word, v);
                        }
                        'U' => {
                            let v = self.read_radix(16, 8);
                            push_code(word, v);
                        }
                        '0'..='7' => {
                            self.pos -= 1;
                            let v = self.read_radix(8, 3);
                            push_code(word, v);
                        }
                        other => word.text.push(other),
                    }
                }
                other => word.text.push(other),
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

fn push_code(word: &mut Word, code: Option<u32>) {
    if let Some(c) = code.and_then(char::from_u32) {
        word.text.push(c);
    }
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
/// here-document body).
fn substitutions_in(text: &str) -> Vec<String> {
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
            '`' => {
                let start = i + 1;
                let mut j = start;
                while j < chars.len() && chars[j] != '`' {
                    j += 1;
                }
                found.push(chars[start..j].iter().collect());
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
    }

    #[test]
    fn quoted_text_stays_one_argument() {
        let s = lex(r#"grep "rm -rf /" notes.txt # rm -rf /"#);
        assert_eq!(words(&s), vec![vec!["grep", "rm -rf /", "notes.txt"]]);
        assert!(s.nested.is_empty());
    }

    #[test]
    fn substitutions_are_collected() {
        let s = lex("echo $(rm -rf /) `reboot` \"$(a \"b\")\" <(curl x) $((1+2))");
        assert_eq!(s.nested, vec!["rm -rf /", "reboot", "a \"b\"", "curl x"]);
    }

    #[test]
    fn redirections_heredocs_and_herestrings() {
        let s = lex(
            "cat > out.txt 2>&1 <<'EOF'\nrm -rf /\n$(reboot)\nEOF\nbash <<< \"ls\"; echo x >>/etc/hosts",
        );
        let cmds: Vec<&SimpleCommand> = s.pipelines.iter().flat_map(|p| &p.commands).collect();
        assert_eq!(
            cmds[0].redirects,
            vec![Redirect {
                op: ">".into(),
                target: "out.txt".into()
            }]
        );
        assert_eq!(cmds[0].stdin_text.as_deref(), Some("rm -rf /\n$(reboot)\n"));
        assert!(s.nested.is_empty(), "quoted delimiter: no expansion");
        assert_eq!(cmds[1].stdin_text.as_deref(), Some("ls\n"));
        assert_eq!(cmds[2].redirects[0].target, "/etc/hosts");
        let s = lex("cat <<EOF\n$(reboot)\nEOF\n");
        assert_eq!(s.nested, vec!["reboot"]);
    }

    #[test]
    fn line_continuations_join_words() {
        let s = lex("rm -rf \\\n/");
        assert_eq!(words(&s), vec![vec!["rm", "-rf", "/"]]);
    }

    #[test]
    fn garbage_never_panics() {
        for text in [
            "$(", "`", "'", "\"", "$'\\", "<<", "a <<- x", "$((", "${", "2>", ")))(((",
        ] {
            let _ = lex(text);
        }
    }
}
