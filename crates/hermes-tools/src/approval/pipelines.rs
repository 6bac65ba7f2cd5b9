//! Rules that look at more than one command: which stage of a pipeline runs what it reads
//! (`| sh`, `| python3 -`, `| source /dev/stdin`) or a file (`sh x.sh`, `./x.sh`) and which
//! stage decodes, SQL sent to a database client (`DROP TABLE`, `DELETE` without `WHERE`),
//! `chmod +x` followed by running the file, and fork bombs (also without a pipe).

use std::sync::LazyLock;

use regex::Regex;

use super::detect::{Findings, Invocation, base_name};
use super::lexer::{Script, SimpleCommand};

/// Programs that execute what they read on stdin.
const STDIN_RUNNERS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "fish", "python", "python3", "perl", "ruby",
    "node",
];

const SQL_CLIENTS: &[&str] = &[
    "psql",
    "mysql",
    "mariadb",
    "sqlite3",
    "sqlite",
    "sqlcmd",
    "clickhouse-client",
    "clickhouse",
    "cockroach",
    "duckdb",
    "pgcli",
    "mycli",
    "litecli",
    "usql",
    "snowsql",
];

static FORK_BOMB: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}").ok());
static NAMED_BOMB: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"([A-Za-z_][\w.-]*)\s*\(\s*\)\s*\{\s*([A-Za-z_][\w.-]*)\s*\|\s*([A-Za-z_][\w.-]*)\s*&\s*;?\s*\}").ok()
});
static SQL_DROP: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\bdrop\s+(table|database|schema)\b").ok());
static SQL_DELETE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\bdelete\s+from\b").ok());
static SQL_WHERE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?i)\bwhere\b").ok());
static SQL_TRUNCATE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\btruncate\s+(table\s+)?\w").ok());

fn matches(re: &LazyLock<Option<Regex>>, text: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(text))
}

/// `:(){ :|:& };:`, the same with any function name, and any function that starts itself
/// in the background or in a pipeline (`f(){ f & f & }; f`), outside quotes (quoted, it is
/// data; a quoted bomb handed to `bash -c` is checked as that payload).
pub(crate) fn is_fork_bomb(text: &str) -> bool {
    let text = unquoted(text);
    if matches(&FORK_BOMB, &text) {
        return true;
    }
    let named = NAMED_BOMB.as_ref().is_some_and(|re| {
        re.captures_iter(&text).any(|c| {
            c.get(1).map(|m| m.as_str()) == c.get(2).map(|m| m.as_str())
                && c.get(2).map(|m| m.as_str()) == c.get(3).map(|m| m.as_str())
        })
    });
    named || self_spawning_function(&text)
}

static FUNCTION_DEF: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?:function\s+([^\s(){};&|]+)\s*(?:\(\s*\))?|([^\s(){};&|]+)\s*\(\s*\))\s*\{").ok()
});

/// A function whose body runs the function itself in the background or in a pipeline.
fn self_spawning_function(text: &str) -> bool {
    let Some(re) = FUNCTION_DEF.as_ref() else {
        return false;
    };
    for c in re.captures_iter(text).take(64) {
        let Some(name) = c.get(1).or_else(|| c.get(2)).map(|m| m.as_str()) else {
            continue;
        };
        let Some(whole) = c.get(0) else { continue };
        let body_start = whole.end();
        let mut depth = 1usize;
        let mut end = text.len();
        for (i, ch) in text[body_start..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = body_start + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let body = super::lexer::lex(&text[body_start..end]);
        let spawns = body.pipelines.iter().any(|p| {
            (p.background || p.commands.len() > 1)
                && p.commands
                    .iter()
                    .any(|c| c.words.first().is_some_and(|w| w.text == name))
        });
        if spawns {
            return true;
        }
    }
    false
}

/// `text` without its quoted parts.
fn unquoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            escaped = false;
            if quote.is_none() {
                out.push(c);
            }
            continue;
        }
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), _) => {}
            (_, '\\') => escaped = true,
            (Some('"'), '"') => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, _) => out.push(c),
        }
    }
    out
}

/// A stage that runs whatever arrives on stdin (`sh`, `bash -s`, `python3 -`, `source
/// /dev/stdin`).
pub(crate) fn runs_stdin(stage: &Invocation) -> bool {
    let name = stage.name.as_str();
    let stdin_path = |t: &str| matches!(t, "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0");
    if matches!(name, "source" | ".") {
        return stage.args.first().is_some_and(|a| stdin_path(&a.text));
    }
    let runner = STDIN_RUNNERS.contains(&name)
        || super::rules::SHELLS.contains(&name)
        || super::exec_rules::is_interpreter(name);
    // `bash script.sh` or `python tool.py` read a file, not the pipe; `bash -c` a payload.
    runner
        && !stage.args.iter().any(|a| {
            a.text.starts_with('-') && !a.text.starts_with("--") && a.text[1..].contains(['c', 'e'])
        })
        && stage
            .args
            .iter()
            .map(|a| a.text.as_str())
            .find(|t| !t.starts_with('-') || *t == "-")
            .is_none_or(stdin_path)
}

