//! A small syntax highlighter for code blocks, line by line as they stream: keywords, types,
//! strings, numbers, comments and function names for the languages models write most (Rust,
//! Python, JavaScript/TypeScript, Go, C/C++, Java, shell, SQL, Ruby, JSON/YAML/TOML). Nothing is
//! loaded: each language is a few keyword lists. Block comments and Python triple-quoted strings
//! carry over from one line to the next. Unknown languages are shown as plain code.

use super::style::{Rgb, Span, Style};

/// Colours of the highlighted tokens (readable on dark and light backgrounds).
const KEYWORD: Rgb = Rgb(0xc6, 0x78, 0xdd);
const TYPE: Rgb = Rgb(0xe5, 0xc0, 0x7b);
const STRING: Rgb = Rgb(0x98, 0xc3, 0x79);
const NUMBER: Rgb = Rgb(0xd1, 0x9a, 0x66);
const FUNCTION: Rgb = Rgb(0x61, 0xaf, 0xef);
const COMMENT: Rgb = Rgb(0x7f, 0x84, 0x8e);

struct Lang {
    keywords: &'static [&'static str],
    types: &'static [&'static str],
    line_comments: &'static [&'static str],
    block_comment: Option<(&'static str, &'static str)>,
    /// Quotes that open strings; `'` is left out where it is not a string (Rust lifetimes).
    quotes: &'static [char],
    triple_quotes: bool,
}

const RUST: Lang = Lang {
    keywords: &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
        "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait",
        "true", "type", "unsafe", "use", "where", "while",
    ],
    types: &[
        "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
        "f32", "f64", "bool", "char", "str", "String", "Vec", "Option", "Result", "Box", "Some",
        "None", "Ok", "Err",
    ],
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"'],
    triple_quotes: false,
};

const PYTHON: Lang = Lang {
    keywords: &[
        "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
        "elif", "else", "except", "False", "finally", "for", "from", "global", "if", "import",
        "in", "is", "lambda", "None", "nonlocal", "not", "or", "pass", "raise", "return", "True",
        "try", "while", "with", "yield", "self",
    ],
    types: &[
        "int", "float", "str", "bool", "list", "dict", "set", "tuple", "bytes", "object",
    ],
    line_comments: &["#"],
    block_comment: None,
    quotes: &['"', '\''],
    triple_quotes: true,
};

const JS: Lang = Lang {
    keywords: &[
        "async",
        "await",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "default",
        "delete",
        "do",
        "else",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "from",
        "function",
        "if",
        "import",
        "in",
        "instanceof",
        "interface",
        "let",
        "new",
        "null",
        "of",
        "return",
        "static",
        "super",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "type",
        "typeof",
        "undefined",
        "var",
        "void",
        "while",
        "yield",
    ],
    types: &[
        "string", "number", "boolean", "any", "unknown", "never", "Promise", "Array", "Map", "Set",
        "Record",
    ],
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '\'', '`'],
    triple_quotes: false,
};

const GO: Lang = Lang {
    keywords: &[
        "break",
        "case",
        "chan",
        "const",
        "continue",
        "default",
        "defer",
        "else",
        "fallthrough",
        "for",
        "func",
        "go",
        "goto",
        "if",
        "import",
        "interface",
        "map",
        "package",
        "range",
        "return",
        "select",
        "struct",
        "switch",
        "type",
        "var",
        "nil",
        "true",
        "false",
    ],
    types: &[
        "int", "int64", "int32", "uint", "uint64", "float64", "string", "bool", "byte", "rune",
        "error", "any",
    ],
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '`', '\''],
    triple_quotes: false,
};

const C_LIKE: Lang = Lang {
    keywords: &[
        "auto",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "default",
        "delete",
        "do",
        "else",
        "enum",
        "extends",
        "extern",
        "false",
        "final",
        "for",
        "goto",
        "if",
        "implements",
        "import",
        "include",
        "namespace",
        "new",
        "null",
        "nullptr",
        "package",
        "private",
        "protected",
        "public",
        "return",
        "sizeof",
        "static",
        "struct",
        "switch",
        "template",
        "this",
        "throw",
        "throws",
        "true",
        "try",
        "typedef",
        "union",
        "using",
        "virtual",
        "void",
        "volatile",
        "while",
    ],
    types: &[
        "int", "long", "short", "char", "float", "double", "bool", "boolean", "unsigned", "signed",
        "size_t", "String", "std",
    ],
    line_comments: &["//"],
    block_comment: Some(("/*", "*/")),
    quotes: &['"', '\''],
    triple_quotes: false,
};

