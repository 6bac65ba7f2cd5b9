//! The MCP client against a real MCP server (`hermes-mcp-mock`) over stdio and Streamable HTTP:
//! connect, list, call, error results, timeouts, include/exclude, restart of a dead server,
//! children killed, HTTP headers and sessions, refused credentials.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use hermes_mcp::{Hub, HubOptions, ServerConfig, Status, Transport};
use hermes_tools::{Registry, Tool, ToolContext};
use serde_json::{Value, json};

fn mock(name: &str, env: &[(&str, &str)]) -> ServerConfig {
    ServerConfig {
        name: name.into(),
        transport: Transport::Stdio {
            command: env!("CARGO_BIN_EXE_hermes-mcp-mock").into(),
            args: vec![],
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        },
        timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(30),
        ..ServerConfig::new(
            name,
            Transport::Stdio {
                command: String::new(),
                args: vec![],
                env: vec![],
            },
        )
    }
}

/// Connect and wait until every server is connected or failed.
fn waiting() -> HubOptions {
    HubOptions {
        wait: Some(Duration::MAX),
        ..HubOptions::default()
    }
}

fn http(name: &str, url: &str, headers: &[(&str, &str)]) -> ServerConfig {
    ServerConfig {
        transport: Transport::Http {
            url: url.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        },
        ..mock(name, &[])
    }
}

/// `hermes-mcp-mock --http` with `env`, killed when dropped.
struct HttpMock {
    url: String,
    _server: hermes_testkit::ChildServer,
}

impl HttpMock {
    fn start(env: &[(&str, &str)]) -> HttpMock {
        let server = hermes_testkit::ChildServer::start(
            std::path::Path::new(env!("CARGO_BIN_EXE_hermes-mcp-mock")),
            &["--http"],
            env,
        );
        HttpMock {
            url: format!("http://127.0.0.1:{}/mcp", server.port),
            _server: server,
        }
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools.iter().find(|t| t.name() == name).unwrap().clone()
}

fn call(rt: &tokio::runtime::Runtime, tool: &Arc<dyn Tool>, args: Value) -> (String, bool) {
    let ctx = ToolContext::new(std::env::temp_dir());
    let out = rt.block_on(Registry::execute(tool.as_ref(), args, &ctx));
    (out.content, out.ok)
}

fn pids(path: &std::path::Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect()
}

/// Gone, or a zombie waiting for its parent (this test process).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Err(_) => true,
        Ok(s) => s
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
    }
}

