//! What a path argument of a command points at, once `$HOME`, `~`, the absolute home and the
//! Hermes home are folded to one spelling, `/proc/self/root/` (a way back to `/`) is removed
//! and `.`/`..` are resolved: the filesystem root, a system directory, the home directory
//! (targets of a recursive delete, also through globs such as `/?*`), or a block device,
//! `/proc/sysrq-trigger`, kernel settings, system configuration, a guarded file of
//! [`crate::protect`] (Hermes control files, shell start-up files, `~/.ssh`, schedulers), a
//! credential file, a project `.env` (targets of a write).

use std::path::{Component, Path};

use crate::protect::{self, GuardedWrite};

/// Top-level directories whose deletion leaves the machine unusable.
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/media",
    "/mnt",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/snap",
    "/srv",
    "/sys",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/sbin",
    "/usr/share",
    "/var",
    "/var/lib",
    "/Applications",
    "/Library",
    "/System",
    "/Users",
    "/private",
    "/private/etc",
    "/private/var",
];

/// Block device name prefixes under `/dev/` (disks, partitions, device-mapper, md, loop).
const BLOCK_DEVICES: &[&str] = &[
    "sd", "nvme", "hd", "mmcblk", "vd", "xvd", "disk", "rdisk", "dm-", "md", "mapper/", "loop",
    "block/", "sr", "nbd", "zram", "root",
];

/// Credential files under the home (beyond the guarded ones).
const CREDENTIAL_FILES: &[&str] = &[".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials"];
const CREDENTIAL_DIRS: &[&str] = &[".gnupg", ".aws", ".kube", ".docker", ".config/gh"];

/// Placeholder home used when `$HOME` is unknown, so `~/..` still folds to `/home`.
const UNKNOWN_HOME: &str = "/home/unknown-user";

/// The home directories a command's paths are compared against.
#[derive(Debug, Clone, Default)]
pub(crate) struct Homes {
    pub home: Option<String>,
    pub hermes_home: Option<String>,
    /// The base home when the session runs a profile (`<base>/profiles/<name>`).
    pub hermes_base: Option<String>,
}

/// Where a recursive delete points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeleteTarget {
    Root,
    SystemDir,
    Home,
    Other,
}

/// Where a write lands, when it matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteTarget {
    BlockDevice,
    SysrqTrigger,
    KernelSettings,
    SystemConfig,
    Guarded(GuardedWrite),
    Credentials,
    ProjectEnv,
}

impl Homes {
    /// `raw` with the home spelled `~` and the Hermes homes spelled `@hermes`.
    fn fold(&self, raw: &str) -> String {
        let mut t = strip_proc_root(raw.trim());
        for var in ["${HERMES_HOME}", "$HERMES_HOME"] {
            if let Some(rest) = strip_dir_prefix(&t, var) {
                t = format!("@hermes{rest}");
            }
        }
        for var in ["${HOME}", "$HOME"] {
            if let Some(rest) = strip_dir_prefix(&t, var) {
                t = format!("~{rest}");
            }
        }
        for hh in [self.hermes_home.as_deref(), self.hermes_base.as_deref()]
            .into_iter()
            .flatten()
        {
            if let Some(rest) = strip_dir_prefix(&t, hh) {
                t = format!("@hermes{rest}");
            }
        }
        if let Some(home) = self.home.as_deref()
            && let Some(rest) = strip_dir_prefix(&t, home)
        {
            t = format!("~{rest}");
        }
        if let Some(rest) = strip_dir_prefix(&t, "~/.hermes") {
            t = format!("@hermes{rest}");
        }
        t
    }

    fn home_path(&self) -> &str {
        self.home.as_deref().unwrap_or(UNKNOWN_HOME)
    }

    /// What deleting `raw` (recursively) would destroy. A glob counts as the worst directory
    /// it can match: `/?*` matches `/etc`.
    pub(crate) fn delete_target(&self, raw: &str) -> DeleteTarget {
        let mut t = self.fold(raw);
        if t.is_empty() || t.contains(['$', '`']) || t.starts_with("@hermes") {
            return DeleteTarget::Other;
        }
        if let Some(rest) = t.strip_prefix('~') {
            if !(rest.is_empty() || rest.starts_with('/')) {
                return DeleteTarget::Other;
            }
            t = format!("{}{rest}", self.home_path());
        }
        if !t.starts_with('/') {
            return DeleteTarget::Other;
        }
        // Deleting everything in a directory (`/*`) is as bad as deleting it.
        let mut base = t.as_str();
        loop {
            if let Some(b) = base.strip_suffix("/*") {
                base = b;
            } else if base.len() > 1 && base.ends_with('/') {
                base = &base[..base.len() - 1];
            } else {
                break;
            }
        }
        let folded = lexical(if base.is_empty() { "/" } else { base });
        let home = lexical(self.home_path());
        if !folded.contains(['*', '?', '[']) {
            return if folded == "/" {
                DeleteTarget::Root
            } else if folded == home {
                DeleteTarget::Home
            } else if SYSTEM_DIRS.contains(&folded.as_str()) {
                DeleteTarget::SystemDir
            } else {
                DeleteTarget::Other
            };
        }
        let Some(glob) = globset::GlobBuilder::new(&folded)
            .literal_separator(true)
            .build()
            .ok()
            .map(|g| g.compile_matcher())
        else {
            return DeleteTarget::Other;
        };
        if glob.is_match("/") {
            DeleteTarget::Root
        } else if glob.is_match(&home) {
            DeleteTarget::Home
        } else if SYSTEM_DIRS.iter().any(|d| glob.is_match(d)) {
            DeleteTarget::SystemDir
        } else {
            DeleteTarget::Other
        }
    }

