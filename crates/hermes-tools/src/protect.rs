//! Paths the tools treat specially, in three classes:
//!
//! - **refused** to the file tools: credential stores (SSH and GPG keys, cloud credentials,
//!   the Hermes home's `.env` and token files, project `.env` files, `/proc/*/environ`) for
//!   reading; the same stores plus system configuration for writing;
//! - **guarded** ([`GuardedWrite`]): writes that change how later sessions, logins or
//!   scheduled jobs behave (every `config.yaml`, `.env` and `active_profile` of the Hermes home
//!   and its profiles, shell start-up files, `~/.ssh`, crontabs and systemd/launchd user
//!   units) need the user's approval through the session's approval gate, from every tool:
//!   the file tools ask through [`crate::ApprovalGate::check_write`], the command checker
//!   flags the same paths in redirections, `tee`, `dd of=`, `cp`/`mv`/`ln`;
//! - everything else.
//!
//! Paths are checked as written and with symlinks resolved, and [`ProtectedPaths::open_read`]
//! checks the file it actually opened (`fstat`, and the path of the open descriptor), so a
//! symlink flipped between the check and the open, a hard link to a key, or a FIFO gains
//! nothing.

use std::fs::{File, Metadata};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::ToolError;
use crate::paths::normalize;

/// Credential directories under the user's home, read- and write-protected.
const HOME_SECRET_DIRS: &[(&str, &str)] = &[
    (".ssh", "SSH keys"),
    (".gnupg", "GPG keys"),
    (".aws", "AWS credentials"),
    (".azure", "Azure credentials"),
    (".kube", "Kubernetes credentials"),
    (".docker", "Docker registry credentials"),
    (".config/gh", "GitHub CLI credentials"),
    (".config/gcloud", "Google Cloud credentials"),
    (".password-store", "password store"),
];

/// Credential files under the user's home, read- and write-protected.
const HOME_SECRET_FILES: &[(&str, &str)] = &[
    (".netrc", "network credentials"),
    (".pgpass", "PostgreSQL passwords"),
    (".git-credentials", "git credentials"),
];

/// Files under the home that hold tokens but are commonly read; write-protected only.
pub(crate) const HOME_WRITE_ONLY_FILES: &[&str] = &[".npmrc", ".pypirc"];

/// Secret stores inside `$HERMES_HOME`, read- and write-protected.
const HERMES_SECRET_FILES: &[&str] = &[
    ".env",
    "auth.json",
    ".anthropic_oauth.json",
    "webhook_subscriptions.json",
];
const HERMES_SECRET_DIRS: &[&str] = &["mcp-tokens", "auth", "pairing"];

/// Project-local environment files, wherever they are (read-protected: they hold the user's
/// own keys; `.env.example` is the readable substitute).
const PROJECT_ENV_FILES: &[&str] = &[
    ".env",
    ".env.local",
    ".env.development",
    ".env.production",
    ".env.test",
    ".env.staging",
    ".envrc",
];

/// System locations the file tools never write (the terminal, behind approval, can).
const SYSTEM_WRITE_PREFIXES: &[&str] = &[
    "/etc",
    "/boot",
    "/usr/lib/systemd",
    "/private/etc",
    "/private/var",
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/proc",
    "/sys",
];

/// Files the Hermes home (and each profile) is controlled by.
pub(crate) const HERMES_CONTROL_FILES: &[&str] = &["config.yaml", ".env", "active_profile"];

/// Shell start-up files under the home: what they hold runs at every login or shell.
pub(crate) const SHELL_STARTUP_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".logout",
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".xsessionrc",
    ".pam_environment",
];
/// Directories of start-up snippets under the home.
pub(crate) const SHELL_STARTUP_DIRS: &[&str] = &[
    ".config/fish",
    ".config/environment.d",
    ".config/autostart",
    ".bashrc.d",
    ".zshrc.d",
];
/// User units and jobs that run on a schedule or at login.
pub(crate) const SCHEDULER_HOME_DIRS: &[&str] = &[
    ".config/systemd/user",
    ".local/share/systemd/user",
    "Library/LaunchAgents",
];
pub(crate) const SCHEDULER_SYSTEM_DIRS: &[&str] = &["/var/spool/cron", "/var/spool/at"];

