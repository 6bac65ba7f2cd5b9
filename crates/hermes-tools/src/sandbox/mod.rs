//! The OS sandbox of the local terminal: commands of `terminal`, `process` and
//! `execute_code` run under a policy the kernel enforces, so a command the approval gate let
//! through still cannot write outside the workspace or reach the network.
//!
//! How: the `hermes` binary registers itself as the launcher ([`register_launcher`]); a
//! sandboxed command runs as `hermes __sandbox-exec <policy> -- bash -c CMD`, whose first act
//! ([`launcher::main`]) is to restrict itself (Landlock for the file system and TCP, seccomp
//! for every other socket family) and then `exec` the command, which inherits the
//! restrictions. No `unsafe` is needed and background jobs are covered the same way.
//!
//! [`settings`] reads `terminal.sandbox` (and `--sandbox`), [`support`] probes the kernel
//! once, [`Sandbox`] is one session's policy: how to wrap a command, and the note the model
//! reads when a failure looks like the sandbox's doing.

mod launcher;
#[cfg(target_os = "linux")]
mod linux;
mod settings;
mod support;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use launcher::{LAUNCHER_ARG, main as launcher_main};
pub use settings::{SandboxMode, SandboxSettings};
pub use support::{Support, support};

static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();

/// Declares `path` (the running `hermes` executable) as the program that can start sandboxed
/// commands. Library users that never call this run commands unsandboxed.
pub fn register_launcher(path: PathBuf) {
    let _ = LAUNCHER.set(path);
}

fn launcher() -> Option<&'static Path> {
    LAUNCHER.get().map(PathBuf::as_path)
}

/// This binary, as registered by [`register_launcher`] (the cloud backends' command client
/// is the same executable).
pub fn launcher_path() -> Option<&'static Path> {
    launcher()
}

/// Device files every mode may write: output sinks, terminals and randomness.
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// What one session's commands run under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxState {
    /// Unsandboxed: `mode: off`, or the default mode on a system that cannot sandbox.
    Off,
    Active(Sandbox),
    /// The user asked for a sandbox this system cannot give: commands are refused rather than
    /// run with rights the user did not intend.
    Unavailable {
        mode: SandboxMode,
        reason: String,
    },
}

impl SandboxState {
    /// The state for a session whose workspace is `workspace`.
    pub fn for_session(settings: &SandboxSettings, workspace: &Path, hermes_home: &Path) -> Self {
        if settings.mode == SandboxMode::Off {
            return SandboxState::Off;
        }
        let reason = match (support(), launcher()) {
            (Support::Available { .. }, Some(launcher)) => {
                return SandboxState::Active(Sandbox::new(
                    settings,
                    launcher,
                    workspace,
                    hermes_home,
                ));
            }
            (Support::Unavailable { reason }, _) => reason.clone(),
            (_, None) => "this program cannot launch sandboxed commands".to_string(),
        };
        if settings.explicit {
            SandboxState::Unavailable {
                mode: settings.mode,
                reason,
            }
        } else {
            SandboxState::Off
        }
    }

    pub fn active(&self) -> Option<&Sandbox> {
        match self {
            SandboxState::Active(s) => Some(s),
            _ => None,
        }
    }

    /// One line for `hermes doctor` and `hermes status`.
    pub fn describe(&self) -> String {
        match self {
            SandboxState::Off => "off (commands run with your full rights)".into(),
            SandboxState::Active(s) => s.describe(),
            SandboxState::Unavailable { mode, reason } => {
                format!("{mode} requested but unavailable: {reason}")
            }
        }
    }
}

/// One session's sandbox policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    launcher: PathBuf,
    mode: SandboxMode,
    network: bool,
    /// Where commands may write (workspace-write): the workspace, temp, caches, extra roots.
    writable: Vec<PathBuf>,
    /// How many of them come from `writable_roots`.
    extra_roots: usize,
}

