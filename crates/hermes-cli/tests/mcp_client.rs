//! MCP servers in sessions and `hermes mcp list|test`, driven through the real binary against
//! `hermes-mcp-mock` (the test MCP server of hermes-mcp, built with the workspace).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::{run, run_with_stdin, stderr, stdout};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

/// The test MCP server, next to the `hermes` binary.
fn mock_mcp() -> PathBuf {
    let path = common::bin().with_file_name("hermes-mcp-mock");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build -p hermes-mcp`",
        path.display()
    );
    path
}

/// A config with the model server and `servers` (`name: extra yaml lines`) under mcp_servers.
fn config(home: &TestHome, server: Option<&MockServer>, servers: &[(&str, &str)]) {
    let mut yaml = match server {
        Some(s) => hermes_testkit::mock_config_yaml(s),
        None => String::new(),
    };
    yaml.push_str("mcp_servers:\n");
    for (name, extra) in servers {
        yaml.push_str(&format!(
            "  {name}:\n    command: {}\n{extra}",
            mock_mcp().display()
        ));
    }
    home.write_config(&yaml);
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn tool_result(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn the_model_gets_the_mcp_tools_and_their_answers() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("mcp__my_srv__echo", json!({"text": "from the model"})),
        Turn::tool("mcp__my_srv__fail", json!({})),
        Turn::text("done"),
    ]));
    let home = TestHome::new();
    config(
        &home,
        Some(&server),
        &[("my-srv", "    tools:\n      exclude: [crash]\n")],
    );
    let o = run(&home, &["-z", "use the server"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "done\n");
    assert_eq!(stderr(&o), "");
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 3);
    let names = tool_names(&reqs[0]);
    for want in [
        "mcp__my_srv__echo",
        "mcp__my_srv__add",
        "mcp__my_srv__fail",
        "mcp__my_srv__sleep",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    assert!(
        !names.iter().any(|n| n == "mcp__my_srv__crash"),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n == "terminal"),
        "built-in tools stay: {names:?}"
    );
    let echo = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__my_srv__echo")
        .unwrap();
    assert_eq!(echo["function"]["description"], "Echo the text back.");
    assert_eq!(echo["function"]["parameters"]["required"], json!(["text"]));
    assert_eq!(tool_result(&reqs[1]), r#"{"result":"from the model"}"#);
    assert_eq!(
        tool_result(&reqs[2]),
        r#"{"error":"it failed, [REDACTED]"}"#
    );
}

#[test]
fn a_broken_server_is_one_warning_and_the_run_goes_on() {
    let server = MockServer::start(Script::new(vec![Turn::text("fine")]));
    let home = TestHome::new();
    config(
        &home,
        Some(&server),
        &[("dead", "    env:\n      MOCK_DIE: \"1\"\n"), ("good", "")],
    );
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "fine\n");
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("hermes: MCP server `dead` is unavailable: the MCP handshake failed"),
        "{err}"
    );
    let names = tool_names(&server.chat_requests()[0]);
    assert!(names.iter().any(|n| n == "mcp__good__echo"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__dead__")),
        "{names:?}"
    );
}

#[test]
fn toolsets_choose_the_servers() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("a"),
        Turn::text("b"),
        Turn::text("c"),
    ]));
    let home = TestHome::new();
    config(
        &home,
        Some(&server),
        &[("one", ""), ("two", ""), ("off", "    enabled: false\n")],
    );
    let mcp = |req: &Value| -> Vec<String> {
        let mut sets: Vec<String> = tool_names(req)
            .into_iter()
            .filter_map(|n| Some(n.strip_prefix("mcp__")?.split("__").next()?.to_string()))
            .collect();
        sets.dedup();
        sets
    };
    for args in [
        &["-z", "x"][..],
        &["-t", "terminal,mcp-two", "-z", "x"],
        &["-t", "terminal,no_mcp", "-z", "x"],
    ] {
        let o = run(&home, args);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let reqs = server.chat_requests();
    assert_eq!(mcp(&reqs[0]), ["one", "two"]);
    assert_eq!(mcp(&reqs[1]), ["two"]);
    assert_eq!(
        tool_names(&reqs[1]),
        [
            "terminal",
            "process",
            "mcp__two__echo",
            "mcp__two__add",
            "mcp__two__fail",
            "mcp__two__sleep",
            "mcp__two__crash"
        ]
    );
    assert!(mcp(&reqs[2]).is_empty());
}

#[test]
fn the_servers_stop_with_the_session() {
    let server = MockServer::start(Script::new(vec![Turn::text("ok")]));
    let home = TestHome::new();
    let pids = home.root().join("pids");
    config(
        &home,
        Some(&server),
        &[(
            "p",
            &format!("    env:\n      MOCK_PID_FILE: {}\n", pids.display()),
        )],
    );
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let pid = std::fs::read_to_string(&pids).unwrap().trim().to_string();
    let mut gone = false;
    for _ in 0..100 {
        gone = match std::fs::read_to_string(format!("/proc/{pid}/status")) {
            Err(_) => true,
            Ok(s) => s
                .lines()
                .any(|l| l.starts_with("State:") && l.contains('Z')),
        };
        if gone {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(gone, "the MCP server {pid} outlived hermes");
}

#[test]
fn reload_mcp_reconnects_in_the_repl() {
    let server = MockServer::start(Script::new(vec![Turn::text("ok")]));
    let home = TestHome::new();
    config(
        &home,
        Some(&server),
        &[("r", "    tools:\n      include: [echo, add]\n")],
    );
    let o = run_with_stdin(&home, &["chat"], "/reload-mcp\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("MCP servers reloaded: 2 tools from 1 server."),
        "{out}"
    );
}

#[test]
fn mcp_list_and_test() {
    let home = TestHome::new();
    let o = run(&home, &["mcp", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("No MCP servers configured"),
        "{}",
        stdout(&o)
    );

    config(
        &home,
        None,
        &[
            ("fine", "    tools:\n      include: [echo]\n"),
            ("dead", "    env:\n      MOCK_DIE: \"1\"\n"),
            ("off", "    enabled: false\n"),
        ],
    );
    let o = run(&home, &["mcp", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(
        lines[0],
        "Name             Transport                      Tools  Status"
    );
    let row = |name: &str| *lines.iter().find(|l| l.starts_with(name)).unwrap();
    assert!(row("fine ").ends_with("    1  connected"), "{out}");
    assert!(
        row("dead ").contains("    -  failed: the MCP handshake failed"),
        "{out}"
    );
    assert!(row("off ").ends_with("    -  disabled"), "{out}");

    let o = run(&home, &["mcp", "test", "fine"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "MCP server `fine` connected: 1 tool\n  mcp__fine__echo  Echo the text back.\n"
    );
    let o = run(&home, &["mcp", "test", "dead"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("hermes: MCP server `dead` failed: the MCP handshake failed"),
        "{}",
        stderr(&o)
    );
    let o = run(&home, &["mcp", "test", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no MCP server `nope` in ") && stderr(&o).contains("(configured: "),
        "{}",
        stderr(&o)
    );
}

/// `hermes-mcp-mock --http` with `env`, killed when dropped.
struct HttpMock {
    url: String,
    _server: hermes_testkit::ChildServer,
}

impl HttpMock {
    fn start(env: &[(&str, &str)]) -> HttpMock {
        let server = hermes_testkit::ChildServer::start(&mock_mcp(), &["--http"], env);
        HttpMock {
            url: format!("http://127.0.0.1:{}/mcp", server.port),
            _server: server,
        }
    }
}

/// A config with the model server and `servers` (`name: yaml lines`) under mcp_servers.
fn http_config(home: &TestHome, server: Option<&MockServer>, servers: &[(&str, String)]) {
    let mut yaml = match server {
        Some(s) => hermes_testkit::mock_config_yaml(s),
        None => String::new(),
    };
    yaml.push_str("mcp_servers:\n");
    for (name, lines) in servers {
        yaml.push_str(&format!("  {name}:\n{lines}"));
    }
    home.write_config(&yaml);
}

#[test]
fn an_http_server_gets_its_headers_and_serves_the_model() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool("mcp__web__echo", json!({"text": "over http"})),
        Turn::text("done"),
    ]));
    let home = TestHome::new();
    let log = home.root().join("headers");
    let mcp = HttpMock::start(&[
        ("MOCK_AUTH", "Bearer t0k-123"),
        ("MOCK_HEADER_LOG", log.to_str().unwrap()),
        ("MOCK_SSE", "1"),
    ]);
    http_config(
        &home,
        Some(&server),
        &[(
            "web",
            format!(
                "    url: {}\n    headers:\n      Authorization: \"Bearer ${{MCP_TOKEN}}\"\n      X-Team: blue\n",
                mcp.url
            ),
        )],
    );
    let o = home
        .command(common::bin())
        .env("MCP_TOKEN", "t0k-123")
        .args(["-z", "use it"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert_eq!(stdout(&o), "done\n");
    let reqs = server.chat_requests();
    assert!(
        tool_names(&reqs[0]).iter().any(|n| n == "mcp__web__add"),
        "{:?}",
        tool_names(&reqs[0])
    );
    assert_eq!(tool_result(&reqs[1]), r#"{"result":"over http"}"#);
    let seen = std::fs::read_to_string(&log).unwrap();
    let posts: Vec<&str> = seen.lines().filter(|l| l.starts_with("POST ")).collect();
    assert!(posts.len() >= 4, "{seen}");
    assert_eq!(
        posts[0],
        "POST authorization=Bearer t0k-123 x-team=blue session=-"
    );
    assert!(
        posts[1..]
            .iter()
            .all(|l| *l == "POST authorization=Bearer t0k-123 x-team=blue session=mock-session-1"),
        "{seen}"
    );
}

#[test]
fn a_refused_or_silent_http_server_is_one_warning_each() {
    let server = MockServer::start(Script::new(vec![Turn::text("fine")]));
    let home = TestHome::new();
    let locked = HttpMock::start(&[("MOCK_AUTH", "Bearer right")]);
    let silent = HttpMock::start(&[("MOCK_HANG", "1")]);
    http_config(
        &home,
        Some(&server),
        &[
            (
                "locked",
                format!(
                    "    url: {}\n    headers:\n      Authorization: Bearer wr0ng-t0ken\n",
                    locked.url
                ),
            ),
            (
                "silent",
                format!("    url: {}\n    connect_timeout: 1\n", silent.url),
            ),
        ],
    );
    let started = std::time::Instant::now();
    let o = run(&home, &["-z", "hi"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "fine\n");
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with(&format!(
            "hermes: MCP server `locked` is unavailable: the MCP handshake with {} failed: HTTP 401 Unauthorized",
            locked.url
        )),
        "{err}"
    );
    assert!(!err.contains("wr0ng-t0ken"), "{err}");
    assert_eq!(
        lines[1],
        "hermes: MCP server `silent` is unavailable: no answer within 1 s"
    );
}

#[test]
fn mcp_list_and_test_show_http_servers() {
    let home = TestHome::new();
    let mcp = HttpMock::start(&[]);
    http_config(
        &home,
        None,
        &[(
            "web",
            format!("    url: {}\n    tools:\n      include: [echo]\n", mcp.url),
        )],
    );
    let o = run(&home, &["mcp", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "Name             Transport                      Tools  Status\nweb              {:<30}     1  connected\n",
            format!("http {}", mcp.url.trim_start_matches("http://"))
        )
    );
    let o = run(&home, &["mcp", "test", "web"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "MCP server `web` connected over HTTP ({}): 1 tool\n  mcp__web__echo  Echo the text back.\n",
            mcp.url
        )
    );
}