/// A write that needs the user's approval, whatever tool makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GuardedWrite {
    /// `config.yaml`, `.env` or `active_profile` of the Hermes home or one of its profiles:
    /// the approval settings, the provider keys, which profile runs.
    HermesControl,
    /// `~/.bashrc` and the other files every new shell or login runs.
    ShellStartup,
    /// `~/.ssh`: keys and `authorized_keys`.
    Ssh,
    /// Crontabs and systemd/launchd user units.
    Scheduler,
}

impl GuardedWrite {
    /// The approval key and the reason shown to the user.
    pub fn description(self) -> &'static str {
        match self {
            GuardedWrite::HermesControl => {
                "write to the Hermes config, .env or active profile (approval settings and keys)"
            }
            GuardedWrite::ShellStartup => "write to a shell start-up file (runs at every login)",
            GuardedWrite::Ssh => "write to ~/.ssh (keys and authorized_keys)",
            GuardedWrite::Scheduler => "write to a crontab or systemd/launchd user unit",
        }
    }
}

/// A guarded file under the user's home, by its path relative to the home (`.bashrc`,
/// `.ssh/authorized_keys`; already folded, no leading `/`).
pub(crate) fn guarded_in_home(rel: &str) -> Option<GuardedWrite> {
    let under = |dir: &str| rel == dir || rel.starts_with(&format!("{dir}/"));
    if under(".ssh") {
        Some(GuardedWrite::Ssh)
    } else if SHELL_STARTUP_FILES.contains(&rel) || SHELL_STARTUP_DIRS.iter().any(|d| under(d)) {
        Some(GuardedWrite::ShellStartup)
    } else if SCHEDULER_HOME_DIRS.iter().any(|d| under(d)) {
        Some(GuardedWrite::Scheduler)
    } else {
        None
    }
}

/// A guarded file under the Hermes home, by its relative path.
pub(crate) fn guarded_in_hermes(rel: &str) -> Option<GuardedWrite> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    HERMES_CONTROL_FILES
        .contains(&name)
        .then_some(GuardedWrite::HermesControl)
}

/// A guarded system location (an absolute, folded path).
pub(crate) fn guarded_system(abs: &str) -> Option<GuardedWrite> {
    SCHEDULER_SYSTEM_DIRS
        .iter()
        .any(|d| abs == *d || abs.starts_with(&format!("{d}/")))
        .then_some(GuardedWrite::Scheduler)
}

/// `/proc/<anything>/environ` (also under `task/<tid>/`): another process's environment.
pub(crate) fn is_proc_environ(path: &str) -> bool {
    path.starts_with("/proc/") && (path.ends_with("/environ") || path.contains("/environ/"))
}

