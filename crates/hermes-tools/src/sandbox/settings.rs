//! `terminal.sandbox` in config.yaml and `--sandbox MODE` on the command line:
//!
//! ```yaml
//! terminal:
//!   sandbox:
//!     mode: workspace-write   # off | workspace-write | read-only
//!     network: false          # true: commands may use the network
//!     writable_roots: []      # more directories commands may write (~ and relative paths ok)
//! ```
//!
//! `mode` defaults to `workspace-write` where the kernel can enforce it; a mode the user set
//! (here or with `--sandbox`) is `explicit`, and an explicit mode the system cannot enforce
//! refuses commands instead of silently running them unsandboxed.

use std::fmt;
use std::str::FromStr;

use hermes_config::{Config, ConfigError};
use serde::Deserialize;

/// How much a sandboxed command may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxMode {
    /// No sandbox: commands have the user's full rights.
    Off,
    /// Writes only in the workspace, temp and caches; reads anywhere.
    WorkspaceWrite,
    /// No writes at all (output devices excepted); reads anywhere.
    ReadOnly,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sandbox mode name that is none of the three.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sandbox mode `{0}` (expected off, workspace-write or read-only)")]
pub struct UnknownMode(pub String);

impl FromStr for SandboxMode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "off" | "none" | "false" | "danger-full-access" => Ok(SandboxMode::Off),
            "workspace-write" | "workspace" | "on" | "true" => Ok(SandboxMode::WorkspaceWrite),
            "read-only" | "readonly" => Ok(SandboxMode::ReadOnly),
            other => Err(UnknownMode(other.to_string())),
        }
    }
}

/// The sandbox settings of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    pub mode: SandboxMode,
    /// The user chose `mode` (config or command line) rather than getting the default.
    pub explicit: bool,
    pub network: bool,
    pub writable_roots: Vec<String>,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            mode: SandboxMode::WorkspaceWrite,
            explicit: false,
            network: false,
            writable_roots: Vec::new(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawTerminal {
    sandbox: Option<RawSandbox>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawSandbox {
    /// `sandbox: false` / `sandbox: workspace-write`.
    Flag(bool),
    Name(String),
    Table(RawTable),
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawTable {
    mode: Option<RawMode>,
    network: bool,
    writable_roots: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawMode {
    Flag(bool),
    Name(String),
}

impl SandboxSettings {
    /// Reads `terminal.sandbox`; `cli` (`--sandbox MODE`) wins over the file.
    pub fn from_config(
        config: &Config,
        cli: Option<SandboxMode>,
    ) -> Result<SandboxSettings, ConfigError> {
        let raw: RawTerminal = config.section("terminal")?;
        let invalid = |e: UnknownMode| ConfigError::Invalid {
            path: config.path.clone(),
            key: "terminal.sandbox.mode".into(),
            message: e.to_string(),
        };
        let mut settings = SandboxSettings::default();
        let named = |flag: bool| {
            if flag {
                SandboxMode::WorkspaceWrite
            } else {
                SandboxMode::Off
            }
        };
        let mode = match raw.sandbox {
            None => None,
            Some(RawSandbox::Flag(b)) => Some(named(b)),
            Some(RawSandbox::Name(n)) => Some(n.parse().map_err(invalid)?),
            Some(RawSandbox::Table(t)) => {
                settings.network = t.network;
                settings.writable_roots = t.writable_roots;
                match t.mode {
                    None => None,
                    Some(RawMode::Flag(b)) => Some(named(b)),
                    Some(RawMode::Name(n)) => Some(n.parse().map_err(invalid)?),
                }
            }
        };
        if let Some(mode) = cli.or(mode) {
            settings.mode = mode;
            settings.explicit = true;
        }
        Ok(settings)
    }
}
