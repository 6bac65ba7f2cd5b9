//! Mattermost's settings, the Python Hermes's keys: the server (`MATTERMOST_URL` or
//! `extra.url`), the bot's token (`MATTERMOST_TOKEN` or `token`: a bot account's access token
//! or a personal access token), `MATTERMOST_REPLY_MODE` / `extra.reply_mode` (`thread` nests
//! answers under the message in channels; `off`, the default, answers flat), and the shared
//! keys (`MATTERMOST_ALLOWED_USERS`, `MATTERMOST_HOME_CHANNEL`, `MATTERMOST_REQUIRE_MENTION`,
//! `MATTERMOST_FREE_RESPONSE_CHANNELS`, `MATTERMOST_ALLOWED_CHANNELS`, ...).

use std::time::Duration;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::{AllowBots, MentionSettings, PlatformSettings};

pub(crate) const PLATFORM: &str = "mattermost";

#[derive(Debug, Clone)]
pub struct MattermostSettings {
    /// `https://mm.example.com` (no trailing slash, no `/api/v4`).
    pub url: String,
    pub token: String,
    /// Answer channel messages in a thread under them (`reply_mode: thread`).
    pub reply_in_thread: bool,
    pub mentions: MentionSettings,
    pub allow_bots: AllowBots,
    pub max_rate_limit_wait: Duration,
}

impl MattermostSettings {
    pub fn from_platform(p: &PlatformSettings) -> Result<MattermostSettings, PlatformConfigError> {
        let token = p.token.clone().filter(|t| !t.trim().is_empty()).ok_or(
            PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "MATTERMOST_TOKEN",
            },
        )?;
        let url = p.extra_str("url").filter(|u| !u.trim().is_empty()).ok_or(
            PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "MATTERMOST_URL",
            },
        )?;
        let url = url
            .trim()
            .trim_end_matches('/')
            .trim_end_matches("/api/v4")
            .to_string();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("MATTERMOST_URL must be an http(s) URL, not {url:?}"),
            });
        }
        let reply_mode = p
            .extra_str("reply_mode")
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        Ok(MattermostSettings {
            url,
            token: token.trim().to_string(),
            reply_in_thread: reply_mode == "thread",
            mentions: p.mentions.clone(),
            allow_bots: p.access.allow_bots,
            max_rate_limit_wait: Duration::from_secs(
                p.extra_u64("max_rate_limit_wait").unwrap_or(60),
            ),
        })
    }

    /// `ws://…/api/v4/websocket` or `wss://…`.
    pub(crate) fn websocket_url(&self) -> String {
        let rest = self
            .url
            .strip_prefix("https://")
            .map(|r| format!("wss://{r}"))
            .or_else(|| {
                self.url
                    .strip_prefix("http://")
                    .map(|r| format!("ws://{r}"))
            })
            .unwrap_or_else(|| self.url.clone());
        format!("{rest}/api/v4/websocket")
    }

    /// Whether `url` is on the server (the only host the token is sent to).
    pub(crate) fn is_own_url(&self, url: &str) -> bool {
        url.starts_with(&format!("{}/", self.url))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::{Config, Environment};

    fn settings(
        yaml: &str,
        env: &[(&str, &str)],
    ) -> Result<MattermostSettings, PlatformConfigError> {
        let env = Environment::isolated(env.iter().copied());
        let config = Config::from_yaml(std::path::Path::new("/h/config.yaml"), yaml, &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        MattermostSettings::from_platform(platforms.get(PLATFORM).unwrap())
    }

    #[test]
    fn the_variables_enable_and_configure_it() {
        let s = settings(
            "",
            &[
                ("MATTERMOST_URL", "https://mm.example.com/api/v4/"),
                ("MATTERMOST_TOKEN", "tok"),
                ("MATTERMOST_REPLY_MODE", "thread"),
            ],
        )
        .unwrap();
        assert_eq!(s.url, "https://mm.example.com");
        assert_eq!(s.token, "tok");
        assert!(s.reply_in_thread);
        assert!(s.mentions.require_mention);
        assert_eq!(s.websocket_url(), "wss://mm.example.com/api/v4/websocket");
        assert!(s.is_own_url("https://mm.example.com/api/v4/files/x"));
        assert!(!s.is_own_url("https://mm.example.com.evil/api"));
    }

    #[test]
    fn a_missing_url_names_the_variable() {
        let e = settings(
            "platforms:\n  mattermost:\n    enabled: true\n    token: t\n",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("MATTERMOST_URL"), "{e}");
    }
}
