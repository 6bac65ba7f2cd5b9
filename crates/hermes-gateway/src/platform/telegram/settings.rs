//! Telegram's settings: the token, the Bot API and file URLs (`extra.base_url` /
//! `extra.base_file_url`, a local Bot API server's, as python-telegram-bot reads them), the
//! mode (webhook when `TELEGRAM_WEBHOOK_URL` is set, else long polling) and the behaviour
//! keys.

use std::time::Duration;

use hermes_config::Environment;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::{AllowBots, MentionSettings, PlatformSettings, ReplyToMode};

pub(crate) const PLATFORM: &str = "telegram";

/// The public Bot API.
pub const DEFAULT_BASE_URL: &str = "https://api.telegram.org/bot";
pub const DEFAULT_FILE_URL: &str = "https://api.telegram.org/file/bot";

/// Webhook mode: Telegram pushes updates to `url`; we listen on `host:port` at `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookMode {
    /// `TELEGRAM_WEBHOOK_URL`: the public URL registered with `setWebhook`.
    pub url: String,
    /// `TELEGRAM_WEBHOOK_SECRET`: required (a webhook without it accepts forged updates).
    pub secret: String,
    /// `TELEGRAM_WEBHOOK_PORT` (default 8443).
    pub port: u16,
    /// `extra.webhook_host` (default `0.0.0.0`).
    pub host: String,
    /// The URL's path (default `/telegram`).
    pub path: String,
}

#[derive(Debug, Clone)]
pub struct TelegramSettings {
    pub token: String,
    /// Bot API prefix: the token is appended (or replaces `{token}`).
    pub base_url: String,
    pub base_file_url: String,
    /// `extra.local_mode`: a local Bot API server returns local file paths.
    pub local_mode: bool,
    pub webhook: Option<WebhookMode>,
    /// Long-poll timeout of `getUpdates` (`extra.poll_timeout`, default 30 s).
    pub poll_timeout: Duration,
    /// `extra.drop_pending_updates`: skip updates that arrived while the gateway was down.
    pub drop_pending_updates: bool,
    pub disable_link_previews: bool,
    pub reply_to_mode: ReplyToMode,
    pub mentions: MentionSettings,
    pub allow_bots: AllowBots,
    /// Rate limits up to this long are waited out (`extra.max_rate_limit_wait`, default 60 s).
    pub max_rate_limit_wait: Duration,
}

impl TelegramSettings {
    pub fn from_platform(
        p: &PlatformSettings,
        env: &Environment,
    ) -> Result<TelegramSettings, PlatformConfigError> {
        let token = p.token.clone().filter(|t| !t.trim().is_empty()).ok_or(
            PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "TELEGRAM_BOT_TOKEN",
            },
        )?;
        let base_url = p
            .extra_str("base_url")
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        // Python passes base_url as the file URL too when only base_url is set.
        let base_file_url = p.extra_str("base_file_url").unwrap_or_else(|| {
            if p.extra_str("base_url").is_some() {
                base_url.clone()
            } else {
                DEFAULT_FILE_URL.to_string()
            }
        });
        for (key, url) in [("base_url", &base_url), ("base_file_url", &base_file_url)] {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(PlatformConfigError::Invalid {
                    platform: PLATFORM,
                    message: format!("extra.{key} must be an http(s) URL, not {url:?}"),
                });
            }
        }
        let webhook = match p
            .config_or_env("webhook_url", "TELEGRAM_WEBHOOK_URL", env)
            .filter(|u| !u.trim().is_empty())
        {
            None => None,
            Some(url) => {
                let secret = p
                    .config_or_env("webhook_secret", "TELEGRAM_WEBHOOK_SECRET", env)
                    .filter(|s| !s.trim().is_empty())
                    .ok_or(PlatformConfigError::MissingCredential {
                        platform: PLATFORM,
                        variable: "TELEGRAM_WEBHOOK_SECRET (required with TELEGRAM_WEBHOOK_URL)",
                    })?;
                let port = match p.config_or_env("webhook_port", "TELEGRAM_WEBHOOK_PORT", env) {
                    None => 8443,
                    Some(v) => v.trim().parse().map_err(|_| PlatformConfigError::Invalid {
                        platform: PLATFORM,
                        message: format!("TELEGRAM_WEBHOOK_PORT={v:?} is not a port"),
                    })?,
                };
                let parsed =
                    reqwest::Url::parse(url.trim()).map_err(|e| PlatformConfigError::Invalid {
                        platform: PLATFORM,
                        message: format!("TELEGRAM_WEBHOOK_URL is not a URL: {e}"),
                    })?;
                let path = match parsed.path() {
                    "" | "/" => "/telegram".to_string(),
                    p => p.to_string(),
                };
                Some(WebhookMode {
                    url: url.trim().to_string(),
                    secret,
                    port,
                    host: p
                        .extra_str("webhook_host")
                        .unwrap_or_else(|| "0.0.0.0".into()),
                    path,
                })
            }
        };
        Ok(TelegramSettings {
            token,
            base_url,
            base_file_url,
            local_mode: p.extra_bool("local_mode").unwrap_or(false),
            webhook,
            poll_timeout: Duration::from_secs(
                p.extra_u64("poll_timeout").unwrap_or(30).clamp(1, 50),
            ),
            drop_pending_updates: p.extra_bool("drop_pending_updates").unwrap_or(false),
            disable_link_previews: p.extra_bool("disable_link_previews").unwrap_or(false),
            reply_to_mode: p.reply_to_mode,
            mentions: p.mentions.clone(),
            allow_bots: p.access.allow_bots,
            max_rate_limit_wait: Duration::from_secs(
                p.extra_u64("max_rate_limit_wait").unwrap_or(60),
            ),
        })
    }

    /// `<base_url><token>/<method>` (or `{token}` replaced, as python-telegram-bot does).
    pub(crate) fn method_url(&self, method: &str) -> String {
        join_token(&self.base_url, &self.token, method)
    }

    pub(crate) fn file_url(&self, file_path: &str) -> String {
        join_token(
            &self.base_file_url,
            &self.token,
            file_path.trim_start_matches('/'),
        )
    }
}