impl Sandbox {
    fn new(
        settings: &SandboxSettings,
        launcher: &Path,
        workspace: &Path,
        hermes_home: &Path,
    ) -> Sandbox {
        let mut writable = Vec::new();
        if settings.mode == SandboxMode::WorkspaceWrite {
            writable.push(workspace.to_path_buf());
            writable.push(std::env::temp_dir());
            writable.extend(["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from));
            if let Some(cache) = user_cache_dir() {
                writable.push(cache);
            }
            writable.push(hermes_home.join("cache"));
            for root in &settings.writable_roots {
                writable.push(crate::paths::resolve(workspace, root));
            }
        }
        writable.sort();
        writable.dedup();
        Sandbox {
            launcher: launcher.to_path_buf(),
            mode: settings.mode,
            network: settings.network,
            writable,
            extra_roots: match settings.mode {
                SandboxMode::WorkspaceWrite => settings.writable_roots.len(),
                _ => 0,
            },
        }
    }

    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    pub fn network(&self) -> bool {
        self.network
    }

    pub fn writable_roots(&self) -> &[PathBuf] {
        &self.writable
    }

    /// The program and arguments that run `program args…` inside the sandbox.
    pub fn wrap(&self, program: &OsStr, args: &[&OsStr]) -> (PathBuf, Vec<OsString>) {
        let mut argv: Vec<OsString> = vec![LAUNCHER_ARG.into(), "--mode".into()];
        argv.push(self.mode.as_str().into());
        if self.network {
            argv.push("--network".into());
        }
        for root in &self.writable {
            argv.push("--write".into());
            argv.push(root.clone().into_os_string());
        }
        argv.push("--".into());
        argv.push(program.into());
        argv.extend(args.iter().map(|a| a.to_os_string()));
        (self.launcher.clone(), argv)
    }

    /// One line: the mode, what it allows, the network.
    pub fn describe(&self) -> String {
        let net = if self.network {
            "network on"
        } else {
            "network off"
        };
        match self.mode {
            SandboxMode::WorkspaceWrite if self.extra_roots > 0 => format!(
                "{}: writes only in the working directory, temp, caches and {} more {}; {net}",
                self.mode,
                self.extra_roots,
                if self.extra_roots == 1 {
                    "directory"
                } else {
                    "directories"
                }
            ),
            SandboxMode::WorkspaceWrite => format!(
                "{}: writes only in the working directory, temp and caches; {net}",
                self.mode
            ),
            _ => format!("{}: writes nothing; {net}", self.mode),
        }
    }

    fn roots_list(&self) -> String {
        self.writable
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// When a failed command's output looks like the sandbox stopped it, the rule it met and
    /// how to get past it, for the model.
    pub fn denial_note(&self, output: &str) -> Option<String> {
        const FS: &[&str] = &[
            "permission denied",
            "read-only file system",
            "operation not permitted",
        ];
        const NET: &[&str] = &[
            "could not resolve host",
            "temporary failure in name resolution",
            "name or service not known",
            "network is unreachable",
            "failed to connect",
            "couldn't connect",
            "connection refused",
            "address family not supported",
            "socket: operation not permitted",
            "urlopen error",
        ];
        let lower = output.to_ascii_lowercase();
        let escape = "If the task really needs it, call terminal again with the same command and `sandbox: false`: the user is asked to approve running it outside the sandbox.";
        // A refused socket reads "Operation not permitted" like a refused write; the words
        // around it tell them apart.
        let refused_socket = lower.contains("operation not permitted")
            && ["socket", "connect", "urlopen", "http"]
                .iter()
                .any(|k| lower.contains(k));
        if !self.network && (refused_socket || NET.iter().any(|k| lower.contains(k))) {
            return Some(format!(
                "This command ran in the OS sandbox, which has no network access (terminal.sandbox.network: false); the failure is probably the sandbox refusing a connection. {escape}"
            ));
        }
        if FS.iter().any(|k| lower.contains(k)) {
            let rule = match self.mode {
                SandboxMode::ReadOnly => {
                    "terminal.sandbox.mode: read-only, nothing may be written".to_string()
                }
                _ => format!(
                    "terminal.sandbox.mode: workspace-write, writes are allowed only under {}",
                    self.roots_list()
                ),
            };
            return Some(format!(
                "This command ran in the OS sandbox ({rule}); the failure is probably the sandbox refusing a write. {escape}"
            ));
        }
        None
    }
}

fn user_cache_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })
}

#[cfg(test)]
mod tests;
