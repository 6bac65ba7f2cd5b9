//! Temporary, isolated home directories for end-to-end tests of the `hermes`
//! binary: a `HERMES_HOME`, a fake `HOME` and a working directory under one
//! temp dir, config writers, and a `Command` with a scrubbed environment.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::mock_server::MockServer;

/// Config the shared bench writes to point `hermes` at a [`MockServer`].
pub fn mock_config_yaml(server: &MockServer) -> String {
    format!(
        "model:\n  provider: custom\n  default: mock-model\n  base_url: {}\n  api_key: sk-mock-not-a-real-key\n",
        server.base_url()
    )
}

/// `<tmp>/home` (HERMES_HOME), `<tmp>/fakehome` (HOME), `<tmp>/work` (cwd);
/// everything is deleted on drop.
#[derive(Debug)]
pub struct TestHome {
    dir: tempfile::TempDir,
}

impl Default for TestHome {
    fn default() -> TestHome {
        TestHome::new()
    }
}

impl TestHome {
    /// Creates the directories; panics (in the caller) if the temp dir cannot be made.
    pub fn new() -> TestHome {
        match TestHome::try_new() {
            Ok(home) => home,
            Err(e) => panic!("hermes-testkit: cannot create test home: {e}"),
        }
    }

    pub fn try_new() -> io::Result<TestHome> {
        let dir = tempfile::Builder::new().prefix("hermes-test-").tempdir()?;
        for sub in ["home", "fakehome", "work"] {
            std::fs::create_dir_all(dir.path().join(sub))?;
        }
        Ok(TestHome { dir })
    }

    /// The temp dir holding everything.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `HERMES_HOME`.
    pub fn hermes_home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `HOME`.
    pub fn fake_home(&self) -> PathBuf {
        self.dir.path().join("fakehome")
    }

    /// Working directory for spawned commands.
    pub fn workdir(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// Writes `relative` under `HERMES_HOME`, creating parent dirs; panics on failure.
    pub fn write_file(&self, relative: &str, contents: &str) -> PathBuf {
        let path = self.hermes_home().join(relative);
        let result = match path.parent() {
            Some(parent) => std::fs::create_dir_all(parent),
            None => Ok(()),
        }
        .and_then(|()| std::fs::write(&path, contents));
        if let Err(e) = result {
            panic!("hermes-testkit: cannot write {}: {e}", path.display());
        }
        path
    }

    /// Writes `HERMES_HOME/config.yaml`.
    pub fn write_config(&self, yaml: &str) {
        self.write_file("config.yaml", yaml);
    }

    /// Writes the config pointing at `server` (see [`mock_config_yaml`]).
    pub fn write_mock_config(&self, server: &MockServer) {
        self.write_config(&mock_config_yaml(server));
    }

    /// `bin` with a cleared environment plus PATH, LANG, TERM, HOME and
    /// HERMES_HOME, running in [`TestHome::workdir`].
    pub fn command(&self, bin: &Path) -> Command {
        let mut cmd = Command::new(bin);
        cmd.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env("HOME", self.fake_home())
            .env("HERMES_HOME", self.hermes_home())
            .current_dir(self.workdir());
        cmd
    }
}

/// The local test model (`HERMES_TEST_GGUF`, exported by scripts/test after
/// scripts/fetch-model). Panics with what to do when it is missing: tests built with the local
/// model must run, never skip.
pub fn test_gguf() -> PathBuf {
    let path = std::env::var_os("HERMES_TEST_GGUF")
        .map(PathBuf::from)
        .unwrap_or_default();
    assert!(
        path.is_file(),
        "HERMES_TEST_GGUF ({}) is not a file: run scripts/fetch-model and export \
         HERMES_TEST_GGUF=<the path it prints> (scripts/test does this)",
        path.display()
    );
    path
}
