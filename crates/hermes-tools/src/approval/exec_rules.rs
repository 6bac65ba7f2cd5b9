//! The rules for commands that run other code: shells (`bash -c`, scripts from stdin, here-
//! documents, process substitutions), interpreters (`python -c`, `perl -e`, ... and the shell
//! commands inside their code: `os.system("...")`, backquotes), `eval`, `source`, `xargs`,
//! `find -exec`, `parallel`, `watch`, `su -c`, `alias` and `trap` bodies, and the programs with
//! a way to run a command given as text: `awk` (`system()`, pipes), `vim -c '!...'`, `sed`'s
//! `e` command and `e`/`w` flags, `tar --checkpoint-action`/`--to-command`/`-I`, `make
//! --eval`, `crontab`, `at`, `nc -e`/`socat exec:`. Payloads that can be read are checked as
//! commands of their own; the rest fails closed.

use std::sync::LazyLock;

use regex::Regex;

use super::decode::command_output;
use super::detect::{Analyzer, Arg, Invocation, base_name};
use super::rules::{SHELLS, Via, parse};
use super::targets::WriteTarget;

/// Interpreters: (letters that run inline code, short options whose value follows, long forms).
fn interpreter_flags(name: &str) -> Option<(&'static str, &'static str, &'static [&'static str])> {
    Some(match name {
        "node" | "nodejs" | "bun" => ("ep", "Cr", &["--eval", "--print"]),
        "perl" => ("eE", "IMmx0Fl", &[]),
        "ruby" => ("e", "CEFIKr", &[]),
        "php" => ("r", "cdz", &[]),
        "lua" | "luajit" => ("e", "l", &[]),
        n if n.starts_with("python") || n.starts_with("pypy") => ("c", "WXmQ", &[]),
        _ => return None,
    })
}

pub(crate) fn is_interpreter(name: &str) -> bool {
    interpreter_flags(name).is_some()
}

static FORK_LOOP: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?is)\bfork\b[^\n]{0,80}\bwhile\b|\bwhile\b[^\n]{0,80}\bfork\b|\bloop\s*\{[^}]{0,80}\bfork\b|\bfor\s*\(\s*;\s*;\s*\)[^\n]{0,80}\bfork\b",
    )
    .ok()
});

static EXEC_CALL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:system|popen|exec[lv]?p?e?|execSync|spawnSync|spawn|check_output|check_call|call|run|Popen|getoutput|getstatusoutput|shell_exec|passthru|proc_open|Command)\s*\(",
    )
    .ok()
});

/// Code an interpreter runs: fork bombs, and the shell commands handed to `system()` and the
/// like, or in backquotes.
pub(crate) fn interpreter_code(a: &mut Analyzer<'_>, text: &str, depth: usize) {
    if FORK_LOOP.as_ref().is_some_and(|r| r.is_match(text)) {
        a.f.hard("fork bomb");
    }
    let mut commands = Vec::new();
    if let Some(re) = EXEC_CALL.as_ref() {
        for m in re.find_iter(text) {
            if let Some(cmd) = string_arguments(&text[m.end()..]) {
                commands.push(cmd);
            }
        }
    }
    for (open, close) in [("`", "`"), ("qx{", "}"), ("qx(", ")"), ("%x(", ")")] {
        let mut rest = text;
        while let Some(i) = rest.find(open) {
            let after = &rest[i + open.len()..];
            let Some(j) = after.find(close) else { break };
            commands.push(after[..j].to_string());
            rest = &after[j + close.len()..];
        }
    }
    for cmd in commands.into_iter().take(32) {
        a.nested(&cmd, depth + 1);
    }
}

