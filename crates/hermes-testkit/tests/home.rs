//! Specification of the temp-home helper used by end-to-end `hermes` tests.

use std::path::Path;

use hermes_testkit::{MockServer, Script, TestHome};

#[test]
fn creates_isolated_directories_and_writes_the_mock_config() {
    let home = TestHome::new();
    for dir in [home.hermes_home(), home.fake_home(), home.workdir()] {
        assert!(dir.is_dir(), "{}", dir.display());
        assert!(dir.starts_with(home.root()));
    }
    let server = MockServer::start(Script::default());
    home.write_mock_config(&server);
    let written = std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    assert_eq!(
        written,
        format!(
            "model:\n  provider: custom\n  default: mock-model\n  base_url: http://127.0.0.1:{}/v1\n  api_key: sk-mock-not-a-real-key\n",
            server.port()
        )
    );
    home.write_config("x: 1\n");
    let written = std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    assert_eq!(written, "x: 1\n");
}

#[test]
fn command_runs_with_a_scrubbed_environment_in_the_workdir() {
    let home = TestHome::new();
    let out = home
        .command(Path::new("/bin/sh"))
        .args(["-c", "env | sort; echo cwd=$(pwd -P)"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let expect = [
        format!("HERMES_HOME={}", home.hermes_home().display()),
        format!("HOME={}", home.fake_home().display()),
        "LANG=C.UTF-8".to_owned(),
        "PATH=/usr/local/bin:/usr/bin:/bin".to_owned(),
        "TERM=dumb".to_owned(),
    ];
    for e in &expect {
        assert!(lines.contains(&e.as_str()), "missing {e} in {text}");
    }
    assert!(!text.contains("CARGO"), "environment leaked: {text}");
    let cwd = std::fs::canonicalize(home.workdir()).unwrap();
    assert!(
        lines.contains(&format!("cwd={}", cwd.display()).as_str()),
        "{text}"
    );

    let root = home.root().to_path_buf();
    drop(home);
    assert!(!root.exists());
}
