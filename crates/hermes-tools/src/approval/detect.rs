//! Classifying a command line: [`CommandChecker::analyse`] parses the exact text bash will run
//! (and, to add findings only, its Unicode-normalised form), expands every word as far as it
//! can be done statically ([`super::expand`]), follows the commands it will really run
//! (through `;`/`&&`/`|` chains, subshells, substitutions, `bash -c`, `eval`, here-documents,
//! text piped into interpreters, scripts written and then run, and the wrappers of
//! [`super::wrappers`]) and applies the rules of [`super::rules`] to each. What it cannot
//! resolve fails closed: a command name that is not a literal needs approval.

use std::collections::HashMap;
use std::path::Path;

use super::expand::{MAX_ALTERNATIVES, Vars, expand_word};
use super::lexer::{Pipeline, Script, SimpleCommand, lex};
use super::normalize::normalize;
use super::targets::Homes;

/// Commands longer than this are refused outright: no legitimate command is this big and the
/// checker's work must stay bounded.
const MAX_COMMAND_CHARS: usize = 128_000;
/// Nesting (`bash -c "sh -c '...'"`, substitutions in substitutions) beyond this is refused.
const MAX_DEPTH: usize = 8;
/// Commands analysed per check, every nesting and alternative included.
const MAX_WORK: usize = 20_000;
/// Resolved commands kept for the deny rules, and their length.
const MAX_RECORDED: usize = 512;
const MAX_RECORDED_CHARS: usize = 4096;

/// How dangerous a command is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Safe,
    /// Needs approval; the description is also the approval key.
    Dangerous(&'static str),
    /// Refused in every mode.
    Hardline(&'static str),
}

/// The verdict with what led to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    pub verdict: Verdict,
    /// The command (as resolved) in which the verdict's rule matched.
    pub detail: Option<String>,
    /// Every command the line runs, resolved and unwrapped (`env git  push` gives
    /// `env git push` and `git push`): what `approvals.deny` rules are matched against.
    pub commands: Vec<String>,
}

/// What the rules found so far: the first hardline and the first dangerous description, each
/// with the command it was found in.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    pub hardline: Option<(&'static str, String)>,
    pub dangerous: Option<(&'static str, String)>,
    /// The command being checked, for the detail of a finding.
    pub context: String,
    commands: Vec<String>,
    work: usize,
}

impl Findings {
    pub(crate) fn hard(&mut self, description: &'static str) {
        if self.hardline.is_none() {
            self.hardline = Some((description, self.context.clone()));
        }
    }

    pub(crate) fn danger(&mut self, description: &'static str) {
        if self.dangerous.is_none() {
            self.dangerous = Some((description, self.context.clone()));
        }
    }

    /// Counts one unit of work; false (and a refusal) once the budget is spent.
    fn spend(&mut self) -> bool {
        self.work += 1;
        if self.work > MAX_WORK {
            self.hard("command too complex to check safely");
            return false;
        }
        true
    }

    fn record(&mut self, argv: &[Arg]) {
        if self.commands.len() >= MAX_RECORDED || argv.is_empty() {
            return;
        }
        let mut text = argv
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if text.len() > MAX_RECORDED_CHARS {
            let cut = (0..=MAX_RECORDED_CHARS)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            text.truncate(cut);
        }
        if !self.commands.contains(&text) {
            self.commands.push(text);
        }
    }
}

/// One argument after expansion.
#[derive(Debug, Clone, Default)]
pub(crate) struct Arg {
    pub text: String,
    /// Fully resolved.
    pub exact: bool,
    /// Something unresolved in it was computed by the command line itself.
    pub computed: bool,
    /// An unquoted glob: bash replaces it by the paths it matches.
    pub glob: bool,
    /// The word as written (expansions unexpanded).
    pub raw: String,
    /// The bodies of the substitutions in the word.
    pub subs: Vec<String>,
}

impl Arg {
    pub(crate) fn literal(text: &str) -> Arg {
        Arg {
            text: text.to_string(),
            exact: true,
            computed: false,
            glob: false,
            raw: text.to_string(),
            subs: Vec::new(),
        }
    }
}

/// What a here-document or here-string feeds a command.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stdin {
    /// Fed by a here-document or here-string at all.
    pub fed: bool,
    /// The text, when it is known exactly.
    pub text: Option<String>,
    /// The text as written (expansions unexpanded).
    pub raw: Option<String>,
}