/// The string literal (or list of literals, joined) at the start of a call's arguments.
fn string_arguments(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().take(8192).collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    let list = chars.get(i) == Some(&'[');
    if list {
        i += 1;
    }
    let mut parts = Vec::new();
    loop {
        skip_ws(&mut i);
        while i < chars.len() && matches!(chars[i], 'r' | 'b' | 'u' | 'f' | 'R' | 'B') {
            i += 1;
        }
        let quote = *chars.get(i)?;
        if quote != '"' && quote != '\'' {
            break;
        }
        i += 1;
        let mut s = String::new();
        while i < chars.len() && chars[i] != quote {
            if chars[i] == '\\' && i + 1 < chars.len() {
                i += 1;
                s.push(match chars[i] {
                    'n' => '\n',
                    't' => '\t',
                    c => c,
                });
            } else {
                s.push(chars[i]);
            }
            i += 1;
        }
        i += 1;
        parts.push(s);
        if !list {
            break;
        }
        skip_ws(&mut i);
        if chars.get(i) == Some(&',') {
            i += 1;
        } else {
            break;
        }
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

impl Analyzer<'_> {
    /// Commands that run other code.
    pub(crate) fn check_exec(&mut self, inv: &Invocation, depth: usize) {
        let name = inv.name.as_str();
        match name {
            "sed" => self.sed(inv, depth),
            "perl" | "ruby" => {
                self.in_place(&inv.args, true);
                self.interpreter(inv, depth);
            }
            "xargs" => {
                let inner = xargs_command(&inv.args);
                if inner.is_empty() {
                    return;
                }
                if let Some(run) = self.invoke(inner, &Default::default(), depth + 1)
                    && run.name == "rm"
                {
                    self.f.danger("xargs with rm");
                }
            }
            "find" => self.find(&inv.args, depth),
            "parallel" => self.parallel(inv, depth),
            "eval" => {
                let payload: Vec<&str> = inv.args.iter().map(|a| a.text.as_str()).collect();
                if inv.args.iter().any(|a| !a.exact) {
                    if fetches_remote(&inv.args, "$(") || fetches_remote(&inv.args, "`") {
                        self.f
                            .danger("execute remote content via command substitution");
                    }
                    self.f.danger("eval of text the checker cannot resolve");
                }
                self.nested(&payload.join(" "), depth + 1);
            }
            "source" | "." => self.source(inv, depth),
            "su" => {
                let mut it = inv.args.iter();
                while let Some(a) = it.next() {
                    let payload = if a.text == "-c" || a.text == "--command" {
                        it.next().map(|p| p.text.clone())
                    } else {
                        a.text.strip_prefix("--command=").map(str::to_string)
                    };
                    if let Some(p) = payload {
                        self.nested(&p, depth + 1);
                    }
                }
            }
            "watch" => {
                let p = parse(&inv.args, &["-n", "--interval", "-q", "--equexit"]);
                let texts: Vec<&str> = p.operands.iter().map(|a| a.text.as_str()).collect();
                self.nested(&texts.join(" "), depth + 1);
            }
            "alias" => {
                for a in &inv.args {
                    if let Some((_, value)) = a.text.split_once('=') {
                        self.nested(value, depth + 1);
                    }
                }
            }
            "trap" => {
                let args: Vec<&Arg> = inv
                    .args
                    .iter()
                    .filter(|a| !a.text.starts_with('-'))
                    .collect();
                if args.len() >= 2 {
                    self.nested(&args[0].text.clone(), depth + 1);
                }
            }
            "awk" | "gawk" | "mawk" | "nawk" => self.awk(inv, depth),
            "vi" | "vim" | "nvim" | "view" | "ex" | "vimdiff" | "gvim" | "rvim" => {
                self.vim(inv, depth)
            }
            "tar" | "bsdtar" | "gtar" => self.tar(inv, depth),
            "make" | "gmake" => self.make(inv, depth),
            "crontab" => self.crontab(inv, depth),
            "at" | "batch" => {
                let texts = inv.texts();
                if texts
                    .iter()
                    .any(|t| matches!(*t, "-l" | "-r" | "-d" | "-c" | "-V"))
                {
                    return;
                }
                self.f.danger("schedule a command (at/batch)");
                if let Some(text) = inv.stdin.text.clone().or(inv.stdin.raw.clone()) {
                    self.nested(&text, depth + 1);
                }
            }
            "nc" | "ncat" | "netcat" | "socat" => self.netcat(inv, depth),
            n if SHELLS.contains(&n) => self.shell(inv, depth),
            n if is_interpreter(n) => self.interpreter(inv, depth),
            _ => {}
        }
    }

    /// `sed -i`, `perl -pi`, `ruby -i` editing sensitive files in place.
    pub(crate) fn in_place(&mut self, args: &[Arg], perl_like: bool) {
        let p = parse(args, &["-e", "-f", "--expression", "--file", "-E", "-l"]);
        let in_place = p.short.contains('i') || p.has_long("--in-place");
        if !in_place {
            return;
        }
        // sed's script is the first operand when no -e/-f gives it.
        let scripted = args.iter().any(|a| {
            matches!(a.text.as_str(), "-e" | "-f" | "--expression" | "--file")
                || a.text.starts_with("--expression=")
        });
        let skip = usize::from(!perl_like && !scripted);
        for target in p.operands.iter().skip(skip) {
            match self.homes().write_target(&target.text) {
                Some(WriteTarget::SystemConfig) => self.f.danger("in-place edit of system config"),
                Some(WriteTarget::Guarded(g)) => self.f.danger(g.description()),
                Some(WriteTarget::Credentials) if perl_like => self
                    .f
                    .danger("in-place edit of sensitive credential/SSH/shell-rc path (perl/ruby)"),
                Some(WriteTarget::Credentials) => self
                    .f
                    .danger("in-place edit of sensitive credential/SSH/shell-rc path"),
                Some(WriteTarget::BlockDevice) => self.f.hard("redirect to raw block device"),
                Some(WriteTarget::SysrqTrigger) => self
                    .f
                    .hard("write to /proc/sysrq-trigger (reboot or crash the machine)"),
                Some(WriteTarget::KernelSettings) => {
                    self.f.danger("write to kernel settings (/proc/sys, /sys)")
                }
                Some(WriteTarget::ProjectEnv) | None => {}
            }
        }
    }

    fn sed(&mut self, inv: &Invocation, depth: usize) {
        self.in_place(&inv.args, false);
        let mut scripts: Vec<String> = Vec::new();
        let mut it = inv.args.iter();
        let mut explicit = false;
        while let Some(a) = it.next() {
            let t = a.text.as_str();
            if t == "-e" || t == "--expression" {
                explicit = true;
                if let Some(s) = it.next() {
                    scripts.push(s.text.clone());
                }
            } else if let Some(s) = t.strip_prefix("--expression=") {
                explicit = true;
                scripts.push(s.to_string());
            } else if t == "-f" || t == "--file" {
                explicit = true;
                it.next();
            }
        }
        if !explicit
            && let Some(first) = parse(&inv.args, &["-l", "--line-length"]).operands.first()
        {
            scripts.push(first.text.clone());
        }
        for script in scripts {
            let effects = sed_effects(&script);
            if effects.executes {
                self.f.danger("sed executes commands (e command or flag)");
                for cmd in &effects.commands {
                    self.nested(cmd, depth + 1);
                }
            }
            for file in &effects.writes {
                self.write_to(file, true, false, Via::Redirect);
            }
            if effects
                .reads
                .iter()
                .any(|r| r.contains("/proc/") && r.contains("environ"))
            {
                self.f.danger("read process environment (secrets)");
            }
        }
    }

    fn find(&mut self, args: &[Arg], depth: usize) {
        let starts: Vec<&Arg> = args
            .iter()
            .take_while(|a| !a.text.starts_with('-') && a.text != "(" && a.text != "!")
            .collect();
        let expression: Vec<&str> = args[starts.len()..]
            .iter()
            .map(|a| a.text.as_str())
            .collect();
        let only_delete = !expression.is_empty()
            && expression
                .iter()
                .all(|t| matches!(*t, "-delete" | "-depth" | "-xdev" | "-mount" | "-print"));
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if t == "-delete" {
                self.f.danger("find -delete");
                if only_delete {
                    for s in &starts {
                        match self.homes().delete_target(&s.text) {
                            super::targets::DeleteTarget::Root => {
                                self.f.hard("recursive delete of root filesystem")
                            }
                            super::targets::DeleteTarget::SystemDir => {
                                self.f.hard("recursive delete of system directory")
                            }
                            super::targets::DeleteTarget::Home => {
                                self.f.hard("recursive delete of home directory")
                            }
                            super::targets::DeleteTarget::Other => {}
                        }
                    }
                }
            }
            if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
                let start = i + 1;
                let mut end = start;
                while args
                    .get(end)
                    .is_some_and(|w| w.text != ";" && w.text != "+")
                {
                    end += 1;
                }
                let inner = args.get(start..end).unwrap_or(&[]);
                if let Some(run) = self.invoke(inner, &Default::default(), depth + 1)
                    && run.name == "rm"
                {
                    self.f.danger("find -exec/-execdir rm");
                }
                i = end;
            }
            if matches!(t, "-fprint" | "-fprintf" | "-fls" | "-fprint0")
                && let Some(file) = args.get(i + 1)
            {
                self.write_to(&file.text, file.exact, file.computed, Via::Redirect);
            }
            i += 1;
        }
    }

    /// `parallel CMD ::: ARGS` runs CMD with each argument; `parallel ::: CMDS` runs each.
    fn parallel(&mut self, inv: &Invocation, depth: usize) {
        let args = &inv.args;
        let sep = args
            .iter()
            .position(|a| a.text.starts_with(":::"))
            .unwrap_or(args.len());
        let mut start = 0;
        let value_opts = [
            "-j",
            "--jobs",
            "-S",
            "--sshlogin",
            "-n",
            "-N",
            "-a",
            "--arg-file",
            "-d",
            "--delimiter",
            "-I",
            "--colsep",
            "--results",
            "--joblog",
            "--timeout",
            "--memfree",
            "--load",
        ];
        while let Some(a) = args.get(start).filter(|_| start < sep) {
            if !a.text.starts_with('-') {
                break;
            }
            start += if value_opts.contains(&a.text.as_str()) {
                2
            } else {
                1
            };
        }
        let template = args.get(start..sep).unwrap_or(&[]);
        let items: Vec<&Arg> = args
            .get(sep..)
            .unwrap_or(&[])
            .iter()
            .filter(|a| !a.text.starts_with(":::"))
            .take(64)
            .collect();
        if template.is_empty() {
            for item in items {
                self.nested(&item.text.clone(), depth + 1);
            }
            return;
        }
        let text: Vec<&str> = template.iter().map(|a| a.text.as_str()).collect();
        // The template runs through a shell.
        self.nested(&text.join(" "), depth + 1);
        for item in items {
            let argv: Vec<Arg> = if template.iter().any(|a| a.text.contains("{}")) {
                template
                    .iter()
                    .map(|a| Arg {
                        text: a.text.replace("{}", &item.text),
                        ..a.clone()
                    })
                    .collect()
            } else {
                template
                    .iter()
                    .cloned()
                    .chain(std::iter::once(item.clone()))
                    .collect()
            };
            self.invoke(&argv, &Default::default(), depth + 1);
        }
    }

    fn source(&mut self, inv: &Invocation, depth: usize) {
        let Some(file) = inv.args.first() else { return };
        if file.raw.contains("<(") {
            if file.subs.iter().any(|b| body_fetches(b)) {
                self.f
                    .danger("execute remote script via process substitution");
            } else {
                self.f.danger("execute script via process substitution");
            }
            for body in &file.subs {
                if let Some(out) = command_output(body, &self.vars, depth + 1) {
                    self.nested(&out, depth + 1);
                }
            }
        } else if fetches_remote(&inv.args, "$(") || fetches_remote(&inv.args, "`") {
            self.f
                .danger("execute remote content via command substitution");
        } else if !file.exact {
            self.f.danger("source of a file the checker cannot resolve");
        }
    }

    /// `bash -c PAYLOAD`, `bash <<EOF`, `bash <(curl ...)`.
    fn shell(&mut self, inv: &Invocation, depth: usize) {
        let mut saw_c = false;
        let mut i = 0;
        let args = &inv.args;
        let mut operand: Option<&Arg> = None;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            i += 1;
            if t == "--" {
                operand = args.get(i);
                break;
            }
            if matches!(t, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
                i += 1;
                continue;
            }
            if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
                saw_c |= !t.starts_with("--") && t[1..].contains('c');
                continue;
            }
            operand = Some(a);
            break;
        }
        if saw_c {
            if let Some(payload) = operand {
                self.f.danger("shell command via -c/-lc flag");
                self.nested(&payload.text.clone(), depth + 1);
            }
            return;
        }
        if let Some(file) = operand
            && file.raw.contains("<(")
        {
            if file.subs.iter().any(|b| body_fetches(b)) {
                self.f
                    .danger("execute remote script via process substitution");
            } else {
                self.f.danger("execute script via process substitution");
            }
            for body in &file.subs {
                if let Some(out) = command_output(body, &self.vars, depth + 1) {
                    self.nested(&out, depth + 1);
                }
            }
        }
        if inv.stdin.fed {
            let text = inv
                .stdin
                .text
                .clone()
                .or(inv.stdin.raw.clone())
                .unwrap_or_default();
            if !text.trim().is_empty() {
                self.f.danger("shell execution via heredoc");
                self.nested(&text, depth + 1);
            }
        }
    }

    /// `python -c`, `node -e`, `perl -e`, `ruby -e`, `php -r`, or code fed on stdin.
    fn interpreter(&mut self, inv: &Invocation, depth: usize) {
        let Some((exec, valued, long)) = interpreter_flags(&inv.name) else {
            return;
        };
        let args = &inv.args;
        let mut i = 0;
        'args: while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            i += 1;
            if t == "--" || !t.starts_with('-') || t == "-" {
                break;
            }
            if t.starts_with("--") {
                if let Some(l) = long
                    .iter()
                    .find(|l| t == **l || t.starts_with(&format!("{l}=")))
                {
                    self.f.danger("script execution via -e/-c flag");
                    let code = match t.strip_prefix(&format!("{l}=")) {
                        Some(c) => Some(c.to_string()),
                        None => args.get(i).map(|c| c.text.clone()),
                    };
                    if let Some(code) = code {
                        interpreter_code(self, &code, depth);
                    }
                    return;
                }
                continue;
            }
            for (k, c) in t[1..].char_indices() {
                let rest = &t[1 + k + c.len_utf8()..];
                if exec.contains(c) {
                    self.f.danger("script execution via -e/-c flag");
                    let code = if rest.is_empty() {
                        args.get(i).map(|c| c.text.clone())
                    } else {
                        Some(rest.to_string())
                    };
                    if let Some(code) = code {
                        interpreter_code(self, &code, depth);
                    }
                    return;
                }
                if valued.contains(c) {
                    if rest.is_empty() {
                        i += 1;
                    }
                    if c == 'm' && exec == "c" {
                        // `python -m module ...`: what follows belongs to the module.
                        return;
                    }
                    continue 'args;
                }
            }
        }
        if inv.stdin.fed {
            let text = inv
                .stdin
                .text
                .clone()
                .or(inv.stdin.raw.clone())
                .unwrap_or_default();
            if !text.trim().is_empty() {
                self.f.danger("script execution via heredoc");
                interpreter_code(self, &text, depth);
            }
        }
    }

    fn awk(&mut self, inv: &Invocation, depth: usize) {
        let args = &inv.args;
        let mut program: Option<&Arg> = None;
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if matches!(t, "-e" | "--source") {
                program = args.get(i + 1);
                break;
            }
            if matches!(t, "-f" | "--file") {
                return;
            }
            if matches!(t, "-F" | "-v" | "--assign" | "--field-separator") {
                i += 2;
                continue;
            }
            if t.starts_with('-') && t.len() > 1 {
                i += 1;
                continue;
            }
            program = Some(a);
            break;
        }
        let Some(program) = program else { return };
        if !program.exact {
            self.f.danger("awk program the checker cannot resolve");
            return;
        }
        let text = program.text.as_str();
        let pipes = AWK_PIPE.as_ref().is_some_and(|r| r.is_match(text));
        if text.contains("system") || pipes || text.contains("|&") {
            self.f.danger("awk runs shell commands (system, pipes)");
            interpreter_code(self, text, depth);
            if let Some(re) = AWK_PIPE.as_ref() {
                for c in re.captures_iter(text) {
                    if let Some(cmd) = c.get(1).or_else(|| c.get(2)) {
                        self.nested(cmd.as_str(), depth + 1);
                    }
                }
            }
        }
    }

    fn vim(&mut self, inv: &Invocation, depth: usize) {
        let mut commands: Vec<String> = Vec::new();
        let mut it = inv.args.iter();
        while let Some(a) = it.next() {
            let t = a.text.as_str();
            if matches!(t, "-c" | "--cmd" | "-S") {
                if let Some(c) = it.next() {
                    commands.push(if t == "-S" {
                        "source".into()
                    } else {
                        c.text.clone()
                    });
                }
            } else if let Some(c) = t.strip_prefix('+').filter(|c| !c.is_empty())
                && !c.chars().all(|ch| ch.is_ascii_digit())
            {
                commands.push(c.to_string());
            }
        }
        if let Some(text) = inv.stdin.text.clone().or(inv.stdin.raw.clone()) {
            commands.extend(text.lines().map(str::to_string));
        }
        for cmd in commands {
            let c = cmd.trim_start_matches([':', ' ']);
            let runs = c.contains('!')
                || [
                    "system", "term", "py", "lua", "perl", "ruby", "call", "exe", "source", "so ",
                ]
                .iter()
                .any(|k| c.starts_with(k) || c.contains(&format!(" {k}")));
            if !runs {
                continue;
            }
            self.f.danger("vim runs a shell command");
            if let Some((_, shell)) = c.split_once('!') {
                self.nested(shell, depth + 1);
            }
            interpreter_code(self, c, depth);
        }
    }

    fn tar(&mut self, inv: &Invocation, depth: usize) {
        let args = &inv.args;
        for (i, a) in args.iter().enumerate() {
            let t = a.text.as_str();
            let payload = if let Some(v) = t.strip_prefix("--checkpoint-action=") {
                v.strip_prefix("exec=").map(str::to_string)
            } else if let Some((k, v)) = t.split_once('=') {
                matches!(
                    k,
                    "--to-command"
                        | "--use-compress-program"
                        | "--info-script"
                        | "--new-volume-script"
                        | "--rsh-command"
                )
                .then(|| v.to_string())
            } else if matches!(
                t,
                "--to-command"
                    | "--use-compress-program"
                    | "-I"
                    | "--info-script"
                    | "-F"
                    | "--new-volume-script"
                    | "--rsh-command"
            ) {
                args.get(i + 1).map(|v| v.text.clone())
            } else {
                None
            };
            if let Some(cmd) = payload {
                self.f
                    .danger("tar runs a program (checkpoint action, to-command, compress program)");
                self.nested(&cmd, depth + 1);
            }
        }
    }

    fn make(&mut self, inv: &Invocation, depth: usize) {
        let args = &inv.args;
        let mut texts: Vec<String> = Vec::new();
        let mut stdin_makefile = false;
        for (i, a) in args.iter().enumerate() {
            let t = a.text.as_str();
            if let Some(v) = t.strip_prefix("--eval=") {
                texts.push(v.to_string());
            } else if matches!(t, "--eval" | "-E") {
                if let Some(v) = args.get(i + 1) {
                    texts.push(v.text.clone());
                }
            } else if matches!(t, "-f" | "--file" | "--makefile") {
                stdin_makefile |= args
                    .get(i + 1)
                    .is_some_and(|f| matches!(f.text.as_str(), "-" | "/dev/stdin"));
            } else if matches!(t, "--file=-" | "--makefile=-" | "-f-")
                || t.starts_with("SHELL=")
                || t.starts_with(".SHELLFLAGS=")
            {
                stdin_makefile |= t.contains('-') && !t.starts_with("SHELL");
                if t.starts_with("SHELL") || t.starts_with(".SHELLFLAGS") {
                    self.f.danger("make runs recipes given on the command line");
                }
            }
        }
        if stdin_makefile && let Some(text) = inv.stdin.text.clone().or(inv.stdin.raw.clone()) {
            texts.push(text);
        }
        if texts.is_empty() {
            return;
        }
        self.f.danger("make runs recipes given on the command line");
        for text in texts {
            for recipe in make_recipes(&text) {
                self.nested(&recipe, depth + 1);
            }
        }
    }

    fn crontab(&mut self, inv: &Invocation, depth: usize) {
        let texts = inv.texts();
        if texts
            .iter()
            .any(|t| matches!(*t, "-l" | "-V" | "--version" | "-h" | "--help"))
        {
            return;
        }
        self.f.danger("install or remove a crontab");
        if let Some(text) = inv.stdin.text.clone().or(inv.stdin.raw.clone()) {
            for line in text.lines() {
                if let Some(cmd) = cron_command(line) {
                    self.nested(&cmd, depth + 1);
                }
            }
        }
    }

    fn netcat(&mut self, inv: &Invocation, depth: usize) {
        let args = &inv.args;
        if inv.name == "socat" {
            for a in args {
                let lower = a.text.to_ascii_lowercase();
                if let Some(rest) = lower
                    .strip_prefix("exec:")
                    .or_else(|| lower.strip_prefix("system:"))
                {
                    self.f
                        .danger("network connection that runs a program (nc -e, socat exec)");
                    let cmd = &a.text[a.text.len() - rest.len()..];
                    let cmd = cmd
                        .split(',')
                        .next()
                        .unwrap_or(cmd)
                        .trim_matches(['"', '\'']);
                    self.nested(cmd, depth + 1);
                }
            }
            return;
        }
        for (i, a) in args.iter().enumerate() {
            let t = a.text.as_str();
            if matches!(t, "-e" | "-c" | "--exec" | "--sh-exec" | "--lua-exec")
                || t.starts_with("--exec=")
                || t.starts_with("--sh-exec=")
            {
                self.f
                    .danger("network connection that runs a program (nc -e, socat exec)");
                let payload = t
                    .split_once('=')
                    .map(|(_, v)| v.to_string())
                    .or_else(|| args.get(i + 1).map(|v| v.text.clone()));
                if let Some(p) = payload {
                    self.nested(&p, depth + 1);
                }
            }
        }
    }
}

