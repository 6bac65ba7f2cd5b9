//! Honcho's settings, resolved as the Python Hermes resolves them: from the first of
//! `$HERMES_HOME/honcho.json`, `~/.hermes/honcho.json` and `~/.honcho/config.json` that exists,
//! every key taken from the host block (`hosts.<host>`) first, then the file's root, then the
//! environment (`HONCHO_API_KEY`, `HONCHO_BASE_URL`, `HONCHO_ENVIRONMENT`, `HONCHO_TIMEOUT`),
//! then Python's default. The host is `HERMES_HONCHO_HOST`, else `hermes` for the default
//! profile and `hermes_<profile>` for a named one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hermes_config::{Environment, HermesHome};
use serde_json::{Map, Value};

/// The cloud API (`environment: production`).
pub const PRODUCTION_URL: &str = "https://api.honcho.dev";
/// A self-hosted server on this machine (`environment: local`).
pub const LOCAL_URL: &str = "http://localhost:8000";
/// Python's `_DEFAULT_HTTP_TIMEOUT`.
const DEFAULT_TIMEOUT_SECS: f64 = 30.0;

/// The reasoning levels of Honcho's dialectic, lightest first.
pub const LEVELS: [&str; 5] = ["minimal", "low", "medium", "high", "max"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecallMode {
    /// Context injected before turns and the tools offered (the default; legacy `auto`).
    Hybrid,
    /// Context injected, no tools.
    Context,
    /// Tools only, nothing injected.
    Tools,
}

/// When finished exchanges are sent (`writeFrequency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFrequency {
    /// In the background after each turn (the default).
    Async,
    /// Before the turn ends.
    Turn,
    /// All at once when the session ends.
    Session,
    /// Every N turns (and what is left when the session ends).
    Every(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStrategy {
    PerDirectory,
    PerRepo,
    PerSession,
    Global,
}

/// Who observes whom in a session (Honcho's `SessionPeerConfig` of each peer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observation {
    pub user_observe_me: bool,
    pub user_observe_others: bool,
    pub ai_observe_me: bool,
    pub ai_observe_others: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HonchoConfig {
    /// The file the settings came from (`None`: environment only).
    pub path: Option<PathBuf>,
    pub host: String,
    pub workspace: String,
    pub api_key: Option<String>,
    /// The host block sets its own `apiKey` (sent even to a local server).
    pub host_sets_key: bool,
    /// The API's origin, without a trailing `/v3`.
    pub base_url: String,
    pub timeout: Duration,
    pub enabled: bool,
    pub peer_name: Option<String>,
    pub ai_peer: String,
    pub pin_user_peer: bool,
    pub user_peer_aliases: BTreeMap<String, String>,
    pub runtime_peer_prefix: String,
    pub recall_mode: RecallMode,
    pub write_frequency: WriteFrequency,
    pub save_messages: bool,
    pub session_strategy: SessionStrategy,
    pub session_peer_prefix: bool,
    /// Working directory → session name.
    pub sessions: BTreeMap<String, String>,
    pub context_tokens: Option<u64>,
    pub dialectic_reasoning_level: String,
    pub dialectic_dynamic: bool,
    pub dialectic_max_chars: usize,
    pub dialectic_depth: usize,
    pub dialectic_depth_levels: Option<Vec<String>>,
    pub reasoning_heuristic: bool,
    pub reasoning_level_cap: String,
    pub message_max_chars: usize,
    pub dialectic_max_input_chars: usize,
    /// Base context on the first turn only (`injectionFrequency: first-turn`).
    pub first_turn_only: bool,
    pub context_cadence: u64,
    pub dialectic_cadence: u64,
    /// Rewrite the latest message into a retrieval question before the dialectic
    /// (`queryRewrite`; one auxiliary-model call per dialectic cycle).
    pub query_rewrite: bool,
    pub first_turn_base_wait: Duration,
    pub first_turn_dialectic_wait: Duration,
    pub observation: Observation,
}

/// The host block of `raw`, accepting the legacy `hermes.<profile>` spelling.
fn host_block<'a>(raw: &'a Map<String, Value>, host: &str) -> &'a Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let hosts = raw.get("hosts").and_then(Value::as_object);
    let found = hosts.and_then(|h| h.get(host)).and_then(Value::as_object);
    let legacy = || {
        let profile = host.strip_prefix("hermes_")?;
        hosts?.get(&format!("hermes.{profile}"))?.as_object()
    };
    match found.filter(|b| !b.is_empty()).or_else(legacy) {
        Some(block) => block,
        None => found.unwrap_or_else(|| EMPTY.get_or_init(Map::new)),
    }
}

