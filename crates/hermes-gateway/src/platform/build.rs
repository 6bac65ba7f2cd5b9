//! From configuration to running adapters: every enabled platform this build has becomes an
//! adapter; a platform that cannot work (no token, a webhook without secrets) is a typed
//! error naming what to set, and the others still start; a platform of the Python Hermes this
//! build lacks is a warning.

use std::sync::Arc;

use hermes_config::{Config, Environment};

use crate::platform::PlatformAdapter;
use crate::platform::dingtalk::{DingTalkAdapter, DingTalkSettings};
use crate::platform::discord::{DiscordAdapter, DiscordSettings};
use crate::platform::email::{EmailAdapter, EmailSettings};
use crate::platform::error::PlatformConfigError;
use crate::platform::feishu::{FeishuAdapter, FeishuSettings};
use crate::platform::homeassistant::{HomeAssistantAdapter, HomeAssistantSettings};
use crate::platform::irc::{IrcAdapter, IrcSettings};
use crate::platform::matrix::{MatrixAdapter, MatrixSettings};
use crate::platform::mattermost::{MattermostAdapter, MattermostSettings};
use crate::platform::settings::{PlatformSettings, PlatformsConfig, SUPPORTED};
use crate::platform::signal::{SignalAdapter, SignalSettings};
use crate::platform::slack::{SlackAdapter, SlackSettings};
use crate::platform::sms::{SmsAdapter, SmsSettings};
use crate::platform::telegram::{TelegramAdapter, TelegramSettings};
use crate::platform::webhook::{WebhookAdapter, WebhookSettings};
use crate::platform::wecom::{WeComAdapter, WeComSettings};
use crate::platform::whatsapp_cloud::{WhatsAppCloudAdapter, WhatsAppCloudSettings};
use crate::platform::xmpp::{XmppAdapter, XmppSettings};

/// What [`build_adapters`] made of the configuration.
#[derive(Default)]
pub struct BuiltAdapters {
    /// One per enabled, usable platform, ready to `run`.
    pub adapters: Vec<Arc<dyn PlatformAdapter>>,
    /// Every platform's settings (access lists, home channels, mention rules), for the core.
    pub platforms: PlatformsConfig,
    /// Enabled platforms that cannot start, each naming the setting to fix.
    pub errors: Vec<PlatformConfigError>,
    /// Ignored values, routes left off, platforms not in this build.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for BuiltAdapters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltAdapters")
            .field(
                "adapters",
                &self
                    .adapters
                    .iter()
                    .map(|a| a.name().to_string())
                    .collect::<Vec<_>>(),
            )
            .field("errors", &self.errors)
            .field("warnings", &self.warnings)
            .finish()
    }
}