static AWK_PIPE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"\|\s*"([^"]*)"|"([^"]*)"\s*\|\s*getline"#).ok());

/// The command of `xargs [options] CMD ...` (empty: `echo`).
pub(crate) fn xargs_command(args: &[Arg]) -> &[Arg] {
    let value_opts = [
        "-a",
        "-d",
        "-E",
        "-e",
        "-I",
        "-i",
        "-L",
        "-l",
        "-n",
        "-P",
        "-s",
        "--arg-file",
        "--delimiter",
        "--max-args",
        "--max-procs",
        "--max-lines",
        "--max-chars",
        "--process-slot-var",
        "--eof",
        "--replace",
    ];
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if !t.starts_with('-') || t == "-" {
            break;
        }
        if t == "--" {
            i += 1;
            break;
        }
        i += if value_opts.contains(&t) { 2 } else { 1 };
    }
    args.get(i..).unwrap_or(&[])
}

/// Whether an argument holds a substitution of kind `opener` (`$(`, `` ` ``, `<(`) whose
/// command fetches from the network.
fn fetches_remote(args: &[Arg], opener: &str) -> bool {
    args.iter()
        .filter(|a| a.raw.contains(opener))
        .flat_map(|a| &a.subs)
        .any(|body| body_fetches(body))
}