    /// What writing to `raw` would overwrite, when that needs attention.
    pub(crate) fn write_target(&self, raw: &str) -> Option<WriteTarget> {
        let t = self.fold(raw);
        let absolute = if t.starts_with('/') {
            lexical(&t)
        } else {
            t.clone()
        };
        if let Some(dev) = absolute.strip_prefix("/dev/")
            && BLOCK_DEVICES.iter().any(|p| dev.starts_with(p))
        {
            return Some(WriteTarget::BlockDevice);
        }
        if absolute == "/proc/sysrq-trigger" {
            return Some(WriteTarget::SysrqTrigger);
        }
        if absolute.starts_with("/proc/sys/") || absolute.starts_with("/sys/") {
            return Some(WriteTarget::KernelSettings);
        }
        if let Some(g) = protect::guarded_system(&absolute) {
            return Some(WriteTarget::Guarded(g));
        }
        if ["/etc", "/private/etc", "/boot"]
            .iter()
            .any(|p| absolute == *p || absolute.starts_with(&format!("{p}/")))
        {
            return Some(WriteTarget::SystemConfig);
        }
        if let Some(rest) = t.strip_prefix("@hermes/") {
            if let Some(g) = protect::guarded_in_hermes(&lexical_relative(rest)) {
                return Some(WriteTarget::Guarded(g));
            }
        } else if t == "@hermes" {
            return None;
        }
        if let Some(rest) = t.strip_prefix("~/") {
            let rest = lexical_relative(rest);
            if let Some(g) = protect::guarded_in_home(&rest) {
                return Some(WriteTarget::Guarded(g));
            }
            let under = |d: &str| rest == d || rest.starts_with(&format!("{d}/"));
            if CREDENTIAL_FILES.contains(&rest.as_str()) || CREDENTIAL_DIRS.iter().any(|d| under(d))
            {
                return Some(WriteTarget::Credentials);
            }
        }
        let name = t.rsplit('/').next().unwrap_or("");
        // `.env` and `.env.<stage>` hold secrets; `.env.example` and backups do not.
        let env_file = name == ".env"
            || name.strip_prefix(".env.").is_some_and(|stage| {
                !stage.is_empty()
                    && !stage.contains('.')
                    && !["example", "sample", "template", "dist"].contains(&stage)
            });
        if env_file || name == "config.yaml" {
            return Some(WriteTarget::ProjectEnv);
        }
        None
    }

    /// A write target the checker could not fully resolve (`$X/.bashrc`, `"$(pwd)/.env"`):
    /// what its literal tail says it is.
    pub(crate) fn inexact_write_target(&self, raw: &str) -> Option<WriteTarget> {
        let tail = raw
            .rfind(['$', '`', ')', '}'])
            .map_or(raw, |i| &raw[i + 1..]);
        let name = tail.rsplit('/').next().unwrap_or("");
        if tail.contains("/.ssh/") || tail.ends_with("/.ssh") || name == "authorized_keys" {
            return Some(WriteTarget::Guarded(GuardedWrite::Ssh));
        }
        if protect::SHELL_STARTUP_FILES.contains(&name)
            || tail.contains("/.config/fish/")
            || tail.contains("/environment.d/")
        {
            return Some(WriteTarget::Guarded(GuardedWrite::ShellStartup));
        }
        if tail.contains("systemd/user/") || tail.contains("/spool/cron") {
            return Some(WriteTarget::Guarded(GuardedWrite::Scheduler));
        }
        if protect::HERMES_CONTROL_FILES.contains(&name) {
            return Some(WriteTarget::Guarded(GuardedWrite::HermesControl));
        }
        if tail.contains("/dev/") || tail == "sysrq-trigger" {
            return Some(WriteTarget::SystemConfig);
        }
        None
    }
}

/// `/proc/self/root/x`, `/proc/<pid>/root/x`, `/proc/$$/root/x` are `/x`.
fn strip_proc_root(raw: &str) -> String {
    let mut t = raw.to_string();
    for _ in 0..8 {
        let Some(rest) = t.strip_prefix("/proc/") else {
            break;
        };
        let Some((pid, after)) = rest.split_once('/') else {
            break;
        };
        let pid_like = matches!(
            pid,
            "self" | "thread-self" | "$$" | "$PPID" | "${PPID}" | "$BASHPID"
        ) || (!pid.is_empty() && pid.chars().all(|c| c.is_ascii_digit()))
            || pid.starts_with('$')
            || pid.contains(['*', '?']);
        match after.strip_prefix("root") {
            Some(tail) if pid_like && (tail.is_empty() || tail.starts_with('/')) => {
                t = if tail.is_empty() {
                    "/".to_string()
                } else {
                    tail.to_string()
                };
            }
            _ => break,
        }
    }
    t
}

