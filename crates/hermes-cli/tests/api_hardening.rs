//! The API server against browsers and slow clients (issue 13), through the binary: a web page's
//! cross-origin `text/plain` POST, a preflight and a DNS-rebinding `Host` are refused before
//! any turn runs; listed origins get CORS headers; a thousand half-open sockets do not lock out
//! `/health`; a client that never finishes its headers is disconnected and one that trickles
//! its body gets 408; a stream silent for `gateway.api_server.sse_keepalive` gets `: keepalive`
//! comments.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::gateway::Gateway;
use hermes_testkit::http_client::HttpReply;
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

fn http(addr: &str, method: &str, path: &str, headers: &[&str], body: &str) -> HttpReply {
    hermes_testkit::http_client::http(addr, method, path, headers, body)
}

fn home_with(server: &MockServer, extra_yaml: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}{extra_yaml}",
        hermes_testkit::mock_config_yaml(server)
    ));
    home
}

fn header<'a>(reply: &'a HttpReply, name: &str) -> Option<&'a str> {
    reply.head.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn chat_body() -> String {
    json!({"model": "hermes-agent", "messages": [{"role": "user", "content": "run it"}]})
        .to_string()
}

#[test]
fn a_web_page_cannot_drive_the_server() {
    // The model would run a command if a turn ever started.
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "touch pwned"})),
        Turn::text("done"),
    ]));
    let home = home_with(&server, "");
    let gw = Gateway::start(&home, &[]);
    let body = chat_body();

    // The form a page can send without a preflight: cross-origin, text/plain.
    let r = http(
        &gw.addr,
        "POST",
        "/v1/chat/completions",
        &["Origin: https://evil.example", "Content-Type: text/plain"],
        &body,
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["error"]["code"], "origin_not_allowed");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("API_SERVER_CORS_ORIGINS")
    );
    assert_eq!(header(&r, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(&r, "access-control-allow-origin"), None);

    // Without an Origin (a page's form post through a non-browser path): still not JSON.
    let r = http(
        &gw.addr,
        "POST",
        "/v1/chat/completions",
        &["Content-Type: text/plain;charset=UTF-8"],
        &body,
    );
    assert_eq!(r.status, 415, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "unsupported_media_type");

    // A preflight from an unlisted origin.
    let r = http(
        &gw.addr,
        "OPTIONS",
        "/v1/chat/completions",
        &[
            "Origin: https://evil.example",
            "Access-Control-Request-Method: POST",
        ],
        "",
    );
    assert_eq!(r.status, 403, "{}", r.body);

    // DNS rebinding: a hostile name that resolves to 127.0.0.1.
    let r = http(
        &gw.addr,
        "POST",
        "/v1/chat/completions",
        &["Host: rebind.evil.example:8642"],
        &body,
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "host_not_allowed");

    // None of it reached the model, and nothing ran.
    assert_eq!(server.chat_requests().len(), 0);
    assert!(!home.workdir().join("pwned").exists());

    // A real client (loopback Host, JSON) is served.
    let port = gw.addr.rsplit(':').next().unwrap().to_string();
    let r = http(
        &gw.addr,
        "GET",
        "/v1/models",
        &[&format!("Host: 127.0.0.1:{port}")],
        "",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(header(&r, "x-frame-options"), Some("DENY"));
}

#[test]
fn listed_origins_and_hosts_are_served_with_cors_headers() {
    let server = MockServer::start(Script::new(vec![Turn::text("hi from hermes")]));
    let home = home_with(
        &server,
        "platforms:\n  api_server:\n    extra:\n      cors_origins: [\"https://app.example\"]\n      allowed_hosts: hermes.lan\n",
    );
    let gw = Gateway::start(&home, &[]);

    let r = http(
        &gw.addr,
        "OPTIONS",
        "/v1/chat/completions",
        &[
            "Origin: https://app.example",
            "Access-Control-Request-Method: POST",
            "Access-Control-Request-Headers: authorization, content-type",
        ],
        "",
    );
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(
        header(&r, "access-control-allow-origin"),
        Some("https://app.example")
    );
    assert!(
        header(&r, "access-control-allow-methods")
            .unwrap()
            .contains("POST")
    );
    assert!(
        header(&r, "access-control-allow-headers")
            .unwrap()
            .contains("Authorization")
    );
    assert_eq!(header(&r, "vary"), Some("Origin"));

    let r = http(
        &gw.addr,
        "POST",
        "/v1/chat/completions",
        &["Origin: https://app.example", "Host: hermes.lan:8642"],
        &chat_body(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        header(&r, "access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        "hi from hermes"
    );

    let caps = http(&gw.addr, "GET", "/v1/capabilities", &[], "");
    assert_eq!(caps.json()["features"]["cors"], true);

    // Another origin is still refused.
    let r = http(
        &gw.addr,
        "GET",
        "/v1/models",
        &["Origin: https://other.example"],
        "",
    );
    assert_eq!(r.status, 403);
}

/// Opens `n` connections that each send half a request line and then nothing.
fn half_open(addr: &str, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /health HTTP/1.1\r\nHo").unwrap();
            s
        })
        .collect()
}

#[test]
fn half_open_sockets_do_not_lock_out_health() {
    let server = MockServer::start(Script::new(vec![]));
    // Long header deadline: only the connection cap can keep /health reachable here.
    let home = home_with(
        &server,
        "gateway:\n  api_server:\n    max_connections: 256\n    header_timeout: 600\n",
    );
    let gw = Gateway::start(&home, &[]);
    let sockets = half_open(&gw.addr, 1_100);
    let r = http(&gw.addr, "GET", "/health", &[], "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "ok");
    // The oldest half-open sockets were closed to make room.
    let mut first = sockets.into_iter().next().unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(first.read(&mut buf).unwrap_or(0), 0, "evicted: closed");
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn slow_headers_are_cut_off_and_trickled_bodies_get_408() {
    let server = MockServer::start(Script::new(vec![]));
    let home = home_with(
        &server,
        "gateway:\n  api_server:\n    header_timeout: 1\n    body_timeout: 1\n",
    );
    let gw = Gateway::start(&home, &[]);

    // Headers that never end: the server closes the connection.
    let mut slow = TcpStream::connect(&gw.addr).unwrap();
    slow.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n")
        .unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut sink = Vec::new();
    // Ok: the server closed it (our own read timeout would be an error).
    assert!(slow.read_to_end(&mut sink).is_ok());

    // A body announced at 100 bytes, of which 10 arrive.
    let mut trickle = TcpStream::connect(&gw.addr).unwrap();
    trickle
        .write_all(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":",
        )
        .unwrap();
    trickle
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut raw = Vec::new();
    let _ = trickle.read_to_end(&mut raw);
    let reply = hermes_testkit::http_client::parse_reply(&String::from_utf8_lossy(&raw))
        .expect("an HTTP answer before the close");
    assert_eq!(reply.status, 408, "{}", reply.body);
    assert_eq!(reply.json()["error"]["code"], "body_timeout");
    assert_eq!(server.chat_requests().len(), 0);

    // The server still serves.
    assert_eq!(http(&gw.addr, "GET", "/health", &[], "").status, 200);
}

#[test]
fn bad_limits_are_configuration_errors() {
    let server = MockServer::start(Script::new(vec![]));
    let home = home_with(
        &server,
        "gateway:\n  api_server:\n    header_timeout: soon\n",
    );
    let out = home
        .command(common::bin())
        .args(["gateway", "run", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("gateway.api_server.header_timeout must be a positive number"),
        "{err}"
    );
}

#[test]
fn a_silent_stream_gets_keepalive_comments_that_sdk_clients_skip() {
    // The model takes a second to answer; keepalives every 200 ms fill the silence.
    let server = MockServer::start(Script::new(vec![Turn::Reply(
        hermes_testkit::Reply::text("finally").with_delay_ms(1_000),
    )]));
    let home = home_with(&server, "gateway:\n  api_server:\n    sse_keepalive: 0.2\n");
    let gw = Gateway::start(&home, &[]);
    let body =
        json!({"messages": [{"role": "user", "content": "slow"}], "stream": true}).to_string();
    let r = http(&gw.addr, "POST", "/v1/chat/completions", &[], &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let keepalives = r.body.matches(": keepalive\n\n").count();
    assert!(keepalives >= 2, "{}", r.body);
    // They come before the answer, and the stream still ends as OpenAI's does.
    assert!(r.body.find(": keepalive").unwrap() < r.body.find("finally").unwrap());
    assert!(r.body.ends_with("data: [DONE]\n\n"), "{}", r.body);
    let (code, _) = gw.terminate();
    assert_eq!(code, Some(0));
}
