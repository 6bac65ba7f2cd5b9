//! Classifying a command line: [`CommandChecker::classify`] normalises it, parses it into the
//! commands it will really run (through `;`/`&&`/`|` chains, subshells, substitutions and
//! wrappers such as `sudo`, `env`, `nohup`, `timeout`, `bash -c`, `eval`, `xargs`, `find
//! -exec`) and applies the rules of [`super::rules`] to each, reporting the first hardline or
//! dangerous finding.

use std::path::Path;

use super::lexer::{Pipeline, Script, Word, lex};
use super::normalize::normalize;
use super::targets::Homes;

/// Commands longer than this are refused outright: no legitimate command is this big and the
/// checker's work must stay bounded.
const MAX_COMMAND_CHARS: usize = 128_000;
/// Nesting (`bash -c "sh -c '...'"`, substitutions in substitutions) beyond this is refused.
const MAX_DEPTH: usize = 8;

/// How dangerous a command is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Safe,
    /// Needs approval; the description is also the approval key.
    Dangerous(&'static str),
    /// Refused in every mode.
    Hardline(&'static str),
}

/// What the rules found so far: the first hardline and the first dangerous description.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    pub hardline: Option<&'static str>,
    pub dangerous: Option<&'static str>,
}

impl Findings {
    pub(crate) fn hard(&mut self, description: &'static str) {
        self.hardline.get_or_insert(description);
    }

    pub(crate) fn danger(&mut self, description: &'static str) {
        self.dangerous.get_or_insert(description);
    }
}

/// A command after its wrappers: the program that runs, its arguments, and what its stdin is
/// fed by a here-document or here-string.
#[derive(Debug, Clone)]
pub(crate) struct Invocation<'a> {
    /// Lowercased base name (`/usr/bin/RM` is `rm`).
    pub name: String,
    pub args: &'a [Word],
    pub stdin_text: Option<&'a str>,
}

/// Wrappers that run the rest of their arguments as a command: name, the options that take a
/// value, and how many positional arguments come before the wrapped command.
const WRAPPERS: &[(&str, &[&str], usize)] = &[
    (
        "sudo",
        &[
            "-u",
            "-g",
            "-h",
            "-p",
            "-C",
            "-D",
            "-r",
            "-t",
            "-U",
            "-T",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--chdir",
            "--role",
            "--type",
            "--other-user",
            "--close-from",
            "--command-timeout",
        ],
        0,
    ),
    ("doas", &["-u", "-C"], 0),
    ("env", &["-u", "--unset", "-C", "--chdir"], 0),
    ("exec", &["-a"], 0),
    ("nohup", &[], 0),
    ("setsid", &[], 0),
    ("builtin", &[], 0),
    ("command", &[], 0),
    ("time", &["-f", "-o", "--format", "--output"], 0),
    ("nice", &["-n", "--adjustment"], 0),
    (
        "ionice",
        &["-c", "-n", "-p", "-t", "--class", "--classdata"],
        0,
    ),
    (
        "stdbuf",
        &["-i", "-o", "-e", "--input", "--output", "--error"],
        0,
    ),
    ("timeout", &["-s", "-k", "--signal", "--kill-after"], 1),
    (
        "flock",
        &["-w", "--timeout", "-E", "--conflict-exit-code"],
        1,
    ),
    ("chroot", &["--userspec", "--groups"], 1),
    ("runuser", &["-u", "-g", "-G", "--user", "--group"], 0),
    ("unbuffer", &[], 0),
    ("chronic", &[], 0),
    ("strace", &["-o", "-e", "-p", "-s", "-u"], 0),
    ("ltrace", &["-o", "-e", "-p", "-s", "-u"], 0),
    (
        "xvfb-run",
        &["-n", "-s", "-f", "-e", "--server-num", "--server-args"],
        0,
    ),
    ("proxychains", &["-f"], 0),
    ("proxychains4", &["-f"], 0),
    ("torsocks", &[], 0),
    ("caffeinate", &["-t", "-w"], 0),
];

/// Checks commands for one user: `home` and `hermes_home` decide which paths are theirs.
#[derive(Debug, Clone, Default)]
pub struct CommandChecker {
    pub(crate) homes: Homes,
}

impl CommandChecker {
    pub fn new(home: Option<&Path>, hermes_home: Option<&Path>) -> CommandChecker {
        let text = |p: &Path| p.to_string_lossy().trim_end_matches('/').to_string();
        CommandChecker {
            homes: Homes {
                home: home.map(text).filter(|h| h.len() > 1),
                hermes_home: hermes_home.map(text).filter(|h| h.len() > 1),
            },
        }
    }

