//! Email's settings, with the Python plugin's variables (the variable wins over `extra`, as
//! there): `EMAIL_ADDRESS` / `extra.address`, `EMAIL_PASSWORD`, `EMAIL_IMAP_HOST` /
//! `extra.imap_host`, `EMAIL_IMAP_PORT` (993), `EMAIL_SMTP_HOST` / `extra.smtp_host`,
//! `EMAIL_SMTP_PORT` (587), `EMAIL_POLL_INTERVAL` (15 s), `extra.skip_attachments`,
//! `extra.require_authenticated_sender` / `EMAIL_TRUST_FROM_HEADER`, `EMAIL_AUTHSERV_ID` /
//! `extra.authserv_id`. Access (`EMAIL_ALLOWED_USERS`, `EMAIL_ALLOW_ALL_USERS`) and the home
//! address (`EMAIL_HOME_ADDRESS`) are the gateway's, read in `platform::settings`.
//!
//! Beyond the plugin: the connection security of each side, `EMAIL_IMAP_SECURITY` /
//! `extra.imap_security` and `EMAIL_SMTP_SECURITY` / `extra.smtp_security` (`tls`, `starttls`
//! or `plain`; by default IMAP uses implicit TLS, SMTP implicit TLS on port 465 and STARTTLS
//! elsewhere, as the plugin does), and `extra.max_message_bytes`, the most of one mail read
//! from the server (10 MiB).

use std::time::Duration;

use hermes_config::Environment;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::PlatformSettings;

pub(crate) const PLATFORM: &str = "email";

/// How a connection is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// TLS from the first byte (IMAPS 993, SMTPS 465).
    Tls,
    /// Plain first, then upgraded with `STARTTLS` (required: no fallback to plain).
    StartTls,
    /// No TLS at all: only for a server on the same machine or a test.
    Plain,
}

impl Security {
    fn parse(value: &str) -> Option<Security> {
        match value.trim().to_ascii_lowercase().as_str() {
            "tls" | "ssl" | "implicit" => Some(Security::Tls),
            "starttls" => Some(Security::StartTls),
            "plain" | "none" | "off" => Some(Security::Plain),
            _ => None,
        }
    }
}

#[derive(Clone)]
pub struct EmailSettings {
    /// The bot's address (its IMAP and SMTP login, the `From:` of answers).
    pub address: String,
    pub password: String,
    pub imap_host: String,
    pub imap_port: u16,
    pub imap_security: Security,
    pub smtp_host: String,
    pub smtp_port: u16,
    pub smtp_security: Security,
    /// Between two mailbox checks when the server has no IDLE, and the longest IDLE wait.
    pub poll_interval: Duration,
    pub skip_attachments: bool,
    /// Drop mail whose `From:` domain the receiving server did not authenticate.
    pub require_authenticated_sender: bool,
    pub authserv_id: Option<String>,
    /// Anyone may write (`EMAIL_ALLOW_ALL_USERS`, `GATEWAY_ALLOW_ALL_USERS`): the sender check
    /// is moot then.
    pub allow_all: bool,
    pub max_message_bytes: u64,
}

impl std::fmt::Debug for EmailSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmailSettings")
            .field("address", &self.address)
            .field(
                "imap",
                &(&self.imap_host, self.imap_port, self.imap_security),
            )
            .field(
                "smtp",
                &(&self.smtp_host, self.smtp_port, self.smtp_security),
            )
            .field("poll_interval", &self.poll_interval)
            .finish_non_exhaustive()
    }
}

fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

