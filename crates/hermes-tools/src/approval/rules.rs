//! The rules applied to each command once unwrapped: the hardline list (recursive delete of
//! `/`, system directories or the home; mkfs; writes to block devices; wipefs/shred on devices;
//! `kill -1`; shutdown/reboot/halt/poweroff) and the dangerous list (recursive delete,
//! world-writable chmod, recursive chown to root, writes under `/etc`, `~/.ssh`, shell rc files
//! or the Hermes `.env`, service stops, force kills, destructive git, shells and interpreters
//! running inline code, ...). Descriptions match the Python Hermes, so approvals saved in a
//! shared `command_allowlist` keep working.

use super::detect::{CommandChecker, Findings, Invocation};
use super::lexer::Word;
use super::targets::{DeleteTarget, WriteTarget};

const SHELLS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "fish", "busybox",
];

/// Options of the argument parser: letters of short bundles, long options, operands.
struct Parsed<'a> {
    short: String,
    long: Vec<&'a str>,
    operands: Vec<&'a str>,
}

/// Splits arguments into options and operands; `value_opts` take the next argument.
fn parse<'a>(args: &'a [Word], value_opts: &[&str]) -> Parsed<'a> {
    let mut p = Parsed {
        short: String::new(),
        long: Vec::new(),
        operands: Vec::new(),
    };
    let mut iter = args.iter().map(|w| w.text.as_str());
    while let Some(t) = iter.next() {
        if t == "--" {
            p.operands.extend(iter.by_ref());
            break;
        }
        if t.starts_with("--") {
            p.long.push(t);
            if value_opts.contains(&t) {
                iter.next();
            }
        } else if t.starts_with('-') && t.len() > 1 {
            p.short.push_str(&t[1..]);
            if value_opts.contains(&t) {
                iter.next();
            }
        } else {
            p.operands.push(t);
        }
    }
    p
}

impl Parsed<'_> {
    fn has_long(&self, prefix: &str) -> bool {
        self.long.iter().any(|l| l.starts_with(prefix))
    }
}

impl CommandChecker {
    /// A redirection: writes onto block devices are hardline, onto sensitive files dangerous.
    pub(crate) fn check_redirect(&self, op: &str, target: &str, f: &mut Findings) {
        if !op.contains('>') {
            return;
        }
        match self.homes.write_target(target) {
            Some(WriteTarget::BlockDevice) => f.hard("redirect to raw block device"),
            Some(WriteTarget::SystemConfig) => f.danger("overwrite system config"),
            Some(WriteTarget::UserSecret | WriteTarget::HermesSecret) => {
                f.danger("overwrite system file via redirection")
            }
            Some(WriteTarget::ProjectEnv) => {
                f.danger("overwrite project env/config via redirection")
            }
            None => {}
        }
    }

