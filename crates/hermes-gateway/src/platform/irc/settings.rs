//! IRC's settings, with the Python Hermes's keys and variables (the variable wins, as in the
//! Python plugin): `IRC_SERVER` / `extra.server`, `IRC_PORT` / `extra.port` (6697 with TLS,
//! 6667 without), `IRC_NICKNAME` / `extra.nickname` (`hermes-bot`), `IRC_CHANNEL` /
//! `extra.channel` (comma-separated for several), `IRC_USE_TLS` / `extra.use_tls` (on),
//! `IRC_SERVER_PASSWORD`, `IRC_NICKSERV_PASSWORD`, `extra.allowed_users` (nicks the adapter
//! itself admits; `IRC_ALLOWED_USERS` is the gateway's allowlist), `extra.max_message_length`
//! (450). Beyond the Python plugin: SASL PLAIN (`IRC_SASL_USERNAME` / `extra.sasl_username`,
//! default the nickname, and `IRC_SASL_PASSWORD` / `extra.sasl_password`) and flood control
//! (`extra.flood_burst` lines at once, then one per `extra.flood_interval_ms`).

use std::time::Duration;

use hermes_config::Environment;
use serde_json::Value;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::{MentionSettings, PlatformSettings, scalar_string, split_csv};

pub(crate) const PLATFORM: &str = "irc";

#[derive(Clone)]
pub struct IrcSettings {
    pub server: String,
    pub port: u16,
    pub use_tls: bool,
    pub nickname: String,
    pub channels: Vec<String>,
    pub server_password: Option<String>,
    pub nickserv_password: Option<String>,
    /// `(user, password)` for SASL PLAIN.
    pub sasl: Option<(String, String)>,
    /// Lower-cased nicks; empty admits everyone (the gateway's allowlist still applies).
    pub allowed_users: Vec<String>,
    pub max_message_length: usize,
    pub mentions: MentionSettings,
    pub flood_burst: u32,
    pub flood_interval: Duration,
}

impl std::fmt::Debug for IrcSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IrcSettings")
            .field("server", &self.server)
            .field("port", &self.port)
            .field("use_tls", &self.use_tls)
            .field("nickname", &self.nickname)
            .field("channels", &self.channels)
            .finish_non_exhaustive()
    }
}

fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

