//! Paths the file tools refuse: credential stores (SSH and GPG keys, cloud credentials, the
//! Hermes home's `.env` and token files, project `.env` files) for reading and writing, and
//! system configuration plus the Hermes `config.yaml` (where the approval settings live) for
//! writing. Symlinks are resolved first, so a link into `~/.ssh` is refused too.
//!
//! This is not a sandbox: the terminal can still reach these files (behind the approval
//! gate). It keeps the model's everyday file tools away from secrets.

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
const HOME_WRITE_ONLY_FILES: &[&str] = &[".npmrc", ".pypirc"];

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
];

/// Where the protected locations are: the user's home and the Hermes home, and the credential
/// stores under them (computed once: walks check every file they visit).
#[derive(Debug, Clone, Default)]
pub struct ProtectedPaths {
    home: Option<PathBuf>,
    hermes_home: Option<PathBuf>,
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
        if let Some(hh) = &hermes_home {
            stores.extend(
                HERMES_SECRET_FILES
                    .iter()
                    .map(|f| (hh.join(f), "Hermes secrets", false)),
            );
            stores.extend(
                HERMES_SECRET_DIRS
                    .iter()
                    .map(|d| (hh.join(d), "Hermes secrets", true)),
            );
        }
        ProtectedPaths {
            home,
            hermes_home,
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

    /// Refuses writing credential stores, system configuration and the Hermes config file.
    pub fn check_write(&self, path: &Path) -> Result<(), ToolError> {
        for candidate in candidates(path) {
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
            if let Some(hh) = &self.hermes_home
                && candidate == hh.join("config.yaml")
            {
                return Err(ToolError::new(format!(
                    "refusing to write {}: the Hermes config holds the approval settings, so the agent may not edit it. Ask the user to change it.",
                    path.display()
                )));
            }
        }
        Ok(())
    }

    /// What credential store `path` is in, if any. Project `.env` files count only for reads.
    fn secret_store(&self, path: &Path, reading: bool) -> Option<&'static str> {
        let under_a_home = [&self.home, &self.hermes_home]
            .iter()
            .any(|h| h.as_ref().is_some_and(|h| path.starts_with(h)));
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
/// that does not exist yet under a symlinked directory still resolves.
pub fn real_path(path: &Path) -> PathBuf {
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
        std::fs::create_dir_all(home.join(".hermes")).unwrap();
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
            home.join(".hermes/mcp-tokens/x.json"),
            home.join(".netrc"),
        ] {
            let e = p.check_read(&path).unwrap_err();
            assert!(e.0.contains("protected credential path"), "{e}");
            assert!(p.check_write(&path).is_err());
        }
        assert!(p.check_read(&home.join("notes.txt")).is_ok());
        assert!(p.check_read(&home.join(".hermes/config.yaml")).is_ok());
    }

    #[test]
    fn writes_to_system_config_and_the_hermes_config_are_refused() {
        let (tmp, p) = setup();
        let home = tmp.path().join("home");
        assert!(p.check_write(Path::new("/etc/hosts")).is_err());
        let e = p
            .check_write(&home.join(".hermes/config.yaml"))
            .unwrap_err();
        assert!(e.0.contains("approval settings"), "{e}");
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
        assert!(p.check_write(&dir_link.join("new_key")).is_err());
        assert!(p.check_read(&home.join("x/../.ssh/config")).is_err());
    }
}