/// `text` without `prefix` when `prefix` is a whole leading directory of it.
fn strip_dir_prefix<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let prefix = prefix.trim_end_matches('/');
    if prefix.is_empty() {
        return None;
    }
    let rest = text.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

/// An absolute path with `//`, `.` and `..` folded (`/tmp/../` is `/`).
fn lexical(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str().unwrap_or("")),
            Component::ParentDir => {
                parts.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    format!("/{}", parts.join("/"))
}

fn lexical_relative(path: &str) -> String {
    lexical(&format!("/{path}"))
        .trim_start_matches('/')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn homes() -> Homes {
        Homes {
            home: Some("/home/alice".into()),
            hermes_home: Some("/home/alice/.hermes".into()),
            hermes_base: None,
        }
    }

    #[test]
    fn delete_targets_fold_every_spelling_of_root_and_home() {
        let h = homes();
        for root in [
            "/",
            "//",
            "/.",
            "/..",
            "/*",
            "/tmp/..",
            "/./",
            "///*",
            "/proc/self/root",
            "/proc/1/root/",
        ] {
            assert_eq!(h.delete_target(root), DeleteTarget::Root, "{root}");
        }
        for home in [
            "~",
            "~/",
            "~/*",
            "$HOME",
            "${HOME}/",
            "/home/alice",
            "/home/alice/*",
            "/home/*",
        ] {
            assert_ne!(h.delete_target(home), DeleteTarget::Other, "{home}");
        }
        assert_eq!(h.delete_target("/home/alice/*"), DeleteTarget::Home);
        for sys in [
            "/etc", "/usr/", "/var/*", "/home", "~/..", "/?*", "/e?c", "/[eu]*",
        ] {
            assert_eq!(h.delete_target(sys), DeleteTarget::SystemDir, "{sys}");
        }
        for other in [
            "./build",
            "/tmp/x",
            "~/project",
            "$DIR/",
            "/...",
            "/.ssh",
            "build",
            "/tmp/*.log",
            "*.o",
        ] {
            assert_eq!(h.delete_target(other), DeleteTarget::Other, "{other}");
        }
    }

    #[test]
    fn write_targets() {
        let h = homes();
        assert_eq!(h.write_target("/dev/sda"), Some(WriteTarget::BlockDevice));
        assert_eq!(
            h.write_target("/dev/nvme0n1p1"),
            Some(WriteTarget::BlockDevice)
        );
        assert_eq!(
            h.write_target("/proc/self/root/dev/sda"),
            Some(WriteTarget::BlockDevice)
        );
        assert_eq!(
            h.write_target("/proc/sysrq-trigger"),
            Some(WriteTarget::SysrqTrigger)
        );
        assert_eq!(h.write_target("/dev/null"), None);
        assert_eq!(
            h.write_target("/etc/hosts"),
            Some(WriteTarget::SystemConfig)
        );
        let guarded = |g| Some(WriteTarget::Guarded(g));
        assert_eq!(
            h.write_target("~/.ssh/authorized_keys"),
            guarded(GuardedWrite::Ssh)
        );
        assert_eq!(
            h.write_target("/home/alice/.bashrc"),
            guarded(GuardedWrite::ShellStartup)
        );
        assert_eq!(
            h.write_target("$HOME/.zshrc"),
            guarded(GuardedWrite::ShellStartup)
        );
        assert_eq!(
            h.write_target("~/.hermes/.env"),
            guarded(GuardedWrite::HermesControl)
        );
        assert_eq!(
            h.write_target("$HERMES_HOME/profiles/work/config.yaml"),
            guarded(GuardedWrite::HermesControl)
        );
        assert_eq!(
            h.write_target("~/.hermes/active_profile"),
            guarded(GuardedWrite::HermesControl)
        );
        assert_eq!(
            h.write_target("~/.config/systemd/user/evil.service"),
            guarded(GuardedWrite::Scheduler)
        );
        assert_eq!(
            h.write_target("~/.aws/credentials"),
            Some(WriteTarget::Credentials)
        );
        assert_eq!(h.write_target("app/.env"), Some(WriteTarget::ProjectEnv));
        assert_eq!(h.write_target(".env.example"), None);
        assert_eq!(
            h.write_target(".env.production"),
            Some(WriteTarget::ProjectEnv)
        );
        assert_eq!(h.write_target(".env.local.bak"), None);
        assert_eq!(h.write_target("notes.txt"), None);
        assert_eq!(h.write_target("~/notes/.bashrc.txt"), None);
        assert_eq!(
            h.inexact_write_target("$D/.bashrc"),
            guarded(GuardedWrite::ShellStartup)
        );
        assert_eq!(h.inexact_write_target("$(pwd)/out.txt"), None);
    }
}