pub(crate) fn body_fetches(body: &str) -> bool {
    body.split(['|', ';', '&'])
        .filter_map(|part| {
            part.split_whitespace()
                .find(|w| !w.contains('=') && *w != "sudo")
        })
        .any(|w| matches!(base_name(w).as_str(), "curl" | "wget" | "fetch" | "aria2c"))
}

/// The recipe lines of makefile text (tab-indented lines, and `target: deps ; recipe`).
fn make_recipes(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let recipe = if let Some(r) = line.strip_prefix('\t') {
            Some(r)
        } else if line.contains(':') && !line.trim_start().starts_with('#') {
            line.split_once(';').map(|(_, r)| r)
        } else {
            None
        };
        if let Some(r) = recipe {
            let r = r.trim_start().trim_start_matches(['@', '-', '+']);
            if !r.trim().is_empty() {
                out.push(r.to_string());
            }
        }
    }
    out
}

/// The command of one crontab line (`m h dom mon dow cmd`, `@reboot cmd`).
pub(crate) fn cron_command(line: &str) -> Option<String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let first = line.split_whitespace().next()?;
    if super::detect::is_assignment(first) && !first.starts_with('@') {
        return None;
    }
    let skip = if first.starts_with('@') { 1 } else { 5 };
    let mut rest = line;
    for _ in 0..skip {
        rest = rest.trim_start();
        let end = rest.find(char::is_whitespace)?;
        rest = &rest[end..];
    }
    let cmd = rest.trim();
    (!cmd.is_empty()).then(|| cmd.to_string())
}

