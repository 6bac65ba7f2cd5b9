//! The environment as Hermes sees it: the real process environment first, then the values of
//! `$HERMES_HOME/.env` for names the real environment does not set. Nothing is written back to
//! the process environment.

use std::collections::BTreeMap;
use std::path::Path;

use crate::ConfigError;

#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// Consult the real process environment (false only in tests).
    use_process: bool,
    overlay: BTreeMap<String, String>,
}

impl Environment {
    /// The process environment overlaid with a `.env` file (missing file: nothing added).
    pub fn load(dotenv: &Path) -> Result<Environment, ConfigError> {
        let mut env = Environment {
            use_process: true,
            overlay: BTreeMap::new(),
        };
        match std::fs::metadata(dotenv) {
            Err(_) => return Ok(env),
            Ok(meta) if meta.is_dir() => {
                return Err(ConfigError::IsDirectory {
                    path: dotenv.to_path_buf(),
                });
            }
            Ok(_) => {}
        }
        let iter = dotenvy::from_path_iter(dotenv).map_err(|e| dotenv_error(dotenv, e))?;
        for item in iter {
            let (key, value) = item.map_err(|e| dotenv_error(dotenv, e))?;
            env.overlay.insert(key, value);
        }
        Ok(env)
    }

    /// An environment made only of the given pairs, ignoring the process (for tests).
    pub fn isolated<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Environment {
        Environment {
            use_process: false,
            overlay: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of `name`: the process environment wins over `.env`; empty values count as
    /// unset.
    pub fn var(&self, name: &str) -> Option<String> {
        if self.use_process
            && let Ok(v) = std::env::var(name)
            && !v.is_empty()
        {
            return Some(v);
        }
        self.overlay.get(name).filter(|v| !v.is_empty()).cloned()
    }

    /// Whether the value comes from `.env` rather than the process.
    pub fn is_from_dotenv(&self, name: &str) -> bool {
        let in_process = self.use_process && std::env::var_os(name).is_some_and(|v| !v.is_empty());
        !in_process && self.overlay.contains_key(name)
    }

    /// Names defined in `.env` (whether or not the process overrides them).
    pub fn dotenv_names(&self) -> impl Iterator<Item = &str> {
        self.overlay.keys().map(String::as_str)
    }

    /// Replaces every `${NAME}` in `text` by its value; unknown names are kept verbatim so the
    /// user can see what was not resolved.
    pub fn substitute(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            match after.find('}') {
                Some(end) if end > 0 => {
                    let name = &after[..end];
                    match self.var(name) {
                        Some(v) => out.push_str(&v),
                        None => out.push_str(&rest[start..start + 2 + end + 1]),
                    }
                    rest = &after[end + 1..];
                }
                _ => {
                    out.push_str("${");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

fn dotenv_error(path: &Path, e: dotenvy::Error) -> ConfigError {
    match e {
        dotenvy::Error::Io(source) => ConfigError::Read {
            path: path.to_path_buf(),
            source,
        },
        other => ConfigError::Invalid {
            path: path.to_path_buf(),
            key: "(line)".into(),
            message: other.to_string(),
        },
    }
}

/// Sets `name` in the `.env` file at `path` (created when missing, readable by the owner only):
/// the line assigning it is replaced (`NAME=...` or `export NAME=...`), else one is appended;
/// every other line, comment and blank stays. The value is double-quoted when it holds
/// anything a dotenv reader could take apart. Returns whether an existing line was replaced.
pub fn set_dotenv_var(path: &Path, name: &str, value: &str) -> std::io::Result<bool> {
    let valid_name = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !valid_name || value.contains(['\n', '\r']) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{name}` cannot be written to .env with that value"),
        ));
    }
    let plain = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.:/+=@,~%".contains(c));
    let written = if plain {
        value.to_string()
    } else {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let assigns = |line: &str| {
        let l = line.trim_start();
        let l = l.strip_prefix("export ").map_or(l, str::trim_start);
        l.strip_prefix(name)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    let mut replaced = false;
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        if assigns(line) {
            if !replaced {
                lines.push(format!("{name}={written}"));
            }
            replaced = true;
        } else {
            lines.push(line.to_string());
        }
    }
    if !replaced {
        lines.push(format!("{name}={written}"));
    }
    let mut out = lines.join("\n");
    out.push('\n');
    crate::atomic_write(path, out.as_bytes())?;
    Ok(replaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitution_replaces_known_and_keeps_unknown() {
        let env = Environment::isolated([("A", "1"), ("B", "two")]);
        assert_eq!(env.substitute("x${A}y${B}"), "x1ytwo");
        assert_eq!(env.substitute("${MISSING}/z"), "${MISSING}/z");
        assert_eq!(env.substitute("${}${A"), "${}${A");
        assert_eq!(env.substitute("plain"), "plain");
    }

    #[test]
    fn dotenv_is_an_overlay_that_the_process_overrides() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join(".env");
        // PATH is always set in the process, so the file's value must lose.
        std::fs::write(
            &p,
            "# comment\nHERMES_TEST_ONLY_IN_FILE=from-file\nPATH=/nope\n",
        )
        .unwrap();
        let env = Environment::load(&p).unwrap();
        assert_eq!(
            env.var("HERMES_TEST_ONLY_IN_FILE").as_deref(),
            Some("from-file")
        );
        assert_ne!(env.var("PATH").as_deref(), Some("/nope"));
        assert!(env.is_from_dotenv("HERMES_TEST_ONLY_IN_FILE"));
    }

    #[test]
    fn missing_dotenv_is_fine_and_directory_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(Environment::load(&tmp.path().join("none")).is_ok());
        let err = Environment::load(tmp.path()).unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
    }

    #[test]
    fn set_dotenv_var_replaces_or_appends_and_keeps_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(".env");
        assert!(!set_dotenv_var(&path, "OPENROUTER_API_KEY", "sk-or-1").unwrap());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "OPENROUTER_API_KEY=sk-or-1\n"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "only the owner may read it: {mode:o}");
        }
        std::fs::write(
            &path,
            "# keys\nexport OPENROUTER_API_KEY=old\nOTHER=1\nOPENROUTER_API_KEY_2=x\n",
        )
        .unwrap();
        assert!(set_dotenv_var(&path, "OPENROUTER_API_KEY", "new key#1").unwrap());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "# keys\nOPENROUTER_API_KEY=\"new key#1\"\nOTHER=1\nOPENROUTER_API_KEY_2=x\n"
        );
        let env = Environment::load(&path).unwrap();
        assert_eq!(
            env.overlay.get("OPENROUTER_API_KEY").map(String::as_str),
            Some("new key#1")
        );
        assert!(set_dotenv_var(&path, "BAD NAME", "x").is_err());
        assert!(set_dotenv_var(&path, "K", "two\nlines").is_err());
    }
}
