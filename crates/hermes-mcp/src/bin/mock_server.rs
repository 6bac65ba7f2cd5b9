//! `hermes-mcp-mock`: a small MCP server over stdio, for the tests of the MCP client (here and
//! in hermes-cli). Tools: `echo {text}`, `add {a, b}`, `fail` (an `isError` result),
//! `sleep {ms}`, `crash` (the process exits without answering). `MOCK_PID_FILE` gets one line
//! with the pid per start; `MOCK_HANG=1` never answers `initialize`; `MOCK_DIE=1` exits at once.
//!
//! `hermes-mcp-mock --http` is the same server over Streamable HTTP: it listens on
//! 127.0.0.1 (a free port, printed as the first line of stdout) and answers each JSON-RPC POST
//! with `application/json`, or with a one-event `text/event-stream` when `MOCK_SSE=1`. The
//! `initialize` answer carries an `Mcp-Session-Id` that every later request must send (else
//! 404); notifications get 202, GET 405. `MOCK_AUTH=VALUE` answers 401 to requests whose
//! `Authorization` is not VALUE; `MOCK_HEADER_LOG=FILE` gets one line per request:
//! `METHOD authorization=... x-team=... session=...`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use serde_json::{Value, json};

const SESSION: &str = "mock-session-1";

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
    if std::env::args().nth(1).as_deref() == Some("--http") {
        serve_http();
        return;
    }
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(body) = answer(&msg) else {
            continue;
        };
        if writeln!(out, "{body}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
}

/// The answer to one JSON-RPC message; none for a notification (or a hanging `initialize`).
fn answer(msg: &Value) -> Option<Value> {
    let id = msg.get("id").cloned()?;
    let method = msg
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    let reply = match method {
        "initialize" if std::env::var_os("MOCK_HANG").is_some() => return None,
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
    Some(match reply {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    })
}

fn serve_http() {
    let listener = match TcpListener::bind(("127.0.0.1", 0)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("mock: cannot listen: {e}");
            std::process::exit(3);
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{port}").and_then(|_| out.flush());
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || serve_connection(stream));
    }
}

/// One request per connection (`Connection: close`).
fn serve_connection(stream: TcpStream) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let method = request_line
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    if let Some(path) = std::env::var_os("MOCK_HEADER_LOG") {
        let line = format!(
            "{method} authorization={} x-team={} session={}\n",
            header("authorization").unwrap_or("-"),
            header("x-team").unwrap_or("-"),
            header("mcp-session-id").unwrap_or("-"),
        );
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
    }
    let mut stream = stream;
    if let Ok(want) = std::env::var("MOCK_AUTH")
        && header("authorization") != Some(want.as_str())
    {
        respond(
            &mut stream,
            "401 Unauthorized",
            &[],
            "text/plain",
            "no entry",
        );
        return;
    }
    if method != "POST" {
        respond(&mut stream, "405 Method Not Allowed", &[], "text/plain", "");
        return;
    }
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        respond(
            &mut stream,
            "400 Bad Request",
            &[],
            "text/plain",
            "bad json",
        );
        return;
    };
    let initialize = msg.get("method").and_then(Value::as_str) == Some("initialize");
    if !initialize && header("mcp-session-id") != Some(SESSION) {
        respond(
            &mut stream,
            "404 Not Found",
            &[],
            "text/plain",
            "no such session",
        );
        return;
    }
    let Some(reply) = answer(&msg) else {
        if msg.get("id").is_some() {
            // A hanging `initialize`: keep the connection open, never answer.
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
        respond(&mut stream, "202 Accepted", &[], "text/plain", "");
        return;
    };
    let session: &[(&str, &str)] = if initialize {
        &[("Mcp-Session-Id", SESSION)]
    } else {
        &[]
    };
    if std::env::var_os("MOCK_SSE").is_some() {
        let body = format!("event: message\ndata: {reply}\n\n");
        respond(&mut stream, "200 OK", session, "text/event-stream", &body);
    } else {
        respond(
            &mut stream,
            "200 OK",
            session,
            "application/json",
            &reply.to_string(),
        );
    }
}

fn respond(stream: &mut TcpStream, status: &str, extra: &[(&str, &str)], kind: &str, body: &str) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|_| stream.write_all(body.as_bytes()))
        .and_then(|_| stream.flush());
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