/// A command after its wrappers: the program that runs, its arguments, and its stdin.
#[derive(Debug, Clone)]
pub(crate) struct Invocation {
    /// Lowercased base name (`/usr/bin/RM` is `rm`).
    pub name: String,
    /// The command word as resolved (`./run.sh`).
    pub path: String,
    pub name_exact: bool,
    pub args: Vec<Arg>,
    pub stdin: Stdin,
}

impl Invocation {
    pub(crate) fn texts(&self) -> Vec<&str> {
        self.args.iter().map(|a| a.text.as_str()).collect()
    }

    fn display(&self) -> String {
        let mut s = self.path.clone();
        for a in &self.args {
            s.push(' ');
            s.push_str(&a.text);
        }
        shorten(&s)
    }
}

fn shorten(text: &str) -> String {
    crate::output::shorten_line(text, 160)
}

/// Checks commands for one user: `home` and `hermes_home` decide which paths are theirs.
#[derive(Debug, Clone, Default)]
pub struct CommandChecker {
    pub(crate) homes: Homes,
}

impl CommandChecker {
    pub fn new(home: Option<&Path>, hermes_home: Option<&Path>) -> CommandChecker {
        let text = |p: &Path| p.to_string_lossy().trim_end_matches('/').to_string();
        let hermes_home = hermes_home.map(text).filter(|h| h.len() > 1);
        let hermes_base = hermes_home.as_deref().and_then(|h| {
            let p = Path::new(h);
            (p.parent()?.file_name()? == "profiles")
                .then(|| p.parent()?.parent().map(text))
                .flatten()
        });
        CommandChecker {
            homes: Homes {
                home: home.map(text).filter(|h| h.len() > 1),
                hermes_home,
                hermes_base,
            },
        }
    }

    /// The verdict on one command line (as the model wrote it).
    pub fn classify(&self, command: &str) -> Verdict {
        self.analyse(command).verdict
    }

    /// The verdict, where it was found, and every command the line runs.
    pub fn analyse(&self, command: &str) -> Analysis {
        if command.len() > MAX_COMMAND_CHARS {
            return Analysis {
                verdict: Verdict::Hardline("command too long to check safely"),
                detail: None,
                commands: Vec::new(),
            };
        }
        let mut a = Analyzer {
            checker: self,
            f: Findings::default(),
            vars: Vars::default(),
        };
        // What bash runs, byte for byte; then the normalised form, which can only add
        // findings (fullwidth letters, zero-width characters and escape sequences removed).
        a.script(command, 0);
        let normalized = normalize(command);
        if normalized != command {
            a.vars = Vars::default();
            a.script(&normalized, 0);
        }
        let f = a.f;
        let (verdict, detail) = match (f.hardline, f.dangerous) {
            (Some((h, d)), _) => (Verdict::Hardline(h), Some(d)),
            (None, Some((h, d))) => (Verdict::Dangerous(h), Some(d)),
            (None, None) => (Verdict::Safe, None),
        };
        Analysis {
            verdict,
            detail: detail.filter(|d| !d.is_empty()),
            commands: f.commands,
        }
    }
}

/// Files a command line writes, with their content when it is known (`echo ... > x.sh`).
pub(crate) type Written = HashMap<String, Option<String>>;

/// The state of one check.
pub(crate) struct Analyzer<'c> {
    pub checker: &'c CommandChecker,
    pub f: Findings,
    /// The variables of the shell being analysed.
    pub vars: Vars,
}