/// Where the protected locations are: the user's home and the Hermes homes, and the
/// credential stores under them (computed once: walks check every file they visit).
#[derive(Debug, Clone, Default)]
pub struct ProtectedPaths {
    home: Option<PathBuf>,
    /// The session's Hermes home (a profile's directory when one is used).
    hermes_home: Option<PathBuf>,
    /// Every Hermes home whose control files are guarded: the session's, the base home its
    /// profile lives in, and `~/.hermes`.
    hermes_roots: Vec<PathBuf>,
    /// (path, what it holds, a whole directory)
    stores: Vec<(PathBuf, &'static str, bool)>,
}

impl ProtectedPaths {
    pub fn new(home: Option<PathBuf>, hermes_home: Option<PathBuf>) -> ProtectedPaths {
        let home = home.map(|h| real_path(&h));
        let hermes_home = hermes_home.map(|h| real_path(&h));
        let mut stores = Vec::new();
        if let Some(home) = &home {
            stores.extend(
                HOME_SECRET_DIRS
                    .iter()
                    .map(|(d, what)| (home.join(d), *what, true)),
            );
            stores.extend(
                HOME_SECRET_FILES
                    .iter()
                    .map(|(f, what)| (home.join(f), *what, false)),
            );
        }
        let mut hermes_roots: Vec<PathBuf> = Vec::new();
        if let Some(hh) = &hermes_home {
            hermes_roots.push(hh.clone());
            // A profile lives in `<base>/profiles/<name>`: the base is guarded too.
            if hh
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == "profiles")
                && let Some(base) = hh.parent().and_then(Path::parent)
            {
                hermes_roots.push(base.to_path_buf());
            }
        }
        if let Some(home) = &home {
            let default = real_path(&home.join(".hermes"));
            if !hermes_roots.contains(&default) {
                hermes_roots.push(default);
            }
        }
        for root in &hermes_roots {
            stores.extend(
                HERMES_SECRET_FILES
                    .iter()
                    .map(|f| (root.join(f), "Hermes secrets", false)),
            );
            stores.extend(
                HERMES_SECRET_DIRS
                    .iter()
                    .map(|d| (root.join(d), "Hermes secrets", true)),
            );
        }
        ProtectedPaths {
            home,
            hermes_home,
            hermes_roots,
            stores,
        }
    }

