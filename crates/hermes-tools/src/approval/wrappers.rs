//! Programs that run the rest of their arguments as a command (`sudo`, `env`, `nohup`,
//! `timeout`, `nice`, `taskset`, `chrt`, `setpriv`, `unshare`, `busybox`, `systemd-run`, ...):
//! the table of their options, so the wrapped command is found and checked, and the options
//! that carry a whole command as text (`flock -c`, `script -c`, `env -S`), which are checked
//! as scripts. A wrapper option the table does not know can only hide the command from the
//! table, never from the checker: [`super::detect`] then looks for a known command further on.

use super::detect::{Analyzer, Arg, base_name, is_assignment};

/// What one step of unwrapping found.
pub(crate) enum Step {
    /// The wrapped command starts at this index.
    Next(usize),
    /// Nothing further runs (a query such as `command -v`), or the payload was checked.
    Handled,
    NotAWrapper,
}

struct Wrapper {
    name: &'static str,
    /// Options whose value is the next argument.
    value_opts: &'static [&'static str],
    /// Options taking two values (`bwrap --bind SRC DEST`).
    pair_opts: &'static [&'static str],
    /// Positional arguments before the command (`timeout 10`).
    positional: usize,
    /// Options whose value is a shell command run by `sh -c`.
    payload_opts: &'static [&'static str],
    /// Options after which no command runs (`command -v`, `taskset -p`).
    query_opts: &'static [&'static str],
}

