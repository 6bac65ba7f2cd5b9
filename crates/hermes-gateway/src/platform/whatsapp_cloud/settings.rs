//! WhatsApp Cloud API settings, the Python Hermes's keys (`platforms.whatsapp_cloud.extra.*`,
//! each also read from its `WHATSAPP_CLOUD_*` variable): `phone_number_id` and `access_token`
//! (both required; together they enable the platform), `app_secret` (the HMAC key of
//! `X-Hub-Signature-256`; without it inbound POSTs are refused with 503), `verify_token` (the
//! subscription handshake's shared secret), `webhook_host` (default `0.0.0.0`),
//! `webhook_port` (8090), `webhook_path` (`/whatsapp/webhook`), `health_path` (`/health`),
//! `api_version` (`v20.0`), `app_id` and `waba_id` (kept for reference). `graph_url`
//! (default `https://graph.facebook.com`) is ours: tests point it at a double.

use std::time::Duration;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::PlatformSettings;

pub(crate) const PLATFORM: &str = "whatsapp_cloud";

pub const DEFAULT_GRAPH_URL: &str = "https://graph.facebook.com";
pub const DEFAULT_API_VERSION: &str = "v20.0";
pub const DEFAULT_HOST: &str = "0.0.0.0";
pub const DEFAULT_PORT: u16 = 8090;
pub const DEFAULT_PATH: &str = "/whatsapp/webhook";

#[derive(Clone)]
pub struct WhatsAppCloudSettings {
    pub phone_number_id: String,
    pub access_token: String,
    /// Empty: inbound POSTs are refused (503), since nobody could be authenticated.
    pub app_secret: String,
    /// Empty: the subscription handshake is refused (503).
    pub verify_token: String,
    pub app_id: String,
    pub waba_id: String,
    pub host: String,
    pub port: u16,
    /// Starts with `/`.
    pub path: String,
    pub health_path: String,
    pub api_version: String,
    /// No trailing slash.
    pub graph_url: String,
    pub max_rate_limit_wait: Duration,
}

impl std::fmt::Debug for WhatsAppCloudSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token and secrets stay out of logs.
        f.debug_struct("WhatsAppCloudSettings")
            .field("phone_number_id", &self.phone_number_id)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("path", &self.path)
            .field("api_version", &self.api_version)
            .field("graph_url", &self.graph_url)
            .finish_non_exhaustive()
    }
}

/// `/x` for `x`, `/` for nothing (Python's `_normalize_path`).
fn normalize_path(raw: Option<String>, default: &str) -> String {
    let raw = raw.unwrap_or_else(|| default.to_string());
    let raw = raw.trim();
    if raw.is_empty() {
        "/".to_string()
    } else if raw.starts_with('/') {
        raw.to_string()
    } else {
        format!("/{raw}")
    }
}