/// The host key of a profile (Python's `profile_host_key`).
pub fn profile_host(profile: Option<&str>) -> String {
    match profile {
        None | Some("default") | Some("custom") => "hermes".to_string(),
        Some(p) => {
            let s: String = p
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let s = s.trim_matches('_');
            format!("hermes_{}", if s.is_empty() { "profile" } else { s })
        }
    }
}

/// The settings file in use: the first that exists, else `None`.
pub fn config_path(home: &HermesHome, env: &Environment) -> Option<PathBuf> {
    let user_home = env.var("HOME").map(PathBuf::from);
    let mut candidates = vec![home.root().join("honcho.json")];
    if let Some(h) = &user_home {
        candidates.push(h.join(".hermes").join("honcho.json"));
        candidates.push(h.join(".honcho").join("config.json"));
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// Why the settings file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a JSON object: {reason}")]
    Parse { path: PathBuf, reason: String },
}

/// Settings files are small; a bigger one is not a Honcho config.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

fn read_object(path: &Path) -> Result<Map<String, Value>, ConfigError> {
    let read = |source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    };
    let len = std::fs::metadata(path).map_err(read)?.len();
    if len > MAX_CONFIG_BYTES {
        return Err(ConfigError::Parse {
            path: path.to_path_buf(),
            reason: format!("{len} bytes, over the {MAX_CONFIG_BYTES} a config may have"),
        });
    }
    let text = std::fs::read_to_string(path).map_err(read)?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ConfigError::Parse {
            path: path.to_path_buf(),
            reason: "the top level is not an object".into(),
        }),
        Err(e) => Err(ConfigError::Parse {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }),
    }
}

/// One key looked up host block first, then root; JSON `null` counts as absent.
struct Lookup<'a> {
    host: &'a Map<String, Value>,
    root: &'a Map<String, Value>,
}