const SHELL: Lang = Lang {
    keywords: &[
        "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
        "in", "function", "return", "export", "local", "set", "unset", "echo", "cd", "exit",
        "source", "sudo",
    ],
    types: &[],
    line_comments: &["#"],
    block_comment: None,
    quotes: &['"', '\''],
    triple_quotes: false,
};

const SQL: Lang = Lang {
    keywords: &[
        "select", "from", "where", "and", "or", "not", "insert", "into", "values", "update", "set",
        "delete", "create", "table", "drop", "alter", "index", "join", "left", "right", "inner",
        "outer", "on", "group", "by", "order", "having", "limit", "as", "null", "primary", "key",
        "distinct", "union", "case", "when", "then", "else", "end", "in", "is",
    ],
    types: &[
        "int",
        "integer",
        "text",
        "varchar",
        "real",
        "boolean",
        "date",
        "timestamp",
    ],
    line_comments: &["--"],
    block_comment: Some(("/*", "*/")),
    quotes: &['\'', '"'],
    triple_quotes: false,
};

const RUBY: Lang = Lang {
    keywords: &[
        "begin", "class", "def", "do", "else", "elsif", "end", "ensure", "false", "if", "module",
        "nil", "puts", "require", "rescue", "return", "self", "then", "true", "unless", "until",
        "when", "while", "yield",
    ],
    types: &[],
    line_comments: &["#"],
    block_comment: None,
    quotes: &['"', '\''],
    triple_quotes: false,
};

const DATA: Lang = Lang {
    keywords: &["true", "false", "null", "yes", "no", "on", "off"],
    types: &[],
    line_comments: &["#"],
    block_comment: None,
    quotes: &['"', '\''],
    triple_quotes: false,
};

fn lang(name: &str) -> Option<&'static Lang> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "rust" | "rs" => &RUST,
        "python" | "py" | "python3" => &PYTHON,
        "javascript" | "js" | "jsx" | "typescript" | "ts" | "tsx" | "mjs" => &JS,
        "go" | "golang" => &GO,
        "c" | "h" | "cpp" | "c++" | "cc" | "hpp" | "java" | "kotlin" | "kt" | "cs" | "csharp"
        | "swift" => &C_LIKE,
        "sh" | "bash" | "zsh" | "shell" | "console" | "fish" => &SHELL,
        "sql" | "sqlite" | "postgres" | "mysql" => &SQL,
        "ruby" | "rb" => &RUBY,
        "json" | "yaml" | "yml" | "toml" | "ini" | "jsonc" => &DATA,
        _ => return None,
    })
}

/// Highlights the lines of one code block, in order.
pub struct Highlighter {
    lang: Option<&'static Lang>,
    /// Inside a block comment or triple-quoted string: what closes it.
    open: Option<&'static str>,
}

impl Highlighter {
    /// For the block's info string (`rust`, `py`, `bash title="x"`, ...).
    pub fn new(info: &str) -> Highlighter {
        let name = info.split_whitespace().next().unwrap_or_default();
        Highlighter {
            lang: lang(name.trim_start_matches('{').trim_start_matches('.')),
            open: None,
        }
    }

    /// The spans of one line of code.
    pub fn line(&mut self, line: &str) -> Vec<Span> {
        let Some(lang) = self.lang else {
            return vec![Span::plain(line)];
        };
        let mut out: Vec<Span> = Vec::new();
        let comment = Style::fg(Some(COMMENT)).italic();
        let mut i = 0;
        if let Some(close) = self.open {
            let style = if close == "*/" {
                comment
            } else {
                Style::fg(Some(STRING))
            };
            match line.find(close) {
                Some(end) => {
                    out.push(Span::new(&line[..end + close.len()], style));
                    i = end + close.len();
                    self.open = None;
                }
                None => return vec![Span::new(line, style)],
            }
        }
        let mut plain = String::new();
        while let Some(c) = line[i..].chars().next() {
            let rest = &line[i..];
            if lang.line_comments.iter().any(|m| rest.starts_with(m))
                && (c != '#' || i == 0 || line[..i].ends_with(char::is_whitespace))
            {
                flush(&mut plain, &mut out);
                out.push(Span::new(rest, comment));
                return out;
            }
            if let Some((open, close)) = lang.block_comment
                && rest.starts_with(open)
            {
                flush(&mut plain, &mut out);
                match rest[open.len()..].find(close) {
                    Some(end) => {
                        let stop = open.len() + end + close.len();
                        out.push(Span::new(&rest[..stop], comment));
                        i += stop;
                        continue;
                    }
                    None => {
                        out.push(Span::new(rest, comment));
                        self.open = Some(close);
                        return out;
                    }
                }
            }
            if lang.triple_quotes && (rest.starts_with("\"\"\"") || rest.starts_with("'''")) {
                flush(&mut plain, &mut out);
                let quote: &'static str = if rest.starts_with('"') {
                    "\"\"\""
                } else {
                    "'''"
                };
                match rest[3..].find(quote) {
                    Some(end) => {
                        out.push(Span::new(&rest[..end + 6], Style::fg(Some(STRING))));
                        i += end + 6;
                        continue;
                    }
                    None => {
                        out.push(Span::new(rest, Style::fg(Some(STRING))));
                        self.open = Some(quote);
                        return out;
                    }
                }
            }
            if lang.quotes.contains(&c) {
                flush(&mut plain, &mut out);
                let end = string_end(rest, c);
                out.push(Span::new(&rest[..end], Style::fg(Some(STRING))));
                i += end;
                continue;
            }
            if c.is_alphanumeric() || c == '_' {
                let word_len = rest
                    .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                    .unwrap_or(rest.len());
                let word = &rest[..word_len];
                let after = rest[word_len..].trim_start();
                let style = word_style(lang, word, after);
                match style {
                    Some(s) => {
                        flush(&mut plain, &mut out);
                        out.push(Span::new(word, s));
                    }
                    None => plain.push_str(word),
                }
                i += word_len;
                continue;
            }
            plain.push(c);
            i += c.len_utf8();
        }
        flush(&mut plain, &mut out);
        out
    }
}

