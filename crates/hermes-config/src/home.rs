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
    /// profile name, `<home>/profiles/<name>` (`default` is the home itself). Without one, the
    /// sticky profile chosen by `hermes profile use` (the `active_profile` file in the home, the
    /// Python Hermes's format) applies, unless `HERMES_HOME` already points at a profile.
    pub fn resolve(profile: Option<&str>) -> Result<HermesHome, ConfigError> {
        let base = Self::base()?;
        let chosen = match profile {
            Some(name) => Some(name.to_string()),
            None if is_profile_dir(&base) => None,
            None => active_profile(&base),
        };
        let root = match chosen.as_deref() {
            None | Some("default") => base,
            Some(name) => {
                validate_profile_name(name, &base)?;
                let root = base.join("profiles").join(name);
                if profile.is_none() && !root.is_dir() {
                    return Err(ConfigError::HomeUnavailable {
                        path: root,
                        reason: format!(
                            "{} names the profile `{name}`, which does not exist; run `hermes profile use default` or create it with `hermes profile create {name}`",
                            base.join(ACTIVE_PROFILE_FILE).display()
                        ),
                    });
                }
                root
            }
        };
        Ok(HermesHome { root })
    }

    /// The default home, where `profiles/` and `active_profile` live: `HERMES_HOME`, else
    /// `$HOME/.hermes`.
    pub fn base() -> Result<PathBuf, ConfigError> {
        match std::env::var_os("HERMES_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => Ok(PathBuf::from(dir)),
            None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
                Some(home) => Ok(PathBuf::from(home).join(".hermes")),
                None => Err(ConfigError::HomeUnavailable {
                    path: PathBuf::from("~/.hermes"),
                    reason: "neither HERMES_HOME nor HOME is set".into(),
                }),
            },
        }
    }

    /// The profile this home is (`None` for a home that is not under a `profiles/` directory).
    pub fn profile_name(&self) -> Option<String> {
        is_profile_dir(&self.root)
            .then(|| self.root.file_name()?.to_str().map(str::to_string))
            .flatten()
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

/// The file holding the sticky profile's name, in the default home.
pub const ACTIVE_PROFILE_FILE: &str = "active_profile";

/// The sticky profile named in `<base>/active_profile` (`None` when absent, empty or `default`).
pub fn active_profile(base: &Path) -> Option<String> {
    let name = std::fs::read_to_string(base.join(ACTIVE_PROFILE_FILE)).ok()?;
    let name = name.trim();
    (!name.is_empty() && name != "default").then(|| name.to_string())
}

fn is_profile_dir(path: &Path) -> bool {
    path.parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "profiles")
}

pub(crate) fn validate_profile_name(name: &str, base: &Path) -> Result<(), ConfigError> {
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
    fn the_sticky_profile_is_read_like_the_python_hermes_writes_it() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(active_profile(tmp.path()), None);
        std::fs::write(tmp.path().join(ACTIVE_PROFILE_FILE), "coder\n").unwrap();
        assert_eq!(active_profile(tmp.path()).as_deref(), Some("coder"));
        std::fs::write(tmp.path().join(ACTIVE_PROFILE_FILE), "default\n").unwrap();
        assert_eq!(active_profile(tmp.path()), None);
        assert!(is_profile_dir(&tmp.path().join("profiles").join("x")));
        assert_eq!(
            HermesHome::at(tmp.path().join("profiles").join("x"))
                .profile_name()
                .as_deref(),
            Some("x")
        );
        assert_eq!(HermesHome::at(tmp.path()).profile_name(), None);
    }

    #[test]
    fn profile_names_cannot_escape_the_home() {
        assert!(validate_profile_name("../etc", Path::new("/h")).is_err());
        assert!(validate_profile_name("work-1", Path::new("/h")).is_ok());
    }
}
