//! Slack's settings: the bot token (`SLACK_BOT_TOKEN`, `xoxb-…`) for the Web API, the
//! app-level token (`SLACK_APP_TOKEN`, `xapp-…`, scope `connections:write`) for Socket Mode,
//! the Web API base (`extra.base_url`, default `https://slack.com/api`), and the Python
//! Hermes's threading keys (`reply_in_thread`, `reply_broadcast`,
//! `dm_top_level_threads_as_sessions`, `strict_mention`).

use std::time::Duration;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::{AllowBots, MentionSettings, PlatformSettings};

pub(crate) const PLATFORM: &str = "slack";

pub const DEFAULT_BASE_URL: &str = "https://slack.com/api";

#[derive(Debug, Clone)]
pub struct SlackSettings {
    pub bot_token: String,
    pub app_token: String,
    pub base_url: String,
    /// Answer top-level channel messages in a thread (default on).
    pub reply_in_thread: bool,
    /// Also show thread answers in the channel (first part only).
    pub reply_broadcast: bool,
    /// Each top-level DM starts its own thread and session (default on).
    pub dm_threads: bool,
    /// The text of the "typing" status in threads (`typing_status_text`).
    pub typing_status_text: String,
    pub mentions: MentionSettings,
    pub allow_bots: AllowBots,
    pub max_rate_limit_wait: Duration,
}

impl SlackSettings {
    pub fn from_platform(p: &PlatformSettings) -> Result<SlackSettings, PlatformConfigError> {
        let bot_token = p.token.clone().filter(|t| !t.trim().is_empty()).ok_or(
            PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "SLACK_BOT_TOKEN",
            },
        )?;
        // Python accepts several comma-separated workspace tokens; this adapter serves one
        // workspace, the first.
        let bot_token = bot_token
            .split(',')
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        let app_token = p
            .extra_str("app_token")
            .filter(|t| !t.trim().is_empty())
            .ok_or(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "SLACK_APP_TOKEN",
            })?;
        let base_url = p
            .extra_str("base_url")
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string())
            .trim_end_matches('/')
            .to_string();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("extra.base_url must be an http(s) URL, not {base_url:?}"),
            });
        }
        Ok(SlackSettings {
            bot_token,
            app_token,
            base_url,
            reply_in_thread: p.extra_bool("reply_in_thread").unwrap_or(true),
            reply_broadcast: p.extra_bool("reply_broadcast").unwrap_or(false),
            dm_threads: p
                .extra_bool("dm_top_level_threads_as_sessions")
                .unwrap_or(true),
            typing_status_text: p
                .extra_str("typing_status_text")
                .unwrap_or_else(|| "is thinking...".to_string()),
            mentions: p.mentions.clone(),
            allow_bots: p.access.allow_bots,
            max_rate_limit_wait: Duration::from_secs(
                p.extra_u64("max_rate_limit_wait").unwrap_or(60),
            ),
        })
    }

    /// Whether a file URL may receive the bot token: Slack's own hosts, or the configured API
    /// host (a self-hosted gateway or a test double).
    pub(crate) fn trusts_file_host(&self, url: &str) -> bool {
        let Ok(parsed) = reqwest::Url::parse(url) else {
            return false;
        };
        let Some(host) = parsed.host_str() else {
            return false;
        };
        let api_host = reqwest::Url::parse(&self.base_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string));
        (parsed.scheme() == "https" && (host == "slack.com" || host.ends_with(".slack.com")))
            || api_host.as_deref() == Some(host)
    }
}
