//! The Python venvs of the real-client tests (the official `openai`, `mcp` and ACP packages),
//! made by the project's setup scripts in the user's cache.

use std::path::PathBuf;
use std::process::Command;

/// One test venv: where it lives and how it is made.
pub struct Venv {
    /// Overrides the interpreter (`HERMES_OPENAI_PYTHON`, ...).
    pub env_var: &'static str,
    /// The folder under `~/.cache/hermes-rs/` holding `venv/`.
    pub cache_dir: &'static str,
    /// Python code that must import for the venv to be usable.
    pub probe: &'static str,
    /// The script under `scripts/` that installs it.
    pub setup: &'static str,
}

impl Venv {
    /// The venv's python (running its setup script once when the package is missing), or why
    /// there is none, for the test to print as its skip reason.
    pub fn python(&self) -> Result<PathBuf, String> {
        let path = match std::env::var_os(self.env_var) {
            Some(p) => PathBuf::from(p),
            None => {
                let cache = std::env::var_os("XDG_CACHE_HOME")
                    .map(PathBuf::from)
                    .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                    .ok_or("no HOME")?;
                cache
                    .join("hermes-rs")
                    .join(self.cache_dir)
                    .join("venv/bin/python")
            }
        };
        let usable = |p: &PathBuf| {
            Command::new(p)
                .args(["-c", self.probe])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if usable(&path) {
            return Ok(path);
        }
        let setup = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../scripts")
            .join(self.setup);
        let out = Command::new(&setup)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", setup.display()))?;
        if usable(&path) {
            Ok(path)
        } else {
            Err(format!(
                "{} cannot `{}` and scripts/{} could not install it: {}",
                path.display(),
                self.probe,
                self.setup,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }
}
