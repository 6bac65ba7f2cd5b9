//! Signal's settings, the Python Hermes's keys: the signal-cli daemon (`SIGNAL_HTTP_URL` or
//! `extra.http_url`, e.g. `http://127.0.0.1:8080` for `signal-cli daemon --http`), the bot's
//! account (`SIGNAL_ACCOUNT` or `extra.account`, the registered number), the groups it
//! listens in (`SIGNAL_GROUP_ALLOWED_USERS`: group ids or `*`; none means groups are
//! ignored), `SIGNAL_IGNORE_STORIES` (default on), `SIGNAL_REQUIRE_MENTION` (default off),
//! and the shared keys (`SIGNAL_ALLOWED_USERS`, `SIGNAL_ALLOW_ALL_USERS`,
//! `SIGNAL_HOME_CHANNEL`, ...).

use serde_json::Value;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::{MentionSettings, PlatformSettings};

pub(crate) const PLATFORM: &str = "signal";

#[derive(Debug, Clone)]
pub struct SignalSettings {
    /// `http://host:port` of the daemon (no trailing slash, no `/api/v1`).
    pub http_url: String,
    /// The bot's number (or ACI for a numberless account), as signal-cli names it.
    pub account: String,
    /// Groups whose messages reach the core: base64 group ids, `*` for all; empty: none.
    pub groups: Vec<String>,
    /// Drop story messages (`SIGNAL_IGNORE_STORIES`, default true).
    pub ignore_stories: bool,
    pub mentions: MentionSettings,
}

impl SignalSettings {
    pub fn from_platform(p: &PlatformSettings) -> Result<SignalSettings, PlatformConfigError> {
        let http_url = p
            .extra_str("http_url")
            .filter(|u| !u.trim().is_empty())
            .ok_or(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "SIGNAL_HTTP_URL",
            })?;
        let account = p
            .extra_str("account")
            .filter(|a| !a.trim().is_empty())
            .ok_or(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "SIGNAL_ACCOUNT",
            })?;
        let http_url = http_url
            .trim()
            .trim_end_matches('/')
            .trim_end_matches("/api/v1")
            .to_string();
        if !(http_url.starts_with("http://") || http_url.starts_with("https://")) {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("SIGNAL_HTTP_URL must be an http(s) URL, not {http_url:?}"),
            });
        }
        let groups = match p.extra.get("group_allowed_users") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(Value::as_str)
                .map(|g| g.trim().to_string())
                .filter(|g| !g.is_empty())
                .collect(),
            Some(Value::String(s)) => s
                .split(',')
                .map(|g| g.trim().to_string())
                .filter(|g| !g.is_empty())
                .collect(),
            _ => Vec::new(),
        };
        Ok(SignalSettings {
            http_url,
            account: account.trim().to_string(),
            groups,
            ignore_stories: p.extra_bool("ignore_stories").unwrap_or(true),
            mentions: p.mentions.clone(),
        })
    }

    /// Whether messages of group `group_id` reach the core.
    pub(crate) fn group_allowed(&self, group_id: &str) -> bool {
        self.groups.iter().any(|g| g == "*" || g == group_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::{Config, Environment};

    fn load(yaml: &str, env: &[(&str, &str)]) -> PlatformsConfig {
        let env = Environment::isolated(env.iter().copied());
        let config = Config::from_yaml(std::path::Path::new("/h/config.yaml"), yaml, &env).unwrap();
        PlatformsConfig::load(&config, &env)
    }

    #[test]
    fn the_variables_enable_and_configure_it() {
        let platforms = load(
            "",
            &[
                ("SIGNAL_HTTP_URL", "http://127.0.0.1:8080/"),
                ("SIGNAL_ACCOUNT", "+15550001111"),
                ("SIGNAL_GROUP_ALLOWED_USERS", "abc=, def/+="),
                ("SIGNAL_ALLOWED_USERS", "+15550002222"),
                ("SIGNAL_IGNORE_STORIES", "false"),
            ],
        );
        let p = platforms.get(PLATFORM).unwrap();
        assert!(p.enabled);
        // Group ids are not senders: they must not open groups to everyone in the core.
        assert!(p.access.group_allowed_users.is_empty());
        assert_eq!(p.access.allowed_users, vec!["+15550002222"]);
        assert!(!p.mentions.require_mention);
        let s = SignalSettings::from_platform(p).unwrap();
        assert_eq!(s.http_url, "http://127.0.0.1:8080");
        assert_eq!(s.account, "+15550001111");
        assert_eq!(s.groups, vec!["abc=", "def/+="]);
        assert!(s.group_allowed("def/+="));
        assert!(!s.group_allowed("xyz="));
        assert!(!s.ignore_stories);
    }

    #[test]
    fn a_missing_account_names_the_variable() {
        let platforms = load(
            "platforms:\n  signal:\n    enabled: true\n    extra:\n      http_url: http://x:1\n",
            &[],
        );
        let e = SignalSettings::from_platform(platforms.get(PLATFORM).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("SIGNAL_ACCOUNT"), "{e}");
    }

    #[test]
    fn the_url_alone_does_not_enable_it_and_groups_default_to_none() {
        let platforms = load("", &[("SIGNAL_HTTP_URL", "http://x:1")]);
        assert!(platforms.get(PLATFORM).is_none());
        let platforms = load(
            "signal:\n  require_mention: true\nplatforms:\n  signal:\n    enabled: true\n    extra: {http_url: 'http://x:1', account: '+1555'}\n",
            &[],
        );
        let p = platforms.get(PLATFORM).unwrap();
        let s = SignalSettings::from_platform(p).unwrap();
        assert!(s.groups.is_empty() && s.ignore_stories);
        assert!(s.mentions.require_mention);
    }
}
