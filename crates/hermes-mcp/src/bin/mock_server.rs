//! `hermes-mcp-mock`: a small MCP server over stdio, for the tests of the MCP client (here and
//! in hermes-cli). Tools: `echo {text}`, `add {a, b}`, `fail` (an `isError` result),
//! `sleep {ms}`, `crash` (the process exits without answering). `MOCK_PID_FILE` gets one line
//! with the pid per start; `MOCK_HANG=1` never answers `initialize`; `MOCK_DIE=1` exits at once.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

fn main() {
    if std::env::var_os("MOCK_DIE").is_some() {
        eprintln!("mock: told to die");
        std::process::exit(3);
    }
    if let Some(path) = std::env::var_os("MOCK_PID_FILE") {
        let line = format!("{}\n", std::process::id());
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
    }
    let hang = std::env::var_os("MOCK_HANG").is_some();
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            continue; // a notification
        };
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let reply = match method {
            "initialize" if hang => continue,
            "initialize" => Ok(json!({
                "protocolVersion": params.get("protocolVersion").cloned()
                    .unwrap_or(json!("2025-06-18")),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mock", "version": "1.0.0"}
            })),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": tools()})),
            "tools/call" => call(&params),
            _ => Err(json!({"code": -32601, "message": format!("no method {method}")})),
        };
        let body = match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        if writeln!(out, "{body}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
}

fn tools() -> Value {
    let obj = |props: Value, required: Value| json!({"type": "object", "properties": props, "required": required});
    json!([
        {"name": "echo", "description": "  Echo the text back.\n",
         "inputSchema": obj(json!({"text": {"type": "string"}}), json!(["text"]))},
        {"name": "add", "description": "Add two numbers.",
         "inputSchema": obj(json!({"a": {"type": "number"}, "b": {"type": "number"}}), json!(["a", "b"]))},
        {"name": "fail", "description": "Always fails.", "inputSchema": obj(json!({}), json!([]))},
        {"name": "sleep", "description": "Sleep ms milliseconds.",
         "inputSchema": obj(json!({"ms": {"type": "integer"}}), json!(["ms"]))},
        {"name": "crash", "description": "Exit the server.", "inputSchema": obj(json!({}), json!([]))},
    ])
}

fn call(params: &Value) -> Result<Value, Value> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let text = |t: String| Ok(json!({"content": [{"type": "text", "text": t}]}));
    match name {
        "echo" => text(
            args.get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        ),
        "add" => {
            let n = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            text(format!("{}", n("a") + n("b")))
        }
        "fail" => Ok(
            json!({"content": [{"type": "text", "text": "it failed, password=hunter2"}],
                            "isError": true}),
        ),
        "sleep" => {
            let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
            std::thread::sleep(std::time::Duration::from_millis(ms));
            text(format!("slept {ms}"))
        }
        "crash" => std::process::exit(1),
        _ => Err(json!({"code": -32602, "message": format!("unknown tool {name}")})),
    }
}
