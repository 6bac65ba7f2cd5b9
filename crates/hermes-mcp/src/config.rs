//! The `mcp_servers:` section of config.yaml, read into one [`ServerConfig`] per server. The
//! keys are the Python Hermes's: `command`, `args`, `env` (stdio), `url`, `headers`,
//! `transport` (`sse` for the legacy HTTP+SSE servers), `timeout` (per call, 300 s),
//! `connect_timeout` (60 s), `tools.include` / `tools.exclude`, `tools.resources` /
//! `tools.prompts` (the utility tools, on by default), `enabled`, `auth: oauth` with its
//! `oauth:` block, and `sampling:`. `${VAR}` references were already substituted when
//! config.yaml was loaded.

use std::time::Duration;

use serde_json::Value;

use crate::oauth::OAuthSettings;
use crate::sampling::SamplingPolicy;

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
    /// A remote server over Streamable HTTP; `headers` go with every request.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    /// A remote server over the legacy HTTP+SSE transport (protocol 2024-11-05): a GET
    /// event stream, JSON-RPC POSTed to the endpoint it names.
    Sse {
        url: String,
        headers: Vec<(String, String)>,
    },
}

impl Transport {
    /// The URL and headers of a remote server.
    pub fn remote(&self) -> Option<(&str, &[(String, String)])> {
        match self {
            Transport::Http { url, headers } | Transport::Sse { url, headers } => {
                Some((url, headers))
            }
            Transport::Stdio { .. } => None,
        }
    }
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
    /// Offer `list_resources` / `read_resource` when the server has resources.
    pub resources: bool,
    /// Offer `list_prompts` / `get_prompt` when the server has prompts.
    pub prompts: bool,
    /// `auth: oauth`: OAuth 2.1 for a remote server, with the `oauth:` settings.
    pub oauth: Option<OAuthSettings>,
    /// What `sampling/createMessage` requests from this server may do (off by default).
    pub sampling: SamplingPolicy,
}

impl ServerConfig {
    /// A server with every setting at its default.
    pub fn new(name: impl Into<String>, transport: Transport) -> ServerConfig {
        ServerConfig {
            name: name.into(),
            transport,
            timeout: Duration::from_secs(DEFAULT_CALL_TIMEOUT),
            connect_timeout: Duration::from_secs(DEFAULT_CONNECT_TIMEOUT),
            include: Vec::new(),
            exclude: Vec::new(),
            enabled: true,
            resources: true,
            prompts: true,
            oauth: None,
            sampling: SamplingPolicy::default(),
        }
    }

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

    /// How the transport reads in a listing: the command of a stdio server, `http HOST/PATH`
    /// (or `sse HOST/PATH`) of a remote one.
    pub fn transport_label(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => {
                let mut parts = vec![command.as_str()];
                parts.extend(args.iter().take(2).map(String::as_str));
                parts.join(" ")
            }
            Transport::Http { url, .. } => match url.split_once("://") {
                Some((scheme, rest)) => format!("{} {rest}", scheme.to_ascii_lowercase()),
                None => format!("http {url}"),
            },
            Transport::Sse { url, .. } => match url.split_once("://") {
                Some((_, rest)) => format!("sse {rest}"),
                None => format!("sse {url}"),
            },
        }
    }
}

/// Every server of `mcp_servers` (in config order) and a warning for each entry that cannot be
/// used (no `command` nor `url`, not a mapping, an unknown `transport` or `auth`).
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
    // As in the Python Hermes, `url` wins when both `url` and `command` are there.
    let transport = if let Some(url) = text("url") {
        let headers = pairs("headers");
        match remote_kind(text("transport").as_deref(), &url)? {
            RemoteKind::Sse => Transport::Sse { url, headers },
            RemoteKind::Http => Transport::Http { url, headers },
        }
    } else if let Some(command) = text("command") {
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
    } else {
        return Err("it has neither `command` nor `url`".into());
    };
    let seconds = |k: &str, default: u64| {
        let secs = obj
            .get(k)
            .and_then(number)
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(default as f64);
        Duration::from_secs_f64(secs.min(86_400.0))
    };
    let tools = obj.get("tools");
    let filter = |k: &str| -> Vec<String> {
        match tools.and_then(|t| t.get(k)) {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items.iter().filter_map(scalar_text).collect(),
            _ => Vec::new(),
        }
    };
    let oauth = match text("auth").map(|a| a.trim().to_ascii_lowercase()) {
        None => None,
        Some(a) if a == "oauth" => {
            if transport.remote().is_none() {
                return Err("`auth: oauth` needs a `url` (a remote server)".into());
            }
            Some(OAuthSettings::from_value(
                obj.get("oauth").unwrap_or(&Value::Null),
            ))
        }
        Some(other) => return Err(format!("unknown `auth: {other}` (use `oauth`)")),
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        timeout: seconds("timeout", DEFAULT_CALL_TIMEOUT),
        connect_timeout: seconds("connect_timeout", DEFAULT_CONNECT_TIMEOUT),
        include: filter("include"),
        exclude: filter("exclude"),
        enabled: parse_flag(obj.get("enabled"), true),
        resources: parse_flag(tools.and_then(|t| t.get("resources")), true),
        prompts: parse_flag(tools.and_then(|t| t.get("prompts")), true),
        oauth,
        sampling: SamplingPolicy::from_value(obj.get("sampling").unwrap_or(&Value::Null)),
    })
}