impl Lookup<'_> {
    fn values(&self, key: &str) -> impl Iterator<Item = &Value> {
        [self.host.get(key), self.root.get(key)]
            .into_iter()
            .flatten()
            .filter(|v| !v.is_null())
    }

    /// The first non-empty string (Python's `host.get(k) or root.get(k)`).
    fn string(&self, key: &str) -> Option<String> {
        self.values(key)
            .filter_map(Value::as_str)
            .map(str::trim)
            .find(|s| !s.is_empty())
            .map(str::to_string)
    }

    fn bool(&self, keys: &[&str], default: bool) -> bool {
        keys.iter()
            .flat_map(|k| self.values(k))
            .find_map(truthy)
            .unwrap_or(default)
    }

    fn int(&self, key: &str) -> Option<i64> {
        self.values(key).find_map(|v| {
            v.as_i64()
                .or_else(|| v.as_f64().map(|f| f as i64))
                .or_else(|| v.as_str()?.trim().parse().ok())
        })
    }

    fn seconds(&self, key: &str, default: f64) -> Duration {
        let secs = self
            .values(key)
            .find_map(|v| v.as_f64().or_else(|| v.as_str()?.trim().parse().ok()))
            .unwrap_or(default);
        Duration::from_secs_f64(secs.clamp(0.0, 3600.0))
    }

    /// A string map where the host block's map replaces the root's whole.
    fn map(&self, key: &str) -> BTreeMap<String, String> {
        let source = if self.host.contains_key(key) {
            self.host.get(key)
        } else {
            self.root.get(key)
        };
        source
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| {
                        let v = match v {
                            Value::String(s) => s.trim().to_string(),
                            Value::Null => String::new(),
                            other => other.to_string(),
                        };
                        let k = k.trim();
                        (!k.is_empty() && !v.is_empty()).then(|| (k.to_string(), v))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn truthy(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => Some(n.as_f64() != Some(0.0)),
        Value::String(s) => Some(!s.is_empty()),
        _ => None,
    }
}

fn level_or(value: Option<String>, default: &str) -> String {
    value
        .filter(|v| LEVELS.contains(&v.as_str()))
        .unwrap_or_else(|| default.to_string())
}

impl HonchoConfig {
    /// The settings for `home` from its Honcho config file and the environment.
    pub fn resolve(home: &HermesHome, env: &Environment) -> Result<HonchoConfig, ConfigError> {
        let path = config_path(home, env);
        let raw = match &path {
            Some(p) => read_object(p)?,
            None => Map::new(),
        };
        Ok(HonchoConfig::from_raw(path, &raw, home, env))
    }

    pub fn from_raw(
        path: Option<PathBuf>,
        raw: &Map<String, Value>,
        home: &HermesHome,
        env: &Environment,
    ) -> HonchoConfig {
        let host = env.var("HERMES_HONCHO_HOST").unwrap_or_else(|| {
            let profile_host = profile_host(home.profile_name().as_deref());
            let default_host = raw
                .get("defaultHost")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|h| !h.is_empty());
            match default_host {
                Some(h) if profile_host == "hermes" => h.to_string(),
                _ => profile_host,
            }
        });
        let block = host_block(raw, &host);
        let cfg = Lookup {
            host: block,
            root: raw,
        };
        let explicitly_configured =
            !block.is_empty() || raw.get("enabled") == Some(&Value::Bool(true));

        let api_key = cfg.string("apiKey").or_else(|| env.var("HONCHO_API_KEY"));
        // The base URL is a root setting in Python (a host block cannot move the server).
        let root_only = Lookup {
            host: &Map::new(),
            root: raw,
        };
        let base_url = root_only
            .string("baseUrl")
            .or_else(|| root_only.string("base_url"))
            .or_else(|| env.var("HONCHO_BASE_URL"));
        let environment = cfg
            .string("environment")
            .or_else(|| env.var("HONCHO_ENVIRONMENT"))
            .unwrap_or_else(|| "production".into());
        let enabled = match [block.get("enabled"), raw.get("enabled")]
            .into_iter()
            .flatten()
            .find(|v| !v.is_null())
        {
            Some(v) => truthy(v).unwrap_or(false),
            None => api_key.is_some() || base_url.is_some(),
        };
        let base_url = match base_url {
            Some(url) => strip_version(&url),
            None if environment == "local" => LOCAL_URL.to_string(),
            None => PRODUCTION_URL.to_string(),
        };
        let timeout = ["timeout", "requestTimeout"]
            .iter()
            .flat_map(|k| cfg.values(k))
            .find_map(|v| v.as_f64().or_else(|| v.as_str()?.trim().parse().ok()))
            .or_else(|| env.var("HONCHO_TIMEOUT")?.trim().parse().ok())
            .filter(|t: &f64| *t > 0.0)
            .unwrap_or(DEFAULT_TIMEOUT_SECS);

        let write_frequency = match block
            .get("writeFrequency")
            .filter(|v| truthy(v) == Some(true))
            .or_else(|| raw.get("writeFrequency"))
        {
            Some(Value::Number(n)) => n.as_u64().map_or(WriteFrequency::Async, |n| {
                WriteFrequency::Every(n.max(1) as u32)
            }),
            Some(Value::String(s)) => match s.trim() {
                "turn" => WriteFrequency::Turn,
                "session" => WriteFrequency::Session,
                other => other
                    .parse::<u32>()
                    .map_or(WriteFrequency::Async, |n| WriteFrequency::Every(n.max(1))),
            },
            _ => WriteFrequency::Async,
        };
        let recall_mode = match cfg.string("recallMode").as_deref() {
            Some("context") => RecallMode::Context,
            Some("tools") => RecallMode::Tools,
            _ => RecallMode::Hybrid,
        };
        let session_strategy = match cfg.string("sessionStrategy").as_deref() {
            Some("per-repo") => SessionStrategy::PerRepo,
            Some("per-session") => SessionStrategy::PerSession,
            Some("global") => SessionStrategy::Global,
            _ => SessionStrategy::PerDirectory,
        };
        let dialectic_depth = cfg.int("dialecticDepth").unwrap_or(1).clamp(1, 3) as usize;
        let dialectic_depth_levels = [
            block.get("dialecticDepthLevels"),
            raw.get("dialecticDepthLevels"),
        ]
        .into_iter()
        .flatten()
        .find_map(Value::as_array)
        .map(|levels| {
            let mut out: Vec<String> = levels
                .iter()
                .take(dialectic_depth)
                .map(|l| level_or(l.as_str().map(str::to_string), "low"))
                .collect();
            out.resize(dialectic_depth, "low".to_string());
            out
        });
        let observation_mode = match cfg
            .string("observationMode")
            .unwrap_or_else(|| {
                if explicitly_configured {
                    "unified"
                } else {
                    "directional"
                }
                .to_string()
            })
            .as_str()
        {
            "unified" | "shared" => "unified",
            _ => "directional",
        };
        let preset = observation_mode == "directional";
        let granular = cfg.values("observation").find_map(Value::as_object);
        let side = |peer: &str, key: &str, default: bool| {
            granular
                .and_then(|o| o.get(peer))
                .and_then(|p| p.get(key))
                .and_then(Value::as_bool)
                .unwrap_or(default)
        };
        let observation = Observation {
            user_observe_me: side("user", "observeMe", true),
            user_observe_others: side("user", "observeOthers", preset),
            ai_observe_me: side("ai", "observeMe", preset),
            ai_observe_others: side("ai", "observeOthers", true),
        };
        let runtime_peer_prefix = if block.contains_key("runtimePeerPrefix") {
            block.get("runtimePeerPrefix")
        } else {
            raw.get("runtimePeerPrefix")
        }
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_string();

        HonchoConfig {
            path,
            workspace: cfg.string("workspace").unwrap_or_else(|| host.clone()),
            ai_peer: cfg.string("aiPeer").unwrap_or_else(|| host.clone()),
            host_sets_key: block.get("apiKey").and_then(truthy) == Some(true),
            host,
            api_key,
            base_url,
            timeout: Duration::from_secs_f64(timeout.min(3600.0)),
            enabled,
            peer_name: cfg.string("peerName"),
            pin_user_peer: cfg.bool(&["pinUserPeer", "pinPeerName"], false),
            user_peer_aliases: cfg.map("userPeerAliases"),
            runtime_peer_prefix,
            recall_mode,
            write_frequency,
            save_messages: cfg.bool(&["saveMessages"], true),
            session_strategy,
            session_peer_prefix: cfg.bool(&["sessionPeerPrefix"], false),
            sessions: root_only.map("sessions"),
            context_tokens: cfg.int("contextTokens").and_then(|t| u64::try_from(t).ok()),
            dialectic_reasoning_level: level_or(cfg.string("dialecticReasoningLevel"), "low"),
            dialectic_dynamic: cfg.bool(&["dialecticDynamic"], true),
            dialectic_max_chars: cfg.int("dialecticMaxChars").unwrap_or(600).max(0) as usize,
            dialectic_depth,
            dialectic_depth_levels,
            reasoning_heuristic: cfg.bool(&["reasoningHeuristic"], true),
            reasoning_level_cap: level_or(cfg.string("reasoningLevelCap"), "high"),
            message_max_chars: cfg.int("messageMaxChars").unwrap_or(25_000).max(100) as usize,
            dialectic_max_input_chars: cfg.int("dialecticMaxInputChars").unwrap_or(10_000).max(100)
                as usize,
            first_turn_only: cfg.string("injectionFrequency").as_deref() == Some("first-turn"),
            context_cadence: cfg.int("contextCadence").unwrap_or(1).max(1) as u64,
            dialectic_cadence: cfg.int("dialecticCadence").unwrap_or(1).max(1) as u64,
            query_rewrite: cfg.bool(&["queryRewrite"], false),
            first_turn_base_wait: cfg.seconds("firstTurnBaseWait", 3.0),
            first_turn_dialectic_wait: cfg.seconds("firstTurnDialecticWait", 2.0),
            observation,
        }
    }

    /// Whether the provider can run: enabled, with a key or a server of its own.
    pub fn usable(&self) -> bool {
        self.enabled && (self.api_key.is_some() || self.base_url != PRODUCTION_URL)
    }

    /// The key to send: a self-hosted server on a local address gets none unless the host
    /// block sets one (a stored cloud key would be refused there), as in Python.
    pub fn effective_api_key(&self) -> Option<&str> {
        if is_local_url(&self.base_url) && !self.host_sets_key {
            return None;
        }
        self.api_key.as_deref()
    }
}