const fn w(name: &'static str, value_opts: &'static [&'static str], positional: usize) -> Wrapper {
    Wrapper {
        name,
        value_opts,
        pair_opts: &[],
        positional,
        payload_opts: &[],
        query_opts: &[],
    }
}

const WRAPPERS: &[Wrapper] = &[
    w(
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
    w("doas", &["-u", "-C"], 0),
    w("pkexec", &["--user"], 0),
    Wrapper {
        query_opts: &["-l", "--list"],
        ..w(
            "env",
            &["-u", "--unset", "-C", "--chdir", "-P", "--default-signal"],
            0,
        )
    },
    w("exec", &["-a"], 0),
    w("nohup", &[], 0),
    w("setsid", &[], 0),
    w("builtin", &[], 0),
    Wrapper {
        query_opts: &["-v", "-V"],
        ..w("command", &[], 0)
    },
    w("time", &["-f", "-o", "--format", "--output"], 0),
    w("nice", &["-n", "--adjustment"], 0),
    Wrapper {
        query_opts: &["-p", "--pid", "-P", "--pgid", "-u", "--uid"],
        ..w("ionice", &["-c", "-n", "-t", "--class", "--classdata"], 0)
    },
    w(
        "stdbuf",
        &["-i", "-o", "-e", "--input", "--output", "--error"],
        0,
    ),
    w("timeout", &["-s", "-k", "--signal", "--kill-after"], 1),
    Wrapper {
        payload_opts: &["-c", "--command"],
        ..w(
            "flock",
            &["-w", "--timeout", "-E", "--conflict-exit-code"],
            1,
        )
    },
    w("chroot", &["--userspec", "--groups"], 1),
    Wrapper {
        payload_opts: &["-c", "--command"],
        ..w(
            "runuser",
            &[
                "-u",
                "-g",
                "-G",
                "--user",
                "--group",
                "--supp-group",
                "-s",
                "--shell",
            ],
            0,
        )
    },
    Wrapper {
        payload_opts: &["-c"],
        ..w("sg", &[], 1)
    },
    w("unbuffer", &[], 0),
    w("chronic", &[], 0),
    w(
        "strace",
        &[
            "-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-S", "-P", "-X",
        ],
        0,
    ),
    w(
        "ltrace",
        &[
            "-o", "-e", "-p", "-s", "-u", "-a", "-n", "-A", "-D", "-F", "-l", "-w", "-x",
        ],
        0,
    ),
    w(
        "xvfb-run",
        &[
            "-n",
            "-s",
            "-f",
            "-e",
            "-p",
            "--server-num",
            "--server-args",
            "--auth-file",
            "--error-file",
        ],
        0,
    ),
    w("proxychains", &["-f"], 0),
    w("proxychains4", &["-f"], 0),
    w("torsocks", &["-u", "-p", "-a", "-P"], 0),
    w("caffeinate", &["-t", "-w"], 0),
    Wrapper {
        query_opts: &["-p", "--pid"],
        ..w("taskset", &[], 1)
    },
    Wrapper {
        query_opts: &["-p", "--pid", "-m", "--max"],
        ..w(
            "chrt",
            &[
                "-T",
                "-P",
                "-D",
                "--sched-runtime",
                "--sched-period",
                "--sched-deadline",
            ],
            1,
        )
    },
    w(
        "setpriv",
        &[
            "--reuid",
            "--regid",
            "--ruid",
            "--rgid",
            "--euid",
            "--egid",
            "--groups",
            "--inh-caps",
            "--ambient-caps",
            "--bounding-set",
            "--securebits",
            "--pdeathsig",
            "--selinux-label",
            "--apparmor-profile",
            "--landlock-access",
            "--landlock-rule",
            "--seccomp-filter",
        ],
        0,
    ),
    w(
        "unshare",
        &[
            "-S",
            "--setuid",
            "-G",
            "--setgid",
            "-R",
            "--root",
            "-w",
            "--wd",
            "--propagation",
            "--map-user",
            "--map-group",
            "--map-users",
            "--map-groups",
            "--load-interp",
        ],
        0,
    ),
    Wrapper {
        query_opts: &[],
        ..w(
            "nsenter",
            &[
                "-t", "--target", "-S", "--setuid", "-G", "--setgid", "--env",
            ],
            0,
        )
    },
    w("setarch", &[], 1),
    w("linux32", &[], 0),
    w("linux64", &[], 0),
    w("i386", &[], 0),
    w("x86_64", &[], 0),
    w(
        "numactl",
        &[
            "-C",
            "-N",
            "-m",
            "-p",
            "-i",
            "-P",
            "--physcpubind",
            "--cpunodebind",
            "--membind",
            "--preferred",
            "--interleave",
            "--preferred-many",
        ],
        0,
    ),
    Wrapper {
        query_opts: &["-p", "--pid"],
        ..w("prlimit", &[], 0)
    },
    w(
        "systemd-run",
        &[
            "-u",
            "--unit",
            "-p",
            "--property",
            "-E",
            "--setenv",
            "--uid",
            "--gid",
            "--nice",
            "--working-directory",
            "--slice",
            "--description",
            "-M",
            "--machine",
            "-H",
            "--host",
            "--on-active",
            "--on-boot",
            "--on-startup",
            "--on-unit-active",
            "--on-unit-inactive",
            "--on-calendar",
            "--timer-property",
            "--path-property",
            "--socket-property",
            "--service-type",
        ],
        0,
    ),
    w("firejail", &[], 0),
    Wrapper {
        pair_opts: &[
            "--bind",
            "--bind-try",
            "--dev-bind",
            "--dev-bind-try",
            "--ro-bind",
            "--ro-bind-try",
            "--symlink",
            "--setenv",
            "--file",
            "--bind-data",
            "--ro-bind-data",
            "--chmod",
            "--overlay-src",
        ],
        ..w(
            "bwrap",
            &[
                "--chdir",
                "--hostname",
                "--uid",
                "--gid",
                "--unsetenv",
                "--lock-file",
                "--sync-fd",
                "--remount-ro",
                "--dev",
                "--proc",
                "--tmpfs",
                "--mqueue",
                "--dir",
                "--seccomp",
                "--add-seccomp-fd",
                "--info-fd",
                "--json-status-fd",
                "--userns-block-fd",
                "--cap-add",
                "--cap-drop",
                "--perms",
                "--size",
                "--args",
                "--userns",
                "--userns2",
                "--pidns",
                "--exec-label",
                "--file-label",
                "--block-fd",
            ],
            0,
        )
    },
    w("faketime", &["-m"], 1),
    w("fakeroot", &["-l", "--lib", "-s", "-i", "--faked"], 0),
    w("valgrind", &[], 0),
    w("catchsegv", &[], 0),
    w("dbus-run-session", &[], 0),
    w("ssh-agent", &["-a", "-E", "-t", "-P"], 0),
    w("trickle", &["-d", "-u", "-w", "-t", "-l", "-n"], 0),
    Wrapper {
        query_opts: &["-p"],
        ..w("cpulimit", &["-l", "--limit", "-e", "--exe", "-i"], 0)
    },
    w(
        "chpst",
        &[
            "-u", "-U", "-b", "-e", "-/", "-n", "-l", "-L", "-m", "-d", "-o", "-p", "-f", "-c",
            "-r", "-t",
        ],
        0,
    ),
    w("setuidgid", &[], 1),
    w("envuidgid", &[], 1),
    w("envdir", &[], 1),
    w(
        "softlimit",
        &[
            "-m", "-d", "-s", "-l", "-a", "-o", "-p", "-f", "-c", "-r", "-t",
        ],
        0,
    ),
    w("busybox", &[], 0),
    w("toybox", &[], 0),
    w("dbus-launch", &[], 0),
];

impl Analyzer<'_> {
    /// Unwraps one wrapper at `argv[i]`.
    pub(crate) fn unwrap_step(&mut self, argv: &[Arg], i: usize, depth: usize) -> Step {
        let name = base_name(&argv[i].text);
        match name.as_str() {
            "script" => return self.script_wrapper(argv, i, depth),
            "gdb" => return self.gdb(argv, i, depth),
            "perf" => {
                return match argv.get(i + 1).map(|a| a.text.as_str()) {
                    Some(
                        "stat" | "record" | "trace" | "top" | "sched" | "mem" | "lock" | "kvm",
                    ) => {
                        let mut j = i + 2;
                        while argv.get(j).is_some_and(|a| a.text.starts_with('-')) {
                            j += 1;
                        }
                        Step::Next(j)
                    }
                    _ => Step::NotAWrapper,
                };
            }
            _ => {}
        }
        let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == name) else {
            return Step::NotAWrapper;
        };
        if name == "systemd-run" {
            self.f
                .danger("run a command as a systemd unit (systemd-run)");
        }
        let mut j = i + 1;
        let mut positional = wrapper.positional;
        loop {
            let Some(arg) = argv.get(j) else {
                // A wrapper with nothing to run.
                return Step::Handled;
            };
            let t = arg.text.as_str();
            if t == "--" {
                j += 1;
                if positional == 0 {
                    break;
                }
                continue;
            }
            if t.starts_with('-') && t.len() > 1 {
                let key = t.split_once('=').map_or(t, |(k, _)| k);
                if wrapper.query_opts.contains(&key) {
                    return Step::Handled;
                }
                if wrapper.payload_opts.contains(&key) {
                    let payload = match t.split_once('=') {
                        Some((_, v)) => Some(v.to_string()),
                        None => argv.get(j + 1).map(|a| a.text.clone()),
                    };
                    if let Some(p) = payload {
                        self.f.danger("shell command via -c/-lc flag");
                        self.nested(&p, depth + 1);
                    }
                    return Step::Handled;
                }
                if name == "sudo" {
                    super::rules::check_sudo_flag(t, &mut self.f);
                }
                if name == "env" && (key == "-S" || key == "--split-string" || t.starts_with("-S"))
                {
                    let payload = if let Some((_, v)) = t.split_once('=') {
                        v.to_string()
                    } else if let Some(p) = t.strip_prefix("-S").filter(|p| !p.is_empty()) {
                        p.to_string()
                    } else {
                        argv.get(j + 1).map(|a| a.text.clone()).unwrap_or_default()
                    };
                    let mut rest: Vec<String> = vec![payload];
                    let skip = if t.contains('=') || t.len() > 2 && t.starts_with("-S") {
                        1
                    } else {
                        2
                    };
                    rest.extend(argv.iter().skip(j + skip).map(|a| quote(&a.text)));
                    self.nested(&rest.join(" "), depth + 1);
                    return Step::Handled;
                }
                let takes_value = wrapper.value_opts.contains(&key) && !t.contains('=');
                let takes_pair = wrapper.pair_opts.contains(&key);
                j += if takes_pair {
                    3
                } else if takes_value {
                    2
                } else {
                    1
                };
                continue;
            }
            if positional > 0 {
                positional -= 1;
                j += 1;
                continue;
            }
            if name == "env" && is_assignment(t) {
                let var = t.split('=').next().unwrap_or("").to_string();
                self.check_assignment(&var);
                j += 1;
                continue;
            }
            break;
        }
        Step::Next(j)
    }

    /// `script [options] [file]`: `-c CMD` runs CMD in a shell.
    fn script_wrapper(&mut self, argv: &[Arg], i: usize, depth: usize) -> Step {
        let mut j = i + 1;
        while let Some(a) = argv.get(j) {
            let t = a.text.as_str();
            let short_c = t.starts_with('-') && !t.starts_with("--") && t.ends_with('c');
            if short_c || t == "--command" {
                if let Some(p) = argv.get(j + 1) {
                    self.f.danger("shell command via -c/-lc flag");
                    self.nested(&p.text.clone(), depth + 1);
                }
                return Step::Handled;
            }
            if let Some(p) = t.strip_prefix("--command=") {
                self.f.danger("shell command via -c/-lc flag");
                self.nested(p, depth + 1);
                return Step::Handled;
            }
            if t == "--" {
                return Step::Next(j + 1);
            }
            j += 1;
        }
        Step::Handled
    }

    /// `gdb -ex 'shell CMD'` / `-ex '!CMD'` and `gdb --args CMD ...`.
    fn gdb(&mut self, argv: &[Arg], i: usize, depth: usize) -> Step {
        let mut j = i + 1;
        while let Some(a) = argv.get(j) {
            let t = a.text.as_str();
            if t == "--args" {
                return Step::Next(j + 1);
            }
            if matches!(t, "-ex" | "-iex" | "--eval-command" | "--init-eval-command")
                && let Some(cmd) = argv.get(j + 1)
            {
                let c = cmd.text.trim_start();
                if let Some(shell) = c
                    .strip_prefix("shell ")
                    .or_else(|| c.strip_prefix('!'))
                    .or_else(|| c.strip_prefix("pipe "))
                {
                    self.f.danger("shell command via -c/-lc flag");
                    self.nested(shell, depth + 1);
                }
                j += 2;
                continue;
            }
            j += 1;
        }
        Step::Handled
    }
}

/// A word as shell text again (for `env -S` re-joining).
fn quote(text: &str) -> String {
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
