//! The webhook platform's settings, the Python Hermes's keys: `platforms.webhook.extra.host`
//! (default `0.0.0.0`), `port` (`WEBHOOK_PORT`, default 8644), `secret` (`WEBHOOK_SECRET`,
//! the routes' default), `rate_limit` (per route and minute, default 30), `max_body_bytes`
//! (default 1 MiB) and `routes.<name>`: `secret`, `events`, `prompt`, `skills`, `deliver`
//! (`log`, a platform name, `github_comment`, and ours: `callback`, `response`),
//! `deliver_extra`, `deliver_only`, `enabled`. Routes created by the agent live in
//! `$HERMES_HOME/webhook_subscriptions.json` and are read again when that file changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::{PlatformSettings, scalar_string};

pub(crate) const PLATFORM: &str = "webhook";

/// The secret that turns signature checks off (loopback hosts only, for local tests).
pub const INSECURE_NO_AUTH: &str = "INSECURE_NO_AUTH";

/// Python's file of agent-created routes.
pub const DYNAMIC_ROUTES_FILE: &str = "webhook_subscriptions.json";

/// Where a route's answer goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deliver {
    /// Written to the gateway's log.
    Log,
    /// Another platform's chat (`deliver_extra.chat_id`, `thread_id`; no chat id: that
    /// platform's home channel).
    Platform(String),
    /// A comment on a GitHub PR or issue through the `gh` CLI (`deliver_extra.repo`,
    /// `pr_number`).
    GithubComment,
    /// POSTed (signed like our inbound V2 scheme) to `deliver_extra.url`.
    Callback,
    /// The HTTP request waits for the answer and gets it as its response.
    Response,
}

impl Deliver {
    fn parse(s: &str) -> Deliver {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "log" => Deliver::Log,
            "github_comment" => Deliver::GithubComment,
            "callback" => Deliver::Callback,
            "response" | "sync" => Deliver::Response,
            other => Deliver::Platform(other.to_string()),
        }
    }
}

/// One route (`POST /webhooks/<name>`).
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub name: String,
    /// The route's secret, or the global one.
    pub secret: String,
    /// Event types accepted (empty: all).
    pub events: Vec<String>,
    pub prompt: String,
    pub skills: Vec<String>,
    pub deliver: Deliver,
    /// Values rendered from the payload like the prompt (`{field}`).
    pub deliver_extra: Map<String, Value>,
    /// Skip the agent: the rendered prompt is the message delivered.
    pub deliver_only: bool,
    pub enabled: bool,
}

#[derive(Debug, Clone)]
pub struct WebhookSettings {
    pub host: String,
    pub port: u16,
    pub secret: Option<String>,
    pub routes: BTreeMap<String, Route>,
    pub rate_limit: u32,
    pub max_body_bytes: usize,
    /// How long a `deliver: response` request waits for the answer (`extra.response_timeout`,
    /// seconds, default 120).
    pub response_timeout: Duration,
    /// `webhook_subscriptions.json` (routes made by the agent), when there is a home.
    pub dynamic_routes: Option<PathBuf>,
}

/// Whether `host` only serves this machine.
pub(crate) fn is_loopback(host: &str) -> bool {
    matches!(
        host.trim().to_ascii_lowercase().as_str(),
        "127.0.0.1" | "localhost" | "::1" | "[::1]" | "ip6-localhost" | "ip6-loopback"
    )
}

fn string_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(scalar_string).collect(),
        Some(other) => scalar_string(other).into_iter().collect(),
        None => Vec::new(),
    }
}

/// Parses one route; `Err` names what makes it unusable.
pub(crate) fn parse_route(
    name: &str,
    v: &Value,
    global_secret: Option<&str>,
    host: &str,
) -> Result<Route, String> {
    let Some(obj) = v.as_object() else {
        return Err(format!("route {name:?} is not a mapping"));
    };
    for unsupported in ["script", "filters", "filter"] {
        if obj.contains_key(unsupported) {
            return Err(format!(
                "route {name:?} uses `{unsupported}`, which this build does not run; the route is off"
            ));
        }
    }
    // A `secret` key, even empty, wins over the global one (Python's `route.get("secret",
    // global)`); empty is refused below.
    let secret = match obj.get("secret") {
        Some(v) => scalar_string(v),
        None => global_secret.map(str::to_string),
    }
    .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            format!("route {name:?} has no HMAC secret: set `secret` on the route or WEBHOOK_SECRET ({INSECURE_NO_AUTH} for local tests)")
        })?;
    if secret == INSECURE_NO_AUTH && !is_loopback(host) {
        return Err(format!(
            "route {name:?} uses {INSECURE_NO_AUTH} but the server listens on {host:?}; that is for loopback hosts only"
        ));
    }
    let deliver = Deliver::parse(obj.get("deliver").and_then(Value::as_str).unwrap_or("log"));
    let deliver_only = obj
        .get("deliver_only")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if deliver_only && matches!(deliver, Deliver::Log | Deliver::Response) {
        return Err(format!(
            "route {name:?} has deliver_only but no delivery target"
        ));
    }
    let deliver_extra = obj
        .get("deliver_extra")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if deliver == Deliver::Callback {
        let url = deliver_extra
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(format!(
                "route {name:?} delivers to a callback but deliver_extra.url is not an http(s) URL"
            ));
        }
    }
    Ok(Route {
        name: name.to_string(),
        secret,
        events: string_list(obj.get("events")),
        prompt: obj
            .get("prompt")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        skills: string_list(obj.get("skills")),
        deliver,
        deliver_extra,
        deliver_only,
        enabled: obj.get("enabled").and_then(Value::as_bool).unwrap_or(true),
    })
}