    /// `$HOME` and `$HERMES_HOME` (default `~/.hermes`) of this process.
    pub fn from_process() -> ProtectedPaths {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let hermes_home = std::env::var_os("HERMES_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".hermes")));
        ProtectedPaths::new(home, hermes_home)
    }

    pub fn hermes_home(&self) -> Option<&Path> {
        self.hermes_home.as_deref()
    }

    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Refuses reading credential stores.
    pub fn check_read(&self, path: &Path) -> Result<(), ToolError> {
        for candidate in candidates(path) {
            if let Some(what) = self.secret_store(&candidate, true) {
                return Err(refusal("read", path, what));
            }
        }
        Ok(())
    }

    /// Whether a path whose symlinks are already resolved (an entry of a walk under a resolved
    /// root) is a credential store. Cheap: no filesystem access.
    pub fn is_read_protected_resolved(&self, resolved: &Path) -> bool {
        self.secret_store(resolved, true).is_some()
    }

    /// Refuses writing credential stores and system configuration. Guarded paths pass here:
    /// they need [`ProtectedPaths::guarded_write`]'s approval instead.
    pub fn check_write(&self, path: &Path) -> Result<(), ToolError> {
        for candidate in candidates(path) {
            if self.guarded(&candidate).is_some() {
                continue;
            }
            if let Some(what) = self.secret_store(&candidate, false) {
                return Err(refusal("write", path, what));
            }
            if let Some(home) = &self.home
                && HOME_WRITE_ONLY_FILES
                    .iter()
                    .any(|f| candidate == home.join(f))
            {
                return Err(refusal("write", path, "package registry credentials"));
            }
            if SYSTEM_WRITE_PREFIXES
                .iter()
                .any(|p| candidate.starts_with(p))
            {
                return Err(ToolError::new(format!(
                    "refusing to write {}: it is system configuration. If it must change, use the terminal (the user will be asked to approve).",
                    path.display()
                )));
            }
        }
        Ok(())
    }

    /// Whether writing `path` needs the user's approval, and why (as written, and with
    /// symlinks resolved).
    pub fn guarded_write(&self, path: &Path) -> Option<GuardedWrite> {
        candidates(path).iter().find_map(|c| self.guarded(c))
    }

    fn guarded(&self, path: &Path) -> Option<GuardedWrite> {
        for root in &self.hermes_roots {
            if let Ok(rel) = path.strip_prefix(root)
                && let Some(g) = guarded_in_hermes(&rel.to_string_lossy())
            {
                return Some(g);
            }
        }
        if let Some(home) = &self.home
            && let Ok(rel) = path.strip_prefix(home)
            && let Some(g) = guarded_in_home(&rel.to_string_lossy())
        {
            return Some(g);
        }
        guarded_system(&path.to_string_lossy())
    }

    /// Opens `path` for reading and checks what was opened: a credential store (also through
    /// a symlink swapped in after the path check, or a hard link), a directory, or anything
    /// but a regular file (a FIFO, socket or device, which could block or never end) is
    /// refused at once.
    pub fn open_read(&self, path: &Path) -> Result<(File, Metadata), ToolError> {
        self.check_read(path)?;
        let shown = path.display();
        // Non-blocking, so opening a FIFO with no writer returns at once; no controlling tty.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => ToolError::new(format!("file not found: {shown}")),
                _ => ToolError::new(format!("cannot read {shown}: {e}")),
            })?;
        let meta = file
            .metadata()
            .map_err(|e| ToolError::new(format!("cannot read {shown}: {e}")))?;
        let kind = meta.file_type();
        if kind.is_dir() {
            return Err(ToolError::new(format!(
                "{shown} is a directory; list it with the terminal (ls) or search_files"
            )));
        }
        if !kind.is_file() {
            return Err(ToolError::new(format!(
                "{shown} is not a regular file ({}); the file tools read regular files only",
                describe_kind(&meta)
            )));
        }
        if let Some(opened) = fd_path(&file) {
            // What was opened, after every symlink: a swap after the check shows here.
            if let Some(what) = self.secret_store(&opened, true) {
                return Err(refusal("read", path, what));
            }
        }
        if meta.nlink() > 1
            && let Some(what) = self.linked_store(&meta)
        {
            return Err(ToolError::new(format!(
                "refusing to read {shown}: it is a hard link to a protected credential file ({what})"
            )));
        }
        Ok((file, meta))
    }

    /// The credential store a file with several links shares its inode with, if any.
    fn linked_store(&self, meta: &Metadata) -> Option<&'static str> {
        let same = |m: &Metadata| m.dev() == meta.dev() && m.ino() == meta.ino();
        for (store, what, is_dir) in &self.stores {
            if *is_dir {
                let mut budget = 4096usize;
                if walk_finds(store, 3, &mut budget, &same) {
                    return Some(what);
                }
            } else if std::fs::metadata(store).is_ok_and(|m| same(&m)) {
                return Some(what);
            }
        }
        None
    }

    /// What credential store `path` is in, if any. Project `.env` files count only for reads.
    fn secret_store(&self, path: &Path, reading: bool) -> Option<&'static str> {
        let text = path.to_string_lossy();
        if reading && is_proc_environ(&text) {
            return Some("the environment of a process, which holds its secrets");
        }
        let under_a_home = self
            .home
            .iter()
            .chain(self.hermes_roots.iter())
            .any(|h| path.starts_with(h));
        if under_a_home {
            for (store, what, is_dir) in &self.stores {
                let hit = if *is_dir {
                    path.starts_with(store)
                } else {
                    path == store
                };
                if hit {
                    return Some(what);
                }
            }
            // The `.env` of a profile holds its keys too.
            if self.hermes_roots.iter().any(|r| path.starts_with(r))
                && path.file_name().is_some_and(|n| n == ".env")
            {
                return Some("Hermes secrets");
            }
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if reading && PROJECT_ENV_FILES.contains(&name) {
            return Some(
                "an environment file with the project's secrets; read .env.example instead",
            );
        }
        None
    }
}

/// Whether a bounded walk of `dir` meets a file matching `same`.
fn walk_finds(
    dir: &Path,
    depth: usize,
    budget: &mut usize,
    same: &dyn Fn(&Metadata) -> bool,
) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    for entry in entries.flatten() {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if meta.is_file() && same(&meta) {
            return true;
        }
        if meta.is_dir() && depth > 0 && walk_finds(&entry.path(), depth - 1, budget, same) {
            return true;
        }
    }
    false
}

