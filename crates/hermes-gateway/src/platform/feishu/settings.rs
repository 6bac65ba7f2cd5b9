//! Feishu / Lark settings, the Python Hermes's keys (`platforms.feishu.extra.*`, each also read
//! from its `FEISHU_*` variable): `app_id` and `app_secret` (both required; together they
//! enable the platform), `domain` (`feishu`, the default, for open.feishu.cn; `lark` for
//! open.larksuite.com), `connection_mode` (only `webhook` here: Python's default, the
//! long-connection WebSocket, is refused with a message saying so), `encrypt_key` (decrypts
//! `{"encrypt": …}` deliveries and checks `X-Lark-Signature`), `verification_token` (checked
//! in every event), `webhook_host` (default `127.0.0.1`), `webhook_port` (8765),
//! `webhook_path` (`/feishu/webhook`), and the bot's identity for @mention checks
//! (`FEISHU_BOT_OPEN_ID`, `FEISHU_BOT_USER_ID`, `FEISHU_BOT_NAME`; the open id is otherwise
//! asked from `/open-apis/bot/v3/info`). `base_url` is ours: tests point it at a double.

use std::time::Duration;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::{AllowBots, MentionSettings, PlatformSettings};

pub(crate) const PLATFORM: &str = "feishu";

pub const FEISHU_URL: &str = "https://open.feishu.cn";
pub const LARK_URL: &str = "https://open.larksuite.com";
pub const DEFAULT_HOST: &str = "127.0.0.1";
pub const DEFAULT_PORT: u16 = 8765;
pub const DEFAULT_PATH: &str = "/feishu/webhook";

#[derive(Clone)]
pub struct FeishuSettings {
    pub app_id: String,
    pub app_secret: String,
    /// `feishu` or `lark`.
    pub domain: String,
    /// No trailing slash: `https://open.feishu.cn`.
    pub base_url: String,
    /// Empty: plain deliveries only, no signature check.
    pub encrypt_key: String,
    /// Empty: the token in events is not checked (the encrypt key then authenticates).
    pub verification_token: String,
    pub host: String,
    pub port: u16,
    /// Starts with `/`.
    pub path: String,
    pub bot_open_id: String,
    pub bot_user_id: String,
    pub bot_name: String,
    pub mentions: MentionSettings,
    pub allow_bots: AllowBots,
    pub max_rate_limit_wait: Duration,
}

impl std::fmt::Debug for FeishuSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret, the encrypt key and the token stay out of logs.
        f.debug_struct("FeishuSettings")
            .field("app_id", &self.app_id)
            .field("domain", &self.domain)
            .field("base_url", &self.base_url)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// `/x` for `x`, `/` for nothing (Python's path normalisation).
fn normalize_path(raw: Option<String>) -> String {
    let raw = raw.unwrap_or_else(|| DEFAULT_PATH.to_string());
    let raw = raw.trim();
    if raw.is_empty() {
        "/".to_string()
    } else if raw.starts_with('/') {
        raw.to_string()
    } else {
        format!("/{raw}")
    }
}