impl Analyzer<'_> {
    pub(crate) fn homes(&self) -> &Homes {
        &self.checker.homes
    }

    /// Checks `text` as a script of its own (a `bash -c` payload, a substitution body): its
    /// assignments do not leak out.
    pub(crate) fn nested(&mut self, text: &str, depth: usize) {
        let saved = self.vars.clone();
        let context = std::mem::take(&mut self.f.context);
        self.script(text, depth);
        self.vars = saved;
        self.f.context = context;
    }

    fn script(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.f.hard("command nesting too deep to check safely");
            return;
        }
        if !self.f.spend() {
            return;
        }
        self.f.context = shorten(text);
        if super::pipelines::is_fork_bomb(text) {
            self.f.hard("fork bomb");
        }
        let script: Script = lex(text);
        let mut written = Written::new();
        for pipeline in &script.pipelines {
            self.pipeline(pipeline, depth, &mut written);
        }
        for body in &script.nested {
            self.nested(body, depth + 1);
        }
        for body in &script.arithmetic {
            // `$((rm -rf /))` is not arithmetic: bash runs it as `$( (rm -rf /) )`.
            if !super::arith::looks_arithmetic(body) {
                self.nested(body, depth + 1);
            }
        }
        super::pipelines::check_sequence(&script, &mut self.f);
    }

    fn pipeline(&mut self, pipeline: &Pipeline, depth: usize, written: &mut Written) {
        let mut stages: Vec<Stage> = Vec::new();
        for cmd in &pipeline.commands {
            let argvs = self.expand_command(cmd, depth);
            let stdin = self.stdin_of(cmd, depth);
            for r in &cmd.redirects {
                let e = expand_word(&r.target, &self.vars, depth);
                for target in e.alts.iter().flatten() {
                    self.f.context = format!(
                        "{} {}{}",
                        argvs
                            .first()
                            .and_then(|a| a.first())
                            .map_or("", |a| a.text.as_str()),
                        r.op,
                        target
                    );
                    self.check_redirect(&r.op, target, e.exact, e.computed);
                }
            }
            self.assignments(&argvs, depth);
            let mut invocations = Vec::new();
            for argv in &argvs {
                if let Some(inv) = self.invoke(argv, &stdin, depth) {
                    invocations.push(inv);
                }
            }
            self.record_writes(cmd, &argvs, invocations.first(), &stdin, depth, written);
            stages.push(Stage { stdin, invocations });
        }
        self.check_stages(&stages, depth, written);
        let commands: Vec<&SimpleCommand> = pipeline.commands.iter().collect();
        super::pipelines::check_sql(&commands, &mut self.f);
    }

    /// The argument lists a command may have (usually one).
    fn expand_command(&mut self, cmd: &SimpleCommand, depth: usize) -> Vec<Vec<Arg>> {
        let mut argvs: Vec<Vec<Arg>> = vec![Vec::new()];
        for word in &cmd.words {
            let e = expand_word(word, &self.vars, depth);
            let mut next = Vec::new();
            'outer: for argv in &argvs {
                for fields in &e.alts {
                    if next.len() >= MAX_ALTERNATIVES {
                        break 'outer;
                    }
                    let mut v = argv.clone();
                    v.extend(fields.iter().map(|t| Arg {
                        text: t.clone(),
                        exact: e.exact,
                        computed: e.computed,
                        glob: e.glob,
                        raw: word.text.clone(),
                        subs: word.subs.clone(),
                    }));
                    next.push(v);
                }
            }
            if !next.is_empty() {
                argvs = next;
            }
        }
        argvs
    }

    fn stdin_of(&mut self, cmd: &SimpleCommand, depth: usize) -> Stdin {
        let Some(raw) = &cmd.stdin_text else {
            return Stdin::default();
        };
        let written: String = cmd
            .herestrings
            .iter()
            .map(|w| format!("{}\n", w.text))
            .collect();
        let text = if cmd.herestrings.is_empty() {
            (!cmd.stdin_expands).then(|| raw.clone())
        } else if *raw == written {
            cmd.herestrings
                .iter()
                .map(|w| super::expand::expand_exact(w, &self.vars, depth).map(|t| t + "\n"))
                .collect::<Option<String>>()
        } else {
            None
        };
        Stdin {
            fed: true,
            text,
            raw: Some(raw.clone()),
        }
    }

    /// Variable assignments the rest of the line will see.
    fn assignments(&mut self, argvs: &[Vec<Arg>], depth: usize) {
        for argv in argvs {
            let Some(first) = argv.first() else { continue };
            if argv.iter().all(|a| is_assignment(&a.raw)) {
                for a in argv {
                    self.assign(a);
                }
                continue;
            }
            let name = base_name(&first.text);
            let rest = &argv[1..];
            match name.as_str() {
                "export" | "declare" | "typeset" | "local" | "readonly" => {
                    for a in rest.iter().filter(|a| !a.text.starts_with('-')) {
                        if is_assignment(&a.text) {
                            self.assign(a);
                        }
                    }
                }
                "for" | "select" => {
                    if let (Some(var), Some(kw)) = (rest.first(), rest.get(1))
                        && kw.text == "in"
                    {
                        for item in &rest[2..] {
                            self.vars
                                .assign(&var.text, item.exact.then(|| item.text.clone()));
                        }
                    } else if let Some(var) = rest.first() {
                        self.vars.assign(&var.text, None);
                    }
                }
                "read" | "mapfile" | "readarray" | "getopts" => {
                    for a in rest.iter().filter(|a| !a.text.starts_with('-')) {
                        if a.text
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_')
                        {
                            self.vars.assign(&a.text, None);
                        }
                    }
                }
                "unset" => {
                    for a in rest.iter().filter(|a| !a.text.starts_with('-')) {
                        self.vars.assign(&a.text, Some(String::new()));
                    }
                }
                "printf" if rest.first().is_some_and(|a| a.text == "-v") => {
                    if let Some(var) = rest.get(1) {
                        let texts: Vec<String> = std::iter::once("printf".to_string())
                            .chain(rest[2..].iter().map(|a| a.text.clone()))
                            .collect();
                        let exact = rest[2..].iter().all(|a| a.exact);
                        let out = exact
                            .then(|| super::decode::stage_output(&texts, None))
                            .flatten();
                        self.vars.assign(&var.text, out);
                    }
                }
                _ => {}
            }
            let _ = depth;
        }
    }

    fn assign(&mut self, a: &Arg) {
        if let Some((name, value)) = a.text.split_once('=') {
            let name = name.trim_end_matches('+');
            self.check_assignment(name);
            self.vars.assign(name, a.exact.then(|| value.to_string()));
        }
    }

    /// Unwraps `argv` to the command that runs and applies the command rules to it.
    pub(crate) fn invoke(
        &mut self,
        argv: &[Arg],
        stdin: &Stdin,
        depth: usize,
    ) -> Option<Invocation> {
        if !self.f.spend() {
            return None;
        }
        self.f.record(argv);
        let mut i = 0;
        let mut wrapped = false;
        loop {
            while argv.get(i).is_some_and(|a| is_assignment(&a.text)) {
                let name = argv[i].text.split('=').next().unwrap_or("").to_string();
                self.check_assignment(&name);
                i += 1;
            }
            let word = argv.get(i)?;
            if !word.exact || word.glob {
                break;
            }
            match self.unwrap_step(argv, i, depth) {
                super::wrappers::Step::Next(j) => {
                    i = j;
                    wrapped = true;
                    self.f.record(argv.get(i..).unwrap_or(&[]));
                }
                super::wrappers::Step::Handled => return None,
                super::wrappers::Step::NotAWrapper => break,
            }
        }
        let word = argv.get(i)?;
        let inv = Invocation {
            name: base_name(&word.text),
            path: word.text.clone(),
            name_exact: word.exact && !word.glob,
            args: argv[i + 1..].to_vec(),
            stdin: stdin.clone(),
        };
        self.f.context = inv.display();
        if !inv.name_exact {
            self.unresolved_name(&inv, depth);
        }
        self.check_command(&inv, depth);
        if wrapped && !super::rules::is_known(&inv.name) {
            // A wrapper option the table does not know may have hidden the real command.
            self.probe_arguments(&inv.args, stdin, depth, false);
        } else if inv.name_exact
            && !super::rules::is_known(&inv.name)
            && !is_data_command(&inv.name)
        {
            self.probe_arguments(&inv.args, stdin, depth, true);
        }
        Some(inv)
    }

    /// A command name that is not a literal: needs approval; the arguments are checked as a
    /// command too (`$W rm -rf /` with `W=sudo`), and a glob is matched against the commands
    /// the rules know (`/bin/r? -rf /`).
    fn unresolved_name(&mut self, inv: &Invocation, depth: usize) {
        self.f
            .danger("command name is not a literal (variable, substitution or expansion)");
        if inv.path.contains(['*', '?', '[']) {
            let base = inv
                .path
                .rsplit('/')
                .next()
                .unwrap_or(&inv.path)
                .to_lowercase();
            if let Some(glob) = globset::Glob::new(&base).ok().map(|g| g.compile_matcher()) {
                for name in super::rules::KNOWN_COMMANDS {
                    if glob.is_match(name) {
                        let mut argv = vec![Arg::literal(name)];
                        argv.extend(inv.args.iter().cloned());
                        self.invoke(&argv, &inv.stdin, depth + 1);
                    }
                }
            }
        }
        self.probe_arguments(&inv.args, &inv.stdin, depth, false);
    }

    /// Checks the arguments from the first known command name on as a command of their own.
    /// `demote`: a hardline finding there only needs approval (an unknown program that may
    /// not run its arguments at all).
    fn probe_arguments(&mut self, args: &[Arg], stdin: &Stdin, depth: usize, demote: bool) {
        let Some(start) = args.iter().position(|a| {
            a.exact && super::rules::is_known(&base_name(&a.text)) && !a.text.starts_with('-')
        }) else {
            return;
        };
        if depth + 1 > MAX_DEPTH {
            return;
        }
        let argv = &args[start..];
        if demote {
            let saved = std::mem::take(&mut self.f.hardline);
            let saved_danger = self.f.dangerous.clone();
            self.invoke(argv, stdin, depth + 1);
            let found = std::mem::replace(&mut self.f.hardline, saved);
            // Only a catastrophic command in the arguments counts; ordinary ones do not.
            self.f.dangerous = saved_danger;
            if found.is_some() {
                self.f
                    .danger("possible hidden command in the arguments of an unknown program");
            }
        } else {
            self.invoke(argv, stdin, depth + 1);
        }
    }

    /// Rules over the stages of one pipeline: text piped into an interpreter, files written
    /// and then run.
    fn check_stages(&mut self, stages: &[Stage], depth: usize, written: &mut Written) {
        for (i, stage) in stages.iter().enumerate() {
            for inv in &stage.invocations {
                self.f.context = inv.display();
                if i > 0 && super::pipelines::runs_stdin(inv) {
                    let producers = &stages[..i];
                    let remote = producers
                        .iter()
                        .flat_map(|s| &s.invocations)
                        .any(|p| matches!(p.name.as_str(), "curl" | "wget" | "fetch" | "aria2c"));
                    let decoded = producers
                        .iter()
                        .flat_map(|s| &s.invocations)
                        .any(super::pipelines::decodes);
                    if remote {
                        self.f.danger("pipe remote content to shell");
                    } else if decoded {
                        self.f
                            .danger("pipe decoded content to shell (possible command obfuscation)");
                    } else {
                        self.f.danger("pipe text into a shell or interpreter");
                    }
                    if let Some(payload) = static_output(producers) {
                        self.payload(inv, &payload, depth);
                    }
                }
                if i > 0
                    && matches!(inv.name.as_str(), "at" | "batch" | "crontab")
                    && let Some(text) = static_output(&stages[..i])
                {
                    // Scheduled text runs later, in a shell.
                    let commands = if inv.name == "crontab" {
                        text.lines()
                            .filter_map(super::exec_rules::cron_command)
                            .collect()
                    } else {
                        vec![text]
                    };
                    for cmd in commands {
                        self.nested(&cmd, depth + 1);
                    }
                }
                if i > 0
                    && inv.name == "xargs"
                    && let Some(items) = static_output(&stages[..i])
                {
                    // `echo / | xargs rm -rf`: the items become arguments.
                    let mut argv = super::exec_rules::xargs_command(&inv.args).to_vec();
                    if argv.is_empty() {
                        argv.push(Arg::literal("echo"));
                    }
                    argv.extend(items.split_whitespace().take(64).map(Arg::literal));
                    self.invoke(&argv, &Stdin::default(), depth + 1);
                }
                if let Some(file) = super::pipelines::runs_file(inv) {
                    let key = file_key(&file);
                    if let Some(content) = written.get(&key).cloned() {
                        self.f.danger("run a script written by the same command");
                        if let Some(text) = content {
                            self.payload(inv, &text, depth);
                        }
                    }
                }
            }
        }
    }

    /// Text that `inv` (a shell or an interpreter) will run.
    pub(crate) fn payload(&mut self, inv: &Invocation, text: &str, depth: usize) {
        if super::rules::SHELLS.contains(&inv.name.as_str())
            || matches!(inv.name.as_str(), "source" | "." | "eval")
            || inv.path.contains('/')
        {
            self.nested(text, depth + 1);
        } else {
            super::exec_rules::interpreter_code(self, text, depth);
        }
    }

    /// Files this command writes, for a later `sh file` or `./file`.
    fn record_writes(
        &mut self,
        cmd: &SimpleCommand,
        argvs: &[Vec<Arg>],
        inv: Option<&Invocation>,
        stdin: &Stdin,
        depth: usize,
        written: &mut Written,
    ) {
        let argv = argvs.first().map(Vec::as_slice).unwrap_or(&[]);
        let output = || inv.and_then(|inv| invocation_output(inv, stdin.text.as_deref()));
        for r in &cmd.redirects {
            if !r.op.contains('>') {
                continue;
            }
            let Some(target) = super::expand::expand_exact(&r.target, &self.vars, depth) else {
                continue;
            };
            let key = file_key(&target);
            let content = output();
            let entry = written.entry(key).or_insert(Some(String::new()));
            match (entry.as_mut(), content) {
                (Some(existing), Some(c)) if r.op.contains(">>") => existing.push_str(&c),
                (_, Some(c)) if !r.op.contains(">>") => *entry = Some(c),
                _ => *entry = None,
            }
        }
        for target in super::rules::written_paths(argv) {
            written.insert(file_key(&target), None);
        }
    }
}