    /// The rules for one unwrapped command.
    pub(crate) fn check_command(&self, inv: &Invocation<'_>, depth: usize, f: &mut Findings) {
        let args = inv.args;
        let name = inv.name.as_str();
        match name {
            "rm" => self.rm(args, f),
            "mkfs" | "mke2fs" => f.hard("format filesystem (mkfs)"),
            n if n.starts_with("mkfs.") => f.hard("format filesystem (mkfs)"),
            "dd" => self.dd(args, f),
            "wipefs" | "shred" | "blkdiscard" => self.wipe(args, f),
            "tee" => self.tee(args, f),
            "cp" | "mv" | "install" => self.copy(args, f),
            "sed" => self.in_place(args, f, false),
            "perl" | "ruby" => {
                self.in_place(args, f, true);
                interpreter(name, inv, f);
            }
            "chmod" => self.chmod(args, f),
            "chown" | "chgrp" => self.chown(args, f),
            "systemctl" => systemctl(args, f),
            "service" => {
                let p = parse(args, &[]);
                if matches!(p.operands.get(1), Some(&("stop" | "restart"))) {
                    f.danger("stop/restart system service");
                }
            }
            "shutdown" | "reboot" | "halt" | "poweroff" => f.hard("system shutdown/reboot"),
            "init" | "telinit" => {
                if matches!(args.first().map(|w| w.text.as_str()), Some("0" | "6")) {
                    f.hard("init 0/6 (shutdown/reboot)");
                }
            }
            "kill" => kill(args, f),
            "pkill" | "killall" => kill_by_name(name, args, f),
            "git" => git(args, f),
            "docker" | "docker-compose" | "podman" => docker(name, args, f),
            "hermes" => hermes(args, f),
            "xargs" => self.xargs(args, depth, f),
            "find" => self.find(args, depth, f),
            "eval" => {
                let payload: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
                self.script(&payload.join(" "), depth + 1, f);
                if fetches_remote(args, "$(") || fetches_remote(args, "`") {
                    f.danger("execute remote content via command substitution");
                }
            }
            "source" | "." => {
                if fetches_remote(args, "<(") {
                    f.danger("execute remote script via process substitution");
                } else if fetches_remote(args, "$(") || fetches_remote(args, "`") {
                    f.danger("execute remote content via command substitution");
                }
            }
            "su" => {
                let mut it = args.iter().map(|w| w.text.as_str());
                while let Some(t) = it.next() {
                    if t == "-c" || t == "--command" {
                        if let Some(payload) = it.next() {
                            self.script(payload, depth + 1, f);
                        }
                    } else if let Some(payload) = t.strip_prefix("--command=") {
                        self.script(payload, depth + 1, f);
                    }
                }
            }
            "watch" => {
                let p = parse(args, &["-n", "--interval", "-d"]);
                self.script(&p.operands.join(" "), depth + 1, f);
            }
            n if SHELLS.contains(&n) => self.shell(inv, depth, f),
            n if is_interpreter(n) => interpreter(n, inv, f),
            _ => {}
        }
    }

    fn rm(&self, args: &[Word], f: &mut Findings) {
        let p = parse(args, &[]);
        for target in &p.operands {
            match self.homes.delete_target(target) {
                DeleteTarget::Root => f.hard("recursive delete of root filesystem"),
                DeleteTarget::SystemDir => f.hard("recursive delete of system directory"),
                DeleteTarget::Home => f.hard("recursive delete of home directory"),
                DeleteTarget::Other => {}
            }
        }
        if p.short.contains(['r', 'R']) || p.has_long("--rec") {
            f.danger("recursive delete");
        } else if p.operands.iter().any(|t| t.starts_with('/')) {
            f.danger("delete in root path");
        }
    }

    fn dd(&self, args: &[Word], f: &mut Findings) {
        for w in args {
            if let Some(out) = w.text.strip_prefix("of=")
                && self.homes.write_target(out) == Some(WriteTarget::BlockDevice)
            {
                f.hard("dd to raw block device");
            }
        }
        if args.iter().any(|w| w.text.starts_with("if=")) {
            f.danger("disk copy");
        }
    }

    fn wipe(&self, args: &[Word], f: &mut Findings) {
        let p = parse(
            args,
            &[
                "-n",
                "--iterations",
                "-s",
                "--size",
                "-t",
                "--types",
                "-o",
                "--offset",
            ],
        );
        if p.operands
            .iter()
            .any(|t| self.homes.write_target(t) == Some(WriteTarget::BlockDevice))
        {
            f.hard("wipe of a block device (wipefs/shred)");
        } else if !p.operands.is_empty() {
            f.danger("irrecoverable wipe (wipefs/shred)");
        }
    }

    fn tee(&self, args: &[Word], f: &mut Findings) {
        for target in parse(args, &[]).operands {
            match self.homes.write_target(target) {
                Some(WriteTarget::BlockDevice) => f.hard("redirect to raw block device"),
                Some(
                    WriteTarget::SystemConfig | WriteTarget::UserSecret | WriteTarget::HermesSecret,
                ) => f.danger("overwrite system file via tee"),
                Some(WriteTarget::ProjectEnv) => f.danger("overwrite project env/config via tee"),
                None => {}
            }
        }
    }