/// `http://host:8000/v3/` → `http://host:8000`: the routes carry the version.
fn strip_version(url: &str) -> String {
    let trimmed = url.trim().trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((head, tail))
            if tail.len() > 1
                && tail.starts_with('v')
                && tail[1..].chars().all(|c| c.is_ascii_digit()) =>
        {
            head.trim_end_matches('/').to_string()
        }
        _ => trimmed.to_string(),
    }
}

/// Loopback, private and link-local hosts (Python's `_is_local_base_url`).
pub fn is_local_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    if host.eq_ignore_ascii_case("localhost") || host.ends_with(".local") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Ok(std::net::IpAddr::V6(ip)) => ip.is_loopback(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resolve(raw: Value, vars: &[(&str, &str)]) -> HonchoConfig {
        let dir = tempfile::tempdir().unwrap();
        let home = HermesHome::at(dir.path().to_path_buf());
        let env = Environment::isolated(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let Value::Object(map) = raw else { panic!() };
        HonchoConfig::from_raw(None, &map, &home, &env)
    }

    #[test]
    fn the_host_block_wins_over_the_root_which_wins_over_the_environment() {
        let c = resolve(
            json!({"apiKey": "root-key", "workspace": "shared", "peerName": "ann",
                   "dialecticDepth": 7, "hosts": {"hermes": {"aiPeer": "coder", "recallMode": "auto",
                   "dialecticDepthLevels": ["max", "bogus"]}}}),
            &[("HONCHO_API_KEY", "env-key")],
        );
        assert_eq!(c.api_key.as_deref(), Some("root-key"));
        assert_eq!(c.workspace, "shared");
        assert_eq!(c.ai_peer, "coder");
        assert_eq!(c.recall_mode, RecallMode::Hybrid);
        assert_eq!(c.dialectic_depth, 3);
        assert_eq!(
            c.dialectic_depth_levels,
            Some(vec!["max".into(), "low".into(), "low".into()])
        );
        assert!(c.enabled, "a key enables it");
        // An explicit host block keeps the old `unified` observation default.
        assert!(!c.observation.ai_observe_me && c.observation.ai_observe_others);
    }

    #[test]
    fn without_a_file_the_environment_configures_it() {
        let c = resolve(json!({}), &[("HONCHO_BASE_URL", "http://127.0.0.1:9/v3/")]);
        assert_eq!(c.base_url, "http://127.0.0.1:9");
        assert_eq!(c.workspace, "hermes");
        assert!(c.usable());
        assert_eq!(c.effective_api_key(), None);
        assert_eq!(c.write_frequency, WriteFrequency::Async);
        assert!(c.observation.ai_observe_me, "directional by default");
        let off = resolve(json!({}), &[]);
        assert!(!off.enabled && !off.usable());
    }

    #[test]
    fn profiles_get_their_own_host() {
        assert_eq!(profile_host(None), "hermes");
        assert_eq!(profile_host(Some("coder")), "hermes_coder");
        assert_eq!(profile_host(Some("a b")), "hermes_a_b");
        assert!(is_local_url("http://192.168.1.4:8000"));
        assert!(!is_local_url("https://api.honcho.dev"));
    }
}
