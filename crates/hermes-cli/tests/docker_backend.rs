//! The Docker terminal backend through the binary (`hermes -z` against the scripted mock
//! model) and a private Docker daemon with a busybox image: commands, background jobs and the
//! file tools act inside the container, not on the host; the host's secrets are absent from
//! the container's environment; a timeout kills the command inside the container; the session
//! container is removed at the end, and a persistent one is kept and reused.
//!
//! Skipped with a printed reason where dockerd cannot run (not installed, not root).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_testkit::docker::{DockerDaemon, MARKER, TEST_IMAGE};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::json;

fn daemon() -> Option<DockerDaemon> {
    match DockerDaemon::start() {
        Ok(d) => Some(d),
        Err(why) => {
            eprintln!("skipping: {why}");
            None
        }
    }
}

fn docker_config(persistent: bool) -> String {
    format!(
        "terminal:\n  backend: docker\n  docker_image: {TEST_IMAGE}\n  docker_env:\n    FOO_SET: bar\n  docker_forward_env: [HERMES_FWD]\n  container_memory: 256\n  docker_network: false\n  container_persistent: {persistent}\n"
    )
}

/// Runs one `-z` turn of `script` in `home` against `d`, with host secrets in the environment
/// and in `$HERMES_HOME/.env`.
fn run_session(d: &DockerDaemon, home: &TestHome, script: Script, persistent: bool) -> MockServer {
    let server = MockServer::start(script);
    home.write_config(&format!(
        "{}{}",
        hermes_testkit::mock_config_yaml(&server),
        docker_config(persistent)
    ));
    std::fs::write(
        home.hermes_home().join(".env"),
        "HERMES_DOTENV_SECRET_TOKEN=dotenv-secret-value-123\n",
    )
    .unwrap();
    let o = home
        .command(bin())
        .env("DOCKER_HOST", d.host())
        .env("OPENAI_API_KEY", "sk-host-secret-abcdef123456")
        .env("HERMES_FWD", "forwarded-value")
        .args(["-z", "go"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    server
}

#[test]
fn commands_files_and_jobs_act_in_the_container_and_a_persistent_one_is_reused() {
    let Some(d) = daemon() else { return };
    let home = TestHome::new();
    let script = Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": "cat /etc/hermes-marker; pwd; env"}),
        ),
        Turn::tool(
            "write_file",
            json!({"path": "notes/it's a file.txt", "content": "hello world\nsecond line\n"}),
        ),
        Turn::tool("read_file", json!({"path": "notes/it's a file.txt"})),
        Turn::tool(
            "patch",
            json!({"path": "/workspace/notes/it's a file.txt", "old_string": "hello world", "new_string": "hello container"}),
        ),
        Turn::tool("search_files", json!({"pattern": "container"})),
        Turn::tool(
            "terminal",
            json!({"command": "echo started; sleep 55", "background": true}),
        ),
        Turn::tool("process", json!({"action": "poll", "id": "proc_1"})),
        Turn::tool(
            "terminal",
            json!({"command": "sleep 77; echo never", "timeout": 1}),
        ),
        Turn::tool("terminal", json!({"command": "ps -o pid,args"})),
        Turn::text("done"),
    ]);
    let server = run_session(&d, &home, script, true);

    let env = tool_result(&server, 0);
    let out = env["output"].as_str().unwrap();
    assert!(out.contains(MARKER), "not in the container: {out}");
    assert!(out.contains("/workspace"), "{out}");
    assert!(out.contains("FOO_SET=bar"), "docker_env missing: {out}");
    assert!(out.contains("HERMES_FWD=forwarded-value"), "{out}");
    for secret in [
        "OPENAI_API_KEY",
        "HERMES_DOTENV_SECRET_TOKEN",
        "sk-host-secret",
        "dotenv-secret",
    ] {
        assert!(
            !out.contains(secret),
            "{secret} leaked into the container: {out}"
        );
    }

    let write = tool_result(&server, 1);
    assert_eq!(write["created"], true, "{write}");
    assert_eq!(write["path"], "/workspace/notes/it's a file.txt", "{write}");
    let read = tool_result(&server, 2);
    assert_eq!(read["content"], "1|hello world\n2|second line", "{read}");
    let patch = tool_result(&server, 3);
    assert_eq!(patch["replacements"], 1, "{patch}");
    let search = tool_result(&server, 4);
    assert!(
        search["matches"]
            .as_str()
            .unwrap()
            .contains("notes/it's a file.txt:1:hello container"),
        "{search}"
    );
    let job = tool_result(&server, 5);
    assert_eq!(job["id"], "proc_1", "{job}");
    let poll = tool_result(&server, 6);
    assert_eq!(poll["status"], "running", "{poll}");
    let timed_out = tool_result(&server, 7);
    assert!(
        timed_out["error"].as_str().unwrap().contains("timed out"),
        "{timed_out}"
    );
    let ps = tool_result(&server, 8)["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !ps.contains("sleep 77"),
        "the timed-out command still runs: {ps}"
    );
    assert!(ps.contains("sleep 55"), "the background job is gone: {ps}");

    // The files are the container's, not the host's.
    assert!(!home.workdir().join("notes").exists());
    let names = d.containers_with_label("hermes.session");
    assert_eq!(names.len(), 1, "{names:?}");
    let inside = d.docker_out(&["exec", &names[0], "cat", "/workspace/notes/it's a file.txt"]);
    assert_eq!(inside, "hello container\nsecond line");
    // The session's end killed the background job but kept the persistent container.
    let ps = d.docker_out(&["exec", &names[0], "ps", "-o", "args"]);
    assert!(!ps.contains("sleep 55"), "{ps}");

    // A later session of the same home finds the workspace as it was left.
    let script = Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": "cat \"notes/it's a file.txt\""}),
        ),
        Turn::text("done"),
    ]);
    let server = run_session(&d, &home, script, true);
    let again = tool_result(&server, 0);
    assert!(
        again["output"]
            .as_str()
            .unwrap()
            .contains("hello container"),
        "{again}"
    );
    assert_eq!(d.containers_with_label("hermes.session"), names);
}

