//! WeCom callback-mode settings, the Python Hermes's keys (`platforms.wecom_callback.extra.*`,
//! each also read from its `WECOM_CALLBACK_*` variable): `corp_id` and `corp_secret` (both
//! required; together they enable the platform), `agent_id` (the self-built app's AgentId,
//! required to send), `token` and `encoding_aes_key` (the app's API-receive settings, both
//! required: every callback is signed and encrypted), `host` (default `0.0.0.0`), `port`
//! (8645), `path` (`/wecom/callback`). Python's list of several apps (`extra.apps`) is taken
//! when it holds one app. `api_url` is ours: tests point it at a double.

use super::crypto;
use crate::platform::error::PlatformConfigError;
use crate::platform::settings::PlatformSettings;

pub(crate) const PLATFORM: &str = "wecom_callback";

pub const API_URL: &str = "https://qyapi.weixin.qq.com";
pub const DEFAULT_HOST: &str = "0.0.0.0";
pub const DEFAULT_PORT: u16 = 8645;
pub const DEFAULT_PATH: &str = "/wecom/callback";

#[derive(Clone)]
pub struct WeComSettings {
    pub corp_id: String,
    pub corp_secret: String,
    pub agent_id: i64,
    pub token: String,
    pub aes_key: [u8; 32],
    /// No trailing slash.
    pub api_url: String,
    pub host: String,
    pub port: u16,
    /// Starts with `/`.
    pub path: String,
}

