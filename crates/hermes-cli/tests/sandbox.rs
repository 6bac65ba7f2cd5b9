//! The OS sandbox of the agent's commands, through the binary (`hermes -z` against the
//! scripted mock model): by default a command writes only in the workspace (and temp and
//! caches) and has no network, and the model is told which rule stopped it; `read-only` and
//! `off` from the command line; `terminal.sandbox.network: true`; leaving the sandbox
//! (`sandbox: false`) needs an approval nobody can give in `-z`, and `--yolo` gives it;
//! background jobs and `execute_code` scripts are fenced the same way.
//!
//! Skipped with a printed reason where the kernel has no Landlock, and where the only
//! directory outside every writable root we can make (cargo's test temp dir) lies under
//! /tmp.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::*;
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

/// A fresh directory outside the sandbox's writable roots, or why there is none.
fn outside_dir(name: &str) -> Option<PathBuf> {
    let o = std::process::Command::new(bin())
        .args(["__sandbox-exec", "--mode", "read-only", "--", "/bin/true"])
        .output()
        .unwrap();
    if !o.status.success() {
        eprintln!(
            "skipping: this kernel cannot sandbox commands: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
        return None;
    }
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    if ["/tmp", "/var/tmp", "/dev/shm"]
        .iter()
        .any(|t| base.starts_with(t))
    {
        eprintln!(
            "skipping: cargo's temp dir {} is under a directory the sandbox lets commands write",
            base.display()
        );
        return None;
    }
    let dir = base.join(format!("sandbox-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Some(dir)
}

fn terminal(args: Value) -> Script {
    Script::new(vec![Turn::tool("terminal", args), Turn::text("done")])
}

fn run_turn(script: Script, config: &str, flags: &[&str]) -> (TestHome, MockServer) {
    let server = MockServer::start(script);
    let home = TestHome::new();
    home.write_config(&format!(
        "{}{config}",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let mut args = vec!["-z", "go"];
    args.extend_from_slice(flags);
    let o = run(&home, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    (home, server)
}

#[test]
fn a_write_outside_the_workspace_is_refused_and_the_model_is_told_the_rule() {
    let Some(out) = outside_dir("write") else {
        return;
    };
    let target = out.join("escaped");
    let command = format!("touch made_here && touch {}", target.display());
    let (home, server) = run_turn(terminal(json!({ "command": command })), "", &[]);
    assert!(home.workdir().join("made_here").exists());
    assert!(!target.exists(), "the sandbox let the write through");
    let result = tool_result(&server, 0);
    assert_eq!(result["exit_code"], 1, "{result}");
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{result}"
    );
    let note = result["sandbox"].as_str().expect("a sandbox note");
    assert!(note.contains("workspace-write"), "{note}");
    assert!(
        note.contains(&home.workdir().display().to_string()),
        "{note}"
    );
    assert!(note.contains("sandbox: false"), "{note}");
}

/// Opens a TCP connection to the server (bash's /dev/tcp: no interpreter flag to approve).
fn connect_command(server: &MockServer) -> String {
    format!(
        "exec 3<>/dev/tcp/127.0.0.1/{} && echo connected",
        server.port()
    )
}

#[test]
fn the_network_is_off_unless_the_config_turns_it_on() {
    if outside_dir("net").is_none() {
        return;
    }
    // The command fetches from the mock server itself: a loopback connection.
    let probe = MockServer::start(Script::new(vec![]));
    let command = connect_command(&probe);
    let (_, server) = run_turn(terminal(json!({ "command": command })), "", &[]);
    let result = tool_result(&server, 0);
    assert_ne!(result["exit_code"], 0, "{result}");
    let note = result["sandbox"]
        .as_str()
        .unwrap_or_else(|| panic!("{result}"));
    assert!(note.contains("terminal.sandbox.network: false"), "{note}");

    let (_, server) = run_turn(
        terminal(json!({ "command": command })),
        "terminal:\n  sandbox:\n    network: true\n",
        &[],
    );
    let result = tool_result(&server, 0);
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(result["output"], "connected", "{result}");
    assert!(result.get("sandbox").is_none(), "{result}");
}

#[test]
fn read_only_and_off_come_from_the_command_line() {
    let Some(out) = outside_dir("modes") else {
        return;
    };
    let (home, server) = run_turn(
        terminal(json!({ "command": "touch inside" })),
        "",
        &["--sandbox", "read-only"],
    );
    assert!(!home.workdir().join("inside").exists());
    let result = tool_result(&server, 0);
    assert_eq!(result["exit_code"], 1, "{result}");
    assert!(
        result["sandbox"].as_str().unwrap().contains("read-only"),
        "{result}"
    );

    // `off` on the command line beats the file's mode.
    let target = out.join("free");
    let (_, server) = run_turn(
        terminal(json!({ "command": format!("touch {}", target.display()) })),
        "terminal:\n  sandbox:\n    mode: read-only\n",
        &["--sandbox", "off"],
    );
    assert_eq!(tool_result(&server, 0)["exit_code"], 0);
    assert!(target.exists());
}

#[test]
fn leaving_the_sandbox_needs_an_approval_and_yolo_gives_it() {
    let Some(out) = outside_dir("escape") else {
        return;
    };
    let target = out.join("escaped");
    let args = json!({ "command": format!("touch {}", target.display()), "sandbox": false });
    let (_, server) = run_turn(terminal(args.clone()), "", &[]);
    let result = tool_result(&server, 0);
    let text = result.to_string();
    assert!(text.contains("BLOCKED"), "{text}");
    assert!(text.contains("outside the OS sandbox"), "{text}");
    assert!(!target.exists());

    let (_, server) = run_turn(terminal(args), "", &["--yolo"]);
    assert_eq!(tool_result(&server, 0)["exit_code"], 0);
    assert!(target.exists());
}

#[test]
fn background_jobs_and_scripts_run_in_the_sandbox_too() {
    let Some(out) = outside_dir("jobs") else {
        return;
    };
    let bg = out.join("from_background");
    let script = Script::new(vec![
        Turn::tool(
            "terminal",
            json!({ "command": format!("touch {}; echo finished", bg.display()), "background": true }),
        ),
        Turn::tool(
            "process",
            json!({ "action": "wait", "id": "proc_1", "timeout": 10 }),
        ),
        Turn::text("done"),
    ]);
    let (_, server) = run_turn(script, "", &[]);
    let waited = tool_result(&server, 1).to_string();
    assert!(waited.contains("Permission denied"), "{waited}");
    assert!(waited.contains("finished"), "{waited}");
    assert!(!bg.exists());

    let python_ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !python_ok {
        eprintln!("skipping the execute_code half: python3 is not installed");
        return;
    }
    let py = out.join("from_script");
    let code = format!(
        "try:\n    open({:?}, 'w').write('x')\n    print('wrote')\nexcept PermissionError as e:\n    print('refused', e.errno)\nopen('inside.txt', 'w').write('ok')\nprint('inside ok')\n",
        py.display().to_string()
    );
    let (home, server) = run_turn(
        Script::new(vec![
            Turn::tool("execute_code", json!({ "code": code })),
            Turn::text("done"),
        ]),
        "",
        &[],
    );
    let result = tool_result(&server, 0).to_string();
    assert!(result.contains("refused 13"), "{result}");
    assert!(result.contains("inside ok"), "{result}");
    assert!(!py.exists());
    assert!(home.workdir().join("inside.txt").exists());
}

#[test]
fn doctor_names_the_mode_and_a_bad_mode_is_a_clear_error() {
    if outside_dir("doctor").is_none() {
        return;
    }
    let home = TestHome::new();
    home.write_config("terminal:\n  sandbox:\n    network: true\n    writable_roots: [~/data]\n");
    let o = run(&home, &["doctor", "--offline"]);
    assert!(
        stdout(&o).contains(
            "✓ sandbox      workspace-write: writes only in the working directory, temp, caches and 1 more directory; network on\n"
        ),
        "{}",
        stdout(&o)
    );
    let o = run(&home, &["--sandbox", "off", "doctor", "--offline"]);
    let text = stdout(&o);
    assert!(
        text.contains("! sandbox      off: the agent's commands run with your full rights"),
        "{text}"
    );

    let server = MockServer::start(Script::new(vec![Turn::text("never asked")]));
    home.write_config(&format!(
        "{}terminal:\n  sandbox:\n    mode: sideways\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = run(&home, &["doctor", "--offline"]);
    assert!(
        stdout(&o).contains("✗ sandbox      ")
            && stdout(&o).contains("unknown sandbox mode `sideways`"),
        "{}",
        stdout(&o)
    );
    let o = run(&home, &["-z", "hi"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("terminal.sandbox.mode") && stderr(&o).contains("sideways"),
        "{}",
        stderr(&o)
    );
    let o = run(&home, &["--sandbox", "sideways", "-z", "hi"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown sandbox mode"),
        "{}",
        stderr(&o)
    );
    assert_eq!(server.chat_request_count(), 0);
}
