use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use hermes_config::{Config, Environment};

use super::*;

fn config(yaml: &str) -> Config {
    Config::from_yaml(Path::new("/h/config.yaml"), yaml, &Environment::default()).unwrap()
}

fn settings(yaml: &str) -> SandboxSettings {
    SandboxSettings::from_config(&config(yaml), None).unwrap()
}

#[test]
fn the_default_is_workspace_write_without_network_and_not_explicit() {
    let s = settings("");
    assert_eq!(s.mode, SandboxMode::WorkspaceWrite);
    assert!(!s.explicit && !s.network && s.writable_roots.is_empty());
}

#[test]
fn modes_come_from_the_table_a_flag_a_name_or_the_command_line() {
    let s = settings(
        "terminal:\n  sandbox:\n    mode: read-only\n    network: true\n    writable_roots: [~/x, build]\n",
    );
    assert_eq!(s.mode, SandboxMode::ReadOnly);
    assert!(s.explicit && s.network);
    assert_eq!(s.writable_roots, vec!["~/x".to_string(), "build".into()]);
    assert_eq!(
        settings("terminal:\n  sandbox: false\n").mode,
        SandboxMode::Off
    );
    assert_eq!(
        settings("terminal:\n  sandbox:\n    mode: off\n").mode,
        SandboxMode::Off
    );
    assert_eq!(
        settings("terminal:\n  sandbox: workspace_write\n").mode,
        SandboxMode::WorkspaceWrite
    );
    let cli = SandboxSettings::from_config(
        &config("terminal:\n  sandbox:\n    mode: read-only\n"),
        Some(SandboxMode::Off),
    )
    .unwrap();
    assert_eq!(cli.mode, SandboxMode::Off);
    assert!(cli.explicit);
}

#[test]
fn an_unknown_mode_names_the_key_and_the_choices() {
    let err =
        SandboxSettings::from_config(&config("terminal:\n  sandbox:\n    mode: sideways\n"), None)
            .unwrap_err()
            .to_string();
    assert!(err.contains("terminal.sandbox.mode"), "{err}");
    assert!(err.contains("workspace-write"), "{err}");
}

fn sandbox(mode: SandboxMode, network: bool) -> Sandbox {
    let settings = SandboxSettings {
        mode,
        explicit: true,
        network,
        writable_roots: vec!["extra".into()],
    };
    Sandbox::new(
        &settings,
        Path::new("/usr/bin/hermes"),
        Path::new("/work/project"),
        Path::new("/home/u/.hermes"),
    )
}

#[test]
fn wrapping_runs_the_launcher_with_the_policy_then_the_program() {
    let s = sandbox(SandboxMode::WorkspaceWrite, false);
    let (launcher, argv) = s.wrap(OsStr::new("/bin/bash"), &["-c".as_ref(), "ls".as_ref()]);
    assert_eq!(launcher, PathBuf::from("/usr/bin/hermes"));
    let argv: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(&argv[..3], &[LAUNCHER_ARG, "--mode", "workspace-write"]);
    assert!(!argv.contains(&"--network".to_string()));
    let sep = argv.iter().position(|a| a == "--").unwrap();
    assert_eq!(&argv[sep + 1..], &["/bin/bash", "-c", "ls"]);
    let writes: Vec<&str> = argv[..sep]
        .windows(2)
        .filter(|w| w[0] == "--write")
        .map(|w| w[1].as_str())
        .collect();
    for root in [
        "/work/project",
        "/work/project/extra",
        "/tmp",
        "/home/u/.hermes/cache",
    ] {
        assert!(writes.contains(&root), "{root} not in {writes:?}");
    }
    assert_eq!(
        s.describe(),
        "workspace-write: writes only in the working directory, temp, caches and 1 more directory; network off"
    );
    let ro = sandbox(SandboxMode::ReadOnly, true);
    assert_eq!(ro.describe(), "read-only: writes nothing; network on");
    let (_, argv) = ro.wrap(OsStr::new("/bin/sh"), &[]);
    assert!(argv.iter().any(|a| a == "--network"));
    assert!(!argv.iter().any(|a| a == "--write"));
}

#[test]
fn denial_notes_name_the_rule_and_the_way_out() {
    let s = sandbox(SandboxMode::WorkspaceWrite, false);
    let fs = s
        .denial_note("touch: cannot touch '/etc/x': Permission denied")
        .unwrap();
    assert!(fs.contains("workspace-write"), "{fs}");
    assert!(fs.contains("/work/project"), "{fs}");
    assert!(fs.contains("sandbox: false"), "{fs}");
    let net = s
        .denial_note("curl: (6) Could not resolve host: example.com")
        .unwrap();
    assert!(net.contains("terminal.sandbox.network: false"), "{net}");
    let py = s
        .denial_note("urllib.error.URLError: <urlopen error [Errno 1] Operation not permitted>")
        .unwrap();
    assert!(py.contains("network"), "{py}");
    assert_eq!(s.denial_note("make: *** [all] Error 2"), None);
    let open = sandbox(SandboxMode::WorkspaceWrite, true);
    assert_eq!(
        open.denial_note("curl: (6) Could not resolve host: example.com"),
        None
    );
    let ro = sandbox(SandboxMode::ReadOnly, false);
    assert!(
        ro.denial_note("mkdir: cannot create directory 'x': Read-only file system")
            .unwrap()
            .contains("read-only")
    );
}

#[test]
fn the_off_mode_never_sandboxes() {
    let state = SandboxState::for_session(
        &SandboxSettings {
            mode: SandboxMode::Off,
            explicit: true,
            network: false,
            writable_roots: Vec::new(),
        },
        Path::new("/w"),
        Path::new("/h"),
    );
    assert_eq!(state, SandboxState::Off);
}