/// One stage of a pipeline: what feeds it and what it runs.
struct Stage {
    stdin: Stdin,
    invocations: Vec<Invocation>,
}

/// What a command prints, when it is (after its wrappers: `sudo echo ...`) a fixed producer
/// or a decoder of `input`.
fn invocation_output(inv: &Invocation, input: Option<&str>) -> Option<String> {
    if !inv.name_exact || !inv.args.iter().all(|a| a.exact) {
        return None;
    }
    let texts: Vec<String> = std::iter::once(inv.path.clone())
        .chain(inv.args.iter().map(|a| a.text.clone()))
        .collect();
    super::decode::stage_output(&texts, input)
}

/// The output of the first stages of a pipeline, when every one is a fixed producer or a
/// decoder.
fn static_output(stages: &[Stage]) -> Option<String> {
    let mut data: Option<String> = None;
    for stage in stages {
        let input = stage.stdin.text.clone().or(data.take());
        let inv = stage.invocations.first()?;
        data = Some(invocation_output(inv, input.as_deref())?);
    }
    data
}

/// A written path as a key: `./x.sh` and `x.sh` are the same file.
fn file_key(path: &str) -> String {
    let mut p = path;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    p.to_string()
}

/// Programs whose arguments are data, never a command they run.
fn is_data_command(name: &str) -> bool {
    const DATA: &[&str] = &[
        "echo",
        "printf",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "ack",
        "man",
        "info",
        "help",
        "which",
        "whereis",
        "whatis",
        "type",
        "apropos",
        "locate",
        "history",
        "cat",
        "less",
        "more",
        "head",
        "tail",
        "wc",
        "sort",
        "uniq",
        "cut",
        "tr",
        "test",
        "[",
        "expr",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "stat",
        "file",
        "ls",
        "touch",
        "mkdir",
        "cd",
        "pushd",
        "popd",
        "export",
        "local",
        "declare",
        "readonly",
        "typeset",
        "unset",
        "unalias",
        "set",
        "shift",
        "return",
        "exit",
        "true",
        "false",
        "jq",
        "yq",
        "tldr",
        "column",
        "fold",
        "fmt",
        "nl",
        "tee",
        "diff",
        "cmp",
        "comm",
        "join",
        "paste",
        "logger",
        "notify-send",
        "say",
        "figlet",
        "cowsay",
        "for",
        "select",
        "read",
        "command",
        "hash",
        "compgen",
        "complete",
        "getopts",
        "printenv",
        "env",
        "git",
    ];
    DATA.contains(&name)
}