impl IrcSettings {
    pub fn from_platform(
        p: &PlatformSettings,
        env: &Environment,
    ) -> Result<IrcSettings, PlatformConfigError> {
        // The variable first, then `extra` (the Python plugin's order).
        let get = |var: &str, key: &str| {
            env.var(var)
                .filter(|v| !v.trim().is_empty())
                .or_else(|| p.extra_str(key))
        };
        let server = get("IRC_SERVER", "server").ok_or(PlatformConfigError::MissingCredential {
            platform: PLATFORM,
            variable: "IRC_SERVER",
        })?;
        let channel =
            get("IRC_CHANNEL", "channel").ok_or(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "IRC_CHANNEL",
            })?;
        let channels: Vec<String> = split_csv(&channel)
            .into_iter()
            .filter(|c| c.starts_with(['#', '&', '+', '!']) && !c.contains([' ', '\u{7}']))
            .collect();
        if channels.is_empty() {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("IRC_CHANNEL {channel:?} names no channel (they start with #)"),
            });
        }
        let use_tls = match env.var("IRC_USE_TLS").filter(|v| !v.trim().is_empty()) {
            Some(v) => truthy(&v),
            None => p.extra_bool("use_tls").unwrap_or(true),
        };
        let port = match get("IRC_PORT", "port") {
            None => {
                if use_tls {
                    6697
                } else {
                    6667
                }
            }
            Some(v) => v.trim().parse().map_err(|_| PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("IRC_PORT {v:?} is not a port"),
            })?,
        };
        let nickname = get("IRC_NICKNAME", "nickname").unwrap_or_else(|| "hermes-bot".into());
        if nickname.contains([' ', ',', '*', '?', '!', '@', ':', '#']) || nickname.len() > 30 {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("IRC_NICKNAME {nickname:?} is not a valid nickname"),
            });
        }
        let sasl = get("IRC_SASL_PASSWORD", "sasl_password").map(|password| {
            (
                get("IRC_SASL_USERNAME", "sasl_username").unwrap_or_else(|| nickname.clone()),
                password,
            )
        });
        let allowed_users = match p.extra.get("allowed_users") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(scalar_string)
                .map(|u| u.to_lowercase())
                .collect(),
            Some(other) => scalar_string(other)
                .map(|s| {
                    split_csv(&s)
                        .into_iter()
                        .map(|u| u.to_lowercase())
                        .collect()
                })
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let mut mentions = p.mentions.clone();
        // Channel names are case-insensitive.
        mentions.free_response_channels = mentions
            .free_response_channels
            .iter()
            .map(|c| c.to_lowercase())
            .collect();
        mentions.allowed_channels = mentions
            .allowed_channels
            .iter()
            .map(|c| c.to_lowercase())
            .collect();
        mentions.ignored_channels = mentions
            .ignored_channels
            .iter()
            .map(|c| c.to_lowercase())
            .collect();
        Ok(IrcSettings {
            server,
            port,
            use_tls,
            nickname,
            channels,
            server_password: get("IRC_SERVER_PASSWORD", "server_password"),
            nickserv_password: get("IRC_NICKSERV_PASSWORD", "nickserv_password"),
            sasl,
            allowed_users,
            max_message_length: p
                .extra_u64("max_message_length")
                .map_or(450, |n| n.clamp(32, 510) as usize),
            mentions,
            flood_burst: p
                .extra_u64("flood_burst")
                .map_or(3, |n| n.clamp(1, 20) as u32),
            flood_interval: Duration::from_millis(
                p.extra_u64("flood_interval_ms")
                    .unwrap_or(700)
                    .clamp(50, 10_000),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::Config;
    use std::path::Path;

    fn settings(yaml: &str, vars: &[(&str, &str)]) -> Result<IrcSettings, PlatformConfigError> {
        let env = Environment::isolated(vars.iter().copied());
        let config = Config::from_yaml(Path::new("/h/config.yaml"), yaml, &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let p = platforms.get("irc").expect("irc configured");
        assert!(p.enabled);
        IrcSettings::from_platform(p, &env)
    }

    #[test]
    fn variables_enable_irc_and_win_over_extra() {
        let env = [
            ("IRC_SERVER", "irc.example.org"),
            ("IRC_CHANNEL", "#hermes, #ops"),
            ("IRC_USE_TLS", "false"),
            ("IRC_SASL_PASSWORD", "pw"),
        ];
        let s = settings(
            "platforms:\n  irc:\n    extra: {server: other, nickname: herm, allowed_users: [Ann]}\n",
            &env,
        )
        .unwrap();
        assert_eq!(s.server, "irc.example.org");
        assert_eq!(s.channels, vec!["#hermes", "#ops"]);
        assert!(!s.use_tls);
        assert_eq!(s.port, 6667);
        assert_eq!(s.nickname, "herm");
        assert_eq!(s.sasl, Some(("herm".into(), "pw".into())));
        assert_eq!(s.allowed_users, vec!["ann"]);
        assert_eq!(s.max_message_length, 450);
        assert!(s.mentions.require_mention);
    }

    #[test]
    fn defaults_and_errors() {
        let s = settings(
            "platforms:\n  irc:\n    enabled: true\n    extra: {server: irc.x, channel: '#a'}\n",
            &[],
        )
        .unwrap();
        assert!(s.use_tls);
        assert_eq!(s.port, 6697);
        assert_eq!(s.nickname, "hermes-bot");
        let e = settings(
            "platforms:\n  irc:\n    enabled: true\n    extra: {server: irc.x, channel: 'a'}\n",
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("IRC_CHANNEL"), "{e}");
        let e = settings("platforms:\n  irc:\n    enabled: true\n", &[]).unwrap_err();
        assert!(e.to_string().contains("IRC_SERVER"), "{e}");
    }
}
