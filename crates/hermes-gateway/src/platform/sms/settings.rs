//! SMS (Twilio) settings, the Python Hermes's variables: `TWILIO_ACCOUNT_SID` (it enables the
//! platform), `TWILIO_AUTH_TOKEN` (REST auth and the webhook signature key),
//! `TWILIO_PHONE_NUMBER` (the E.164 number answers come from), `SMS_WEBHOOK_HOST`
//! (`127.0.0.1`), `SMS_WEBHOOK_PORT` (8080), `SMS_WEBHOOK_URL` (the public URL configured in
//! Twilio's console: what Twilio signs; required unless `SMS_INSECURE_NO_SIGNATURE=true`),
//! each also `platforms.sms.extra.<key>` (`account_sid`, `auth_token`, `phone_number`,
//! `webhook_host`, `webhook_port`, `webhook_url`, `insecure_no_signature`). `api_base`
//! (default `https://api.twilio.com/2010-04-01`) is ours: tests point it at a double.

use std::time::Duration;

use hermes_config::Environment;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::PlatformSettings;

pub(crate) const PLATFORM: &str = "sms";

pub const DEFAULT_API_BASE: &str = "https://api.twilio.com/2010-04-01";
pub const DEFAULT_HOST: &str = "127.0.0.1";
pub const DEFAULT_PORT: u16 = 8080;
/// Where Twilio posts (Python's route).
pub const WEBHOOK_PATH: &str = "/webhooks/twilio";

#[derive(Clone)]
pub struct SmsSettings {
    pub account_sid: String,
    pub auth_token: String,
    pub phone_number: String,
    pub host: String,
    pub port: u16,
    /// What Twilio signs; `None` only with `insecure_no_signature`.
    pub webhook_url: Option<String>,
    /// No trailing slash.
    pub api_base: String,
    pub max_rate_limit_wait: Duration,
}

impl std::fmt::Debug for SmsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs.
        f.debug_struct("SmsSettings")
            .field("account_sid", &self.account_sid)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("webhook_url", &self.webhook_url)
            .field("api_base", &self.api_base)
            .finish_non_exhaustive()
    }
}

fn invalid(message: String) -> PlatformConfigError {
    PlatformConfigError::Invalid {
        platform: PLATFORM,
        message,
    }
}

impl SmsSettings {
    pub fn from_platform(
        p: &PlatformSettings,
        env: &Environment,
    ) -> Result<SmsSettings, PlatformConfigError> {
        let get = |key: &str, var: &str| {
            p.config_or_env(key, var, env)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let required = |key: &str, var: &'static str| {
            get(key, var).ok_or(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: var,
            })
        };
        let account_sid = required("account_sid", "TWILIO_ACCOUNT_SID")?;
        // A path segment of every REST call.
        if !account_sid.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(invalid(format!(
                "TWILIO_ACCOUNT_SID looks like AC followed by 32 hex digits, not {account_sid:?}"
            )));
        }
        let auth_token = match get("auth_token", "TWILIO_AUTH_TOKEN") {
            Some(t) => t,
            None => p.api_key.clone().filter(|t| !t.trim().is_empty()).ok_or(
                PlatformConfigError::MissingCredential {
                    platform: PLATFORM,
                    variable: "TWILIO_AUTH_TOKEN",
                },
            )?,
        };
        let phone_number = required("phone_number", "TWILIO_PHONE_NUMBER")?;
        let port = match get("webhook_port", "SMS_WEBHOOK_PORT") {
            None => DEFAULT_PORT,
            Some(v) => v
                .parse::<u16>()
                .map_err(|_| invalid(format!("SMS_WEBHOOK_PORT={v:?} is not a port")))?,
        };
        let insecure = p
            .config_or_env_bool("insecure_no_signature", "SMS_INSECURE_NO_SIGNATURE", env)
            .unwrap_or(false);
        let webhook_url = get("webhook_url", "SMS_WEBHOOK_URL");
        if let Some(url) = &webhook_url
            && reqwest::Url::parse(url).is_err()
        {
            return Err(invalid(format!("SMS_WEBHOOK_URL is not a URL: {url:?}")));
        }
        if webhook_url.is_none() && !insecure {
            return Err(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "SMS_WEBHOOK_URL (the public URL Twilio posts to and signs; or SMS_INSECURE_NO_SIGNATURE=true for local development)",
            });
        }
        let api_base = get("api_base", "SMS_API_BASE")
            .unwrap_or_else(|| DEFAULT_API_BASE.to_string())
            .trim_end_matches('/')
            .to_string();
        if !(api_base.starts_with("https://") || api_base.starts_with("http://")) {
            return Err(invalid(format!(
                "extra.api_base must be an http(s) URL, not {api_base:?}"
            )));
        }
        Ok(SmsSettings {
            account_sid,
            auth_token,
            phone_number,
            host: get("webhook_host", "SMS_WEBHOOK_HOST").unwrap_or_else(|| DEFAULT_HOST.into()),
            port,
            webhook_url,
            api_base,
            max_rate_limit_wait: Duration::from_secs(30),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::Config;
    use std::path::Path;

    fn settings(vars: &[(&str, &str)]) -> Result<SmsSettings, PlatformConfigError> {
        let env = Environment::isolated(vars.iter().copied());
        let config = Config::from_yaml(Path::new("/h/config.yaml"), "", &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let p = platforms
            .get(PLATFORM)
            .expect("TWILIO_ACCOUNT_SID enables sms");
        SmsSettings::from_platform(p, &env)
    }

    const BASE: &[(&str, &str)] = &[
        ("TWILIO_ACCOUNT_SID", "AC0123"),
        ("TWILIO_AUTH_TOKEN", "tok"),
        ("TWILIO_PHONE_NUMBER", "+15550001111"),
    ];

    #[test]
    fn the_python_variables_and_defaults() {
        let mut vars = BASE.to_vec();
        vars.push(("SMS_WEBHOOK_URL", "https://bot.example.com/webhooks/twilio"));
        let s = settings(&vars).unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.api_base.as_str()),
            ("127.0.0.1", 8080, DEFAULT_API_BASE)
        );
        assert_eq!(s.phone_number, "+15550001111");
        assert!(
            !format!("{s:?}").contains("tok"),
            "the token stays out of logs"
        );
    }

    #[test]
    fn the_webhook_url_is_required_unless_signatures_are_off() {
        let e = settings(BASE).unwrap_err().to_string();
        assert!(e.contains("SMS_WEBHOOK_URL"), "{e}");
        let mut vars = BASE.to_vec();
        vars.push(("SMS_INSECURE_NO_SIGNATURE", "true"));
        assert!(settings(&vars).unwrap().webhook_url.is_none());
        let e = settings(&[("TWILIO_ACCOUNT_SID", "AC1")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("TWILIO_AUTH_TOKEN"), "{e}");
        let e = settings(&[
            ("TWILIO_ACCOUNT_SID", "AC1/../x"),
            ("TWILIO_AUTH_TOKEN", "t"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("TWILIO_ACCOUNT_SID looks like"), "{e}");
    }
}