/// `NAME=value` (a variable assignment before a command).
pub(crate) fn is_assignment(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
            let name = name.strip_suffix('+').unwrap_or(name);
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// The lowercased last path component of a command word.
pub(crate) fn base_name(text: &str) -> String {
    text.rsplit('/').next().unwrap_or(text).to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_and_names() {
        assert!(is_assignment("FOO=1"));
        assert!(is_assignment("A_B=x y"));
        assert!(is_assignment("PATH+=:/x"));
        assert!(!is_assignment("=x"));
        assert!(!is_assignment("1A=x"));
        assert!(!is_assignment("--opt=x"));
        assert_eq!(base_name("/usr/bin/RM"), "rm");
    }

    #[test]
    fn analysis_names_the_command_and_records_what_runs() {
        let c = CommandChecker::default();
        let a = c.analyse("cd . && env  git   push origin");
        assert_eq!(a.verdict, Verdict::Safe);
        assert!(a.commands.contains(&"git push origin".to_string()), "{a:?}");
        assert!(a.commands.contains(&"cd .".to_string()), "{a:?}");
        let a = c.analyse("echo ok; sudo rm -rf /");
        assert_eq!(
            a.verdict,
            Verdict::Hardline("recursive delete of root filesystem")
        );
        assert_eq!(a.detail.as_deref(), Some("rm -rf /"));
    }
}