impl WhatsAppCloudSettings {
    pub fn from_platform(
        p: &PlatformSettings,
    ) -> Result<WhatsAppCloudSettings, PlatformConfigError> {
        let text = |key: &str| {
            p.extra_str(key)
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        let phone_number_id = text("phone_number_id");
        if phone_number_id.is_empty() {
            return Err(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "WHATSAPP_CLOUD_PHONE_NUMBER_ID",
            });
        }
        // The id is a path segment of every Graph call.
        if !phone_number_id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!(
                    "WHATSAPP_CLOUD_PHONE_NUMBER_ID must be the numeric id Meta shows, not {phone_number_id:?}"
                ),
            });
        }
        let access_token = match text("access_token") {
            t if !t.is_empty() => t,
            _ => p
                .token
                .clone()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .ok_or(PlatformConfigError::MissingCredential {
                    platform: PLATFORM,
                    variable: "WHATSAPP_CLOUD_ACCESS_TOKEN",
                })?,
        };
        let port = match p.extra_u64("webhook_port") {
            None => DEFAULT_PORT,
            Some(n) => u16::try_from(n).map_err(|_| PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("webhook_port {n} is not a port"),
            })?,
        };
        if p.extra.contains_key("webhook_port") && p.extra_u64("webhook_port").is_none() {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: "WHATSAPP_CLOUD_WEBHOOK_PORT must be a port number".into(),
            });
        }
        let api_version = match text("api_version") {
            v if v.is_empty() => DEFAULT_API_VERSION.to_string(),
            v => v,
        };
        if !api_version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.')
        {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!(
                    "WHATSAPP_CLOUD_API_VERSION looks like v20.0, not {api_version:?}"
                ),
            });
        }
        let graph_url = match text("graph_url") {
            u if u.is_empty() => DEFAULT_GRAPH_URL.to_string(),
            u => u.trim_end_matches('/').to_string(),
        };
        if !(graph_url.starts_with("https://") || graph_url.starts_with("http://")) {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("extra.graph_url must be an http(s) URL, not {graph_url:?}"),
            });
        }
        let host = match text("webhook_host") {
            h if h.is_empty() => DEFAULT_HOST.to_string(),
            h => h,
        };
        Ok(WhatsAppCloudSettings {
            phone_number_id,
            access_token,
            app_secret: text("app_secret"),
            verify_token: text("verify_token"),
            app_id: text("app_id"),
            waba_id: text("waba_id"),
            host,
            port,
            path: normalize_path(p.extra_str("webhook_path"), DEFAULT_PATH),
            health_path: normalize_path(p.extra_str("health_path"), "/health"),
            api_version,
            graph_url,
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

    fn settings(
        yaml: &str,
        env: &[(&str, &str)],
    ) -> Result<WhatsAppCloudSettings, PlatformConfigError> {
        let env = Environment::isolated(env.iter().copied());
        let config = Config::from_yaml(std::path::Path::new("/h/config.yaml"), yaml, &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let p = platforms.get(PLATFORM).unwrap();
        assert!(p.enabled);
        WhatsAppCloudSettings::from_platform(p)
    }

    #[test]
    fn the_variables_enable_and_configure_it() {
        let s = settings(
            "",
            &[
                ("WHATSAPP_CLOUD_PHONE_NUMBER_ID", "1234567890"),
                ("WHATSAPP_CLOUD_ACCESS_TOKEN", "EAAtoken"),
                ("WHATSAPP_CLOUD_APP_SECRET", "shh"),
                ("WHATSAPP_CLOUD_VERIFY_TOKEN", "verify-me"),
                ("WHATSAPP_CLOUD_WEBHOOK_PORT", "9001"),
                ("WHATSAPP_CLOUD_WEBHOOK_PATH", "wa"),
                ("WHATSAPP_CLOUD_API_VERSION", "v21.0"),
            ],
        )
        .unwrap();
        assert_eq!(s.phone_number_id, "1234567890");
        assert_eq!(s.access_token, "EAAtoken");
        assert_eq!(s.app_secret, "shh");
        assert_eq!(s.verify_token, "verify-me");
        assert_eq!((s.host.as_str(), s.port), ("0.0.0.0", 9001));
        assert_eq!(s.path, "/wa");
        assert_eq!(s.api_version, "v21.0");
        assert_eq!(s.graph_url, DEFAULT_GRAPH_URL);
        assert!(!format!("{s:?}").contains("EAAtoken"));
    }

    #[test]
    fn allowlists_are_bare_wa_ids() {
        let env = Environment::isolated([
            ("WHATSAPP_CLOUD_PHONE_NUMBER_ID", "42"),
            ("WHATSAPP_CLOUD_ACCESS_TOKEN", "t"),
            (
                "WHATSAPP_CLOUD_ALLOW_FROM",
                "+44 7700 900123, 447700900124@s.whatsapp.net",
            ),
            ("WHATSAPP_CLOUD_HOME_CHANNEL", "447700900123"),
        ]);
        let config = Config::from_yaml(std::path::Path::new("/h/config.yaml"), "", &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let p = platforms.get(PLATFORM).unwrap();
        assert_eq!(
            p.access.allowed_users,
            vec!["447700900123".to_string(), "447700900124".to_string()]
        );
        assert_eq!(p.home_channel.as_ref().unwrap().chat_id, "447700900123");
        // Only one of the two required variables: not enabled.
        let env = Environment::isolated([("WHATSAPP_CLOUD_ACCESS_TOKEN", "t")]);
        let config = Config::from_yaml(std::path::Path::new("/h/config.yaml"), "", &env).unwrap();
        assert!(PlatformsConfig::load(&config, &env).get(PLATFORM).is_none());
    }

    #[test]
    fn defaults_follow_python() {
        let s = settings(
            "platforms:\n  whatsapp_cloud:\n    enabled: true\n    extra:\n      phone_number_id: '42'\n      access_token: t\n",
            &[],
        )
        .unwrap();
        assert_eq!((s.port, s.path.as_str()), (8090, "/whatsapp/webhook"));
        assert_eq!(s.api_version, "v20.0");
        assert!(s.app_secret.is_empty() && s.verify_token.is_empty());
    }

    #[test]
    fn a_missing_token_or_a_bad_port_is_named() {
        let e = settings(
            "platforms:\n  whatsapp_cloud:\n    enabled: true\n    extra: {phone_number_id: '42'}\n",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("WHATSAPP_CLOUD_ACCESS_TOKEN"), "{e}");
        let e = settings(
            "platforms:\n  whatsapp_cloud:\n    enabled: true\n    extra: {phone_number_id: '42', access_token: t, webhook_port: 70000}\n",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not a port"), "{e}");
        let e = settings(
            "platforms:\n  whatsapp_cloud:\n    enabled: true\n    extra: {phone_number_id: '../x', access_token: t}\n",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("WHATSAPP_CLOUD_PHONE_NUMBER_ID"), "{e}");
    }
}
