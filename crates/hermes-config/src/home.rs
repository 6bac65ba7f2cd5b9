//! The Hermes home directory: `$HERMES_HOME`, else `~/.hermes`; a profile is a full home under
//! `profiles/<name>/`. Created on first use.

use std::path::{Path, PathBuf};

use crate::ConfigError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HermesHome {
    root: PathBuf,
}

impl HermesHome {
    /// Resolves the home from the environment: `HERMES_HOME`, else `$HOME/.hermes`; with a
    /// profile name, `<home>/profiles/<name>`.
    pub fn resolve(profile: Option<&str>) -> Result<HermesHome, ConfigError> {
        let base = match std::env::var_os("HERMES_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
                Some(home) => PathBuf::from(home).join(".hermes"),
                None => {
                    return Err(ConfigError::HomeUnavailable {
                        path: PathBuf::from("~/.hermes"),
                        reason: "neither HERMES_HOME nor HOME is set".into(),
                    });
                }
            },
        };
        let root = match profile {
            Some(name) => {
                validate_profile_name(name, &base)?;
                base.join("profiles").join(name)
            }
            None => base,
        };
        Ok(HermesHome { root })
    }

    /// A home at an explicit directory (tests, embedding).
    pub fn at(root: impl Into<PathBuf>) -> HermesHome {
        HermesHome { root: root.into() }
    }

    /// Creates the home directory if needed; a clear error when that is impossible.
    pub fn ensure(&self) -> Result<(), ConfigError> {
        if self.root.is_dir() {
            return Ok(());
        }
        if self.root.exists() {
            return Err(ConfigError::HomeUnavailable {
                path: self.root.clone(),
                reason: "it exists and is not a directory".into(),
            });
        }
        std::fs::create_dir_all(&self.root).map_err(|e| ConfigError::HomeUnavailable {
            path: self.root.clone(),
            reason: format!("cannot create it: {e}"),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    pub fn env_path(&self) -> PathBuf {
        self.root.join(".env")
    }

    /// A path inside the home.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }
}

fn validate_profile_name(name: &str, base: &Path) -> Result<(), ConfigError> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && name != "."
        && name != "..";
    if ok {
        Ok(())
    } else {
        Err(ConfigError::HomeUnavailable {
            path: base.join("profiles").join(name),
            reason: "profile names may only use letters, digits, '-', '_' and '.'".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ensure_creates_missing_home_and_rejects_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        let home = HermesHome::at(tmp.path().join("a/b"));
        home.ensure().unwrap();
        assert!(home.root().is_dir());

        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let err = HermesHome::at(&file).ensure().unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
    }

    #[test]
    fn profile_names_cannot_escape_the_home() {
        assert!(validate_profile_name("../etc", Path::new("/h")).is_err());
        assert!(validate_profile_name("work-1", Path::new("/h")).is_ok());
    }
}