    fn copy(&self, args: &[Word], f: &mut Findings) {
        let value_opts = [
            "-t",
            "--target-directory",
            "-S",
            "--suffix",
            "-m",
            "--mode",
            "-o",
            "--owner",
            "-g",
            "--group",
        ];
        let p = parse(args, &value_opts);
        let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
        let explicit = texts
            .iter()
            .position(|t| *t == "-t" || *t == "--target-directory")
            .and_then(|i| texts.get(i + 1).copied())
            .or_else(|| {
                texts
                    .iter()
                    .find_map(|t| t.strip_prefix("--target-directory="))
            });
        let dest = match explicit {
            Some(d) => Some(d),
            None if p.operands.len() >= 2 => p.operands.last().copied(),
            None => None,
        };
        match dest.and_then(|d| self.homes.write_target(d)) {
            Some(WriteTarget::BlockDevice) => f.hard("redirect to raw block device"),
            Some(WriteTarget::SystemConfig) => f.danger("copy/move file into system config path"),
            Some(WriteTarget::UserSecret | WriteTarget::HermesSecret) => {
                f.danger("copy/move file into sensitive credential/SSH/shell-rc path")
            }
            Some(WriteTarget::ProjectEnv) => f.danger("overwrite project env/config file"),
            None => {}
        }
    }

    /// `sed -i`, `perl -pi`, `ruby -i` editing sensitive files in place.
    fn in_place(&self, args: &[Word], f: &mut Findings, perl_like: bool) {
        let p = parse(args, &["-e", "-f", "--expression", "--file", "-E"]);
        let in_place = p.short.contains('i') || p.has_long("--in-place");
        if !in_place {
            return;
        }
        for target in &p.operands {
            match self.homes.write_target(target) {
                Some(WriteTarget::SystemConfig) => f.danger("in-place edit of system config"),
                Some(WriteTarget::UserSecret) if perl_like => {
                    f.danger("in-place edit of sensitive credential/SSH/shell-rc path (perl/ruby)")
                }
                Some(WriteTarget::UserSecret) => {
                    f.danger("in-place edit of sensitive credential/SSH/shell-rc path")
                }
                Some(WriteTarget::HermesSecret) if perl_like => {
                    f.danger("in-place edit of Hermes config/env (perl/ruby)")
                }
                Some(WriteTarget::HermesSecret) => f.danger("in-place edit of Hermes config/env"),
                Some(WriteTarget::BlockDevice) => f.hard("redirect to raw block device"),
                Some(WriteTarget::ProjectEnv) | None => {}
            }
        }
    }

    fn chmod(&self, args: &[Word], f: &mut Findings) {
        let p = parse(args, &["--reference"]);
        // A mode may look like an option: `chmod -w`, `chmod -o+w`.
        let dashed: Vec<&str> = args
            .iter()
            .map(|w| w.text.as_str())
            .filter(|t| t.starts_with('-') && t.contains(['+', '=']))
            .collect();
        if p.operands
            .first()
            .into_iter()
            .chain(dashed.iter())
            .any(|m| world_writable(m))
        {
            f.danger("world/other-writable permissions");
        }
        let recursive = p.short.contains('R') || p.has_long("--recursive");
        if recursive && p.operands.iter().skip(1).any(|t| self.system_scope(t)) {
            f.danger("recursive permission change on a system directory");
        }
    }

    fn chown(&self, args: &[Word], f: &mut Findings) {
        let p = parse(args, &["--reference", "--from"]);
        let recursive = p.short.contains('R') || p.has_long("--recur");
        if !recursive {
            return;
        }
        if p.operands
            .first()
            .is_some_and(|o| o.to_lowercase().starts_with("root"))
        {
            f.danger("recursive chown to root");
        }
        if p.operands.iter().skip(1).any(|t| self.system_scope(t)) {
            f.danger("recursive permission change on a system directory");
        }
    }