/// What a sed script does besides editing text.
#[derive(Debug, Default, PartialEq)]
struct SedEffects {
    executes: bool,
    commands: Vec<String>,
    writes: Vec<String>,
    reads: Vec<String>,
}

fn sed_effects(script: &str) -> SedEffects {
    let chars: Vec<char> = script.chars().collect();
    let n = chars.len();
    let mut fx = SedEffects::default();
    let mut i = 0;
    let to_eol = |i: &mut usize| -> String {
        let start = *i;
        while *i < n && chars[*i] != '\n' {
            *i += 1;
        }
        chars[start..*i]
            .iter()
            .collect::<String>()
            .trim()
            .to_string()
    };
    while i < n {
        while i < n && (chars[i].is_whitespace() || chars[i] == ';') {
            i += 1;
        }
        if i >= n {
            break;
        }
        i = skip_address(&chars, i);
        while i < n && chars[i].is_whitespace() {
            i += 1;
        }
        if i < n && chars[i] == ',' {
            i = skip_address(&chars, i + 1);
        }
        while i < n && (chars[i].is_whitespace() || chars[i] == '!') {
            i += 1;
        }
        let Some(&c) = chars.get(i) else { break };
        i += 1;
        match c {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            '#' | ':' | 'b' | 't' | 'T' | 'v' => {
                while i < n && chars[i] != '\n' && chars[i] != ';' {
                    i += 1;
                }
            }
            'q' | 'Q' | 'l' | 'L' => {
                while i < n && (chars[i].is_ascii_digit() || chars[i] == ' ') {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line (and continuation lines).
                loop {
                    let line = to_eol(&mut i);
                    if line.ends_with('\\') && i < n {
                        i += 1;
                        continue;
                    }
                    break;
                }
            }
            'e' => {
                fx.executes = true;
                let cmd = to_eol(&mut i);
                if !cmd.is_empty() {
                    fx.commands.push(cmd);
                }
            }
            'w' | 'W' => {
                let file = to_eol(&mut i);
                if !file.is_empty() {
                    fx.writes.push(file);
                }
            }
            'r' | 'R' => {
                let file = to_eol(&mut i);
                fx.reads.push(file);
            }
            's' | 'y' => {
                let Some(&delim) = chars.get(i) else { break };
                i += 1;
                let (_, next) = delimited(&chars, i, delim);
                let (replacement, next) = delimited(&chars, next, delim);
                i = next;
                if c == 's' {
                    while i < n && "gpiImMew0123456789".contains(chars[i]) {
                        match chars[i] {
                            'e' => {
                                fx.executes = true;
                                fx.commands.push(replacement.clone());
                            }
                            'w' => {
                                i += 1;
                                let file = to_eol(&mut i);
                                if !file.is_empty() {
                                    fx.writes.push(file);
                                }
                                break;
                            }
                            _ => {}
                        }
                        i += 1;
                    }
                }
            }
            _ => {
                // Not a sed command this parser knows: stop rather than guess.
                break;
            }
        }
    }
    fx
}

/// Skips one sed address (`12`, `$`, `/re/I`, `\%re%`, `1~2`, `+3`).
fn skip_address(chars: &[char], mut i: usize) -> usize {
    let n = chars.len();
    match chars.get(i) {
        Some('/') => {
            i = delimited(chars, i + 1, '/').1;
        }
        Some('\\') => {
            if let Some(&d) = chars.get(i + 1) {
                i = delimited(chars, i + 2, d).1;
            }
        }
        Some('$') => i += 1,
        Some(c) if c.is_ascii_digit() || *c == '+' || *c == '~' => {
            i += 1;
            while i < n && (chars[i].is_ascii_digit() || chars[i] == '~') {
                i += 1;
            }
            return i;
        }
        _ => return i,
    }
    while i < n && matches!(chars[i], 'I' | 'M') {
        i += 1;
    }
    i
}

/// The text up to an unescaped `delim` (escapes of the delimiter removed) and the index after.
fn delimited(chars: &[char], mut i: usize, delim: char) -> (String, usize) {
    let mut out = String::new();
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            if chars[i + 1] == delim {
                out.push(delim);
            } else if chars[i + 1] == 'n' {
                out.push('\n');
            } else {
                out.push(chars[i + 1]);
            }
            i += 2;
            continue;
        }
        if c == delim {
            return (out, i + 1);
        }
        out.push(c);
        i += 1;
    }
    (out, i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts_that_run_or_write() {
        assert_eq!(sed_effects("s/a/b/g"), SedEffects::default());
        let fx = sed_effects("1e rm -rf /");
        assert!(fx.executes);
        assert_eq!(fx.commands, ["rm -rf /"]);
        let fx = sed_effects("s/.*/rm -rf \\//e");
        assert_eq!(fx.commands, ["rm -rf /"]);
        assert_eq!(sed_effects("/x/w /etc/passwd").writes, ["/etc/passwd"]);
        assert_eq!(sed_effects("s/a/b/w out.txt").writes, ["out.txt"]);
        assert!(!sed_effects("/e/d; s/e/E/").executes);
    }

    #[test]
    fn interpreter_strings_and_crontab_lines() {
        assert_eq!(
            string_arguments(r#"("rm -rf /")"#.trim_start_matches('(')).as_deref(),
            Some("rm -rf /")
        );
        assert_eq!(
            string_arguments(r#"["rm", "-rf", "/"], shell=False)"#).as_deref(),
            Some("rm -rf /")
        );
        assert_eq!(
            cron_command("* * * * * rm -rf /tmp/x").as_deref(),
            Some("rm -rf /tmp/x")
        );
        assert_eq!(cron_command("@reboot  halt").as_deref(), Some("halt"));
        assert_eq!(cron_command("# comment"), None);
        assert_eq!(cron_command("PATH=/bin"), None);
        assert_eq!(
            make_recipes("all:\n\trm -rf x\nb: ; @echo hi"),
            ["rm -rf x", "echo hi"]
        );
    }
}
