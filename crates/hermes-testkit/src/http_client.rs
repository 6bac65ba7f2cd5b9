//! A minimal HTTP/1.1 client for tests of our own servers (the API server): one request with
//! `Connection: close`, the whole reply read, a chunked body decoded, and SSE bodies split into
//! events. Raw on purpose: tests see exactly the bytes a server sent.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::Value;

/// A reply: status, the head as sent, the (de-chunked) body.
#[derive(Debug, Clone)]
pub struct HttpReply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl HttpReply {
    /// The body as JSON (panics when it is not: for tests).
    #[allow(clippy::expect_used)]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

/// The text of a request with a JSON body and `Connection: close`. `Host: localhost` and
/// `Content-Type: application/json` are sent unless `headers` names its own.
pub fn request_text(method: &str, path: &str, headers: &[&str], body: &str) -> String {
    let names = |name: &str| {
        headers.iter().any(|h| {
            h.split(':')
                .next()
                .is_some_and(|n| n.trim().eq_ignore_ascii_case(name))
        })
    };
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    if !names("host") {
        req.push_str("Host: localhost\r\n");
    }
    if !names("content-type") {
        req.push_str("Content-Type: application/json\r\n");
    }
    req.push_str(&format!(
        "Connection: close\r\nContent-Length: {}\r\n",
        body.len()
    ));
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    req.push_str(body);
    req
}

/// A whole reply as received; `None` when it is not HTTP.
pub fn parse_reply(raw: &str) -> Option<HttpReply> {
    let (head, rest) = raw.split_once("\r\n\r\n")?;
    let status = head.get(9..12)?.parse().ok()?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)?
    } else {
        rest.to_string()
    };
    Some(HttpReply {
        status,
        head: head.to_string(),
        body,
    })
}

fn dechunk(mut s: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = s.split_once("\r\n")?;
        let n = usize::from_str_radix(size.trim(), 16).ok()?;
        if n == 0 {
            return Some(out);
        }
        out.push_str(rest.get(..n)?);
        s = rest.get(n + 2..)?;
    }
}

/// One blocking request to `addr` (`127.0.0.1:PORT`), reading until the server closes.
#[allow(clippy::expect_used)]
pub fn http(addr: &str, method: &str, path: &str, headers: &[&str], body: &str) -> HttpReply {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    s.write_all(request_text(method, path, headers, body).as_bytes())
        .expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    parse_reply(&String::from_utf8_lossy(&raw)).expect("an HTTP reply")
}

/// `(event name, data)` of each event of an SSE body (`data:` lines joined). Blocks without a
/// `data:` line (comments, keep-alives) are not events, as for a browser's `EventSource`.
pub fn sse_events(body: &str) -> Vec<(Option<String>, String)> {
    body.split("\n\n")
        .filter(|e| e.lines().any(|l| l.starts_with("data:")))
        .map(|e| {
            let mut name = None;
            let mut data = String::new();
            for line in e.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            (name, data)
        })
        .collect()
}

/// The comment lines (`: text`) of an SSE body, without the leading `: `.
pub fn sse_comments(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix(':'))
        .map(|c| c.strip_prefix(' ').unwrap_or(c).to_string())
        .collect()
}
