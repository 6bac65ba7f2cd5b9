//! The `hermes` binary end to end: a clean temp home, the scripted mock server, and assertions on
//! stdout, stderr, exit codes and the requests the binary sent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hermes_testkit::{Fault, MockServer, Reply, Script, TestHome, Turn};
use serde_json::json;

/// The bench's config plus fast retries.
fn fast_config(server: &MockServer) -> String {
    format!(
        "{}agent:\n  retry_base_delay: 0.01\n  retry_max_delay: 0.05\n",
        hermes_testkit::mock_config_yaml(server)
    )
}

#[test]
fn version_prints_name_and_version() {
    let home = TestHome::new();
    let o = run(&home, &["--version"]);
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        format!("hermes {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn oneshot_prints_only_the_final_answer() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo hello"})),
        Turn::text("The terminal said hello."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "say hello"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "The terminal said hello.\n");
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 2);
    let result = reqs[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(result["content"].as_str().unwrap().contains("hello"));
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-mock-not-a-real-key")
    );
}

#[test]
fn chat_query_streams_the_answer_with_tool_lines() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo hi"})),
        Turn::text("All done."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["chat", "-q", "go"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("✓ terminal  echo hi"), "{out}");
    assert!(out.trim_end().ends_with("All done."), "{out}");
}

#[test]
fn a_failed_run_exits_non_zero_with_one_line_on_stderr() {
    let server = MockServer::start(Script::new(vec![
        Fault::http(401, "Incorrect API key provided (mock)").into(),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "",
        "no error text printed as if it were the answer"
    );
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("401") && err.contains("model.api_key"),
        "{err}"
    );
}

#[test]
fn exhausted_retries_exit_non_zero() {
    let e = || Turn::from(Fault::http(500, "Internal server error (mock)"));
    let server = MockServer::start(Script::new(vec![e(), e(), e(), e(), e()]));
    let home = TestHome::new();
    home.write_config(&fast_config(&server));
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("API call failed after 3 retries: HTTP 500"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn invalid_yaml_names_file_line_and_column_and_exits_2() {
    let home = TestHome::new();
    home.write_config("model:\n  provider: custom\n  default: [oops\n");
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    let path = home.hermes_home().join("config.yaml");
    assert!(err.contains(&format!("{}:3:", path.display())), "{err}");
    assert!(err.contains("invalid YAML"), "{err}");
}

#[test]
fn a_config_that_is_a_directory_is_a_clear_error() {
    let home = TestHome::new();
    std::fs::create_dir_all(home.hermes_home().join("config.yaml")).unwrap();
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
}

#[test]
fn a_home_that_cannot_be_created_is_a_clear_error() {
    let home = TestHome::new();
    let blocker = home.root().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let o = home
        .command(bin())
        .env("HERMES_HOME", blocker.join("home"))
        .args(["-z", "hi"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot create it"), "{}", stderr(&o));
}

#[test]
fn no_provider_falls_back_to_the_local_model_and_says_how_to_get_it() {
    // Nothing configured, no key: the default local model, which a fresh home does not have.
    let home = TestHome::new();
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(err.contains("model.provider"), "{err}");
    if cfg!(feature = "local") {
        assert!(err.contains("hermes model fetch-local"), "{err}");
    } else {
        assert!(err.contains("--features local"), "{err}");
    }
}

#[test]
fn flags_override_config() {
    let server = MockServer::start(Script::new(vec![Turn::text("ok")]));
    let home = TestHome::new();
    home.write_config(
        "model:\n  provider: custom\n  default: from-config\n  base_url: http://127.0.0.1:9/v1\n",
    );
    let o = run(
        &home,
        &[
            "-z",
            "hi",
            "--base-url",
            &server.base_url(),
            "-m",
            "from-flag",
            "-t",
            "file",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let req = &server.chat_requests()[0];
    assert_eq!(req["model"], "from-flag");
    let names: Vec<&str> = req["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_file", "write_file", "patch", "search_files"]);
    assert!(
        server.requests()[0].header("authorization").is_none(),
        "loopback needs no key"
    );
}

#[test]
fn an_unknown_toolset_is_a_usage_error() {
    let server = MockServer::start(Script::new(vec![]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "hi", "-t", "nonsense"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown toolset `nonsense`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn max_turns_flag_limits_model_calls() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "true"})),
        Turn::text("wrap-up"),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "hi", "--max-turns", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "wrap-up\n");
    assert!(stderr(&o).contains("agent.max_turns"), "{}", stderr(&o));
    assert!(server.chat_requests()[1].get("tools").is_none());
}

#[test]
fn a_huge_tool_output_reaches_the_model_bounded() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "terminal",
            json!({"command": "head -c 10000000 /dev/urandom"}),
        ),
        Turn::text("ok"),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let raw = &server.requests()[1].raw_body;
    assert!(raw.len() < 200_000, "request body {} bytes", raw.len());
}

#[test]
fn sigint_interrupts_a_oneshot_with_exit_130() {
    let server = MockServer::start(Script::new(vec![Fault::hang(30_000).into()]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let child = home
        .command(bin())
        .args(["-z", "hi"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(server.wait_for_chat_requests(1, Duration::from_secs(10)));
    let started = Instant::now();
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(o.status.code(), Some(130));
    assert_eq!(stdout(&o), "");
    // Regression: the cut-off answer was stored as a normal `stop`.
    let store = hermes_store::Store::open(home.hermes_home().join("sessions.db")).unwrap();
    let session = store.latest_session(None).unwrap().unwrap();
    let messages = store.messages(&session.id).unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last.message.content, "[interrupted]");
    assert_eq!(
        last.finish_reason.as_deref(),
        Some(hermes_store::INTERRUPTED)
    );
    assert_eq!(session.end_reason.as_deref(), Some("interrupted"));
}

#[test]
fn interactive_chat_keeps_history_and_new_resets_it() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("first answer"),
        Turn::text("second answer"),
        Reply::text("fresh answer").into(),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run_with_stdin(&home, &["chat"], "one\ntwo\n/new\nthree \\\ncontinued\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("first answer")
            && out.contains("second answer")
            && out.contains("fresh answer"),
        "{out}"
    );
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(
        reqs[1]["messages"].as_array().unwrap().len(),
        4,
        "system, one, first answer, two"
    );
    let third = reqs[2]["messages"].as_array().unwrap();
    assert_eq!(third.len(), 2, "/new starts over");
    assert_eq!(third[1]["content"], "three \ncontinued");
}