    fn system_scope(&self, target: &str) -> bool {
        self.homes.delete_target(target) != DeleteTarget::Other
    }

    fn xargs(&self, args: &[Word], depth: usize, f: &mut Findings) {
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
        ];
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let t = w.text.as_str();
            if !t.starts_with('-') || t == "-" {
                break;
            }
            i += if value_opts.contains(&t) { 2 } else { 1 };
        }
        let inner = args.get(i..).unwrap_or(&[]);
        if let Some(inv) = self.invoke(inner, None, depth + 1, f)
            && inv.name == "rm"
        {
            f.danger("xargs with rm");
        }
    }

    fn find(&self, args: &[Word], depth: usize, f: &mut Findings) {
        let mut i = 0;
        while let Some(w) = args.get(i) {
            let t = w.text.as_str();
            if t == "-delete" {
                f.danger("find -delete");
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
                if let Some(inv) = self.invoke(inner, None, depth + 1, f)
                    && inv.name == "rm"
                {
                    f.danger("find -exec/-execdir rm");
                }
                i = end;
            }
            i += 1;
        }
    }

    /// `bash -c PAYLOAD` (checked as a command line), `bash <<EOF` (the body too), and
    /// `bash <(curl ...)`.
    fn shell(&self, inv: &Invocation<'_>, depth: usize, f: &mut Findings) {
        let mut saw_c = false;
        let mut it = inv.args.iter().map(|w| w.text.as_str());
        while let Some(t) = it.next() {
            if t == "--" {
                break;
            }
            if matches!(t, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
                it.next();
                continue;
            }
            if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
                saw_c |= !t.starts_with("--") && t[1..].contains('c');
                continue;
            }
            if saw_c {
                f.danger("shell command via -c/-lc flag");
                self.script(t, depth + 1, f);
                return;
            }
            break;
        }
        if fetches_remote(inv.args, "<(") {
            f.danger("execute remote script via process substitution");
        }
        if let Some(body) = inv.stdin_text.filter(|b| !b.trim().is_empty()) {
            f.danger("shell execution via heredoc");
            self.script(body, depth + 1, f);
        }
    }
}

/// A mode that gives others (or all) write access: numeric with the others-write bit, or a
/// symbolic clause like `o+w`, `a+rwx`, `go=rw`.
fn world_writable(mode: &str) -> bool {
    let mode = mode.trim_start_matches('-');
    if !mode.is_empty() && mode.len() <= 4 && mode.chars().all(|c| c.is_digit(8)) {
        return mode
            .chars()
            .last()
            .and_then(|c| c.to_digit(8))
            .is_some_and(|others| others & 2 != 0);
    }
    mode.split(',').any(|clause| {
        let Some(op) = clause.find(['+', '=']) else {
            return false;
        };
        let (who, perms) = clause.split_at(op);
        who.contains(['o', 'a']) && perms.contains('w')
    })
}

pub(crate) fn check_sudo_flag(flag: &str, f: &mut Findings) {
    let privileged = if let Some(long) = flag.strip_prefix("--") {
        ["st", "a", "sh", "lo"].iter().any(|p| long.starts_with(p))
    } else {
        flag[1..].contains(['S', 'A', 's', 'i'])
    };
    if privileged {
        f.danger("sudo with privilege flag (stdin/askpass/shell/list)");
    }
}

fn is_interpreter(name: &str) -> bool {
    name.starts_with("python")
        || name.starts_with("pypy")
        || matches!(name, "perl" | "ruby" | "node" | "nodejs" | "php")
}