fn word_style(lang: &Lang, word: &str, after: &str) -> Option<Style> {
    let case_insensitive = std::ptr::eq(lang, &SQL);
    let is = |list: &[&str]| {
        list.iter().any(|k| {
            if case_insensitive {
                k.eq_ignore_ascii_case(word)
            } else {
                *k == word
            }
        })
    };
    if word.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        Some(Style::fg(Some(NUMBER)))
    } else if is(lang.keywords) {
        Some(Style::fg(Some(KEYWORD)))
    } else if is(lang.types) {
        Some(Style::fg(Some(TYPE)))
    } else if after.starts_with('(') || after.starts_with("!(") {
        Some(Style::fg(Some(FUNCTION)))
    } else {
        None
    }
}

/// Bytes of the string literal starting at `rest` (to the end of the line if unclosed).
fn string_end(rest: &str, quote: char) -> usize {
    let mut escaped = false;
    for (i, c) in rest.char_indices().skip(1) {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == quote {
            return i + c.len_utf8();
        }
    }
    rest.len()
}

fn flush(plain: &mut String, out: &mut Vec<Span>) {
    if !plain.is_empty() {
        out.push(Span::plain(std::mem::take(plain)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(spans: &[Span]) -> Vec<(String, Option<Rgb>)> {
        spans.iter().map(|s| (s.text.clone(), s.style.fg)).collect()
    }

    #[test]
    fn rust_tokens_are_coloured() {
        let mut h = Highlighter::new("rust");
        let spans = h.line("fn main() { let x: u32 = 42; println!(\"hi\"); } // done");
        let k = kinds(&spans);
        assert!(k.contains(&("fn".into(), Some(KEYWORD))));
        assert!(k.contains(&("main".into(), Some(FUNCTION))));
        assert!(k.contains(&("u32".into(), Some(TYPE))));
        assert!(k.contains(&("42".into(), Some(NUMBER))));
        assert!(k.contains(&("\"hi\"".into(), Some(STRING))));
        assert!(k.contains(&("// done".into(), Some(COMMENT))));
        let text: String = spans.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            text,
            "fn main() { let x: u32 = 42; println!(\"hi\"); } // done"
        );
    }

    #[test]
    fn block_comments_and_triple_quotes_carry_over_lines() {
        let mut h = Highlighter::new("c");
        h.line("int a; /* start");
        assert_eq!(
            kinds(&h.line("still comment")),
            vec![("still comment".into(), Some(COMMENT))]
        );
        let after = h.line("end */ return 1;");
        assert_eq!(after[0].text, "end */");
        let mut py = Highlighter::new("python");
        py.line("doc = \"\"\"first");
        assert_eq!(py.line("second")[0].style.fg, Some(STRING));
        assert_eq!(py.line("\"\"\" + x")[0].text, "\"\"\"");
        let mut sh = Highlighter::new("bash");
        let k = kinds(&sh.line("echo a#b # note"));
        assert!(k.contains(&("# note".into(), Some(COMMENT))), "{k:?}");
        assert_eq!(
            Highlighter::new("brainfuck").line("+-<>")[0].style,
            Style::PLAIN
        );
    }
}
