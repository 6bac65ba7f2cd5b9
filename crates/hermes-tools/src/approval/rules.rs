//! The rules applied to each command once unwrapped, for files, disks, processes and the
//! system: the hardline list (recursive delete of `/`, system directories or the home; mkfs,
//! mkswap and partitioning of devices; writes to block devices and `/proc/sysrq-trigger`;
//! wipes; `kill -1` and `killall5`; shutdown, reboot and the systemd targets that do the same)
//! and the dangerous list (recursive delete, deletes the checker cannot resolve,
//! world-writable chmod, recursive chown to root, writes to system configuration, kernel
//! settings, credentials and the guarded paths of [`crate::protect`], service stops, force
//! kills, destructive git and configured git programs, Hermes config changes, reads of
//! `/proc/*/environ`, ...). The rules for commands that run other code are in
//! [`super::exec_rules`]. Descriptions match the Python Hermes where it has the same rule, so
//! approvals saved in a shared `command_allowlist` keep working.

use super::detect::{Analyzer, Arg, Findings, Invocation, base_name};
use super::targets::{DeleteTarget, WriteTarget};

/// Shells: `-c` runs a payload, stdin and files are scripts.
pub(crate) const SHELLS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "fish", "yash", "posh", "tcsh", "csh",
    "rbash", "lksh", "pdksh", "oksh",
];

/// Every command a rule looks at (for probing arguments and globbed command names).
pub(crate) const KNOWN_COMMANDS: &[&str] = &[
    "rm",
    "rmdir",
    "unlink",
    "mkfs",
    "mke2fs",
    "mkdosfs",
    "mkntfs",
    "mkexfatfs",
    "newfs",
    "mkswap",
    "fdisk",
    "sfdisk",
    "sgdisk",
    "gdisk",
    "cfdisk",
    "parted",
    "dd",
    "wipefs",
    "shred",
    "blkdiscard",
    "nvme",
    "cryptsetup",
    "hdparm",
    "badblocks",
    "tee",
    "cp",
    "mv",
    "install",
    "ln",
    "rsync",
    "truncate",
    "sed",
    "perl",
    "ruby",
    "chmod",
    "chown",
    "chgrp",
    "systemctl",
    "service",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "init",
    "telinit",
    "kexec",
    "loginctl",
    "kill",
    "pkill",
    "killall",
    "killall5",
    "git",
    "docker",
    "podman",
    "docker-compose",
    "hermes",
    "xargs",
    "find",
    "eval",
    "source",
    ".",
    "su",
    "watch",
    "parallel",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "busybox",
    "vim",
    "vi",
    "nvim",
    "ex",
    "tar",
    "make",
    "crontab",
    "at",
    "batch",
    "curl",
    "wget",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "python",
    "python3",
    "node",
    "php",
    "bash",
    "sh",
    "zsh",
    "dash",
    "ksh",
    "sudo",
    "env",
    "timeout",
    "nohup",
    "nice",
    "exec",
    "command",
    "alias",
    "trap",
    "psql",
    "mysql",
    "sqlite3",
];

pub(crate) fn is_known(name: &str) -> bool {
    KNOWN_COMMANDS.contains(&name) || name.starts_with("mkfs.") || name.starts_with("python")
}

/// Options of the argument parser: letters of short bundles, long options, operands.
pub(crate) struct Parsed<'a> {
    pub short: String,
    pub long: Vec<&'a str>,
    pub operands: Vec<&'a Arg>,
}

/// Splits arguments into options and operands; `value_opts` take the next argument.
pub(crate) fn parse<'a>(args: &'a [Arg], value_opts: &[&str]) -> Parsed<'a> {
    let mut p = Parsed {
        short: String::new(),
        long: Vec::new(),
        operands: Vec::new(),
    };
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        let t = a.text.as_str();
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
            p.operands.push(a);
        }
    }
    p
}

impl Parsed<'_> {
    pub(crate) fn has_long(&self, prefix: &str) -> bool {
        self.long.iter().any(|l| l.starts_with(prefix))
    }
}

/// How a file gets written, for the description of a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    Redirect,
    Tee,
    Copy,
    Dd,
}