impl EmailSettings {
    pub fn from_platform(
        p: &PlatformSettings,
        env: &Environment,
    ) -> Result<EmailSettings, PlatformConfigError> {
        let var = |name: &str| env.var(name).filter(|v| !v.trim().is_empty());
        let get = |name: &str, key: &str| {
            var(name)
                .or_else(|| p.extra_str(key))
                .map(|v| v.trim().to_string())
        };
        let required = |value: Option<String>, variable: &'static str| {
            value.ok_or(PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable,
            })
        };
        let address = required(get("EMAIL_ADDRESS", "address"), "EMAIL_ADDRESS")?;
        let password = required(var("EMAIL_PASSWORD"), "EMAIL_PASSWORD")?;
        let imap_host = required(get("EMAIL_IMAP_HOST", "imap_host"), "EMAIL_IMAP_HOST")?;
        let smtp_host = required(get("EMAIL_SMTP_HOST", "smtp_host"), "EMAIL_SMTP_HOST")?;
        let port = |name: &str, key: &str, default: u16| match get(name, key) {
            None => Ok(default),
            Some(v) => v.parse::<u16>().map_err(|_| PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("{name} {v:?} is not a port"),
            }),
        };
        let imap_port = port("EMAIL_IMAP_PORT", "imap_port", 993)?;
        let smtp_port = port("EMAIL_SMTP_PORT", "smtp_port", 587)?;
        let security = |name: &str, key: &str, default: Security| match get(name, key) {
            None => Ok(default),
            Some(v) => Security::parse(&v).ok_or_else(|| PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("{name} {v:?} is not tls, starttls or plain"),
            }),
        };
        let imap_security = security("EMAIL_IMAP_SECURITY", "imap_security", Security::Tls)?;
        let smtp_default = if smtp_port == 465 {
            Security::Tls
        } else {
            Security::StartTls
        };
        let smtp_security = security("EMAIL_SMTP_SECURITY", "smtp_security", smtp_default)?;
        let poll = match get("EMAIL_POLL_INTERVAL", "poll_interval") {
            None => 15,
            Some(v) => v.parse::<u64>().map_err(|_| PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("EMAIL_POLL_INTERVAL {v:?} is not a number of seconds"),
            })?,
        };
        let require_authenticated_sender = match p.extra_bool("require_authenticated_sender") {
            Some(b) => b,
            None => !var("EMAIL_TRUST_FROM_HEADER").is_some_and(|v| truthy(&v)),
        };
        Ok(EmailSettings {
            address: address.to_ascii_lowercase(),
            password,
            imap_host,
            imap_port,
            imap_security,
            smtp_host,
            smtp_port,
            smtp_security,
            poll_interval: Duration::from_secs(poll.clamp(1, 3600)),
            skip_attachments: p.extra_bool("skip_attachments").unwrap_or(false),
            require_authenticated_sender,
            authserv_id: get("EMAIL_AUTHSERV_ID", "authserv_id").map(|a| a.to_ascii_lowercase()),
            allow_all: p.access.allow_all
                || var("GATEWAY_ALLOW_ALL_USERS").is_some_and(|v| truthy(&v)),
            max_message_bytes: p
                .extra_u64("max_message_bytes")
                .map_or(10 * 1024 * 1024, |n| n.clamp(64 * 1024, 256 * 1024 * 1024)),
        })
    }

    /// The domain of our Message-IDs: the address's, `localhost` when it has none.
    pub fn message_id_domain(&self) -> &str {
        match self.address.rsplit_once('@') {
            Some((_, domain)) if !domain.is_empty() => domain,
            _ => "localhost",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::settings::PlatformsConfig;
    use hermes_config::Config;
    use std::path::Path;

    fn settings(yaml: &str, vars: &[(&str, &str)]) -> Result<EmailSettings, PlatformConfigError> {
        let env = Environment::isolated(vars.iter().copied());
        let config = Config::from_yaml(Path::new("/h/config.yaml"), yaml, &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let p = platforms.get("email").expect("email configured");
        assert!(p.enabled);
        EmailSettings::from_platform(p, &env)
    }

    const VARS: &[(&str, &str)] = &[
        ("EMAIL_ADDRESS", "Bot@Example.org"),
        ("EMAIL_PASSWORD", "pw"),
        ("EMAIL_IMAP_HOST", " imap.example.org "),
        ("EMAIL_SMTP_HOST", "smtp.example.org"),
    ];

    #[test]
    fn the_four_variables_enable_email_with_the_plugins_defaults() {
        let s = settings("", VARS).unwrap();
        assert_eq!(s.address, "bot@example.org");
        assert_eq!(s.imap_host, "imap.example.org");
        assert_eq!((s.imap_port, s.imap_security), (993, Security::Tls));
        assert_eq!((s.smtp_port, s.smtp_security), (587, Security::StartTls));
        assert_eq!(s.poll_interval, Duration::from_secs(15));
        assert!(s.require_authenticated_sender);
        assert_eq!(s.message_id_domain(), "example.org");
    }

    #[test]
    fn the_home_address_and_the_allowlist_are_the_gateways() {
        let mut vars = VARS.to_vec();
        vars.extend([
            ("EMAIL_HOME_ADDRESS", "Me@Example.org"),
            ("EMAIL_ALLOWED_USERS", "Ann@Example.test, bob@example.test"),
        ]);
        let env = Environment::isolated(vars.iter().copied());
        let config = Config::from_yaml(Path::new("/h/config.yaml"), "", &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        let p = platforms.get("email").unwrap();
        assert_eq!(p.home_channel.as_ref().unwrap().chat_id, "me@example.org");
        assert_eq!(
            p.access.allowed_users,
            vec!["ann@example.test", "bob@example.test"]
        );
        // A blank variable does not enable the platform (the plugin's #40715).
        let mut blank = VARS.to_vec();
        blank[2] = ("EMAIL_IMAP_HOST", " ");
        let env = Environment::isolated(blank.iter().copied());
        let config = Config::from_yaml(Path::new("/h/config.yaml"), "", &env).unwrap();
        let platforms = PlatformsConfig::load(&config, &env);
        assert!(platforms.get("email").is_none_or(|p| !p.enabled));
    }

    #[test]
    fn ports_and_security_follow_the_variables() {
        let mut vars = VARS.to_vec();
        vars.extend([
            ("EMAIL_SMTP_PORT", "465"),
            ("EMAIL_IMAP_SECURITY", "plain"),
            ("EMAIL_TRUST_FROM_HEADER", "true"),
            ("EMAIL_POLL_INTERVAL", "2"),
        ]);
        let s = settings("", &vars).unwrap();
        assert_eq!((s.smtp_port, s.smtp_security), (465, Security::Tls));
        assert_eq!(s.imap_security, Security::Plain);
        assert!(!s.require_authenticated_sender);
        assert_eq!(s.poll_interval, Duration::from_secs(2));
        vars.push(("EMAIL_SMTP_SECURITY", "rot13"));
        let e = settings("", &vars).unwrap_err();
        assert!(e.to_string().contains("EMAIL_SMTP_SECURITY"), "{e}");
        let e = settings(
            "platforms:\n  email:\n    enabled: true\n    extra: {address: a@b.c}\n",
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("EMAIL_PASSWORD"), "{e}");
    }
}