/// `python -c`, `node -e`, `perl -e`, `ruby -e`, `php -r`, or code fed on stdin.
fn interpreter(name: &str, inv: &Invocation<'_>, f: &mut Findings) {
    // (letters that run inline code, short options whose value follows, long forms)
    let (exec, valued, long): (&str, &str, &[&str]) = match name {
        "node" | "nodejs" => ("ep", "Cr", &["--eval", "--print"]),
        "perl" => ("eE", "IMmx0Fl", &[]),
        "ruby" => ("e", "CEFIKr", &[]),
        "php" => ("r", "cdz", &[]),
        _ => ("c", "WXm", &[]),
    };
    let mut it = inv.args.iter().map(|w| w.text.as_str());
    while let Some(t) = it.next() {
        if t == "--" || !t.starts_with('-') || t == "-" {
            break;
        }
        if t.starts_with("--") {
            if long
                .iter()
                .any(|l| t == *l || t.starts_with(&format!("{l}=")))
            {
                f.danger("script execution via -e/-c flag");
                return;
            }
            continue;
        }
        for (i, c) in t[1..].char_indices() {
            if exec.contains(c) {
                f.danger("script execution via -e/-c flag");
                return;
            }
            if valued.contains(c) {
                // The rest of the bundle, or the next argument, is the option's value.
                if i + 1 + c.len_utf8() >= t.len() {
                    it.next();
                }
                if c == 'm' && exec == "c" {
                    // `python -m module ...`: what follows belongs to the module.
                    return;
                }
                break;
            }
        }
    }
    if inv.stdin_text.is_some_and(|b| !b.trim().is_empty()) {
        f.danger("script execution via heredoc");
    }
}

fn systemctl(args: &[Word], f: &mut Findings) {
    let p = parse(
        args,
        &[
            "-H",
            "--host",
            "-M",
            "--machine",
            "-t",
            "--type",
            "-p",
            "--property",
            "-s",
            "--signal",
        ],
    );
    match p.operands.first().copied() {
        Some("poweroff" | "reboot" | "halt" | "kexec") => f.hard("systemctl poweroff/reboot"),
        Some("stop" | "restart" | "disable" | "mask" | "kill") => {
            f.danger("stop/restart system service")
        }
        _ => {}
    }
}

/// `kill -1` / `kill -9 -1` (every process the user owns) and `kill $(pgrep ...)`.
fn kill(args: &[Word], f: &mut Findings) {
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let mut pids: Vec<&str> = Vec::new();
    let mut signal: Option<&str> = None;
    let mut i = 0;
    while let Some(t) = texts.get(i).copied() {
        if t == "--" {
            pids.extend(&texts[i + 1..]);
            break;
        }
        if i == 0 && matches!(t, "-s" | "-n" | "--signal") {
            signal = texts.get(1).copied();
            i += 2;
            continue;
        }
        if i == 0 && t.starts_with('-') && t.len() > 1 {
            signal = Some(t);
        } else {
            pids.push(t);
        }
        i += 1;
    }
    if pids.contains(&"-1") || (pids.is_empty() && signal == Some("-1")) {
        f.hard("kill all processes");
    }
    let by_lookup = args.iter().flat_map(|w| &w.subs).any(|body| {
        let first = body.split_whitespace().next().unwrap_or("");
        matches!(super::detect::base_name(first).as_str(), "pgrep" | "pidof")
    });
    if by_lookup {
        f.danger("kill process via pgrep/pidof expansion (self-termination)");
    }
}

fn kill_by_name(name: &str, args: &[Word], f: &mut Findings) {
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let targets_hermes = texts.iter().any(|t| {
        let t = t.to_lowercase();
        !t.starts_with('-')
            && (t.contains("hermes") || t.contains("gateway") || t.contains("cli.py"))
    });
    if targets_hermes {
        f.danger("kill hermes/gateway process (self-termination)");
        return;
    }
    let force = texts.iter().enumerate().any(|(i, t)| {
        matches!(
            *t,
            "-9" | "-KILL" | "-SIGKILL" | "--signal=9" | "--signal=KILL"
        ) || (matches!(*t, "-s" | "--signal")
            && matches!(texts.get(i + 1).copied(), Some("9" | "KILL" | "SIGKILL")))
    });
    if name == "pkill" && force {
        f.danger("force kill processes");
    } else if force {
        f.danger("force kill processes (killall -KILL)");
    } else if name == "killall" && texts.contains(&"-r") {
        f.danger("kill processes by regex (killall -r)");
    }
}