fn join_token(base: &str, token: &str, tail: &str) -> String {
    if base.contains("{token}") {
        format!(
            "{}/{tail}",
            base.replace("{token}", token).trim_end_matches('/')
        )
    } else {
        format!("{base}{token}/{tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::Config;
    use std::path::Path;

    fn settings(yaml: &str, env: &[(&str, &str)]) -> Result<TelegramSettings, PlatformConfigError> {
        let env = Environment::isolated(env.iter().copied());
        let config = Config::from_yaml(Path::new("/h/config.yaml"), yaml, &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        TelegramSettings::from_platform(platforms.get("telegram").unwrap(), &env)
    }

    #[test]
    fn urls_follow_python_telegram_bot() {
        let s = settings("", &[("TELEGRAM_BOT_TOKEN", "1:abc")]).unwrap();
        assert_eq!(
            s.method_url("getMe"),
            "https://api.telegram.org/bot1:abc/getMe"
        );
        assert_eq!(
            s.file_url("photos/a.jpg"),
            "https://api.telegram.org/file/bot1:abc/photos/a.jpg"
        );
        let s = settings(
            "platforms:\n  telegram:\n    extra:\n      base_url: http://localhost:8081/bot\n",
            &[("TELEGRAM_BOT_TOKEN", "1:abc")],
        )
        .unwrap();
        assert_eq!(
            s.method_url("getMe"),
            "http://localhost:8081/bot1:abc/getMe"
        );
        assert_eq!(s.file_url("x"), "http://localhost:8081/bot1:abc/x");
        let s = settings(
            "platforms:\n  telegram:\n    extra:\n      base_url: 'http://h/b/{token}/'\n",
            &[("TELEGRAM_BOT_TOKEN", "T")],
        )
        .unwrap();
        assert_eq!(s.method_url("getMe"), "http://h/b/T/getMe");
    }

    #[test]
    fn webhook_needs_a_secret() {
        let err = settings(
            "",
            &[
                ("TELEGRAM_BOT_TOKEN", "t"),
                ("TELEGRAM_WEBHOOK_URL", "https://x.y/hook"),
            ],
        )
        .unwrap_err();
        assert!(err.to_string().contains("TELEGRAM_WEBHOOK_SECRET"), "{err}");
        let s = settings(
            "",
            &[
                ("TELEGRAM_BOT_TOKEN", "t"),
                ("TELEGRAM_WEBHOOK_URL", "https://x.y/hook"),
                ("TELEGRAM_WEBHOOK_SECRET", "s"),
                ("TELEGRAM_WEBHOOK_PORT", "9443"),
            ],
        )
        .unwrap();
        let w = s.webhook.unwrap();
        assert_eq!(
            (w.path.as_str(), w.port, w.host.as_str()),
            ("/hook", 9443, "0.0.0.0")
        );
    }

    #[test]
    fn missing_token_is_named() {
        let err = settings("platforms:\n  telegram:\n    enabled: true\n", &[]).unwrap_err();
        assert!(err.to_string().contains("TELEGRAM_BOT_TOKEN"), "{err}");
    }
}
