//! The Modal terminal backend (Modal through the Nous tool gateway, as the Python Hermes's
//! managed Modal) through the binary and the testkit's gateway double: the sandbox is created
//! on the first command with the Python Hermes's create body and an idempotency key, commands
//! and file tools run as execs (a file's content as `stdinData`), a timeout cancels the exec,
//! a sandbox the gateway hibernated while idle is restored by the next exec, the sandbox is
//! terminated at session end (with a snapshot when persistent), host variables never reach
//! it, and `modal_mode: direct` or a missing token is a clear error.
//!
//! Skipped with a printed reason where the double cannot mount a sandbox over /root.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_testkit::platforms::modal_gateway::{ModalGatewayMock, TOKEN};
use hermes_testkit::{MockServer, Reply, Script, TestHome, Turn};
use serde_json::json;

fn gateway() -> Option<ModalGatewayMock> {
    match ModalGatewayMock::usable() {
        Ok(()) => Some(ModalGatewayMock::start()),
        Err(why) => {
            eprintln!("skipping: {why}");
            None
        }
    }
}

fn run_session(
    mock: &ModalGatewayMock,
    home: &TestHome,
    script: Script,
    extra: &str,
    token: &str,
) -> MockServer {
    let server = MockServer::start(script);
    home.write_config(&format!(
        "{}terminal:\n  backend: modal\n  modal_image: python:3.12-slim\n{extra}",
        hermes_testkit::mock_config_yaml(&server),
    ));
    std::fs::write(
        home.hermes_home().join(".env"),
        format!(
            "TOOL_GATEWAY_USER_TOKEN={token}\nMODAL_GATEWAY_URL={}\nHERMES_DOTENV_SECRET_TOKEN=dotenv-secret-value-123\n",
            mock.url()
        ),
    )
    .unwrap();
    let o = home
        .command(bin())
        .env("OPENAI_API_KEY", "sk-host-secret-abcdef123456")
        .args(["-z", "go"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    server
}

#[test]
fn commands_and_files_run_as_gateway_execs_and_the_sandbox_is_terminated() {
    let Some(mock) = gateway() else { return };
    let home = TestHome::new();
    let script = Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo in-modal; pwd; env"})),
        Turn::tool(
            "write_file",
            json!({"path": "notes/a file.txt", "content": "hello world\nsecond line\n"}),
        ),
        Turn::tool("read_file", json!({"path": "/root/notes/a file.txt"})),
        Turn::tool(
            "patch",
            json!({"path": "notes/a file.txt", "old_string": "hello world", "new_string": "hello modal"}),
        ),
        Turn::tool("search_files", json!({"pattern": "modal"})),
        Turn::tool(
            "terminal",
            json!({"command": "sleep 7714; echo never", "timeout": 1}),
        ),
        Reply::tool_call("terminal", json!({"command": "cat 'notes/a file.txt'"}))
            .with_delay_ms(1_000)
            .into(),
        Turn::text("done"),
    ]);
    // Hibernate the sandbox while the model "thinks" before the last command.
    let server = {
        let mock = &mock;
        std::thread::scope(|scope| {
            let watcher = scope.spawn(move || {
                wait("the timed-out exec's cancel", || !mock.cancels().is_empty());
                mock.hibernate_idle()
            });
            let server = run_session(
                mock,
                &home,
                script,
                "  container_persistent: false\n",
                TOKEN,
            );
            assert_eq!(watcher.join().unwrap(), 1);
            server
        })
    };

    let sandboxes = mock.sandboxes();
    assert_eq!(sandboxes.len(), 1, "created once");
    let s = &sandboxes[0];
    assert_eq!(
        s.create,
        json!({
            "image": "python:3.12-slim", "cwd": "/root", "cpu": 1.0, "memoryMiB": 5120,
            "timeoutMs": 3_600_000, "idleTimeoutMs": 300_000, "persistentFilesystem": false,
            "logicalKey": s.create["logicalKey"], "diskMiB": 51200,
        })
    );
    assert_eq!(s.idempotency_key.len(), 36, "{}", s.idempotency_key);
    assert_eq!(s.status, "terminated");
    assert_eq!(s.terminate, Some(json!({"snapshotBeforeTerminate": false})));

    let env = tool_result(&server, 0);
    let out = env["output"].as_str().unwrap();
    assert!(out.contains("in-modal\n/root"), "{out}");
    for secret in [
        "OPENAI_API_KEY",
        "HERMES_DOTENV_SECRET_TOKEN",
        "sk-host-secret",
        "dotenv-secret",
        TOKEN,
    ] {
        assert!(!out.contains(secret), "{secret} reached the sandbox: {out}");
        for e in mock.exec_requests() {
            assert!(!e.to_string().contains(secret), "{secret} sent: {e}");
        }
    }
    let write = tool_result(&server, 1);
    assert_eq!(write["path"], "/root/notes/a file.txt", "{write}");
    assert!(
        mock.exec_requests()
            .iter()
            .any(|e| e["stdinData"] == "hello world\nsecond line\n"),
        "the content goes as stdinData"
    );
    let read = tool_result(&server, 2);
    assert_eq!(read["content"], "1|hello world\n2|second line", "{read}");
    assert_eq!(tool_result(&server, 3)["replacements"], 1);
    let search = tool_result(&server, 4);
    assert!(
        search["matches"]
            .as_str()
            .unwrap()
            .contains("notes/a file.txt:1:hello modal"),
        "{search}"
    );
    let timed_out = tool_result(&server, 5);
    assert!(
        timed_out["error"].as_str().unwrap().contains("timed out"),
        "{timed_out}"
    );
    // TERM, then KILL after the grace: both cancel the one timed-out exec.
    let cancels = mock.cancels();
    assert!(
        !cancels.is_empty() && cancels.iter().all(|c| *c == cancels[0]),
        "{cancels:?}"
    );
    assert!(
        mock.exec_requests()
            .iter()
            .any(|e| e["execId"] == cancels[0].as_str() && e["command"] == "sleep 7714; echo never"),
        "{cancels:?}"
    );
    let cat = tool_result(&server, 6);
    assert!(
        cat["output"].as_str().unwrap().contains("hello modal"),
        "restored after hibernation with its files: {cat}"
    );
    assert_eq!(mock.sandboxes()[0].restores, 1);
}

