//! Discord's settings: the bot token, the REST base (`extra.base_url`, default
//! `https://discord.com/api/v10`) and gateway URL (`extra.gateway_url`, default: asked from
//! `GET /gateway/bot`), intents, and the Python Hermes's behaviour keys (`auto_thread`,
//! `no_thread_channels`, mention rules).

use std::collections::BTreeSet;
use std::time::Duration;

use hermes_config::Environment;

use crate::platform::error::PlatformConfigError;
use crate::platform::settings::{AllowBots, MentionSettings, PlatformSettings, ReplyToMode};

pub(crate) const PLATFORM: &str = "discord";

pub const DEFAULT_BASE_URL: &str = "https://discord.com/api/v10";

/// GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT (privileged: enable "Message
/// Content Intent" for the bot in the Developer Portal).
pub const DEFAULT_INTENTS: u64 = (1 << 0) | (1 << 9) | (1 << 12) | (1 << 15);

#[derive(Debug, Clone)]
pub struct DiscordSettings {
    pub token: String,
    pub base_url: String,
    pub gateway_url: Option<String>,
    pub intents: u64,
    /// Start a thread for each mention in a channel (`DISCORD_AUTO_THREAD`, default on).
    pub auto_thread: bool,
    /// Channels answered in place, without a thread (`DISCORD_NO_THREAD_CHANNELS`).
    pub no_thread_channels: BTreeSet<String>,
    pub reply_to_mode: ReplyToMode,
    pub mentions: MentionSettings,
    pub allow_bots: AllowBots,
    pub max_rate_limit_wait: Duration,
}

impl DiscordSettings {
    pub fn from_platform(
        p: &PlatformSettings,
        env: &Environment,
    ) -> Result<DiscordSettings, PlatformConfigError> {
        let token = p.token.clone().filter(|t| !t.trim().is_empty()).ok_or(
            PlatformConfigError::MissingCredential {
                platform: PLATFORM,
                variable: "DISCORD_BOT_TOKEN",
            },
        )?;
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
        let gateway_url = p
            .extra_str("gateway_url")
            .map(|u| u.trim_end_matches('/').to_string());
        if let Some(g) = &gateway_url
            && !(g.starts_with("ws://") || g.starts_with("wss://"))
        {
            return Err(PlatformConfigError::Invalid {
                platform: PLATFORM,
                message: format!("extra.gateway_url must be a ws(s) URL, not {g:?}"),
            });
        }
        Ok(DiscordSettings {
            token,
            base_url,
            gateway_url,
            intents: p.extra_u64("intents").unwrap_or(DEFAULT_INTENTS),
            auto_thread: p
                .config_or_env_bool("auto_thread", "DISCORD_AUTO_THREAD", env)
                .unwrap_or(true),
            no_thread_channels: p.config_or_env_set(
                "no_thread_channels",
                "DISCORD_NO_THREAD_CHANNELS",
                env,
            ),
            reply_to_mode: p.reply_to_mode,
            mentions: p.mentions.clone(),
            allow_bots: p.access.allow_bots,
            max_rate_limit_wait: Duration::from_secs(
                p.extra_u64("max_rate_limit_wait").unwrap_or(60),
            ),
        })
    }
}