impl FeishuSettings {
    pub fn from_platform(p: &PlatformSettings) -> Result<FeishuSettings, PlatformConfigError> {
        let text = |key: &str| {
            p.extra_str(key)
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        let invalid = |message: String| PlatformConfigError::Invalid {
            platform: PLATFORM,
            message,
        };
        let app_id = text("app_id");
        if app_id.is_empty() {
            return Err(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "FEISHU_APP_ID",
            });
        }
        let app_secret = text("app_secret");
        if app_secret.is_empty() {
            return Err(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "FEISHU_APP_SECRET",
            });
        }
        let domain = match text("domain").to_ascii_lowercase() {
            d if d.is_empty() => "feishu".to_string(),
            d => d,
        };
        let base_url = match text("base_url") {
            u if !u.is_empty() => u.trim_end_matches('/').to_string(),
            _ => match domain.as_str() {
                "feishu" => FEISHU_URL.to_string(),
                "lark" => LARK_URL.to_string(),
                // Python passes any other value to the SDK as the domain URL itself.
                other if other.starts_with("https://") || other.starts_with("http://") => {
                    other.trim_end_matches('/').to_string()
                }
                other => {
                    return Err(invalid(format!(
                        "FEISHU_DOMAIN is feishu or lark, not {other:?}"
                    )));
                }
            },
        };
        if !(base_url.starts_with("https://") || base_url.starts_with("http://")) {
            return Err(invalid(format!(
                "extra.base_url must be an http(s) URL, not {base_url:?}"
            )));
        }
        // Unset means webhook here: the long connection (protobuf frames over a WebSocket)
        // is not built, and a gateway that silently received nothing would be worse.
        match text("connection_mode").to_ascii_lowercase().as_str() {
            "" | "webhook" => {}
            "websocket" => {
                return Err(invalid(
                    "FEISHU_CONNECTION_MODE=websocket (the long connection) is not supported by \
                     this gateway; set FEISHU_CONNECTION_MODE=webhook and subscribe the events \
                     to the webhook URL"
                        .into(),
                ));
            }
            other => {
                return Err(invalid(format!(
                    "FEISHU_CONNECTION_MODE is webhook, not {other:?}"
                )));
            }
        }
        let encrypt_key = text("encrypt_key");
        let verification_token = text("verification_token");
        if encrypt_key.is_empty() && verification_token.is_empty() {
            // Python refuses to start the webhook too: nothing could authenticate a delivery.
            return Err(invalid(
                "webhook mode needs FEISHU_VERIFICATION_TOKEN or FEISHU_ENCRYPT_KEY (both are \
                 on the app's Events and Callbacks page)"
                    .into(),
            ));
        }
        if p.extra.contains_key("webhook_port") && p.extra_u64("webhook_port").is_none() {
            return Err(invalid("FEISHU_WEBHOOK_PORT must be a port number".into()));
        }
        let port = match p.extra_u64("webhook_port") {
            None => DEFAULT_PORT,
            Some(n) => {
                u16::try_from(n).map_err(|_| invalid(format!("webhook_port {n} is not a port")))?
            }
        };
        let host = match text("webhook_host") {
            h if h.is_empty() => DEFAULT_HOST.to_string(),
            h => h,
        };
        Ok(FeishuSettings {
            app_id,
            app_secret,
            domain,
            base_url,
            encrypt_key,
            verification_token,
            host,
            port,
            path: normalize_path(p.extra_str("webhook_path")),
            bot_open_id: text("bot_open_id"),
            bot_user_id: text("bot_user_id"),
            bot_name: text("bot_name"),
            mentions: p.mentions.clone(),
            allow_bots: p.access.allow_bots,
            max_rate_limit_wait: Duration::from_secs(
                p.extra_u64("max_rate_limit_wait").unwrap_or(60),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::{Config, Environment};

    fn settings(yaml: &str, env: &[(&str, &str)]) -> Result<FeishuSettings, PlatformConfigError> {
        let env = Environment::isolated(env.iter().copied());
        let config = Config::from_yaml(std::path::Path::new("/h/config.yaml"), yaml, &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let p = platforms.get(PLATFORM).unwrap();
        assert!(p.enabled);
        FeishuSettings::from_platform(p)
    }

    const BASE: &[(&str, &str)] = &[
        ("FEISHU_APP_ID", "cli_a1b2c3"),
        ("FEISHU_APP_SECRET", "s3cret"),
        ("FEISHU_CONNECTION_MODE", "webhook"),
        ("FEISHU_VERIFICATION_TOKEN", "vt"),
    ];

    #[test]
    fn the_variables_enable_and_configure_it() {
        let mut env = BASE.to_vec();
        env.extend([
            ("FEISHU_ENCRYPT_KEY", "ek"),
            ("FEISHU_WEBHOOK_PORT", "9001"),
            ("FEISHU_WEBHOOK_PATH", "lark"),
            ("FEISHU_BOT_OPEN_ID", "ou_bot"),
            ("FEISHU_REQUIRE_MENTION", "false"),
        ]);
        let s = settings("", &env).unwrap();
        assert_eq!(
            (s.app_id.as_str(), s.app_secret.as_str()),
            ("cli_a1b2c3", "s3cret")
        );
        assert_eq!(s.base_url, FEISHU_URL);
        assert_eq!(
            (s.encrypt_key.as_str(), s.verification_token.as_str()),
            ("ek", "vt")
        );
        assert_eq!(
            (s.host.as_str(), s.port, s.path.as_str()),
            ("127.0.0.1", 9001, "/lark")
        );
        assert_eq!(s.bot_open_id, "ou_bot");
        assert!(!s.mentions.require_mention);
        assert!(!format!("{s:?}").contains("s3cret"));
    }

    #[test]
    fn lark_and_overrides() {
        let mut env = BASE.to_vec();
        env.push(("FEISHU_DOMAIN", "Lark"));
        assert_eq!(settings("", &env).unwrap().base_url, LARK_URL);
        let s = settings(
            "platforms:\n  feishu:\n    extra:\n      base_url: http://127.0.0.1:9/\n",
            BASE,
        )
        .unwrap();
        assert_eq!(s.base_url, "http://127.0.0.1:9");
        assert!(
            s.mentions.require_mention,
            "groups need a mention by default"
        );
        assert_eq!((s.port, s.path.as_str()), (DEFAULT_PORT, DEFAULT_PATH));
    }

    #[test]
    fn unsupported_or_unsafe_setups_are_named() {
        let env = [
            ("FEISHU_APP_ID", "cli_a"),
            ("FEISHU_APP_SECRET", "s"),
            ("FEISHU_VERIFICATION_TOKEN", "vt"),
            ("FEISHU_CONNECTION_MODE", "websocket"),
        ];
        let e = settings("", &env).unwrap_err().to_string();
        assert!(e.contains("FEISHU_CONNECTION_MODE=webhook"), "{e}");
        let e = settings(
            "",
            &[("FEISHU_APP_ID", "cli_a"), ("FEISHU_APP_SECRET", "s")],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("FEISHU_VERIFICATION_TOKEN"), "{e}");
        let mut env = BASE.to_vec();
        env.push(("FEISHU_DOMAIN", "example"));
        assert!(settings("", &env).is_err());
        let e = settings(
            "platforms:\n  feishu:\n    enabled: true\n    extra: {app_id: cli_a, verification_token: v}\n",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("FEISHU_APP_SECRET"), "{e}");
        // Only one of the two required variables: not enabled.
        let env = Environment::isolated([("FEISHU_APP_ID", "cli_a")]);
        let config = Config::from_yaml(std::path::Path::new("/h/config.yaml"), "", &env).unwrap();
        assert!(PlatformsConfig::load(&config, &env).get(PLATFORM).is_none());
    }
}