impl std::fmt::Debug for WeComSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret, the token and the key stay out of logs.
        f.debug_struct("WeComSettings")
            .field("corp_id", &self.corp_id)
            .field("agent_id", &self.agent_id)
            .field("api_url", &self.api_url)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl WeComSettings {
    pub fn from_platform(p: &PlatformSettings) -> Result<WeComSettings, PlatformConfigError> {
        let invalid = |message: String| PlatformConfigError::Invalid {
            platform: PLATFORM,
            message,
        };
        // One app of Python's `extra.apps`, else the flat keys.
        let app = match p.extra.get("apps").and_then(|a| a.as_array()) {
            Some(apps) if apps.len() > 1 => {
                return Err(invalid(
                    "extra.apps lists several apps; this gateway serves one self-built app per \
                     callback URL (keep one, or use the WECOM_CALLBACK_* variables)"
                        .into(),
                ));
            }
            Some(apps) if apps.len() == 1 => apps[0].as_object().cloned(),
            _ => None,
        };
        let text = |key: &str| {
            let v = match &app {
                Some(a) => a
                    .get(key)
                    .and_then(crate::platform::settings::scalar_string),
                None => p.extra_str(key),
            };
            v.map(|v| v.trim().to_string()).unwrap_or_default()
        };
        let required = |key: &str, variable: &'static str| {
            let v = text(key);
            if v.is_empty() {
                Err(PlatformConfigError::MissingCredential {
                    platform: PLATFORM,
                    variable,
                })
            } else {
                Ok(v)
            }
        };
        let corp_id = required("corp_id", "WECOM_CALLBACK_CORP_ID")?;
        let corp_secret = required("corp_secret", "WECOM_CALLBACK_CORP_SECRET")?;
        let agent_id = required("agent_id", "WECOM_CALLBACK_AGENT_ID")?;
        let agent_id: i64 = agent_id.parse().map_err(|_| {
            invalid(format!(
                "WECOM_CALLBACK_AGENT_ID must be a number, not {agent_id:?}"
            ))
        })?;
        let token = required("token", "WECOM_CALLBACK_TOKEN")?;
        let aes = required("encoding_aes_key", "WECOM_CALLBACK_ENCODING_AES_KEY")?;
        let aes_key = crypto::aes_key(&aes).ok_or_else(|| {
            invalid(
                "WECOM_CALLBACK_ENCODING_AES_KEY must be the 43-character EncodingAESKey from \
                 the app's API-receive settings"
                    .into(),
            )
        })?;
        let api_url = match p.extra_str("api_url") {
            Some(u) => u.trim().trim_end_matches('/').to_string(),
            None => API_URL.to_string(),
        };
        if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
            return Err(invalid(format!(
                "extra.api_url must be an http(s) URL, not {api_url:?}"
            )));
        }
        if p.extra.contains_key("port") && p.extra_u64("port").is_none() {
            return Err(invalid("WECOM_CALLBACK_PORT must be a port number".into()));
        }
        let port = match p.extra_u64("port") {
            None => DEFAULT_PORT,
            Some(n) => u16::try_from(n).map_err(|_| invalid(format!("port {n} is not a port")))?,
        };
        let host = match p.extra_str("host") {
            Some(h) if !h.trim().is_empty() => h.trim().to_string(),
            _ => DEFAULT_HOST.to_string(),
        };
        let path = match p.extra_str("path") {
            Some(raw) if raw.trim().starts_with('/') => raw.trim().to_string(),
            Some(raw) if !raw.trim().is_empty() => format!("/{}", raw.trim()),
            _ => DEFAULT_PATH.to_string(),
        };
        Ok(WeComSettings {
            corp_id,
            corp_secret,
            agent_id,
            token,
            aes_key,
            api_url,
            host,
            port,
            path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::{Config, Environment};

    const KEY: &str = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C";

    fn settings(yaml: &str, env: &[(&str, &str)]) -> Result<WeComSettings, PlatformConfigError> {
        let env = Environment::isolated(env.iter().copied());
        let config = Config::from_yaml(std::path::Path::new("/h/config.yaml"), yaml, &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let p = platforms.get(PLATFORM).unwrap();
        assert!(p.enabled);
        WeComSettings::from_platform(p)
    }

    fn base() -> Vec<(&'static str, &'static str)> {
        vec![
            ("WECOM_CALLBACK_CORP_ID", "ww0123456789abcdef"),
            ("WECOM_CALLBACK_CORP_SECRET", "s3cret"),
            ("WECOM_CALLBACK_AGENT_ID", "1000002"),
            ("WECOM_CALLBACK_TOKEN", "tok"),
            ("WECOM_CALLBACK_ENCODING_AES_KEY", KEY),
        ]
    }

    #[test]
    fn the_variables_enable_and_configure_it() {
        let mut env = base();
        env.push(("WECOM_CALLBACK_PORT", "9100"));
        let s = settings("", &env).unwrap();
        assert_eq!(s.corp_id, "ww0123456789abcdef");
        assert_eq!(s.agent_id, 1_000_002);
        assert_eq!(
            (s.host.as_str(), s.port, s.path.as_str()),
            ("0.0.0.0", 9100, DEFAULT_PATH)
        );
        assert_eq!(s.api_url, API_URL);
        assert!(!format!("{s:?}").contains("s3cret"));
    }

    #[test]
    fn one_app_of_a_list_and_refusals() {
        let s = settings(
            &format!(
                "platforms:\n  wecom_callback:\n    enabled: true\n    extra:\n      path: cb\n      apps:\n        - {{name: a, corp_id: wwA, corp_secret: x, agent_id: 7, token: t, encoding_aes_key: {KEY}}}\n"
            ),
            &[],
        )
        .unwrap();
        assert_eq!(
            (s.corp_id.as_str(), s.agent_id, s.path.as_str()),
            ("wwA", 7, "/cb")
        );
        let mut env = base();
        env[4] = ("WECOM_CALLBACK_ENCODING_AES_KEY", "tooshort");
        let e = settings("", &env).unwrap_err().to_string();
        assert!(e.contains("43-character"), "{e}");
        let mut env = base();
        env.remove(3);
        let e = settings("", &env).unwrap_err().to_string();
        assert!(e.contains("WECOM_CALLBACK_TOKEN"), "{e}");
    }
}