fn wait_dead(pid: u32) -> bool {
    for _ in 0..100 {
        if is_dead(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn connects_lists_and_calls() {
    let rt = rt();
    let hub = Hub::connect(&[mock("my-srv", &[])], waiting());
    assert!(hub.warnings().is_empty(), "{:?}", hub.warnings());
    let tools = hub.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "mcp__my_srv__echo",
            "mcp__my_srv__add",
            "mcp__my_srv__fail",
            "mcp__my_srv__sleep",
            "mcp__my_srv__crash"
        ]
    );
    let echo = find(&tools, "mcp__my_srv__echo");
    assert_eq!(echo.toolset(), "mcp-my-srv");
    assert_eq!(echo.description(), "Echo the text back.");
    assert_eq!(echo.parameters()["required"], json!(["text"]));
    assert_eq!(
        call(&rt, &echo, json!({"text": "hi there"})),
        (r#"{"result":"hi there"}"#.to_string(), true)
    );
    let add = find(&tools, "mcp__my_srv__add");
    assert_eq!(
        call(&rt, &add, json!({"a": 2, "b": 3})).0,
        r#"{"result":"5"}"#
    );
    let fail = find(&tools, "mcp__my_srv__fail");
    assert_eq!(
        call(&rt, &fail, json!({})),
        (r#"{"error":"it failed, [REDACTED]"}"#.to_string(), false)
    );
}

#[test]
fn a_slow_call_times_out() {
    let rt = rt();
    let mut config = mock("slow", &[]);
    config.timeout = Duration::from_millis(300);
    let hub = Hub::connect(&[config], waiting());
    let sleep = find(&hub.tools(), "mcp__slow__sleep");
    let started = std::time::Instant::now();
    assert_eq!(
        call(&rt, &sleep, json!({"ms": 5000})),
        (
            r#"{"error":"MCP tool mcp__slow__sleep timed out after 0.3 s"}"#.to_string(),
            false
        )
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn include_and_exclude_filter_the_tools() {
    let mut only = mock("only", &[]);
    only.include = vec!["echo".into(), "add".into()];
    only.exclude = vec!["echo".into()];
    let mut but = mock("but", &[]);
    but.exclude = vec!["crash".into(), "sleep".into()];
    let mut off = mock("off", &[]);
    off.enabled = false;
    let hub = Hub::connect(&[only, but, off], waiting());
    let tools = hub.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "mcp__only__echo",
            "mcp__only__add",
            "mcp__but__echo",
            "mcp__but__add",
            "mcp__but__fail"
        ]
    );
    assert_eq!(hub.servers()[2].status, Status::Disabled);
}

#[test]
fn failures_are_one_warning_each_and_do_not_delay_the_others() {
    let mut hang = mock("hang", &[("MOCK_HANG", "1")]);
    hang.connect_timeout = Duration::from_millis(800);
    let die = mock("die", &[("MOCK_DIE", "1")]);
    let mut missing = mock("missing", &[]);
    missing.transport = Transport::Stdio {
        command: "/nonexistent/mcp-server".into(),
        args: vec!["--token=abc123".into()],
        env: vec![],
    };
    let remote = http(
        "remote",
        "http://127.0.0.1:1/mcp",
        &[("Authorization", "Bearer s3cr3t")],
    );
    let started = std::time::Instant::now();
    let hub = Hub::connect(&[hang, die, missing, remote, mock("ok", &[])], waiting());
    assert!(started.elapsed() < Duration::from_secs(5));
    let warnings = hub.warnings();
    assert_eq!(warnings.len(), 4, "{warnings:?}");
    assert_eq!(
        warnings[0],
        "MCP server `hang` is unavailable: no answer within 0.8 s"
    );
    assert!(
        warnings[1].starts_with("MCP server `die` is unavailable: the MCP handshake failed"),
        "{warnings:?}"
    );
    assert!(
        warnings[2].starts_with(
            "MCP server `missing` is unavailable: cannot start `/nonexistent/mcp-server`"
        ),
        "{warnings:?}"
    );
    assert!(
        warnings[3].starts_with(
            "MCP server `remote` is unavailable: the MCP handshake with http://127.0.0.1:1/mcp failed: "
        ) && warnings[3].contains("refused")
            && !warnings[3].contains("s3cr3t"),
        "{warnings:?}"
    );
    assert_eq!(hub.tools().len(), 5);
}

#[test]
fn a_dead_server_is_restarted_once_and_children_are_killed() {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let hub = Hub::connect(
        &[mock("d", &[("MOCK_PID_FILE", pid_file.to_str().unwrap())])],
        waiting(),
    );
    let tools = hub.tools();
    let (crash, echo) = (find(&tools, "mcp__d__crash"), find(&tools, "mcp__d__echo"));
    let (out, ok) = call(&rt, &crash, json!({}));
    assert!(
        !ok && out.starts_with(r#"{"error":"MCP call failed"#),
        "{out}"
    );
    let first = pids(&pid_file);
    assert_eq!(first.len(), 1);
    assert!(wait_dead(first[0]));
    assert_eq!(
        call(&rt, &echo, json!({"text": "back"})).0,
        r#"{"result":"back"}"#
    );
    let all = pids(&pid_file);
    assert_eq!(all.len(), 2);
    assert!(!is_dead(all[1]));
    drop((tools, crash, echo, hub));
    assert!(wait_dead(all[1]), "the server outlived its session");
}

#[test]
fn http_servers_list_and_call_with_json_or_sse_answers() {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("headers");
    let log_str = log.to_str().unwrap();
    let json_server = HttpMock::start(&[("MOCK_HEADER_LOG", log_str), ("MOCK_AUTH", "Bearer t0k")]);
    let sse_server = HttpMock::start(&[("MOCK_SSE", "1")]);
    let hub = Hub::connect(
        &[
            http(
                "web",
                &json_server.url,
                &[("Authorization", "Bearer t0k"), ("X-Team", "blue")],
            ),
            http("sse", &sse_server.url, &[]),
        ],
        waiting(),
    );
    assert!(hub.warnings().is_empty(), "{:?}", hub.warnings());
    let tools = hub.tools();
    assert_eq!(tools.len(), 10);
    for prefix in ["mcp__web__", "mcp__sse__"] {
        let echo = find(&tools, &format!("{prefix}echo"));
        assert_eq!(echo.description(), "Echo the text back.");
        assert_eq!(
            call(&rt, &echo, json!({"text": "over http"})),
            (r#"{"result":"over http"}"#.to_string(), true)
        );
        let add = find(&tools, &format!("{prefix}add"));
        assert_eq!(
            call(&rt, &add, json!({"a": 1, "b": 2})).0,
            r#"{"result":"3"}"#
        );
        let fail = find(&tools, &format!("{prefix}fail"));
        assert_eq!(
            call(&rt, &fail, json!({})),
            (r#"{"error":"it failed, [REDACTED]"}"#.to_string(), false)
        );
    }
    let seen = std::fs::read_to_string(&log).unwrap();
    let posts: Vec<&str> = seen.lines().filter(|l| l.starts_with("POST ")).collect();
    assert!(posts.len() >= 5, "{seen}");
    assert_eq!(
        posts[0],
        "POST authorization=Bearer t0k x-team=blue session=-"
    );
    for line in &posts[1..] {
        assert_eq!(
            *line, "POST authorization=Bearer t0k x-team=blue session=mock-session-1",
            "{seen}"
        );
    }
    assert!(
        seen.lines()
            .all(|l| l.contains("authorization=Bearer t0k x-team=blue")),
        "every request carries the headers: {seen}"
    );
}

#[test]
fn an_http_401_is_one_warning_naming_the_server() {
    let server = HttpMock::start(&[("MOCK_AUTH", "Bearer right")]);
    let hub = Hub::connect(
        &[
            http(
                "locked",
                &server.url,
                &[("Authorization", "Bearer wrong-t0ken")],
            ),
            mock("ok", &[]),
        ],
        waiting(),
    );
    let warnings = hub.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with(&format!(
            "MCP server `locked` is unavailable: the MCP handshake with {} failed: HTTP 401 Unauthorized",
            server.url
        )) && !warnings[0].contains("wrong-t0ken"),
        "{warnings:?}"
    );
    assert_eq!(hub.tools().len(), 5);
}

#[test]
fn an_http_server_that_stops_answering_times_out() {
    let rt = rt();
    let hanging = HttpMock::start(&[("MOCK_HANG", "1")]);
    let mut config = http("hang", &hanging.url, &[]);
    config.connect_timeout = Duration::from_millis(800);
    let started = std::time::Instant::now();
    let hub = Hub::connect(&[config], waiting());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        hub.warnings(),
        ["MCP server `hang` is unavailable: no answer within 0.8 s"]
    );

    let slow_server = HttpMock::start(&[]);
    let mut slow = http("slow", &slow_server.url, &[]);
    slow.timeout = Duration::from_millis(300);
    let hub = Hub::connect(&[slow], waiting());
    let sleep = find(&hub.tools(), "mcp__slow__sleep");
    let started = std::time::Instant::now();
    assert_eq!(
        call(&rt, &sleep, json!({"ms": 5000})),
        (
            r#"{"error":"MCP tool mcp__slow__sleep timed out after 0.3 s"}"#.to_string(),
            false
        )
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    let echo = find(&hub.tools(), "mcp__slow__echo");
    assert_eq!(
        call(&rt, &echo, json!({"text": "still here"})).0,
        r#"{"result":"still here"}"#
    );
}

#[test]
fn an_http_server_that_went_away_is_reconnected_on_the_next_call() {
    let rt = rt();
    let server = HttpMock::start(&[]);
    let hub = Hub::connect(&[http("gone", &server.url, &[])], waiting());
    let tools = hub.tools();
    let (crash, echo) = (
        find(&tools, "mcp__gone__crash"),
        find(&tools, "mcp__gone__echo"),
    );
    let (out, ok) = call(&rt, &crash, json!({}));
    assert!(!ok, "{out}");
    // The next call tries a new session (the server is gone: refused).
    let (out, ok) = call(&rt, &echo, json!({"text": "x"}));
    assert!(
        !ok && out.starts_with(&format!(
            r#"{{"error":"MCP server `gone` is not connected: the MCP handshake with {} failed: "#,
            server.url
        )) && out.contains("Connection refused"),
        "{out}"
    );
}
