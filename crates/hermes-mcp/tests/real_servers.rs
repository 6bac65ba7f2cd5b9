//! The MCP client against real servers: npm `@modelcontextprotocol/server-everything` over
//! stdio, legacy SSE and Streamable HTTP (tools, resources, prompts, sampling with the
//! policy on and off, list_changed) and `@modelcontextprotocol/server-filesystem` over
//! stdio, as `scripts/setup-mcp` installs them into the user's cache (or
//! `HERMES_MCP_NODE_DIR`). Each test skips with a printed reason when node or the packages
//! are missing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes_mcp::{
    Hub, HubOptions, SamplingError, SamplingHandler, SamplingPolicy, SamplingReply,
    SamplingRequest, ServerConfig, Status, StopReason, Transport,
};
use hermes_tools::{Tool, ToolContext};
use serde_json::{Value, json};

/// `node_modules` of the installed servers, or why the tests cannot run.
fn node_modules() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("HERMES_MCP_NODE_DIR") {
        Some(d) => PathBuf::from(d),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .ok_or("no HOME")?;
            cache.join("hermes-rs/mcp/node")
        }
    };
    let modules = dir.join("node_modules/@modelcontextprotocol");
    if !modules.join("server-everything/dist/index.js").exists() {
        return Err(format!(
            "{} has no server-everything (run scripts/setup-mcp)",
            modules.display()
        ));
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Err("node is not installed".into());
    }
    Ok(modules)
}

macro_rules! servers_or_skip {
    () => {
        match node_modules() {
            Ok(m) => m,
            Err(why) => {
                eprintln!("SKIPPED: {why}");
                return;
            }
        }
    };
}

fn everything(modules: &std::path::Path) -> String {
    modules
        .join("server-everything/dist/index.js")
        .display()
        .to_string()
}

/// `node server-everything MODE` on a free port, killed when dropped.
struct NodeServer {
    child: Child,
    port: u16,
}

impl NodeServer {
    fn start(modules: &std::path::Path, mode: &str) -> NodeServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("node")
            .args([everything(modules).as_str(), mode])
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{mode} server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        NodeServer { child, port }
    }
}

impl Drop for NodeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Answers every sampling request with a fixed text and remembers the requests.
#[derive(Default)]
struct Scripted {
    seen: Mutex<Vec<SamplingRequest>>,
}

#[async_trait::async_trait]
impl SamplingHandler for Scripted {
    async fn sample(&self, request: SamplingRequest) -> Result<SamplingReply, SamplingError> {
        self.seen.lock().unwrap().push(request);
        Ok(SamplingReply {
            model: "scripted-model".into(),
            text: "the sampled answer".into(),
            tool_calls: vec![],
            stop_reason: StopReason::EndTurn,
        })
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn call(hub: &Hub, name: &str, args: Value) -> Result<Value, String> {
    let tool: Arc<dyn Tool> = hub
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    let ctx = ToolContext::new(std::env::temp_dir());
    rt().block_on(tool.call(args, &ctx)).map_err(|e| e.0)
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let started = Instant::now();
    while !f() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "waited in vain for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn with_sampling(mut config: ServerConfig, on: bool) -> ServerConfig {
    config.sampling = SamplingPolicy {
        enabled: on,
        max_tokens_cap: 50,
        ..SamplingPolicy::default()
    };
    config.connect_timeout = Duration::from_secs(30);
    config.timeout = Duration::from_secs(30);
    config
}

/// Every feature of server-everything through one transport.
fn exercise(config: ServerConfig) {
    let handler = Arc::new(Scripted::default());
    let hub = Hub::connect(
        &[with_sampling(config, true)],
        HubOptions {
            sampling: Some(handler.clone()),
            ..HubOptions::default()
        },
    );
    assert!(
        hub.wait_ready(Duration::from_secs(40)),
        "{:?}",
        hub.servers()
    );
    let view = &hub.servers()[0];
    assert_eq!(view.status, Status::Connected, "{view:?}");

    assert_eq!(
        call(&hub, "mcp__ev__echo", json!({"message": "hi"})).unwrap(),
        json!({"result": "Echo: hi"})
    );
    let sum = call(&hub, "mcp__ev__get_sum", json!({"a": 2, "b": 3})).unwrap();
    assert!(sum["result"].as_str().unwrap().contains('5'), "{sum}");

    let resources = call(&hub, "mcp__ev__list_resources", json!({})).unwrap();
    let uris: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    let doc = "demo://resource/static/document/features.md";
    assert!(uris.contains(&doc), "{uris:?}");
    let read = call(&hub, "mcp__ev__read_resource", json!({"uri": doc})).unwrap();
    assert!(read["result"].as_str().unwrap().len() > 20, "{read}");
    assert!(
        call(&hub, "mcp__ev__read_resource", json!({}))
            .unwrap_err()
            .contains("'uri'")
    );

    let prompts = call(&hub, "mcp__ev__list_prompts", json!({})).unwrap();
    let names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        names.contains(&"simple-prompt") && names.contains(&"args-prompt"),
        "{names:?}"
    );
    let simple = call(
        &hub,
        "mcp__ev__get_prompt",
        json!({"name": "simple-prompt"}),
    )
    .unwrap();
    assert_eq!(
        simple["messages"][0],
        json!({"role": "user", "content": "This is a simple prompt without arguments."})
    );
    let args = call(
        &hub,
        "mcp__ev__get_prompt",
        json!({"name": "args-prompt", "arguments": {"city": "Paris"}}),
    )
    .unwrap();
    assert_eq!(args["messages"][0]["content"], "What's weather in Paris?");

    // The sampling tool is registered once the server saw our capability; it announces it
    // with notifications/tools/list_changed, and the hub lists the tools again.
    let before = hub.version();
    wait_for("the sampling tool after list_changed", || {
        hub.tools()
            .iter()
            .any(|t| t.name() == "mcp__ev__trigger_sampling_request")
    });
    assert!(hub.servers()[0].refreshes >= 1 || before > 0);
    let sampled = call(
        &hub,
        "mcp__ev__trigger_sampling_request",
        json!({"prompt": "say something", "maxTokens": 100}),
    )
    .unwrap();
    let text = sampled["result"].as_str().unwrap();
    assert!(
        text.contains("the sampled answer") && text.contains("scripted-model"),
        "{text}"
    );
    let seen = handler.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].server, "ev");
    assert_eq!(seen[0].max_tokens, 50, "capped by max_tokens_cap");
    assert_eq!(
        seen[0].system_prompt.as_deref(),
        Some("You are a helpful test server.")
    );
}

