//! Persistent memory: two small files in `$HERMES_HOME/memories/` that follow the user from
//! session to session. `MEMORY.md` holds the agent's notes, `USER.md` what it knows about the
//! user. [`file`] is their format (byte-compatible with the Python Hermes), [`store`] changes
//! them safely, [`tool`] is the `memory` tool, [`snapshot`] renders the frozen copy that goes
//! into the system prompt, [`scrub`] keeps echoed copies out of answers, and [`provider`] is
//! the hook for one external memory service.

pub mod file;
pub mod provider;
pub mod scrub;
pub mod snapshot;
pub mod store;
pub mod tool;

use hermes_config::{Config, ConfigError};
use serde::Deserialize;

pub use provider::{AttachError, MemoryProvider, ProviderError};
pub use scrub::FenceScrubber;
pub use snapshot::{Include, Snapshot};
pub use store::{Applied, Limits, MemoryError, MemoryStore, Op, Target};
pub use tool::MemoryTool;

/// The `memory:` section of config.yaml (the Python Hermes's keys and defaults).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct MemorySettings {
    /// Load `MEMORY.md` into the system prompt.
    pub memory_enabled: bool,
    /// Load `USER.md` into the system prompt.
    pub user_profile_enabled: bool,
    pub memory_char_limit: usize,
    pub user_char_limit: usize,
    /// An external memory provider by name ("" = built-in files only).
    pub provider: String,
}

impl Default for MemorySettings {
    fn default() -> Self {
        let limits = Limits::default();
        MemorySettings {
            memory_enabled: true,
            user_profile_enabled: true,
            memory_char_limit: limits.memory,
            user_char_limit: limits.user,
            provider: String::new(),
        }
    }
}

impl MemorySettings {
    pub fn from_config(config: &Config) -> Result<MemorySettings, ConfigError> {
        config.section("memory")
    }

    pub fn limits(&self) -> Limits {
        Limits {
            memory: self.memory_char_limit,
            user: self.user_char_limit,
        }
    }

    pub fn include(&self) -> Include {
        Include {
            memory: self.memory_enabled,
            user: self.user_profile_enabled,
        }
    }

    /// Memory is on when either file is: the tool is offered and the snapshot taken.
    pub fn enabled(&self) -> bool {
        self.memory_enabled || self.user_profile_enabled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_config::Environment;
    use std::path::Path;

    #[test]
    fn settings_read_the_python_keys() {
        let env = Environment::isolated::<&str, &str>([]);
        let c = Config::from_yaml(
            Path::new("/h/config.yaml"),
            "memory:\n  memory_char_limit: 500\n  user_profile_enabled: false\n  write_approval: false\n",
            &env,
        )
        .unwrap();
        let s = MemorySettings::from_config(&c).unwrap();
        assert_eq!(
            s.limits(),
            Limits {
                memory: 500,
                user: 1375
            }
        );
        assert!(s.memory_enabled && !s.user_profile_enabled && s.enabled());
        let c = Config::from_yaml(Path::new("/h/config.yaml"), "", &env).unwrap();
        assert_eq!(
            MemorySettings::from_config(&c).unwrap(),
            MemorySettings::default()
        );
        let bad = Config::from_yaml(
            Path::new("/h/config.yaml"),
            "memory:\n  memory_char_limit: lots\n",
            &env,
        )
        .unwrap();
        let e = MemorySettings::from_config(&bad).unwrap_err();
        assert!(e.to_string().contains("memory.memory_char_limit"), "{e}");
    }
}