fn build_one(
    p: &PlatformSettings,
    config: &Config,
    env: &Environment,
    warnings: &mut Vec<String>,
) -> Result<Arc<dyn PlatformAdapter>, PlatformConfigError> {
    Ok(match p.name.as_str() {
        "telegram" => Arc::new(TelegramAdapter::new(TelegramSettings::from_platform(
            p, env,
        )?)?),
        "discord" => Arc::new(DiscordAdapter::new(DiscordSettings::from_platform(
            p, env,
        )?)?),
        "slack" => Arc::new(SlackAdapter::new(SlackSettings::from_platform(p)?)?),
        "matrix" => {
            let home = config.path.parent().filter(|h| !h.as_os_str().is_empty());
            Arc::new(MatrixAdapter::new(
                MatrixSettings::from_platform(p, env, home)?,
                p.reply_to_mode,
            )?)
        }
        "irc" => Arc::new(IrcAdapter::new(IrcSettings::from_platform(p, env)?)?),
        "mattermost" => Arc::new(MattermostAdapter::new(MattermostSettings::from_platform(
            p,
        )?)?),
        "email" => Arc::new(EmailAdapter::new(EmailSettings::from_platform(p, env)?)?),
        "xmpp" => Arc::new(XmppAdapter::new(XmppSettings::from_platform(p, env)?)?),
        "signal" => Arc::new(SignalAdapter::new(SignalSettings::from_platform(p)?)?),
        "sms" => Arc::new(SmsAdapter::new(SmsSettings::from_platform(p, env)?)?),
        "homeassistant" => Arc::new(HomeAssistantAdapter::new(
            HomeAssistantSettings::from_platform(p, env)?,
        )?),
        "feishu" => Arc::new(FeishuAdapter::new(FeishuSettings::from_platform(p)?)?),
        "dingtalk" => Arc::new(DingTalkAdapter::new(DingTalkSettings::from_platform(p)?)?),
        "wecom_callback" => Arc::new(WeComAdapter::new(WeComSettings::from_platform(p)?)?),
        // Python's Smart Robot WebSocket mode: refused with the way to callback mode.
        "wecom" => return Err(crate::platform::wecom::smart_robot_refusal()),
        "whatsapp_cloud" => Arc::new(WhatsAppCloudAdapter::new(
            WhatsAppCloudSettings::from_platform(p)?,
        )?),
        "webhook" => {
            let home = config.path.parent().filter(|h| !h.as_os_str().is_empty());
            let (settings, problems) = WebhookSettings::from_platform(p, home)?;
            warnings.extend(
                problems
                    .into_iter()
                    .map(|e| format!("platforms.webhook: {e}")),
            );
            if settings.routes.is_empty() {
                warnings.push(
                    "platforms.webhook: no routes in extra.routes (only agent-created routes will answer)".into(),
                );
            }
            Arc::new(WebhookAdapter::new(settings)?)
        }
        other => {
            return Err(PlatformConfigError::Invalid {
                platform: "gateway",
                message: format!("{other} has no adapter"),
            });
        }
    })
}

/// Builds the adapters of every enabled platform.
pub fn build_adapters(config: &Config, env: &Environment) -> BuiltAdapters {
    let platforms = PlatformsConfig::load(config, env);
    let mut built = BuiltAdapters {
        warnings: platforms.warnings.clone(),
        ..BuiltAdapters::default()
    };
    for p in platforms.enabled() {
        if !SUPPORTED.contains(&p.name.as_str()) {
            built.warnings.push(format!(
                "platforms.{} is enabled, but this build has no {} adapter",
                p.name, p.name
            ));
            continue;
        }
        match build_one(p, config, env, &mut built.warnings) {
            Ok(adapter) => built.adapters.push(adapter),
            Err(e) => built.errors.push(e),
        }
    }
    built.platforms = platforms;
    built
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn build(yaml: &str, vars: &[(&str, &str)]) -> BuiltAdapters {
        let env = Environment::isolated(vars.iter().copied());
        let config = Config::from_yaml(Path::new("/h/config.yaml"), yaml, &env).unwrap();
        build_adapters(&config, &env)
    }

    #[test]
    fn enabled_platforms_become_adapters_and_problems_are_named() {
        let b = build(
            "platforms:\n  weixin: {enabled: true}\n  slack: {enabled: true}\n  webhook:\n    enabled: true\n    extra:\n      routes:\n        a: {secret: s}\n        b: {prompt: x}\n",
            &[
                ("TELEGRAM_BOT_TOKEN", "1:a"),
                ("DISCORD_BOT_TOKEN", "d"),
                ("SLACK_BOT_TOKEN", "xoxb"),
            ],
        );
        let names: Vec<&str> = b.adapters.iter().map(|a| a.name()).collect();
        assert_eq!(names, vec!["telegram", "discord", "webhook"]);
        assert_eq!(b.errors.len(), 1);
        assert!(
            b.errors[0].to_string().contains("SLACK_APP_TOKEN"),
            "{}",
            b.errors[0]
        );
        let warnings = b.warnings.join("\n");
        assert!(warnings.contains("no weixin adapter"), "{warnings}");
        assert!(
            warnings.contains("route \"b\" has no HMAC secret"),
            "{warnings}"
        );
        assert!(b.platforms.get("telegram").is_some());
    }

    #[test]
    fn nothing_configured_builds_nothing() {
        let b = build("", &[]);
        assert!(b.adapters.is_empty() && b.errors.is_empty() && b.warnings.is_empty());
    }
}
