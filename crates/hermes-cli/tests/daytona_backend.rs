//! The Daytona terminal backend through the binary (`hermes -z` against the scripted mock
//! model) and the testkit's Daytona double: the sandbox is created on the first command with
//! the configured image and resources, commands and the file tools act in it through the
//! toolbox (a file write's content travels as an upload), nothing of the host's environment
//! is sent, only the API key goes to the API, a timeout kills the command in the sandbox, a
//! sandbox Daytona stopped while idle is started again by the next command, and the sandbox is
//! deleted at session end (only stopped when persistent); sandboxes a dead Hermes of this host
//! left behind are deleted before a new one is made. A refused create is the tool's error, and
//! `hermes doctor` checks the key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_testkit::platforms::daytona::{API_KEY, DaytonaMock};
use hermes_testkit::{MockServer, Reply, Script, TestHome, Turn};
use serde_json::json;

fn run_session(mock: &DaytonaMock, home: &TestHome, script: Script, extra: &str) -> MockServer {
    let server = MockServer::start(script);
    home.write_config(&format!(
        "{}terminal:\n  backend: daytona\n  daytona_image: test/image:1\n  container_memory: 2048\n  container_disk: 4096\n{extra}",
        hermes_testkit::mock_config_yaml(&server),
    ));
    std::fs::write(
        home.hermes_home().join(".env"),
        format!(
            "DAYTONA_API_KEY={API_KEY}\nDAYTONA_API_URL={}\nHERMES_DOTENV_SECRET_TOKEN=dotenv-secret-value-123\n",
            mock.api_url()
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
fn commands_and_files_act_in_the_sandbox_which_restarts_after_idling_and_is_deleted() {
    let mock = DaytonaMock::start();
    mock.auto_stop_after(std::time::Duration::from_millis(800));
    let home = TestHome::new();
    let script = Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo in-sandbox; pwd; env"})),
        Turn::tool(
            "write_file",
            json!({"path": "notes/it's a file.txt", "content": "hello world\nsecond line\n"}),
        ),
        Turn::tool("read_file", json!({"path": "notes/it's a file.txt"})),
        Turn::tool(
            "patch",
            json!({"path": "notes/it's a file.txt", "old_string": "hello world", "new_string": "hello daytona"}),
        ),
        Turn::tool("search_files", json!({"pattern": "daytona"})),
        Turn::tool(
            "terminal",
            json!({"command": "sleep 7713; echo never", "timeout": 1}),
        ),
        // The model thinks for a while: Daytona stops the idle sandbox meanwhile.
        Reply::tool_call(
            "terminal",
            json!({"command": "cat \"notes/it's a file.txt\""}),
        )
        .with_delay_ms(1_500)
        .into(),
        Turn::tool(
            "terminal",
            json!({"command": "ps -eo args | grep 'sleep 771[3]' || echo no-sleep"}),
        ),
        Turn::tool(
            "execute_code",
            json!({"code": "from hermes_tools import read_file, terminal\nprint(read_file(\"notes/it's a file.txt\")['content'])\nprint(terminal('echo via-toolbox')['output'].strip())"}),
        ),
        Turn::text("done"),
    ]);
    // Ten tool calls would start the background skill review: not what this test is about.
    let server = run_session(
        &mock,
        &home,
        script,
        "  container_persistent: false\nskills:\n  creation_nudge_interval: 0\n",
    );

    // Created once, with the image and resources, no host variables.
    let creates: Vec<String> = mock
        .requests()
        .into_iter()
        .filter(|r| r == "POST /api/sandbox")
        .collect();
    assert_eq!(creates.len(), 1, "{:?}", mock.requests());
    let executes = mock.executes();
    assert!(!executes.is_empty());
    for auth in mock.authorizations() {
        assert_eq!(auth, format!("Bearer {API_KEY}"));
    }

    let env = tool_result(&server, 0);
    let out = env["output"].as_str().unwrap();
    assert!(out.contains("in-sandbox"), "{out}");
    for secret in [
        "OPENAI_API_KEY",
        "HERMES_DOTENV_SECRET_TOKEN",
        "sk-host-secret",
        "dotenv-secret",
        "DAYTONA_API_KEY",
        API_KEY,
    ] {
        assert!(!out.contains(secret), "{secret} reached the sandbox: {out}");
        for e in &executes {
            assert!(
                !e.to_string().contains(secret),
                "{secret} sent to the toolbox: {e}"
            );
        }
    }

    let write = tool_result(&server, 1);
    assert_eq!(write["created"], true, "{write}");
    let written = write["path"].as_str().unwrap().to_string();
    assert!(written.ends_with("/notes/it's a file.txt"), "{write}");
    // The content travelled as an upload, not inside a command line.
    let uploads = mock.uploads();
    assert!(
        uploads
            .iter()
            .any(|(p, n)| p.starts_with("/tmp/.hermes-stdin-") && *n == 24),
        "{uploads:?}"
    );
    for e in &executes {
        assert!(
            !e["command"].as_str().unwrap().contains("second line"),
            "{e}"
        );
    }
    let read = tool_result(&server, 2);
    assert_eq!(read["content"], "1|hello world\n2|second line", "{read}");
    let patch = tool_result(&server, 3);
    assert_eq!(patch["replacements"], 1, "{patch}");
    let search = tool_result(&server, 4);
    assert!(
        search["matches"]
            .as_str()
            .unwrap()
            .contains("notes/it's a file.txt:1:hello daytona"),
        "{search}"
    );
    let timed_out = tool_result(&server, 5);
    assert!(
        timed_out["error"].as_str().unwrap().contains("timed out"),
        "{timed_out}"
    );
    // Stopped while idle, started again by the next command, files kept.
    assert_eq!(mock.auto_stops(), 1, "{:?}", mock.requests());
    assert!(
        mock.requests()
            .iter()
            .any(|r| r.starts_with("POST /api/sandbox/") && r.ends_with("/start")),
        "{:?}",
        mock.requests()
    );
    let cat = tool_result(&server, 6);
    assert!(
        cat["output"]
            .as_str()
            .unwrap()
            .contains("hello daytona\nsecond line"),
        "{cat}"
    );
    let ps = tool_result(&server, 7);
    assert!(ps["output"].as_str().unwrap().contains("no-sleep"), "{ps}");
    // A script runs in the sandbox too, its tool calls answered through files there.
    let code = tool_result(&server, 8);
    assert_eq!(code["status"], "success", "{code}");
    assert_eq!(code["tool_calls_made"], 2, "{code}");
    assert_eq!(
        code["output"], "1|hello daytona\n2|second line\nvia-toolbox\n",
        "{code}"
    );

    // Deleted at session end.
    assert!(mock.sandboxes().is_empty(), "{:?}", mock.sandboxes());
    assert!(
        mock.requests()
            .iter()
            .any(|r| r.starts_with("DELETE /api/sandbox/"))
    );
}

#[test]
fn a_persistent_sandbox_is_stopped_and_reused_with_the_create_body_of_the_python_hermes() {
    let mock = DaytonaMock::start();
    let home = TestHome::new();
    let first = Script::new(vec![
        Turn::tool(
            "write_file",
            json!({"path": "kept.txt", "content": "kept\n"}),
        ),
        Turn::text("done"),
    ]);
    run_session(&mock, &home, first, "  container_persistent: true\n");
    let sandboxes = mock.sandboxes();
    assert_eq!(sandboxes.len(), 1);
    let s = &sandboxes[0];
    assert_eq!(s.state, "stopped", "persistent: stopped, not deleted");
    let body = &s.create;
    assert_eq!(
        body["buildInfo"]["dockerfileContent"], "FROM test/image:1\n",
        "{body}"
    );
    assert_eq!(body["memory"], 2, "{body}");
    assert_eq!(body["disk"], 4, "{body}");
    assert_eq!(body["cpu"], 1, "{body}");
    assert_eq!(body["autoStopInterval"], 15, "{body}");
    assert!(s.name.starts_with("hermes-home-"), "{}", s.name);
    assert_eq!(body["labels"]["hermes_task_id"], s.name["hermes-".len()..]);
    assert!(body.get("env").is_none(), "{body}");

    let second = Script::new(vec![
        Turn::tool("read_file", json!({"path": "kept.txt"})),
        Turn::text("done"),
    ]);
    let server = run_session(&mock, &home, second, "  container_persistent: true\n");
    assert_eq!(tool_result(&server, 0)["content"], "1|kept", "reused");
    assert_eq!(mock.sandboxes().len(), 1);
    assert_eq!(
        mock.requests()
            .iter()
            .filter(|r| *r == "POST /api/sandbox")
            .count(),
        1
    );
}

#[test]
fn a_refused_create_is_the_tools_error_and_doctor_checks_the_key() {
    let mock = DaytonaMock::start();
    mock.refuse_create(403, "Total CPU quota exceeded. Maximum allowed: 10");
    let home = TestHome::new();
    let server = run_session(
        &mock,
        &home,
        Script::new(vec![
            Turn::tool("terminal", json!({"command": "echo hi"})),
            Turn::tool("read_file", json!({"path": "x.txt"})),
            Turn::text("done"),
        ]),
        "",
    );
    for n in [0, 1] {
        let r = tool_result(&server, n);
        let e = r["error"].as_str().unwrap_or_default();
        assert!(
            e.contains("the Daytona API refused the request (HTTP 403): Total CPU quota exceeded"),
            "{r}"
        );
    }

    let doctor = home
        .command(bin())
        .args(["doctor", "--offline"])
        .output()
        .unwrap();
    let text = stdout(&doctor);
    let line = text
        .lines()
        .find(|l| l.contains("backend daytona"))
        .unwrap_or_else(|| panic!("no terminal line: {text}"));
    assert!(line.contains("accepts the API key"), "{text}");

    std::fs::write(
        home.hermes_home().join(".env"),
        format!(
            "DAYTONA_API_KEY=wrong\nDAYTONA_API_URL={}\n",
            mock.api_url()
        ),
    )
    .unwrap();
    let doctor = home
        .command(bin())
        .args(["doctor", "--offline"])
        .output()
        .unwrap();
    let text = stdout(&doctor);
    assert!(
        text.contains("the Daytona API refused the request (HTTP 401): Invalid API key"),
        "{text}"
    );
    std::fs::write(home.hermes_home().join(".env"), "").unwrap();
    let doctor = home
        .command(bin())
        .args(["doctor", "--offline"])
        .output()
        .unwrap();
    let text = stdout(&doctor);
    assert!(text.contains("DAYTONA_API_KEY is not set"), "{text}");
    assert!(text.contains("app.daytona.io/dashboard/keys"), "{text}");
}

#[test]
fn sandboxes_left_by_a_dead_hermes_of_this_host_are_deleted_before_a_new_one_is_made() {
    let mock = DaytonaMock::start();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    // A pid that surely is not running any more.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id().to_string();
    gone.wait().unwrap();
    // A live process named like Hermes (its comm is the symlink's name).
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("hermes-sleeper");
    std::os::unix::fs::symlink("/bin/sleep", &fake).unwrap();
    let mut alive = std::process::Command::new(&fake).arg("30").spawn().unwrap();
    let labels = |pid: &str, host: &str| json!({"hermes_task_id": "x", "hermes_host": host, "hermes_pid": pid});
    let orphan = mock.seed("hermes-orphan", labels(&dead, &host));
    let running = mock.seed("hermes-running", labels(&alive.id().to_string(), &host));
    let elsewhere = mock.seed("hermes-elsewhere", labels(&dead, "another-host"));
    let persistent = mock.seed("hermes-home-0123", json!({"hermes_task_id": "home-0123"}));

    let home = TestHome::new();
    let script = Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo hi"})),
        Turn::text("done"),
    ]);
    let server = run_session(&mock, &home, script, "  container_persistent: false\n");
    alive.kill().unwrap();
    let _ = alive.wait();
    assert!(
        tool_result(&server, 0)["output"]
            .as_str()
            .unwrap()
            .contains("hi")
    );
    let left: Vec<String> = mock.sandboxes().into_iter().map(|s| s.id).collect();
    assert_eq!(
        left,
        [running, elsewhere, persistent],
        "{:?}",
        mock.requests()
    );
    assert!(
        mock.requests()
            .contains(&format!("DELETE /api/sandbox/{orphan}")),
        "{:?}",
        mock.requests()
    );
}