#[test]
fn a_persistent_sandbox_is_snapshotted_and_errors_are_clear() {
    let Some(mock) = gateway() else { return };
    let home = TestHome::new();
    let server = run_session(
        &mock,
        &home,
        Script::new(vec![
            Turn::tool(
                "write_file",
                json!({"path": "kept.txt", "content": "kept\n"}),
            ),
            Turn::text("done"),
        ]),
        "",
        TOKEN,
    );
    assert_eq!(tool_result(&server, 0)["created"], true);
    let s = &mock.sandboxes()[0];
    assert_eq!(s.create["persistentFilesystem"], true);
    assert!(
        s.create["logicalKey"]
            .as_str()
            .unwrap()
            .starts_with("home-"),
        "{}",
        s.create
    );
    assert_eq!(s.terminate, Some(json!({"snapshotBeforeTerminate": true})));
    let server = run_session(
        &mock,
        &home,
        Script::new(vec![
            Turn::tool("read_file", json!({"path": "kept.txt"})),
            Turn::text("done"),
        ]),
        "",
        TOKEN,
    );
    assert_eq!(tool_result(&server, 0)["content"], "1|kept", "restored");

    let server = run_session(
        &mock,
        &home,
        Script::new(vec![
            Turn::tool("terminal", json!({"command": "echo hi"})),
            Turn::text("done"),
        ]),
        "",
        "expired-token",
    );
    let e = tool_result(&server, 0)["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        e.contains(
            "the Modal tool gateway refused the request (HTTP 401): invalid or expired Nous token"
        ),
        "{e}"
    );

    let server = run_session(
        &mock,
        &home,
        Script::new(vec![
            Turn::tool("terminal", json!({"command": "echo hi"})),
            Turn::text("done"),
        ]),
        "  modal_mode: direct\n",
        TOKEN,
    );
    let e = tool_result(&server, 0)["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        e.contains("modal_mode: direct needs Modal's gRPC SDK"),
        "{e}"
    );
    let doctor = home
        .command(bin())
        .args(["doctor", "--offline"])
        .output()
        .unwrap();
    assert!(
        stdout(&doctor).contains("set terminal.modal_mode: managed"),
        "{}",
        stdout(&doctor)
    );
}

#[test]
fn a_background_jobs_output_shows_in_process_poll_while_it_runs() {
    let Some(mock) = gateway() else { return };
    let home = TestHome::new();
    let script = Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": "echo first; sleep 4; echo second", "background": true}),
        ),
        // The model takes a moment: the job has printed its first line, not its second.
        Reply::tool_call("process", json!({"action": "poll", "id": "proc_1"}))
            .with_delay_ms(2_000)
            .into(),
        Turn::tool(
            "process",
            json!({"action": "wait", "id": "proc_1", "timeout": 20}),
        ),
        Turn::text("done"),
    ]);
    let server = run_session(&mock, &home, script, "", TOKEN);
    assert_eq!(tool_result(&server, 0)["id"], "proc_1");
    let poll = tool_result(&server, 1);
    assert_eq!(poll["status"], "running", "{poll}");
    let seen = poll["new_output"].as_str().unwrap_or_default();
    assert!(seen.contains("first") && !seen.contains("second"), "{poll}");
    let waited = tool_result(&server, 2);
    assert_eq!(waited["exit_code"], 0, "{waited}");
    assert!(
        waited["output"]
            .as_str()
            .unwrap_or_default()
            .contains("first\nsecond"),
        "{waited}"
    );
}