/// The file a stage runs as a script (`sh x.sh`, `source x.sh`, `python x.py`, `./x.sh`).
pub(crate) fn runs_file(stage: &Invocation) -> Option<String> {
    let name = stage.name.as_str();
    if stage.path.contains('/') {
        return Some(stage.path.clone());
    }
    if matches!(name, "source" | ".") {
        return stage.args.first().map(|a| a.text.clone());
    }
    let runner = super::rules::SHELLS.contains(&name) || super::exec_rules::is_interpreter(name);
    if !runner
        || stage.args.iter().any(|a| {
            a.text.starts_with('-')
                && !a.text.starts_with("--")
                && a.text[1..].contains(['c', 'e', 'm'])
        })
    {
        return None;
    }
    stage
        .args
        .iter()
        .map(|a| a.text.as_str())
        .find(|t| !t.starts_with('-'))
        .map(str::to_string)
}

/// A stage that turns encoded text back into commands.
pub(crate) fn decodes(stage: &Invocation) -> bool {
    let args: Vec<&str> = stage.args.iter().map(|a| a.text.as_str()).collect();
    match stage.name.as_str() {
        "base64" | "base32" | "base16" | "basenc" => args.iter().any(|a| {
            *a == "--decode"
                || (a.starts_with('-') && !a.starts_with("--") && a.contains(['d', 'D']))
        }),
        "xxd" => args.iter().any(|a| a.starts_with('-') && a.contains('r')),
        "openssl" => {
            args.iter().any(|a| matches!(*a, "base64" | "enc"))
                && args.iter().any(|a| *a == "-d" || *a == "-D")
        }
        "tr" | "rev" | "gunzip" | "zcat" | "xz" | "unxz" | "bunzip2" | "uudecode" => true,
        _ => false,
    }
}

/// SQL sent to a database client: `DROP`, `TRUNCATE`, `DELETE` without `WHERE`.
pub(crate) fn check_sql(commands: &[&SimpleCommand], f: &mut Findings) {
    let sql = commands
        .iter()
        .flat_map(|c| &c.words)
        .any(|w| SQL_CLIENTS.contains(&base_name(&w.text).as_str()));
    if sql {
        check_sql_text(commands, f);
    }
}

fn check_sql_text(commands: &[&SimpleCommand], f: &mut Findings) {
    let mut text = String::new();
    for c in commands {
        for w in &c.words {
            text.push_str(&w.text);
            text.push(' ');
        }
        if let Some(body) = &c.stdin_text {
            text.push('\n');
            text.push_str(body);
        }
        text.push('\n');
    }
    if matches(&SQL_DROP, &text) {
        f.danger("SQL DROP");
    }
    let delete_all = text
        .split([';', '\n'])
        .any(|stmt| matches(&SQL_DELETE, stmt) && !matches(&SQL_WHERE, stmt));
    if delete_all {
        f.danger("SQL DELETE without WHERE");
    }
    if matches(&SQL_TRUNCATE, &text) {
        f.danger("SQL TRUNCATE");
    }
}

/// `chmod +x ./script && ./script`: the file's content was never checked.
pub(crate) fn check_sequence(script: &Script, f: &mut Findings) {
    let mut made_executable = false;
    for cmd in script.pipelines.iter().flat_map(|p| &p.commands) {
        let Some(first) = cmd.words.first() else {
            continue;
        };
        if made_executable && first.text.starts_with("./") {
            f.danger("chmod +x followed by immediate execution");
        }
        if base_name(&first.text) == "chmod" && cmd.words.iter().any(|w| w.text.ends_with("+x")) {
            made_executable = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_bombs() {
        assert!(is_fork_bomb(":(){ :|:& };:"));
        assert!(is_fork_bomb(": ( ) { : | : & } ; :"));
        assert!(is_fork_bomb("bomb(){ bomb|bomb& };bomb"));
        assert!(!is_fork_bomb("f(){ g|h& }; f"));
        assert!(!is_fork_bomb("echo ':) {'"));
        assert!(!is_fork_bomb("echo ':(){ :|:& };:' >> notes.md"));
    }
}