fn describe_kind(meta: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

/// The path an open descriptor refers to (Linux: `/proc/self/fd/N`); `None` elsewhere.
pub(crate) fn fd_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    let link = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    std::fs::read_link(link)
        .ok()
        .filter(|p| p.is_absolute() && !p.to_string_lossy().ends_with(" (deleted)"))
}

fn refusal(verb: &str, path: &Path, what: &str) -> ToolError {
    ToolError::new(format!(
        "refusing to {verb} {}: it is a protected credential path ({what}). The file tools never touch credentials; ask the user if you really need it.",
        path.display()
    ))
}

/// The path as written (folded) and with symlinks resolved: both must pass.
fn candidates(path: &Path) -> Vec<PathBuf> {
    let lexical = normalize(path);
    let real = real_path(&lexical);
    if real == lexical {
        vec![lexical]
    } else {
        vec![lexical, real]
    }
}

/// Resolves symlinks in the longest existing prefix of `path` and appends the rest, so a file
/// that does not exist yet under a symlinked directory still resolves; a dangling symlink
/// resolves to where it points.
pub fn real_path(path: &Path) -> PathBuf {
    real_path_bounded(path, 16)
}

fn real_path_bounded(path: &Path, hops: usize) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        if hops > 0
            && existing
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            && let Ok(target) = std::fs::read_link(&existing)
        {
            let base = existing.parent().unwrap_or(Path::new("/"));
            let mut out = real_path_bounded(&normalize(&base.join(target)), hops - 1);
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, ProtectedPaths) {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join(".hermes/profiles/work")).unwrap();
        let p = ProtectedPaths::new(Some(home.clone()), Some(home.join(".hermes")));
        (tmp, p)
    }

    #[test]
    fn credential_stores_are_refused_for_reading_and_writing() {
        let (tmp, p) = setup();
        let home = tmp.path().join("home");
        for path in [
            home.join(".ssh/id_rsa"),
            home.join(".gnupg/secring.gpg"),
            home.join(".aws/credentials"),
            home.join(".hermes/.env"),
            home.join(".hermes/profiles/work/.env"),
            home.join(".hermes/mcp-tokens/x.json"),
            home.join(".netrc"),
        ] {
            let e = p.check_read(&path).unwrap_err();
            assert!(e.0.contains("protected credential path"), "{e}");
        }
        for path in [home.join(".gnupg/x"), home.join(".aws/credentials")] {
            assert!(p.check_write(&path).is_err(), "{}", path.display());
        }
        assert!(p.check_read(&home.join("notes.txt")).is_ok());
        assert!(p.check_read(&home.join(".hermes/config.yaml")).is_ok());
        for environ in [
            "/proc/self/environ",
            "/proc/1/environ",
            "/proc/1/task/1/environ",
        ] {
            assert!(p.check_read(Path::new(environ)).is_err(), "{environ}");
        }
        assert!(p.check_read(Path::new("/proc/self/status")).is_ok());
    }

    #[test]
    fn control_files_start_up_files_keys_and_schedulers_are_guarded() {
        let (tmp, p) = setup();
        let home = tmp.path().join("home");
        for (path, class) in [
            (
                home.join(".hermes/config.yaml"),
                GuardedWrite::HermesControl,
            ),
            (home.join(".hermes/.env"), GuardedWrite::HermesControl),
            (
                home.join(".hermes/active_profile"),
                GuardedWrite::HermesControl,
            ),
            (
                home.join(".hermes/profiles/work/config.yaml"),
                GuardedWrite::HermesControl,
            ),
            (home.join(".bashrc"), GuardedWrite::ShellStartup),
            (
                home.join(".config/fish/config.fish"),
                GuardedWrite::ShellStartup,
            ),
            (home.join(".ssh/authorized_keys"), GuardedWrite::Ssh),
            (
                home.join(".config/systemd/user/x.service"),
                GuardedWrite::Scheduler,
            ),
            (
                PathBuf::from("/var/spool/cron/crontabs/u"),
                GuardedWrite::Scheduler,
            ),
        ] {
            assert_eq!(p.guarded_write(&path), Some(class), "{}", path.display());
            assert!(
                p.check_write(&path).is_ok(),
                "guarded, not refused: {}",
                path.display()
            );
        }
        assert_eq!(p.guarded_write(&home.join("project/config.yaml")), None);
        assert_eq!(p.guarded_write(&home.join(".bashrc.bak")), None);
        // A profile's home guards its base too.
        let work =
            ProtectedPaths::new(Some(home.clone()), Some(home.join(".hermes/profiles/work")));
        assert_eq!(
            work.guarded_write(&home.join(".hermes/active_profile")),
            Some(GuardedWrite::HermesControl)
        );
    }

    #[test]
    fn writes_to_system_config_are_refused() {
        let (tmp, p) = setup();
        let home = tmp.path().join("home");
        assert!(p.check_write(Path::new("/etc/hosts")).is_err());
        assert!(p.check_write(&home.join(".npmrc")).is_err());
        assert!(p.check_read(&home.join(".npmrc")).is_ok());
        assert!(p.check_write(&home.join("project/.env")).is_ok());
        assert!(p.check_read(&home.join("project/.env")).is_err());
        assert!(p.check_read(&home.join("project/.env.example")).is_ok());
    }

    #[test]
    fn symlinks_and_dot_dots_do_not_get_around_it() {
        let (tmp, p) = setup();
        let home = tmp.path().join("home");
        std::fs::write(home.join(".ssh/id_ed25519"), "key").unwrap();
        let link = tmp.path().join("innocent.txt");
        std::os::unix::fs::symlink(home.join(".ssh/id_ed25519"), &link).unwrap();
        assert!(p.check_read(&link).is_err());
        let dir_link = tmp.path().join("dir");
        std::os::unix::fs::symlink(home.join(".ssh"), &dir_link).unwrap();
        assert_eq!(
            p.guarded_write(&dir_link.join("new_key")),
            Some(GuardedWrite::Ssh)
        );
        assert!(p.check_read(&home.join("x/../.ssh/config")).is_err());
        let rc_link = tmp.path().join("rc");
        std::os::unix::fs::symlink(home.join(".bashrc"), &rc_link).unwrap();
        assert_eq!(p.guarded_write(&rc_link), Some(GuardedWrite::ShellStartup));
    }

    #[test]
    fn open_read_refuses_fifos_hard_links_and_directories() {
        let (tmp, p) = setup();
        let home = tmp.path().join("home");
        std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE").unwrap();
        let hard = tmp.path().join("copy.txt");
        std::fs::hard_link(home.join(".ssh/id_rsa"), &hard).unwrap();
        let e = p.open_read(&hard).unwrap_err();
        assert!(e.0.contains("hard link"), "{e}");
        let fifo = tmp.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = p.open_read(&fifo).unwrap_err();
            assert!(e.0.contains("a FIFO"), "{e}");
        }
        let e = p.open_read(Path::new("/dev/null")).unwrap_err();
        assert!(e.0.contains("character device"), "{e}");
        let e = p.open_read(tmp.path()).unwrap_err();
        assert!(e.0.contains("directory"), "{e}");
        std::fs::write(tmp.path().join("ok.txt"), "fine").unwrap();
        let other = tmp.path().join("ok2.txt");
        std::fs::hard_link(tmp.path().join("ok.txt"), &other).unwrap();
        assert!(
            p.open_read(&other).is_ok(),
            "a hard link to an ordinary file"
        );
    }
}