enum RemoteKind {
    Http,
    Sse,
}

/// `transport:` when given (`sse`, or `http` / `streamable_http` / `streamable-http`), else
/// the URL decides: a path ending in `/sse` is a legacy SSE endpoint (the convention those
/// servers follow), anything else Streamable HTTP.
fn remote_kind(explicit: Option<&str>, url: &str) -> Result<RemoteKind, String> {
    match explicit.map(|t| t.trim().to_ascii_lowercase().replace(['-', '_'], "")) {
        Some(t) if t == "sse" => Ok(RemoteKind::Sse),
        Some(t) if t == "http" || t == "streamablehttp" => Ok(RemoteKind::Http),
        Some(_) => Err(format!(
            "unknown `transport: {}` (use `sse` or `http`)",
            explicit.unwrap_or_default().trim()
        )),
        None => {
            let path = url
                .split(['?', '#'])
                .next()
                .unwrap_or_default()
                .trim_end_matches('/');
            if path.ends_with("/sse") {
                Ok(RemoteKind::Sse)
            } else {
                Ok(RemoteKind::Http)
            }
        }
    }
}

/// A boolean setting: `true`/`false`, numbers, and the words `yes`/`no`, `on`/`off`,
/// `true`/`false`, `1`/`0`; anything else (or nothing) is `default`.
pub(crate) fn parse_flag(value: Option<&Value>, default: bool) -> bool {
    match value {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "false" | "0" | "no" | "off" => false,
            "true" | "1" | "yes" | "on" => true,
            _ => default,
        },
        _ => default,
    }
}

/// A number, also written as a string (`"10"`).
pub(crate) fn number(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| v.as_str()?.trim().parse().ok())
}

pub(crate) fn scalar_text(v: &Value) -> Option<String> {
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
                   "timeout": 20, "tools": {"include": "read", "prompts": false}},
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
        assert!(fs.resources && !fs.prompts);
        assert!(!fs.sampling.enabled, "sampling is off unless turned on");
        assert_eq!(fs.oauth, None);
        let remote = &servers[1];
        assert_eq!(remote.timeout, Duration::from_secs(300));
        assert_eq!(remote.connect_timeout, Duration::from_secs(5));
        assert!(!remote.enabled && !remote.wants_tool("a") && remote.wants_tool("c"));
        assert_eq!(remote.toolset(), "mcp-remote");
        assert_eq!(remote.transport_label(), "https x.test/mcp");
        assert_eq!(
            warnings,
            [
                "MCP server `broken` is skipped: it has neither `command` nor `url`",
                "MCP server `odd` is skipped: its entry is not a mapping"
            ]
        );
        assert!(parse_servers(&json!({})).0.is_empty());
    }

    #[test]
    fn the_transport_follows_the_key_then_the_url() {
        let raw = json!({"mcp_servers": {
            "a": {"url": "http://h/sse"},
            "b": {"url": "http://h/sse/", "transport": "streamable-http"},
            "c": {"url": "http://h/events", "transport": "SSE", "command": "ignored"},
            "d": {"url": "http://h/mcp?x=/sse"},
            "e": {"url": "http://h/mcp", "transport": "websocket"},
            "f": {"command": "x", "auth": "oauth"},
            "g": {"url": "http://h/mcp", "auth": "basic"}
        }});
        let (servers, warnings) = parse_servers(&raw);
        let kinds: Vec<(&str, &str)> = servers
            .iter()
            .map(|s| {
                let kind = match s.transport {
                    Transport::Sse { .. } => "sse",
                    Transport::Http { .. } => "http",
                    Transport::Stdio { .. } => "stdio",
                };
                (s.name.as_str(), kind)
            })
            .collect();
        assert_eq!(
            kinds,
            [("a", "sse"), ("b", "http"), ("c", "sse"), ("d", "http")]
        );
        assert_eq!(servers[2].transport_label(), "sse h/events");
        assert_eq!(
            warnings,
            [
                "MCP server `e` is skipped: unknown `transport: websocket` (use `sse` or `http`)",
                "MCP server `f` is skipped: `auth: oauth` needs a `url` (a remote server)",
                "MCP server `g` is skipped: unknown `auth: basic` (use `oauth`)"
            ]
        );
    }

    #[test]
    fn oauth_and_sampling_blocks_are_read() {
        let raw = json!({"mcp_servers": {"r": {
            "url": "https://r.test/mcp", "auth": "OAuth",
            "oauth": {"client_id": "pre", "scope": "read write", "redirect_port": "8123"},
            "sampling": {"enabled": true, "max_tokens_cap": 100, "allowed_models": ["m1"],
                         "max_rpm": "2", "model": "m1", "timeout": 5}
        }}});
        let (servers, warnings) = parse_servers(&raw);
        assert!(warnings.is_empty(), "{warnings:?}");
        let r = &servers[0];
        let oauth = r.oauth.as_ref().unwrap();
        assert_eq!(oauth.client_id.as_deref(), Some("pre"));
        assert_eq!(oauth.scope.as_deref(), Some("read write"));
        assert_eq!(oauth.redirect_port, 8123);
        let s = &r.sampling;
        assert!(s.enabled);
        assert_eq!(s.max_tokens_cap, 100);
        assert_eq!(s.max_rpm, 2);
        assert_eq!(s.allowed_models, ["m1"]);
        assert_eq!(s.model.as_deref(), Some("m1"));
        assert_eq!(s.timeout, Duration::from_secs(5));
    }
}
