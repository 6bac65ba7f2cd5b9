//! `hermes gateway install|start|restart|stop|uninstall` against a stand-in `systemctl` that
//! logs its arguments: the user unit is written where systemd looks for it, runs this binary
//! for this home, and every action reaches systemd as `systemctl --user ...`; without systemd
//! the error says what to do instead.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Output;

use common::bin;
use hermes_testkit::TestHome;

/// A directory with a `systemctl` that appends its arguments to `systemctl.log` beside it.
fn fake_systemctl(home: &TestHome) -> PathBuf {
    let dir = home.root().join("fakebin");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("systemctl");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" >> {}\n",
            dir.join("systemctl.log").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn hermes(home: &TestHome, path: &str, args: &[&str]) -> Output {
    home.command(bin())
        .env("PATH", path)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn install_writes_the_user_unit_and_every_action_goes_through_systemctl() {
    let home = TestHome::new();
    let fakebin = fake_systemctl(&home);
    let path = format!("{}:/usr/bin:/bin", fakebin.display());

    let installed = hermes(&home, &path, &["gateway", "install"]);
    assert!(installed.status.success(), "{installed:?}");
    let units: Vec<PathBuf> = std::fs::read_dir(home.fake_home().join(".config/systemd/user"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(units.len(), 1, "{units:?}");
    let unit_name = units[0].file_name().unwrap().to_str().unwrap().to_string();
    // Not ~/.hermes and not a profile: a hash of the home names it, as in the Python Hermes.
    assert!(
        unit_name.starts_with("hermes-gateway-") && unit_name.ends_with(".service"),
        "{unit_name}"
    );
    let service = unit_name.trim_end_matches(".service").to_string();
    let unit = std::fs::read_to_string(&units[0]).unwrap();
    assert!(
        unit.contains(&format!("ExecStart={} gateway run\n", bin().display())),
        "{unit}"
    );
    assert!(
        unit.contains(&format!(
            "Environment=\"HERMES_HOME={}\"\n",
            home.hermes_home().display()
        )),
        "{unit}"
    );
    assert!(unit.contains("RestartPreventExitStatus=2\n"), "{unit}");

    for action in ["start", "restart", "stop"] {
        let out = hermes(&home, &path, &["gateway", action]);
        assert!(out.status.success(), "{action}: {out:?}");
    }
    let uninstalled = hermes(&home, &path, &["gateway", "uninstall"]);
    assert!(uninstalled.status.success(), "{uninstalled:?}");
    assert!(!units[0].exists());

    let log = std::fs::read_to_string(fakebin.join("systemctl.log")).unwrap();
    let expected = [
        "--user daemon-reload".to_string(),
        format!("--user enable --now {service}"),
        format!("--user start {service}"),
        format!("--user restart {service}"),
        format!("--user stop {service}"),
        format!("--user disable --now {service}"),
        "--user daemon-reload".to_string(),
    ];
    assert_eq!(log.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn without_systemd_install_says_what_to_do_and_start_needs_an_install() {
    let home = TestHome::new();
    let empty = home.root().join("nobin");
    std::fs::create_dir_all(&empty).unwrap();
    let path = format!("{}", empty.display());
    let out = hermes(&home, &path, &["gateway", "install"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no systemd user session"), "{err}");
    assert!(err.contains("hermes gateway run"), "{err}");

    let other = TestHome::new();
    let out = hermes(&other, &path, &["gateway", "start"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("hermes gateway install"),
        "{out:?}"
    );
}