#[test]
fn a_session_container_is_removed_at_the_end() {
    let Some(d) = daemon() else { return };
    let home = TestHome::new();
    let script = Script::new(vec![
        Turn::tool("terminal", json!({"command": "cat /etc/hermes-marker"})),
        Turn::tool("execute_code", json!({"code": "print(1)"})),
        Turn::text("done"),
    ]);
    let server = run_session(&d, &home, script, false);
    let out = tool_result(&server, 0);
    assert!(out["output"].as_str().unwrap().contains(MARKER), "{out}");
    // execute_code runs in the container, whose busybox image has no Python: said so.
    let code = tool_result(&server, 1);
    assert_eq!(code["status"], "error", "{code}");
    assert_eq!(code["exit_code"], 127, "{code}");
    assert_eq!(
        code["error"], "execute_code needs python3 in the environment (terminal.backend: docker)",
        "{code}"
    );
    assert!(
        d.containers_with_label("hermes.session").is_empty(),
        "the session container outlived the session"
    );
}

#[test]
fn a_missing_image_and_an_unknown_backend_say_what_to_do() {
    let home = TestHome::new();
    let server = MockServer::start(Script::new(vec![Turn::text("done")]));
    home.write_config(&format!(
        "{}terminal:\n  backend: kubernetes\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = run(&home, &["-z", "go"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("terminal.backend"), "{err}");
    assert!(err.contains("local, docker, ssh"), "{err}");

    home.write_config(&format!(
        "{}terminal:\n  backend: modal\n  modal_mode: grpc\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = run(&home, &["-z", "go"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("terminal.modal_mode"), "{}", stderr(&o));

    let Some(d) = daemon() else { return };
    let script = Script::new(vec![
        Turn::tool("terminal", json!({"command": "true"})),
        Turn::text("done"),
    ]);
    let server = MockServer::start(script);
    home.write_config(&format!(
        "{}terminal:\n  backend: docker\n  docker_image: hermes-no-such-image:1\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = home
        .command(bin())
        .env("DOCKER_HOST", d.host())
        .args(["-z", "go"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let result = tool_result(&server, 0);
    let error = result["error"].as_str().unwrap_or_default();
    assert!(error.contains("hermes-no-such-image:1"), "{result}");
    assert!(error.contains("not on this machine"), "{result}");

    let doctor = home
        .command(bin())
        .env("DOCKER_HOST", d.host())
        .args(["doctor", "--offline"])
        .output()
        .unwrap();
    let text = stdout(&doctor);
    assert!(text.contains("hermes-no-such-image:1"), "{text}");
}