fn git(args: &[Word], f: &mut Findings) {
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let mut i = 0;
    while let Some(t) = texts.get(i) {
        if matches!(
            *t,
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace"
        ) {
            i += 2;
        } else if t.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    let Some(sub) = texts.get(i).copied() else {
        return;
    };
    let rest = args.get(i + 1..).unwrap_or(&[]);
    let p = parse(rest, &[]);
    match sub {
        "reset"
            if p.long
                .iter()
                .any(|l| matches!(*l, "--hard" | "--har" | "--ha" | "--h")) =>
        {
            f.danger("git reset --hard (destroys uncommitted changes)")
        }
        "push" if p.has_long("--forc") || p.operands.iter().any(|o| o.starts_with('+')) => {
            f.danger("git force push (rewrites remote history)")
        }
        "push" if p.short.contains('f') => {
            f.danger("git force push short flag (rewrites remote history)")
        }
        "clean" if p.short.contains('f') || p.has_long("--force") => {
            f.danger("git clean with force (deletes untracked files)")
        }
        "branch" if p.short.contains('D') => f.danger("git branch force delete"),
        "branch"
            if (p.short.contains('d') || p.has_long("--delete"))
                && (p.short.contains('f') || p.has_long("--force")) =>
        {
            f.danger("git branch force delete (long flags)")
        }
        _ => {}
    }
}

fn docker(name: &str, args: &[Word], f: &mut Findings) {
    let p = parse(
        args,
        &[
            "-H",
            "--host",
            "--context",
            "-c",
            "--config",
            "-f",
            "--file",
            "-p",
            "--project-name",
        ],
    );
    let ops = &p.operands;
    let (compose, action) = if name == "docker-compose" {
        (true, ops.first().copied())
    } else if ops.first() == Some(&"compose") {
        (true, ops.get(1).copied())
    } else {
        (false, ops.first().copied())
    };
    match (compose, action) {
        (true, Some("restart" | "stop" | "kill" | "down")) => {
            f.danger("docker compose restart/stop/kill/down (container lifecycle)")
        }
        (false, Some("restart" | "stop" | "kill")) => {
            f.danger("docker restart/stop/kill (container lifecycle)")
        }
        _ => {}
    }
}

fn hermes(args: &[Word], f: &mut Findings) {
    let p = parse(args, &["-p", "--profile", "-m", "--model", "--provider"]);
    match (p.operands.first().copied(), p.operands.get(1).copied()) {
        (Some("gateway"), Some("stop" | "restart")) => {
            f.danger("stop/restart hermes gateway (kills running agents)")
        }
        (Some("update"), _) => f.danger("hermes update (restarts gateway, kills running agents)"),
        _ => {}
    }
}

/// Whether an argument holds a substitution of kind `opener` (`$(`, `` ` ``, `<(`) whose
/// command fetches from the network.
fn fetches_remote(args: &[Word], opener: &str) -> bool {
    args.iter()
        .filter(|w| w.text.contains(opener))
        .flat_map(|w| &w.subs)
        .any(|body| body_fetches(body))
}

pub(crate) fn body_fetches(body: &str) -> bool {
    body.split(['|', ';', '&'])
        .filter_map(|part| {
            part.split_whitespace()
                .find(|w| !w.contains('=') && *w != "sudo")
        })
        .any(|w| matches!(super::detect::base_name(w).as_str(), "curl" | "wget"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_writable_modes() {
        for m in [
            "777", "0777", "666", "1777", "o+w", "a+rwx", "go=rw", "u+x,o+w", "-o+w",
        ] {
            assert!(world_writable(m), "{m}");
        }
        for m in ["755", "644", "0700", "u+w", "g+w", "+x", "o-w", "a-w"] {
            assert!(!world_writable(m), "{m}");
        }
    }
}