#[test]
fn everything_over_stdio() {
    let modules = servers_or_skip!();
    exercise(ServerConfig::new(
        "ev",
        Transport::Stdio {
            command: "node".into(),
            args: vec![everything(&modules), "stdio".into()],
            env: vec![],
        },
    ));
}

#[test]
fn everything_over_legacy_sse() {
    let modules = servers_or_skip!();
    let server = NodeServer::start(&modules, "sse");
    exercise(ServerConfig::new(
        "ev",
        Transport::Sse {
            url: format!("http://127.0.0.1:{}/sse", server.port),
            headers: vec![],
        },
    ));
}

#[test]
fn everything_over_streamable_http() {
    let modules = servers_or_skip!();
    let server = NodeServer::start(&modules, "streamableHttp");
    exercise(ServerConfig::new(
        "ev",
        Transport::Http {
            url: format!("http://127.0.0.1:{}/mcp", server.port),
            headers: vec![],
        },
    ));
}

#[test]
fn with_sampling_off_the_server_is_not_offered_it() {
    let modules = servers_or_skip!();
    let handler = Arc::new(Scripted::default());
    let config = ServerConfig::new(
        "ev",
        Transport::Stdio {
            command: "node".into(),
            args: vec![everything(&modules), "stdio".into()],
            env: vec![],
        },
    );
    let hub = Hub::connect(
        &[with_sampling(config, false)],
        HubOptions {
            sampling: Some(handler.clone()),
            ..HubOptions::default()
        },
    );
    assert!(hub.wait_ready(Duration::from_secs(40)));
    assert_eq!(hub.servers()[0].status, Status::Connected);
    // Give the server the time it takes to register its conditional tools.
    std::thread::sleep(Duration::from_millis(1500));
    let names: Vec<String> = hub.tools().iter().map(|t| t.name().to_string()).collect();
    assert!(names.iter().any(|n| n == "mcp__ev__echo"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n == "mcp__ev__trigger_sampling_request"),
        "{names:?}"
    );
    assert!(handler.seen.lock().unwrap().is_empty());
}

#[test]
fn filesystem_over_stdio() {
    let modules = servers_or_skip!();
    let fs_server = modules.join("server-filesystem/dist/index.js");
    if !fs_server.exists() {
        eprintln!("SKIPPED: server-filesystem is not installed (run scripts/setup-mcp)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "hello from the file\n").unwrap();
    let mut config = ServerConfig::new(
        "fs",
        Transport::Stdio {
            command: "node".into(),
            args: vec![fs_server.display().to_string(), root.display().to_string()],
            env: vec![],
        },
    );
    config.connect_timeout = Duration::from_secs(30);
    let hub = Hub::connect(
        &[config],
        HubOptions {
            wait: Some(Duration::from_secs(40)),
            ..HubOptions::default()
        },
    );
    assert_eq!(
        hub.servers()[0].status,
        Status::Connected,
        "{:?}",
        hub.servers()
    );
    let file = root.join("notes.txt").display().to_string();
    let read = call(&hub, "mcp__fs__read_text_file", json!({"path": file})).unwrap();
    assert_eq!(read["result"], "hello from the file\n", "{read}");
    let listing = call(
        &hub,
        "mcp__fs__list_directory",
        json!({"path": root.display().to_string()}),
    )
    .unwrap();
    assert!(
        listing["result"]
            .as_str()
            .unwrap()
            .contains("[FILE] notes.txt"),
        "{listing}"
    );
    let outside = call(
        &hub,
        "mcp__fs__read_text_file",
        json!({"path": "/etc/hostname"}),
    );
    assert!(
        outside.unwrap_err().contains("denied"),
        "only the allowed directory"
    );
}