#[test]
fn a_background_jobs_output_shows_in_process_poll_while_it_runs() {
    let mock = DaytonaMock::start();
    let home = TestHome::new();
    let script = Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": "echo first; sleep 4; echo second", "background": true}),
        ),
        // The model takes a moment: the job has printed its first line, not its second.
        Reply::tool_call("process", json!({"action": "poll", "id": "proc_1"}))
            .with_delay_ms(1_500)
            .into(),
        Turn::tool(
            "process",
            json!({"action": "wait", "id": "proc_1", "timeout": 20}),
        ),
        Turn::text("done"),
    ]);
    let server = run_session(&mock, &home, script, "  container_persistent: false\n");
    let started = tool_result(&server, 0);
    assert_eq!(started["id"], "proc_1", "{started}");
    let poll = tool_result(&server, 1);
    assert_eq!(poll["status"], "running", "{poll}");
    let seen = poll["new_output"].as_str().unwrap_or_default();
    assert!(seen.contains("first"), "{poll}");
    assert!(!seen.contains("second"), "{poll}");
    let waited = tool_result(&server, 2);
    assert_eq!(waited["exit_code"], 0, "{waited}");
    assert!(
        waited["output"]
            .as_str()
            .unwrap_or_default()
            .contains("first\nsecond"),
        "{waited}"
    );
    // The job ran detached in the sandbox, started through the SSH backend's scripts.
    assert!(
        mock.executes()
            .iter()
            .any(|e| e["command"].as_str().unwrap_or_default().contains("setsid")),
        "{:?}",
        mock.executes()
    );
}
