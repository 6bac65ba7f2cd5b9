//! What a path argument of a command points at, once `$HOME`, `~`, the absolute home and the
//! Hermes home are folded to one spelling and `.`/`..` are resolved: the filesystem root, a
//! system directory, the home directory (targets of a recursive delete), or a block device,
//! system configuration, a credential file, a Hermes secret, a project `.env` (targets of a
//! write).

use std::path::{Component, Path};

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
    "/sbin",
    "/srv",
    "/sys",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/sbin",
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
];

/// Files under the home whose modification plants keys or login-time commands.
const USER_SECRET_FILES: &[&str] = &[
    ".bashrc",
    ".zshrc",
    ".profile",
    ".bash_profile",
    ".bash_login",
    ".zprofile",
    ".zshenv",
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
];
const USER_SECRET_DIRS: &[&str] = &[".ssh", ".gnupg", ".aws"];

/// Placeholder home used when `$HOME` is unknown, so `~/..` still folds to `/home`.
const UNKNOWN_HOME: &str = "/home/unknown-user";

/// The home directories a command's paths are compared against.
#[derive(Debug, Clone, Default)]
pub(crate) struct Homes {
    pub home: Option<String>,
    pub hermes_home: Option<String>,
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
    SystemConfig,
    UserSecret,
    HermesSecret,
    ProjectEnv,
}

impl Homes {
    /// `raw` with the home spelled `~` and the Hermes home spelled `@hermes`.
    fn fold(&self, raw: &str) -> String {
        let mut t = raw.trim().to_string();
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
        if let Some(hh) = self.hermes_home.as_deref()
            && let Some(rest) = strip_dir_prefix(&t, hh)
        {
            t = format!("@hermes{rest}");
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

    /// What deleting `raw` (recursively) would destroy.
    pub(crate) fn delete_target(&self, raw: &str) -> DeleteTarget {
        let mut t = self.fold(raw);
        if t.is_empty() || t.contains(['$', '`']) || t.starts_with("@hermes") {
            return DeleteTarget::Other;
        }
        // A trailing glob deletes everything in the directory: `/*` is as bad as `/`.
        while t.ends_with('*') {
            t.pop();
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
        let folded = lexical(&t);
        if folded == "/" {
            DeleteTarget::Root
        } else if folded == lexical(self.home_path()) {
            DeleteTarget::Home
        } else if SYSTEM_DIRS.contains(&folded.as_str()) {
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
        if ["/etc", "/private/etc", "/boot"]
            .iter()
            .any(|p| absolute == *p || absolute.starts_with(&format!("{p}/")))
        {
            return Some(WriteTarget::SystemConfig);
        }
        if let Some(rest) = t.strip_prefix("@hermes/") {
            let rest = lexical_relative(rest);
            if rest == ".env" || rest == "config.yaml" {
                return Some(WriteTarget::HermesSecret);
            }
        }
        if let Some(rest) = t.strip_prefix("~/") {
            let rest = lexical_relative(rest);
            let first = rest.split('/').next().unwrap_or("");
            if USER_SECRET_DIRS.contains(&first) || USER_SECRET_FILES.contains(&rest.as_str()) {
                return Some(WriteTarget::UserSecret);
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
        }
    }

    #[test]
    fn delete_targets_fold_every_spelling_of_root_and_home() {
        let h = homes();
        for root in ["/", "//", "/.", "/..", "/*", "/tmp/..", "/./", "///*"] {
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
        ] {
            assert_eq!(h.delete_target(home), DeleteTarget::Home, "{home}");
        }
        for sys in ["/etc", "/usr/", "/var/*", "/home", "~/.."] {
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
        assert_eq!(h.write_target("/dev/null"), None);
        assert_eq!(
            h.write_target("/etc/hosts"),
            Some(WriteTarget::SystemConfig)
        );
        assert_eq!(
            h.write_target("~/.ssh/authorized_keys"),
            Some(WriteTarget::UserSecret)
        );
        assert_eq!(
            h.write_target("/home/alice/.bashrc"),
            Some(WriteTarget::UserSecret)
        );
        assert_eq!(
            h.write_target("$HOME/.zshrc"),
            Some(WriteTarget::UserSecret)
        );
        assert_eq!(
            h.write_target("~/.hermes/.env"),
            Some(WriteTarget::HermesSecret)
        );
        assert_eq!(
            h.write_target("$HERMES_HOME/config.yaml"),
            Some(WriteTarget::HermesSecret)
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
    }
}