/// Block device names a partitioner or formatter may be pointed at.
fn is_device(homes: &super::targets::Homes, text: &str) -> bool {
    homes.write_target(text) == Some(WriteTarget::BlockDevice)
}

impl Analyzer<'_> {
    /// A redirection: writes are checked as writes, reads of `/proc/*/environ` flagged.
    pub(crate) fn check_redirect(&mut self, op: &str, target: &str, exact: bool, computed: bool) {
        if op.contains('>') {
            self.write_to(target, exact, computed, Via::Redirect);
        } else if reads_environ(target) {
            self.f.danger("read process environment (secrets)");
        }
    }

    /// A file written by a redirection, `tee`, `cp`/`mv`/`ln`, a download or `dd of=`.
    pub(crate) fn write_to(&mut self, target: &str, exact: bool, computed: bool, via: Via) {
        let homes = self.homes();
        let kind = if exact {
            homes.write_target(target)
        } else {
            homes
                .write_target(target)
                .or_else(|| homes.inexact_write_target(target))
        };
        let f = &mut self.f;
        match kind {
            Some(WriteTarget::BlockDevice) if via == Via::Dd => f.hard("dd to raw block device"),
            Some(WriteTarget::BlockDevice) => f.hard("redirect to raw block device"),
            Some(WriteTarget::SysrqTrigger) => {
                f.hard("write to /proc/sysrq-trigger (reboot or crash the machine)")
            }
            Some(WriteTarget::KernelSettings) => {
                f.danger("write to kernel settings (/proc/sys, /sys)")
            }
            Some(WriteTarget::SystemConfig) => f.danger(match via {
                Via::Redirect | Via::Dd => "overwrite system config",
                Via::Tee => "overwrite system file via tee",
                Via::Copy => "copy/move file into system config path",
            }),
            Some(WriteTarget::Guarded(g)) => f.danger(g.description()),
            Some(WriteTarget::Credentials) => f.danger(match via {
                Via::Redirect | Via::Dd => "overwrite system file via redirection",
                Via::Tee => "overwrite system file via tee",
                Via::Copy => "copy/move file into sensitive credential/SSH/shell-rc path",
            }),
            Some(WriteTarget::ProjectEnv) => f.danger(match via {
                Via::Redirect | Via::Dd => "overwrite project env/config via redirection",
                Via::Tee => "overwrite project env/config via tee",
                Via::Copy => "overwrite project env/config file",
            }),
            None if !exact && computed => f.danger("write to a path the checker cannot resolve"),
            None => {}
        }
    }

    /// The rules for one unwrapped command.
    pub(crate) fn check_command(&mut self, inv: &Invocation, depth: usize) {
        let args = inv.args.as_slice();
        if args
            .iter()
            .any(|a| reads_environ(&a.text) || reads_environ(&a.raw))
        {
            self.f.danger("read process environment (secrets)");
        }
        let name = inv.name.as_str();
        match name {
            "rm" => self.rm(args),
            "mkfs" | "mke2fs" | "mkdosfs" | "mkntfs" | "mkexfatfs" | "newfs" | "mkreiserfs"
            | "mkjfs" => self.f.hard("format filesystem (mkfs)"),
            n if n.starts_with("mkfs.") => self.f.hard("format filesystem (mkfs)"),
            "mkswap" => self.mkswap(args),
            "fdisk" | "sfdisk" | "sgdisk" | "gdisk" | "cfdisk" | "parted" => {
                self.partitioner(name, args)
            }
            "nvme" | "cryptsetup" | "hdparm" | "badblocks" => self.eraser(name, args),
            "dd" => self.dd(args),
            "wipefs" | "shred" | "blkdiscard" => self.wipe(args),
            "tee" => {
                for target in parse(args, &[]).operands {
                    self.write_to(&target.text, target.exact, target.computed, Via::Tee);
                }
            }
            "cp" | "mv" | "install" | "ln" | "rsync" => self.copy(name, args),
            "curl" | "wget" => self.download(name, args),
            "truncate" => {
                for target in parse(args, &["-s", "--size", "-r", "--reference"]).operands {
                    self.write_to(&target.text, target.exact, target.computed, Via::Redirect);
                }
            }
            "chmod" => self.chmod(args),
            "chown" | "chgrp" => self.chown(args),
            "systemctl" => self.systemctl(args),
            "service" => {
                let p = parse(args, &[]);
                if matches!(
                    p.operands.get(1).map(|a| a.text.as_str()),
                    Some("stop" | "restart")
                ) {
                    self.f.danger("stop/restart system service");
                }
            }
            "shutdown" | "reboot" | "halt" | "poweroff" => self.f.hard("system shutdown/reboot"),
            "kexec" => {
                if args
                    .iter()
                    .any(|a| matches!(a.text.as_str(), "-e" | "--exec"))
                {
                    self.f.hard("system shutdown/reboot");
                }
            }
            "loginctl" => match parse(args, &["-H", "-M", "-p"])
                .operands
                .first()
                .map(|a| a.text.as_str())
            {
                Some("poweroff" | "reboot" | "halt" | "kexec") => {
                    self.f.hard("system shutdown/reboot")
                }
                Some("terminate-user" | "kill-user" | "terminate-session" | "kill-session") => {
                    self.f.danger("end login sessions (loginctl)")
                }
                _ => {}
            },
            "init" | "telinit" => {
                if matches!(
                    args.first().map(|a| a.text.as_str()),
                    Some("0" | "6" | "1" | "s" | "S")
                ) {
                    self.f.hard("init 0/6 (shutdown/reboot)");
                }
            }
            "kill" => self.kill(args),
            "killall5" => self.f.hard("kill all processes"),
            "pkill" | "killall" => kill_by_name(name, args, &mut self.f),
            "git" => self.git(args, depth),
            "docker" | "docker-compose" | "podman" => docker(name, args, &mut self.f),
            "hermes" => hermes(args, &mut self.f),
            "ps" => {
                // BSD-style `e` shows every process's environment.
                if args.iter().any(|a| {
                    !a.text.starts_with('-')
                        && a.text.chars().all(|c| c.is_ascii_alphabetic())
                        && a.text.contains('e')
                }) {
                    self.f.danger("read process environment (secrets)");
                }
            }
            _ => self.check_exec(inv, depth),
        }
    }

    fn rm(&mut self, args: &[Arg]) {
        let p = parse(args, &[]);
        let mut unresolved = false;
        for target in &p.operands {
            match self.homes().delete_target(&target.text) {
                DeleteTarget::Root => self.f.hard("recursive delete of root filesystem"),
                DeleteTarget::SystemDir => self.f.hard("recursive delete of system directory"),
                DeleteTarget::Home => self.f.hard("recursive delete of home directory"),
                DeleteTarget::Other => {}
            }
            unresolved |= !target.exact;
        }
        if p.short.contains(['r', 'R']) || p.has_long("--rec") {
            self.f.danger("recursive delete");
        } else if p.operands.iter().any(|t| t.text.starts_with('/')) {
            self.f.danger("delete in root path");
        } else if unresolved {
            self.f.danger("delete of a path the checker cannot resolve");
        }
    }

    fn mkswap(&mut self, args: &[Arg]) {
        let p = parse(
            args,
            &[
                "-L",
                "--label",
                "-U",
                "--uuid",
                "-p",
                "--pagesize",
                "-e",
                "--endianness",
                "-o",
                "--offset",
                "-s",
                "--size",
            ],
        );
        if p.operands.iter().any(|a| is_device(self.homes(), &a.text)) {
            self.f.hard("format swap area on a block device (mkswap)");
        } else if !p.operands.is_empty() {
            self.f.danger("format swap area (mkswap)");
        }
    }

    fn partitioner(&mut self, name: &str, args: &[Arg]) {
        let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        let read_only_flags: &[&str] = match name {
            "sfdisk" => &[
                "-l",
                "--list",
                "-d",
                "--dump",
                "-s",
                "--show-size",
                "-J",
                "--json",
                "-V",
                "--verify",
                "--version",
                "-h",
                "--help",
                "-F",
                "--list-free",
            ],
            "sgdisk" => &[
                "-p",
                "--print",
                "-i",
                "--info",
                "-v",
                "--verify",
                "-L",
                "--list-types",
                "-V",
                "--version",
                "-O",
                "--print-mbr",
            ],
            "parted" => &["-l", "--list", "-v", "--version", "-h", "--help"],
            _ => &[
                "-l",
                "--list",
                "-V",
                "--version",
                "-h",
                "--help",
                "-x",
                "--list-details",
            ],
        };
        let read_only = texts.iter().any(|t| read_only_flags.contains(t))
            || (name == "parted" && {
                let commands: Vec<&&str> = texts
                    .iter()
                    .filter(|t| !t.starts_with('-') && !t.starts_with("/dev/"))
                    .collect();
                !commands.is_empty() && commands.iter().all(|t| **t == "print")
            });
        if read_only {
            return;
        }
        if args.iter().any(|a| is_device(self.homes(), &a.text)) {
            self.f.hard("partition table change on a block device");
        } else {
            self.f.danger("partition table change");
        }
    }

    /// `nvme format|sanitize`, `cryptsetup luksFormat|erase`, `hdparm --security-erase`,
    /// `badblocks -w` on a device.
    fn eraser(&mut self, name: &str, args: &[Arg]) {
        let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        let erases = match name {
            "nvme" => texts
                .first()
                .is_some_and(|t| matches!(*t, "format" | "sanitize" | "write-zeroes")),
            "cryptsetup" => texts.iter().any(|t| {
                matches!(
                    t.to_ascii_lowercase().as_str(),
                    "luksformat" | "erase" | "lukserase" | "reencrypt"
                )
            }),
            "hdparm" => texts.iter().any(|t| {
                t.starts_with("--security-erase")
                    || matches!(
                        *t,
                        "--trim-sector-ranges"
                            | "--write-sector"
                            | "--make-bad-sector"
                            | "--dco-restore"
                    )
            }),
            _ => texts
                .iter()
                .any(|t| t.starts_with('-') && !t.starts_with("--") && t.contains('w')),
        };
        if !erases {
            return;
        }
        if args.iter().any(|a| is_device(self.homes(), &a.text)) {
            self.f.hard("erase or reformat a block device");
        } else {
            self.f.danger("erase or reformat a block device");
        }
    }

    fn dd(&mut self, args: &[Arg]) {
        for a in args {
            if let Some(out) = a.text.strip_prefix("of=") {
                self.write_to(out, a.exact, a.computed, Via::Dd);
            }
        }
        if args.iter().any(|a| a.text.starts_with("if=")) {
            self.f.danger("disk copy");
        }
    }

    fn wipe(&mut self, args: &[Arg]) {
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
        if p.operands.iter().any(|t| is_device(self.homes(), &t.text)) {
            self.f.hard("wipe of a block device (wipefs/shred)");
        } else if !p.operands.is_empty() {
            self.f.danger("irrecoverable wipe (wipefs/shred)");
        }
    }

    fn copy(&mut self, name: &str, args: &[Arg]) {
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
            "-e",
            "--rsh",
            "--exclude",
            "--include",
            "-f",
            "--filter",
            "--backup-dir",
            "--chmod",
            "--chown",
            "--log-file",
            "--password-file",
            "--files-from",
        ];
        let p = parse(args, &value_opts);
        let explicit = args
            .iter()
            .position(|a| a.text == "-t" || a.text == "--target-directory")
            .and_then(|i| args.get(i + 1))
            .cloned()
            .or_else(|| {
                args.iter().find_map(|a| {
                    a.text.strip_prefix("--target-directory=").map(|d| Arg {
                        text: d.to_string(),
                        ..a.clone()
                    })
                })
            });
        let dest = match explicit {
            Some(d) => Some(d),
            None if p.operands.len() >= 2 => p.operands.last().map(|a| (*a).clone()),
            None => None,
        };
        let Some(dest) = dest else { return };
        // A remote rsync destination (`host:path`) writes nothing here.
        if name == "rsync" && dest.text.contains(':') && !dest.text.starts_with('/') {
            return;
        }
        self.write_to(&dest.text, dest.exact, dest.computed, Via::Copy);
    }

    /// `curl -o FILE`, `wget -O FILE`.
    fn download(&mut self, name: &str, args: &[Arg]) {
        let opts: &[&str] = if name == "curl" {
            &["-o", "--output"]
        } else {
            &["-O", "--output-document"]
        };
        for (i, a) in args.iter().enumerate() {
            let target = if opts.contains(&a.text.as_str()) {
                args.get(i + 1).cloned()
            } else {
                opts.iter()
                    .filter(|o| o.starts_with("--"))
                    .find_map(|o| a.text.strip_prefix(&format!("{o}=")))
                    .map(|t| Arg {
                        text: t.to_string(),
                        ..a.clone()
                    })
            };
            if let Some(t) = target.filter(|t| t.text != "-") {
                self.write_to(&t.text, t.exact, t.computed, Via::Copy);
            }
        }
    }

    fn chmod(&mut self, args: &[Arg]) {
        let p = parse(args, &["--reference"]);
        // A mode may look like an option: `chmod -w`, `chmod -o+w`.
        let dashed = args
            .iter()
            .map(|a| a.text.as_str())
            .filter(|t| t.starts_with('-') && t.contains(['+', '=']));
        if p.operands
            .first()
            .map(|a| a.text.as_str())
            .into_iter()
            .chain(dashed)
            .any(world_writable)
        {
            self.f.danger("world/other-writable permissions");
        }
        let recursive = p.short.contains('R') || p.has_long("--recursive");
        if recursive
            && p.operands
                .iter()
                .skip(1)
                .any(|t| self.system_scope(&t.text))
        {
            self.f
                .danger("recursive permission change on a system directory");
        }
    }

    fn chown(&mut self, args: &[Arg]) {
        let p = parse(args, &["--reference", "--from"]);
        let recursive = p.short.contains('R') || p.has_long("--recur");
        if !recursive {
            return;
        }
        if p.operands
            .first()
            .is_some_and(|o| o.text.to_lowercase().starts_with("root"))
        {
            self.f.danger("recursive chown to root");
        }
        if p.operands
            .iter()
            .skip(1)
            .any(|t| self.system_scope(&t.text))
        {
            self.f
                .danger("recursive permission change on a system directory");
        }
    }

    fn system_scope(&self, target: &str) -> bool {
        self.homes().delete_target(target) != DeleteTarget::Other
    }

    fn systemctl(&mut self, args: &[Arg]) {
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
                "--root",
                "--what",
                "-n",
                "--lines",
                "-o",
                "--output",
            ],
        );
        let ops: Vec<&str> = p.operands.iter().map(|a| a.text.as_str()).collect();
        let shutdown_target = |t: &&str| {
            let t = t.trim_end_matches(".target");
            matches!(
                t,
                "poweroff"
                    | "reboot"
                    | "halt"
                    | "kexec"
                    | "shutdown"
                    | "rescue"
                    | "emergency"
                    | "soft-reboot"
                    | "exit"
                    | "final"
            )
        };
        match ops.first().copied() {
            Some(
                "poweroff" | "reboot" | "halt" | "kexec" | "soft-reboot" | "rescue" | "emergency",
            ) => self.f.hard("systemctl poweroff/reboot"),
            Some("start" | "restart" | "reload-or-restart" | "try-restart")
                if ops[1..].iter().any(shutdown_target) =>
            {
                self.f.hard("systemctl poweroff/reboot")
            }
            Some("isolate") => self.f.hard("systemctl isolate (stops most services)"),
            Some("stop" | "restart" | "disable" | "mask" | "kill") => {
                self.f.danger("stop/restart system service")
            }
            Some("suspend" | "hibernate" | "hybrid-sleep" | "suspend-then-hibernate") => {
                self.f.danger("suspend or hibernate the machine")
            }
            Some(
                "enable" | "link" | "edit" | "preset" | "preset-all" | "revert" | "add-wants"
                | "add-requires" | "set-environment" | "import-environment" | "set-property",
            ) => self.f.danger("enable or change a systemd unit"),
            _ => {}
        }
    }

    /// `kill -1` / `kill -9 -1` / `kill -9 -01` / `kill -$((1))` (every process the user
    /// owns), the Hermes process itself, and pids the checker cannot resolve.
    fn kill(&mut self, args: &[Arg]) {
        let mut pids: Vec<&Arg> = Vec::new();
        let mut signal_only: Option<&str> = None;
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if t == "--" {
                pids.extend(&args[i + 1..]);
                break;
            }
            if i == 0 && matches!(t, "-s" | "-n" | "--signal") {
                i += 2;
                continue;
            }
            if i == 0 && matches!(t, "-l" | "-L" | "--list" | "--table") {
                return;
            }
            if i == 0 && t.starts_with('-') && t.len() > 1 {
                signal_only = Some(t);
            } else {
                pids.push(a);
            }
            i += 1;
        }
        let is_minus_one = |t: &str| {
            t.strip_prefix('-')
                .and_then(|n| super::arith::arithmetic(n, &Default::default(), 0))
                == Some(1)
        };
        if pids.iter().any(|a| is_minus_one(&a.text))
            || (pids.is_empty() && signal_only.is_some_and(is_minus_one))
        {
            self.f.hard("kill all processes");
        }
        let by_lookup = args.iter().flat_map(|a| &a.subs).any(|body| {
            let first = body.split_whitespace().next().unwrap_or("");
            matches!(base_name(first).as_str(), "pgrep" | "pidof")
        });
        if by_lookup {
            self.f
                .danger("kill process via pgrep/pidof expansion (self-termination)");
        }
        if pids
            .iter()
            .any(|a| matches!(a.text.as_str(), "$PPID" | "${PPID}"))
        {
            self.f
                .danger("kill hermes/gateway process (self-termination)");
        }
        let unresolved = pids.iter().any(|a| {
            !a.exact
                && !matches!(a.text.as_str(), "$!" | "$$" | "$BASHPID")
                && !a.text.starts_with('%')
        });
        if unresolved {
            self.f
                .danger("kill of a process the checker cannot resolve");
        }
    }

    fn git(&mut self, args: &[Arg], depth: usize) {
        let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        let mut i = 0;
        while let Some(t) = texts.get(i) {
            if *t == "-c" {
                if let Some(kv) = texts.get(i + 1) {
                    self.git_setting(kv, depth);
                }
                i += 2;
            } else if let Some(kv) = t.strip_prefix("--config-env=") {
                self.git_setting(kv, depth);
                i += 1;
            } else if matches!(
                *t,
                "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path"
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
        let f = &mut self.f;
        match sub {
            "reset"
                if p.long
                    .iter()
                    .any(|l| matches!(*l, "--hard" | "--har" | "--ha" | "--h")) =>
            {
                f.danger("git reset --hard (destroys uncommitted changes)")
            }
            "push"
                if p.has_long("--forc") || p.operands.iter().any(|o| o.text.starts_with('+')) =>
            {
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
            "config" => {
                // `git config alias.x '!cmd'`, `git config core.pager cmd`.
                let ops: Vec<&str> = p.operands.iter().map(|a| a.text.as_str()).collect();
                if let [key, value, ..] = ops.as_slice() {
                    let kv = format!("{key}={value}");
                    self.git_setting(&kv, depth);
                }
            }
            _ => {}
        }
    }

    /// A git setting that names a program git will run.
    fn git_setting(&mut self, kv: &str, depth: usize) {
        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
        let key = key.to_ascii_lowercase();
        let runs = key.starts_with("alias.") && value.trim_start().starts_with('!')
            || matches!(
                key.as_str(),
                "core.pager"
                    | "core.editor"
                    | "core.sshcommand"
                    | "core.hookspath"
                    | "core.fsmonitor"
                    | "core.gitproxy"
                    | "core.askpass"
                    | "sequence.editor"
                    | "diff.external"
                    | "gpg.program"
                    | "gpg.ssh.program"
                    | "uploadpack.packobjectshook"
                    | "credential.helper"
                    | "protocol.ext.allow"
            )
            || key.starts_with("pager.")
            || key.starts_with("filter.")
            || (key.starts_with("diff.")
                && (key.ends_with(".textconv") || key.ends_with(".command")))
            || (key.starts_with("merge.") && key.ends_with(".driver"))
            || (key.starts_with("credential.") && key.ends_with(".helper"));
        if runs {
            self.f
                .danger("git runs a configured command (alias, pager, editor, hook, filter)");
            let payload = value.trim_start().trim_start_matches('!');
            if !payload.is_empty() {
                self.nested(payload, depth + 1);
            }
        }
    }

    /// `NAME=value` before a command or exported: variables that make programs run code, or
    /// that change Hermes's own approvals.
    pub(crate) fn check_assignment(&mut self, name: &str) {
        match name {
            "BASH_ENV" | "ENV" | "LD_PRELOAD" | "LD_AUDIT" | "PROMPT_COMMAND" | "PERL5OPT"
            | "PYTHONSTARTUP" | "NODE_OPTIONS" | "GIT_SSH_COMMAND" | "GIT_EXTERNAL_DIFF" => {
                self.f.danger(
                    "environment variable that makes programs run code (BASH_ENV, LD_PRELOAD, ...)",
                )
            }
            "HERMES_YOLO_MODE" | "HERMES_HOME" => self
                .f
                .danger("environment variable that changes Hermes's approvals or home"),
            _ => {}
        }
    }
}

/// Whether a path argument reads another process's environment.
fn reads_environ(text: &str) -> bool {
    let t = text.strip_prefix("if=").unwrap_or(text);
    t.contains("/proc/") && t.contains("environ")
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

fn kill_by_name(name: &str, args: &[Arg], f: &mut Findings) {
    let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
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

fn docker(name: &str, args: &[Arg], f: &mut Findings) {
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
    let ops: Vec<&str> = p.operands.iter().map(|a| a.text.as_str()).collect();
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

fn hermes(args: &[Arg], f: &mut Findings) {
    let p = parse(
        args,
        &[
            "-p",
            "--profile",
            "-m",
            "--model",
            "--provider",
            "-t",
            "--toolsets",
        ],
    );
    if p.has_long("--yolo") {
        f.danger("run hermes with approvals off (--yolo)");
    }
    let ops: Vec<&str> = p.operands.iter().map(|a| a.text.as_str()).collect();
    match (ops.first().copied(), ops.get(1).copied()) {
        (Some("gateway"), Some("stop" | "restart")) => {
            f.danger("stop/restart hermes gateway (kills running agents)")
        }
        (Some("update"), _) => f.danger("hermes update (restarts gateway, kills running agents)"),
        (Some("config"), Some("set" | "unset" | "edit"))
        | (Some("profile"), Some("use" | "create" | "delete"))
        | (Some("tools"), Some("enable" | "disable"))
        | (Some("setup"), _) => {
            f.danger("change the Hermes configuration (hermes config/profile/setup)")
        }
        _ => {}
    }
}

/// Paths a command writes (for "a script written then run").
pub(crate) fn written_paths(argv: &[Arg]) -> Vec<String> {
    let Some((first, args)) = argv.split_first() else {
        return Vec::new();
    };
    match base_name(&first.text).as_str() {
        "tee" => parse(args, &[])
            .operands
            .iter()
            .map(|a| a.text.clone())
            .collect(),
        "cp" | "mv" | "install" | "ln" => {
            let p = parse(
                args,
                &["-t", "--target-directory", "-S", "--suffix", "-m", "--mode"],
            );
            if p.operands.len() >= 2 {
                p.operands
                    .last()
                    .map(|a| vec![a.text.clone()])
                    .unwrap_or_default()
            } else {
                Vec::new()
            }
        }
        "curl" | "wget" => args
            .windows(2)
            .filter(|w| {
                matches!(
                    w[0].text.as_str(),
                    "-o" | "--output" | "-O" | "--output-document"
                )
            })
            .map(|w| w[1].text.clone())
            .collect(),
        "dd" => args
            .iter()
            .filter_map(|a| a.text.strip_prefix("of=").map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
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

    #[test]
    fn environ_reads() {
        assert!(reads_environ("/proc/$PPID/environ"));
        assert!(reads_environ("if=/proc/1/environ"));
        assert!(!reads_environ("/proc/cpuinfo"));
    }
}
