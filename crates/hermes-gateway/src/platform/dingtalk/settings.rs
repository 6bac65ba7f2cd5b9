//! DingTalk settings, the Python Hermes's keys (`platforms.dingtalk.extra.*`, each also read from
//! its `DINGTALK_*` variable): `client_id` and `client_secret` (the app's AppKey and AppSecret,
//! both required; together they enable the platform), `robot_code` (defaults to the client
//! id, as for an app's own robot), `webhook_url` (`DINGTALK_WEBHOOK_URL`: a static robot
//! webhook for sends to chats no message came from, cron deliveries). The group rules are the
//! shared ones with DingTalk's names and default: `require_mention` (off),
//! `free_response_chats`, `allowed_chats`, `mention_patterns`. `api_url` is ours: tests point it
//! at a double.

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::{MentionSettings, PlatformSettings};

pub(crate) const PLATFORM: &str = "dingtalk";

pub const API_URL: &str = "https://api.dingtalk.com";

#[derive(Clone)]
pub struct DingTalkSettings {
    pub client_id: String,
    pub client_secret: String,
    pub robot_code: String,
    /// No trailing slash: `https://api.dingtalk.com`.
    pub api_url: String,
    /// Empty: none.
    pub webhook_url: String,
    pub mentions: MentionSettings,
}

impl std::fmt::Debug for DingTalkSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret and the webhook's access token stay out of logs.
        f.debug_struct("DingTalkSettings")
            .field("client_id", &self.client_id)
            .field("robot_code", &self.robot_code)
            .field("api_url", &self.api_url)
            .field("webhook_url", &!self.webhook_url.is_empty())
            .finish_non_exhaustive()
    }
}

impl DingTalkSettings {
    pub fn from_platform(p: &PlatformSettings) -> Result<DingTalkSettings, PlatformConfigError> {
        let text = |key: &str| {
            p.extra_str(key)
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        let client_id = text("client_id");
        if client_id.is_empty() {
            return Err(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "DINGTALK_CLIENT_ID",
            });
        }
        let client_secret = text("client_secret");
        if client_secret.is_empty() {
            return Err(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "DINGTALK_CLIENT_SECRET",
            });
        }
        let api_url = match text("api_url") {
            u if u.is_empty() => API_URL.to_string(),
            u => u.trim_end_matches('/').to_string(),
        };
        if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("extra.api_url must be an http(s) URL, not {api_url:?}"),
            });
        }
        let webhook_url = text("webhook_url");
        if !webhook_url.is_empty() && !webhook_url.starts_with("https://") {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: "DINGTALK_WEBHOOK_URL must be an https:// robot webhook URL".into(),
            });
        }
        let robot_code = match text("robot_code") {
            r if r.is_empty() => client_id.clone(),
            r => r,
        };
        Ok(DingTalkSettings {
            client_id,
            client_secret,
            robot_code,
            api_url,
            webhook_url,
            mentions: p.mentions.clone(),
        })
    }

    /// Whether a message's `sessionWebhook` may be posted to: DingTalk's own hosts (Python's
    /// check), or the configured API when it is not DingTalk's (a test double).
    pub(crate) fn trusts_webhook(&self, url: &str) -> bool {
        url.starts_with("https://api.dingtalk.com/")
            || url.starts_with("https://oapi.dingtalk.com/")
            || (self.api_url != API_URL && url.starts_with(&format!("{}/", self.api_url)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::{Config, Environment};

    fn settings(yaml: &str, env: &[(&str, &str)]) -> Result<DingTalkSettings, PlatformConfigError> {
        let env = Environment::isolated(env.iter().copied());
        let config = Config::from_yaml(std::path::Path::new("/h/config.yaml"), yaml, &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let p = platforms.get(PLATFORM).unwrap();
        assert!(p.enabled);
        DingTalkSettings::from_platform(p)
    }

    const BASE: &[(&str, &str)] = &[
        ("DINGTALK_CLIENT_ID", "dingabc"),
        ("DINGTALK_CLIENT_SECRET", "s3cret"),
    ];

    #[test]
    fn the_variables_enable_and_configure_it() {
        let s = settings("", BASE).unwrap();
        assert_eq!(
            (
                s.client_id.as_str(),
                s.client_secret.as_str(),
                s.robot_code.as_str()
            ),
            ("dingabc", "s3cret", "dingabc")
        );
        assert_eq!(s.api_url, API_URL);
        assert!(!s.mentions.require_mention, "DingTalk's default");
        assert!(!format!("{s:?}").contains("s3cret"));
        assert!(s.trusts_webhook("https://oapi.dingtalk.com/robot/sendBySession?session=x"));
        assert!(!s.trusts_webhook("https://evil.example/robot"));
        assert!(!s.trusts_webhook("https://oapi.dingtalk.com.evil.example/"));
    }

    #[test]
    fn group_rules_use_dingtalk_names() {
        let mut env = BASE.to_vec();
        env.extend([
            ("DINGTALK_REQUIRE_MENTION", "true"),
            ("DINGTALK_FREE_RESPONSE_CHATS", "cidA==,cidB=="),
            ("DINGTALK_ALLOWED_CHATS", "cidA=="),
        ]);
        let s = settings(
            "platforms:\n  dingtalk:\n    extra:\n      api_url: http://127.0.0.1:9/\n      robot_code: r1\n",
            &env,
        )
        .unwrap();
        assert!(s.mentions.require_mention);
        assert_eq!(s.mentions.free_response_channels.len(), 2);
        assert!(s.mentions.allowed_channels.contains("cidA=="));
        assert_eq!(s.api_url, "http://127.0.0.1:9");
        assert_eq!(s.robot_code, "r1");
        assert!(s.trusts_webhook("http://127.0.0.1:9/robot/sendBySession"));
    }

    #[test]
    fn allowlists_are_staff_ids_without_case_from_either_key() {
        let load = |yaml: &str, env: &[(&str, &str)]| {
            let env = Environment::isolated(env.iter().copied());
            let config =
                Config::from_yaml(std::path::Path::new("/h/config.yaml"), yaml, &env).unwrap();
            PlatformsConfig::load(&config, &env)
                .get(PLATFORM)
                .unwrap()
                .access
                .allowed_users
                .clone()
        };
        let mut env = BASE.to_vec();
        env.push(("DINGTALK_ALLOWED_USERS", "Manager1234, staff9"));
        assert_eq!(load("", &env), ["manager1234", "staff9"]);
        // The plugin's own key, when the variable is unset.
        assert_eq!(
            load(
                "platforms:\n  dingtalk:\n    extra:\n      allowed_users: [Boss01]\n",
                BASE
            ),
            ["boss01"]
        );
    }

    #[test]
    fn missing_or_bad_values_are_named() {
        let e = settings(
            "platforms:\n  dingtalk:\n    enabled: true\n    extra: {client_id: a}\n",
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("DINGTALK_CLIENT_SECRET"), "{e}");
        let mut env = BASE.to_vec();
        env.push(("DINGTALK_WEBHOOK_URL", "http://plain"));
        assert!(settings("", &env).is_err());
        let env = Environment::isolated([("DINGTALK_CLIENT_ID", "a")]);
        let config = Config::from_yaml(std::path::Path::new("/h/config.yaml"), "", &env).unwrap();
        assert!(PlatformsConfig::load(&config, &env).get(PLATFORM).is_none());
    }
}