    /// The verdict on one command line (as the model wrote it).
    pub fn classify(&self, command: &str) -> Verdict {
        if command.len() > MAX_COMMAND_CHARS {
            return Verdict::Hardline("command too long to check safely");
        }
        let mut findings = Findings::default();
        self.script(&normalize(command), 0, &mut findings);
        match findings {
            Findings {
                hardline: Some(h), ..
            } => Verdict::Hardline(h),
            Findings {
                dangerous: Some(d), ..
            } => Verdict::Dangerous(d),
            _ => Verdict::Safe,
        }
    }

    /// Checks a whole command line (also the payload of `bash -c`, `eval`, substitutions).
    pub(crate) fn script(&self, text: &str, depth: usize, f: &mut Findings) {
        if depth > MAX_DEPTH {
            f.hard("command nesting too deep to check safely");
            return;
        }
        if super::pipelines::is_fork_bomb(text) {
            f.hard("fork bomb");
        }
        let script: Script = lex(text);
        for body in &script.nested {
            self.script(body, depth + 1, f);
        }
        for pipeline in &script.pipelines {
            self.pipeline(pipeline, depth, f);
        }
        super::pipelines::check_sequence(&script, f);
    }

    fn pipeline(&self, pipeline: &Pipeline, depth: usize, f: &mut Findings) {
        let mut stages: Vec<Invocation<'_>> = Vec::new();
        for cmd in &pipeline.commands {
            for r in &cmd.redirects {
                self.check_redirect(&r.op, &r.target, f);
            }
            if let Some(inv) = self.invoke(&cmd.words, cmd.stdin_text.as_deref(), depth, f) {
                stages.push(inv);
            }
        }
        super::pipelines::check_pipeline(&stages, &pipeline.commands, f);
    }

    /// Unwraps `words` to the command that runs and applies the command rules to it.
    pub(crate) fn invoke<'a>(
        &self,
        words: &'a [Word],
        stdin_text: Option<&'a str>,
        depth: usize,
        f: &mut Findings,
    ) -> Option<Invocation<'a>> {
        let inv = self.unwrap(words, stdin_text, depth, f)?;
        self.check_command(&inv, depth, f);
        Some(inv)
    }

    /// Strips variable assignments and wrapper commands (`sudo -u x`, `env -i A=1`, `nohup`,
    /// `timeout 10`, ...).
    fn unwrap<'a>(
        &self,
        words: &'a [Word],
        stdin_text: Option<&'a str>,
        depth: usize,
        f: &mut Findings,
    ) -> Option<Invocation<'a>> {
        let mut i = 0;
        loop {
            while words.get(i).is_some_and(|w| is_assignment(&w.text)) {
                i += 1;
            }
            let name = base_name(&words.get(i)?.text);
            let Some((_, value_opts, positional)) = WRAPPERS.iter().find(|(w, _, _)| *w == name)
            else {
                break;
            };
            if name == "command"
                && words
                    .get(i + 1)
                    .is_some_and(|w| w.text.starts_with("-v") || w.text.starts_with("-V"))
            {
                return None;
            }
            i += 1;
            while let Some(w) = words.get(i) {
                let t = w.text.as_str();
                if t == "--" {
                    i += 1;
                    break;
                }
                if !t.starts_with('-') || t == "-" {
                    break;
                }
                if name == "sudo" {
                    super::rules::check_sudo_flag(t, f);
                }
                if name == "env" && (t == "-S" || t == "--split-string" || t.starts_with("-S")) {
                    let payload = match t.strip_prefix("-S").filter(|p| !p.is_empty()) {
                        Some(p) => p.to_string(),
                        None => words.get(i + 1).map(|w| w.text.clone()).unwrap_or_default(),
                    };
                    self.script(&payload, depth + 1, f);
                    return None;
                }
                i += if value_opts.contains(&t) { 2 } else { 1 };
            }
            if name == "env" {
                while words.get(i).is_some_and(|w| is_assignment(&w.text)) {
                    i += 1;
                }
            }
            i += positional;
        }
        Some(Invocation {
            name: base_name(&words.get(i)?.text),
            args: &words[i + 1..],
            stdin_text,
        })
    }
}

/// `NAME=value` (a variable assignment before a command).
pub(crate) fn is_assignment(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
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
        assert!(!is_assignment("=x"));
        assert!(!is_assignment("1A=x"));
        assert!(!is_assignment("--opt=x"));
        assert_eq!(base_name("/usr/bin/RM"), "rm");
    }

    #[test]
    fn wrappers_are_unwrapped() {
        let c = CommandChecker::default();
        let script = lex("sudo -u root env -i A=1 nohup timeout -s KILL 10 rm -rf x");
        let words = &script.pipelines[0].commands[0].words;
        let mut f = Findings::default();
        let inv = c.unwrap(words, None, 0, &mut f).unwrap();
        assert_eq!(inv.name, "rm");
        assert_eq!(inv.args.len(), 2);
        let script = lex("command -v rm");
        let words = &script.pipelines[0].commands[0].words;
        assert!(c.unwrap(words, None, 0, &mut f).is_none());
    }
}
