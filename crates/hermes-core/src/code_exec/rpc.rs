//! The tool channel of one script: a Unix socket in the run's private directory (mode 0700),
//! newline-delimited JSON requests `{"tool", "args", "token"}`, one JSON reply line each. The
//! token is compared in constant time; only the reachable tools are served; the call limit is
//! enforced; `terminal` loses the parameters a script may not use (`background`). Each call
//! goes through [`Registry::execute`] with the session's context, exactly like a model's call
//! (approvals, redaction, result cap). Requests are bounded in size, connections in number.

use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use hermes_tools::{Registry, ToolContext};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

/// Largest request line (a write_file of a big file fits).
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;
/// Connections served at once.
const MAX_CONNECTIONS: usize = 8;
/// `terminal` parameters a script may not set.
const TERMINAL_BLOCKED: &[&str] = &["background", "pty", "notify_on_complete", "watch_patterns"];

pub(super) struct Rpc<'a> {
    pub tools: &'a Registry,
    pub ctx: &'a ToolContext,
    pub token: &'a str,
    pub max_calls: usize,
    pub calls: AtomicUsize,
}

impl Rpc<'_> {
    /// Tool calls made so far (refused ones not counted).
    pub fn calls_made(&self) -> usize {
        self.calls.load(Ordering::Acquire).min(self.max_calls)
    }

    /// Serves the listener until dropped.
    pub async fn serve(&self, listener: &UnixListener) {
        let mut conns = FuturesUnordered::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) if conns.len() < MAX_CONNECTIONS => conns.push(self.connection(stream)),
                    Ok(_) => {}
                    // A failing listener ends the channel; the script sees a refused connect.
                    Err(_) => break,
                },
                Some(()) = conns.next(), if !conns.is_empty() => {}
            }
        }
        while conns.next().await.is_some() {}
    }

    async fn connection(&self, mut stream: UnixStream) {
        let mut pending: Vec<u8> = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=nl).collect();
                let reply = self.answer(&line[..line.len() - 1]).await;
                if stream.write_all(reply.as_bytes()).await.is_err()
                    || stream.write_all(b"\n").await.is_err()
                {
                    return;
                }
            }
            if pending.len() > MAX_REQUEST_BYTES {
                let reply =
                    json!({"error": format!("request larger than {MAX_REQUEST_BYTES} bytes")});
                let _ = stream.write_all(format!("{reply}\n").as_bytes()).await;
                return;
            }
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => pending.extend_from_slice(&buf[..n]),
            }
        }
    }

    /// The reply line (compact JSON, no raw newline) to one request line.
    pub(super) async fn answer(&self, line: &[u8]) -> String {
        let request: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => return json!({"error": format!("invalid request: {e}")}).to_string(),
        };
        let token = request.get("token").and_then(Value::as_str).unwrap_or("");
        if !constant_time_eq(token.as_bytes(), self.token.as_bytes()) {
            return json!({"error": "unauthorized tool request"}).to_string();
        }
        let name = request.get("tool").and_then(Value::as_str).unwrap_or("");
        let Some(tool) = self.tools.get(name) else {
            return json!({"error": format!(
                "tool `{name}` is not available to scripts (available: {})",
                self.tools.names().join(", ")
            )})
            .to_string();
        };
        let mut args = request.get("args").cloned().unwrap_or_else(|| json!({}));
        if name == "terminal"
            && let Value::Object(map) = &mut args
        {
            for p in TERMINAL_BLOCKED {
                map.remove(*p);
            }
        }
        if self.calls.fetch_add(1, Ordering::AcqRel) >= self.max_calls {
            return json!({"error": format!(
                "tool call limit reached ({}): no more tool calls in this script",
                self.max_calls
            )})
            .to_string();
        }
        let outcome = Registry::execute(tool.as_ref(), args, self.ctx).await;
        // One line: JSON results re-serialised compactly, anything else as a JSON string.
        match serde_json::from_str::<Value>(&outcome.content) {
            Ok(v) => v.to_string(),
            Err(_) => Value::String(outcome.content).to_string(),
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_exactly() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
