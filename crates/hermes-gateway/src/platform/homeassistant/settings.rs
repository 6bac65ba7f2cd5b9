//! Home Assistant settings, the Python Hermes's keys: `HASS_TOKEN` (a long-lived access token;
//! it enables the platform, also `platforms.homeassistant.token`), `HASS_URL` / `extra.url`
//! (default `http://homeassistant.local:8123`), and the event filters under `extra`:
//! `watch_domains`, `watch_entities`, `ignore_entities` (lists), `watch_all` (default off:
//! with no filter nothing is forwarded, as in Python), `cooldown_seconds` (30, per entity).
//! `notification_title` (default `Hermes Agent`) is ours.

use std::collections::BTreeSet;
use std::time::Duration;

use hermes_config::Environment;
use serde_json::Value;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::PlatformSettings;

pub(crate) const PLATFORM: &str = "homeassistant";

pub const DEFAULT_URL: &str = "http://homeassistant.local:8123";

#[derive(Clone)]
pub struct HomeAssistantSettings {
    /// `http(s)://host:port`, no trailing slash.
    pub url: String,
    pub token: String,
    pub watch_domains: BTreeSet<String>,
    pub watch_entities: BTreeSet<String>,
    pub ignore_entities: BTreeSet<String>,
    pub watch_all: bool,
    pub cooldown: Duration,
    pub notification_title: String,
}

impl std::fmt::Debug for HomeAssistantSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs.
        f.debug_struct("HomeAssistantSettings")
            .field("url", &self.url)
            .field("watch_domains", &self.watch_domains)
            .field("watch_entities", &self.watch_entities)
            .field("watch_all", &self.watch_all)
            .finish_non_exhaustive()
    }
}

/// A list under `extra` (a YAML list, or a comma-separated string).
fn list(p: &PlatformSettings, key: &str) -> BTreeSet<String> {
    match p.extra.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        Some(Value::String(s)) => s
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        _ => BTreeSet::new(),
    }
}

impl HomeAssistantSettings {
    pub fn from_platform(
        p: &PlatformSettings,
        env: &Environment,
    ) -> Result<HomeAssistantSettings, PlatformConfigError> {
        let token = p
            .token
            .clone()
            .or_else(|| env.var("HASS_TOKEN"))
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .ok_or(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "HASS_TOKEN",
            })?;
        let url = p
            .config_or_env("url", "HASS_URL", env)
            .map(|u| u.trim().trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| DEFAULT_URL.to_string());
        if !(url.starts_with("http://") || url.starts_with("https://"))
            || reqwest::Url::parse(&url).is_err()
        {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("HASS_URL must be an http(s) URL, not {url:?}"),
            });
        }
        Ok(HomeAssistantSettings {
            url,
            token,
            watch_domains: list(p, "watch_domains"),
            watch_entities: list(p, "watch_entities"),
            ignore_entities: list(p, "ignore_entities"),
            watch_all: p.extra_bool("watch_all").unwrap_or(false),
            cooldown: Duration::from_secs(p.extra_u64("cooldown_seconds").unwrap_or(30)),
            notification_title: p
                .extra_str("notification_title")
                .filter(|t| !t.trim().is_empty())
                .unwrap_or_else(|| "Hermes Agent".into()),
        })
    }

    /// `ws(s)://host:port/api/websocket`.
    pub fn websocket_url(&self) -> String {
        let ws = if let Some(rest) = self.url.strip_prefix("https://") {
            format!("wss://{rest}")
        } else {
            format!("ws://{}", self.url.trim_start_matches("http://"))
        };
        format!("{ws}/api/websocket")
    }

    /// Whether no filter is set and `watch_all` is off: every event is dropped.
    pub fn forwards_nothing(&self) -> bool {
        self.watch_domains.is_empty() && self.watch_entities.is_empty() && !self.watch_all
    }
}