/// Reads the agent-created routes; routes named like a configured one are ignored.
pub(crate) fn read_dynamic(
    path: &Path,
    settings: &WebhookSettings,
) -> (BTreeMap<String, Route>, Vec<String>) {
    let mut routes = BTreeMap::new();
    let mut problems = Vec::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return (routes, problems);
    };
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&text) else {
        problems.push(format!("{}: not a JSON object", path.display()));
        return (routes, problems);
    };
    for (name, v) in map {
        if settings.routes.contains_key(&name) {
            continue;
        }
        match parse_route(&name, &v, settings.secret.as_deref(), &settings.host) {
            Ok(r) => {
                routes.insert(name, r);
            }
            Err(e) => problems.push(e),
        }
    }
    (routes, problems)
}

impl WebhookSettings {
    /// The settings and the problems of routes left off. `home` locates the dynamic routes.
    pub fn from_platform(
        p: &PlatformSettings,
        home: Option<&Path>,
    ) -> Result<(WebhookSettings, Vec<String>), PlatformConfigError> {
        let host = p.extra_str("host").unwrap_or_else(|| "0.0.0.0".to_string());
        let port = match p.extra_u64("port") {
            None => 8644,
            Some(n) => u16::try_from(n).map_err(|_| PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("extra.port {n} is not a port"),
            })?,
        };
        let secret = p.extra_str("secret");
        let mut problems = Vec::new();
        let mut routes = BTreeMap::new();
        if let Some(map) = p.extra.get("routes").and_then(Value::as_object) {
            for (name, v) in map {
                match parse_route(name, v, secret.as_deref(), &host) {
                    Ok(r) => {
                        routes.insert(name.clone(), r);
                    }
                    Err(e) => problems.push(e),
                }
            }
        }
        Ok((
            WebhookSettings {
                host,
                port,
                secret,
                routes,
                rate_limit: p
                    .extra_u64("rate_limit")
                    .map_or(30, |n| n.min(u64::from(u32::MAX)) as u32),
                max_body_bytes: p
                    .extra_u64("max_body_bytes")
                    .map_or(1_048_576, |n| n.min(64 << 20) as usize),
                response_timeout: Duration::from_secs(
                    p.extra_u64("response_timeout").unwrap_or(120).max(1),
                ),
                dynamic_routes: home.map(|h| h.join(DYNAMIC_ROUTES_FILE)),
            },
            problems,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routes_need_a_secret_and_insecure_only_on_loopback() {
        let v = json!({"prompt": "x"});
        assert!(
            parse_route("a", &v, None, "0.0.0.0")
                .unwrap_err()
                .contains("no HMAC secret")
        );
        assert_eq!(
            parse_route("a", &v, Some("g"), "0.0.0.0").unwrap().secret,
            "g"
        );
        let insecure = json!({"secret": INSECURE_NO_AUTH});
        assert!(parse_route("a", &insecure, None, "0.0.0.0").is_err());
        assert!(parse_route("a", &insecure, None, "127.0.0.1").is_ok());
        assert!(
            parse_route("a", &json!({"secret": "s", "script": "x.py"}), None, "h")
                .unwrap_err()
                .contains("script")
        );
        assert!(
            parse_route(
                "a",
                &json!({"secret": "s", "deliver_only": true}),
                None,
                "h"
            )
            .is_err()
        );
        let r = parse_route(
            "gh",
            &json!({"secret": "s", "events": ["push"], "deliver": "telegram", "deliver_extra": {"chat_id": "{chat}"}}),
            None,
            "h",
        )
        .unwrap();
        assert_eq!(r.deliver, Deliver::Platform("telegram".into()));
        assert_eq!(r.events, vec!["push"]);
        assert!(
            parse_route(
                "c",
                &json!({"secret": "s", "deliver": "callback"}),
                None,
                "h"
            )
            .is_err()
        );
    }
}
