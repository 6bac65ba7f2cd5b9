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

/// The steps a test client script printed, one JSON object per stdout line (`{"step": NAME,
/// ...}`), after checking it succeeded.
pub struct Steps {
    stdout: String,
    steps: Vec<serde_json::Value>,
}

impl Steps {
    /// Reads a finished client's output; panics with its stdout and stderr when it failed.
    pub fn of(out: std::process::Output) -> Steps {
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let steps = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        Steps { stdout, steps }
    }

    /// The step called `name`.
    pub fn get(&self, name: &str) -> serde_json::Value {
        self.steps
            .iter()
            .find(|s| s["step"] == name)
            .unwrap_or_else(|| panic!("no step {name}: {}", self.stdout))
            .clone()
    }
}
