//! The `mcp_servers:` section of config.yaml, read into one [`ServerConfig`] per server. The
//! keys are the Python Hermes's: `command`, `args`, `env` (stdio), `url`, `headers` (HTTP),
//! `timeout` (per call, 300 s), `connect_timeout` (60 s), `tools.include` / `tools.exclude`,
//! `enabled`. `${VAR}` references were already substituted when config.yaml was loaded.

use std::time::Duration;

use serde_json::Value;

/// Seconds a tool call may take unless `timeout` says otherwise.
pub const DEFAULT_CALL_TIMEOUT: u64 = 300;
/// Seconds a connection may take unless `connect_timeout` says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: u64 = 60;

/// How a server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// A remote server (Streamable HTTP); `headers` go with every request.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Only these tools (by the server's own names) when not empty.
    pub include: Vec<String>,
    /// All tools but these (ignored when `include` is set).
    pub exclude: Vec<String>,
    pub enabled: bool,
}

impl ServerConfig {
    /// Whether the server's tool `name` passes `tools.include` / `tools.exclude`.
    pub fn wants_tool(&self, name: &str) -> bool {
        if !self.include.is_empty() {
            return self.include.iter().any(|t| t == name);
        }
        !self.exclude.iter().any(|t| t == name)
    }

    /// The toolset of the server's tools: `mcp-<name>`.
    pub fn toolset(&self) -> String {
        format!("mcp-{}", self.name)
    }
}

/// Every server of `mcp_servers` (in config order) and a warning for each entry that cannot be
/// used (no `command` nor `url`, not a mapping).
pub fn parse_servers(raw: &Value) -> (Vec<ServerConfig>, Vec<String>) {
    let mut servers = Vec::new();
    let mut warnings = Vec::new();
    let Some(map) = raw.get("mcp_servers").and_then(Value::as_object) else {
        return (servers, warnings);
    };
    for (name, entry) in map {
        match parse_one(name, entry) {
            Ok(server) => servers.push(server),
            Err(why) => warnings.push(format!("MCP server `{name}` is skipped: {why}")),
        }
    }
    (servers, warnings)
}

fn parse_one(name: &str, entry: &Value) -> Result<ServerConfig, String> {
    let Some(obj) = entry.as_object() else {
        return Err("its entry is not a mapping".into());
    };
    let text = |k: &str| {
        obj.get(k)
            .and_then(scalar_text)
            .filter(|s| !s.trim().is_empty())
    };
    let pairs = |k: &str| -> Vec<(String, String)> {
        obj.get(k)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), scalar_text(v)?)))
                    .collect()
            })
            .unwrap_or_default()
    };
    let transport = if let Some(command) = text("command") {
        let args = match obj.get("args") {
            Some(Value::Array(items)) => items.iter().filter_map(scalar_text).collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        };
        Transport::Stdio {
            command,
            args,
            env: pairs("env"),
        }
    } else if let Some(url) = text("url") {
        Transport::Http {
            url,
            headers: pairs("headers"),
        }
    } else {
        return Err("it has neither `command` nor `url`".into());
    };
    let seconds = |k: &str, default: u64| {
        let secs = obj
            .get(k)
            .and_then(|v| v.as_f64().or_else(|| v.as_str()?.trim().parse().ok()))
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(default as f64);
        Duration::from_secs_f64(secs)
    };
    let filter = |k: &str| -> Vec<String> {
        match obj.get("tools").and_then(|t| t.get(k)) {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items.iter().filter_map(scalar_text).collect(),
            _ => Vec::new(),
        }
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        timeout: seconds("timeout", DEFAULT_CALL_TIMEOUT),
        connect_timeout: seconds("connect_timeout", DEFAULT_CONNECT_TIMEOUT),
        include: filter("include"),
        exclude: filter("exclude"),
        enabled: parse_enabled(obj.get("enabled")),
    })
}

/// `enabled`: only an explicit false (`false`, `0`, `no`, `off`) disables a server.
fn parse_enabled(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::String(s)) => !matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "false" | "0" | "no" | "off"
        ),
        _ => true,
    }
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_stdio_and_http_servers_with_defaults() {
        let raw = json!({"mcp_servers": {
            "fs": {"command": "npx", "args": ["-y", "server-fs", 3], "env": {"A": "1"},
                   "timeout": 20, "tools": {"include": "read"}},
            "remote": {"url": "https://x.test/mcp", "headers": {"Authorization": "Bearer t"},
                       "connect_timeout": "5", "enabled": "off", "tools": {"exclude": ["a", "b"]}},
            "broken": {"args": []},
            "odd": "text"
        }});
        let (servers, warnings) = parse_servers(&raw);
        assert_eq!(servers.len(), 2);
        let fs = &servers[0];
        assert_eq!(
            fs.transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server-fs".into(), "3".into()],
                env: vec![("A".into(), "1".into())],
            }
        );
        assert_eq!(fs.timeout, Duration::from_secs(20));
        assert_eq!(fs.connect_timeout, Duration::from_secs(60));
        assert!(fs.enabled && fs.wants_tool("read") && !fs.wants_tool("write"));
        let remote = &servers[1];
        assert_eq!(remote.timeout, Duration::from_secs(300));
        assert_eq!(remote.connect_timeout, Duration::from_secs(5));
        assert!(!remote.enabled && !remote.wants_tool("a") && remote.wants_tool("c"));
        assert_eq!(remote.toolset(), "mcp-remote");
        assert_eq!(
            warnings,
            [
                "MCP server `broken` is skipped: it has neither `command` nor `url`",
                "MCP server `odd` is skipped: its entry is not a mapping"
            ]
        );
        assert!(parse_servers(&json!({})).0.is_empty());
    }
}
