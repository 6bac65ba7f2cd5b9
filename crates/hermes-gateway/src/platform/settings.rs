//! The chat platforms' settings as the Python Hermes reads them, from `config.yaml` and the
//! environment (`.env` included):
//!
//! - `platforms.<name>` (and the older `gateway.platforms.<name>`, which `platforms` overrides):
//!   `enabled`, `token`, `api_key`, `home_channel`, `reply_to_mode`, `typing_indicator`,
//!   `extra.*` (per-platform settings, e.g. `extra.base_url`);
//! - a top-level `<name>:` block (`telegram:`, `discord:`, `slack:`) with the shared keys
//!   (`require_mention`, `free_response_channels`, `allow_from`, ...), bridged into `extra`;
//! - variables: `TELEGRAM_BOT_TOKEN`, `DISCORD_BOT_TOKEN` and `SLACK_BOT_TOKEN` enable their
//!   platform unless `enabled: false` is written; `<NAME>_HOME_CHANNEL[_NAME|_THREAD_ID]`,
//!   `<NAME>_REPLY_TO_MODE`, `<NAME>_ALLOWED_USERS`, `<NAME>_ALLOW_ALL_USERS`,
//!   `<NAME>_ALLOW_BOTS`, `WEBHOOK_ENABLED` / `WEBHOOK_PORT` / `WEBHOOK_SECRET`,
//!   `GATEWAY_ALLOWED_USERS`, `GATEWAY_ALLOW_ALL_USERS`.
//! - per platform, the variables Python copies into `extra` (`FEISHU_*`, `DINGTALK_*`,
//!   `WECOM_CALLBACK_*`, ...); Telegram and DingTalk name their group lists `*_chats`.
//!
//! Precedence: credentials, home channels and allowlists come from the environment when set
//! there (as in Python, where a variable beats its `config.yaml` bridge); behaviour settings
//! (`require_mention`, channel lists, ...) come from `config.yaml` first, then the variable,
//! then the default. Malformed values are reported as warnings and replaced by the default,
//! never fatal, as in Python.

use std::collections::{BTreeMap, BTreeSet};

use hermes_config::{Config, Environment};
use regex::Regex;
use serde_json::{Map, Value};

/// The platforms this build has adapters for.
pub const SUPPORTED: &[&str] = &[
    "telegram",
    "discord",
    "slack",
    "webhook",
    "matrix",
    "irc",
    "mattermost",
    "email",
    "xmpp",
    "signal",
    "whatsapp_cloud",
    "sms",
    "homeassistant",
    "feishu",
    "dingtalk",
    "wecom",
    "wecom_callback",
];

/// Every chat platform the Python Hermes knows; the ones not in [`SUPPORTED`] are reported
/// when enabled.
pub const KNOWN: &[&str] = &[
    "telegram",
    "discord",
    "whatsapp",
    "whatsapp_cloud",
    "slack",
    "signal",
    "mattermost",
    "matrix",
    "homeassistant",
    "email",
    "sms",
    "dingtalk",
    "webhook",
    "msgraph_webhook",
    "feishu",
    "wecom",
    "wecom_callback",
    "weixin",
    "bluebubbles",
    "qqbot",
    "yuanbao",
    "irc",
    "line",
    "teams",
    "google_chat",
    // Not a platform of the Python Hermes: this gateway's own addition.
    "xmpp",
];

/// Keys of a top-level `<platform>:` block that Python bridges into `platforms.<p>.extra`.
const BRIDGED_KEYS: &[&str] = &[
    "unauthorized_dm_behavior",
    "notice_delivery",
    "reply_prefix",
    "reply_in_thread",
    "require_mention",
    "allowed_chats",
    "group_allowed_chats",
    "allowed_topics",
    "free_response_channels",
    "free_response_chats",
    "mention_patterns",
    "exclusive_bot_mentions",
    "dm_policy",
    "allow_from",
    "allow_admin_from",
    "group_policy",
    "group_allow_from",
    "channel_prompts",
    "gateway_restart_notification",
    "typing_indicator",
    "typing_status_text",
    "strict_mention",
    "thread_require_mention",
    "allow_bots",
    "allowed_channels",
    "ignored_channels",
    "no_thread_channels",
    "auto_thread",
    "reply_to_mode",
];

/// Where a platform sends answers by default (cron `deliver: telegram`, `send_message`
/// without a chat id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeChannel {
    pub chat_id: String,
    pub name: String,
    pub thread_id: Option<String>,
}

/// Which parts of a split answer reply to the user's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyToMode {
    Off,
    /// Only the first part (Python's default).
    #[default]
    First,
    All,
}

impl ReplyToMode {
    fn parse(value: &str) -> Option<ReplyToMode> {
        match value.trim().to_ascii_lowercase().as_str() {
            "off" | "false" => Some(ReplyToMode::Off),
            "first" => Some(ReplyToMode::First),
            "all" => Some(ReplyToMode::All),
            _ => None,
        }
    }

    /// Whether part `index` (0-based) of an answer threads to the user's message.
    pub fn applies_to(self, index: usize) -> bool {
        match self {
            ReplyToMode::Off => false,
            ReplyToMode::First => index == 0,
            ReplyToMode::All => true,
        }
    }
}

/// Whether other bots' messages reach the agent (`<NAME>_ALLOW_BOTS`, `allow_bots`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AllowBots {
    #[default]
    None,
    /// Only when they mention this bot.
    Mentions,
    All,
}

/// What an unknown user writing in a DM gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnauthorizedDm {
    /// A pairing code (Python's default).
    #[default]
    Pair,
    Ignore,
}

impl UnauthorizedDm {
    fn parse(value: &str) -> Option<UnauthorizedDm> {
        match value.trim().to_ascii_lowercase().as_str() {
            "pair" => Some(UnauthorizedDm::Pair),
            "ignore" => Some(UnauthorizedDm::Ignore),
            _ => None,
        }
    }
}

/// Who may talk to the bot on one platform. The core decides with these (and the pairing
/// store); adapters only carry them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AccessSettings {
    /// `<NAME>_ALLOWED_USERS` (or `allow_from`): user ids, `*` for anyone.
    pub allowed_users: Vec<String>,
    /// `<NAME>_ALLOW_ALL_USERS`.
    pub allow_all: bool,
    /// `TELEGRAM_GROUP_ALLOWED_USERS` (or `group_allow_from`): senders allowed in groups.
    pub group_allowed_users: Vec<String>,
    /// `TELEGRAM_GROUP_ALLOWED_CHATS` (or `group_allowed_chats`): whole groups allowed.
    pub group_allowed_chats: Vec<String>,
    pub allow_bots: AllowBots,
    /// `unauthorized_dm_behavior` of the platform, else the gateway's.
    pub unauthorized_dm: UnauthorizedDm,
}

/// When a message in a shared chat is for the bot. Adapters apply these before an event
/// reaches the core.
#[derive(Debug, Clone, Default)]
pub struct MentionSettings {
    /// Group messages need an @-mention, a reply to the bot or a thread the bot is in.
    pub require_mention: bool,
    /// Chats where every message is for the bot (`*` for all).
    pub free_response_channels: BTreeSet<String>,
    /// When not empty, the only group chats the bot listens in (`*` for all).
    pub allowed_channels: BTreeSet<String>,
    /// Chats the bot never answers in, even when mentioned (`*` for all).
    pub ignored_channels: BTreeSet<String>,
    /// Wake words: a match counts as a mention.
    pub mention_patterns: Vec<Regex>,
    /// In a thread the bot takes part in, still require a mention (Discord
    /// `thread_require_mention`, Slack `strict_mention`).
    pub thread_require_mention: bool,
}

/// The settings of one platform.
#[derive(Debug, Clone)]
pub struct PlatformSettings {
    /// `telegram`, `discord`, `slack`, `webhook`, ...
    pub name: String,
    pub enabled: bool,
    pub token: Option<String>,
    pub api_key: Option<String>,
    pub home_channel: Option<HomeChannel>,
    pub reply_to_mode: ReplyToMode,
    /// Show a typing indicator while the agent works (`typing_indicator`, default on).
    pub typing_indicator: bool,
    pub access: AccessSettings,
    pub mentions: MentionSettings,
    /// `platforms.<name>.extra` merged with the bridged top-level keys.
    pub extra: Map<String, Value>,
}

/// Gateway-wide access settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GatewayAccess {
    /// `GATEWAY_ALLOW_ALL_USERS`.
    pub allow_all: bool,
    /// `GATEWAY_ALLOWED_USERS`.
    pub allowed_users: Vec<String>,
    /// `unauthorized_dm_behavior` (top level or under `gateway:`).
    pub unauthorized_dm: UnauthorizedDm,
}

/// Every configured platform and the gateway-wide access rules.
#[derive(Debug, Clone, Default)]
pub struct PlatformsConfig {
    /// Known platforms that appear in the config or the environment, in name order.
    pub platforms: Vec<PlatformSettings>,
    pub access: GatewayAccess,
    /// Values that were ignored, each naming the key.
    pub warnings: Vec<String>,
}

impl PlatformsConfig {
    /// Reads the platforms' settings from `config.yaml` (already loaded) and the environment.
    pub fn load(config: &Config, env: &Environment) -> PlatformsConfig {
        let mut warnings = Vec::new();
        let root = config.raw.as_object().cloned().unwrap_or_default();
        let gateway = root.get("gateway").and_then(Value::as_object);

        // platforms.<p> over gateway.platforms.<p>, extras merged key by key.
        let mut blocks: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
        let mut explicit_enabled: BTreeSet<String> = BTreeSet::new();
        for source in [
            gateway.and_then(|g| g.get("platforms")),
            root.get("platforms"),
        ]
        .into_iter()
        .flatten()
        {
            let Some(source) = source.as_object() else {
                warnings.push("`platforms` is not a mapping; ignored".to_string());
                continue;
            };
            for (name, block) in source {
                let Some(block) = block.as_object() else {
                    continue;
                };
                let name = name.trim().to_ascii_lowercase();
                if block.contains_key("enabled") {
                    explicit_enabled.insert(name.clone());
                }
                let merged = blocks.entry(name).or_default();
                let mut extra = merged
                    .get("extra")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                if let Some(new_extra) = block.get("extra").and_then(Value::as_object) {
                    extra.extend(new_extra.clone());
                }
                merged.extend(block.clone());
                merged.insert("extra".into(), Value::Object(extra));
            }
        }

        // The top-level `<platform>:` block: shared keys bridged into extra, `enabled` too.
        for name in KNOWN {
            let Some(top) = root.get(*name).and_then(Value::as_object) else {
                continue;
            };
            let block = blocks.entry((*name).to_string()).or_default();
            let mut extra = block
                .get("extra")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for key in BRIDGED_KEYS {
                if let Some(v) = top.get(*key) {
                    extra.insert((*key).to_string(), v.clone());
                }
            }
            if let Some(overrides) = top.get("channel_overrides") {
                block.insert("channel_overrides".into(), overrides.clone());
            }
            if let Some(enabled) = top.get("enabled") {
                block.insert("enabled".into(), enabled.clone());
                explicit_enabled.insert((*name).to_string());
            }
            block.insert("extra".into(), Value::Object(extra));
        }
        // A top-level `require_mention` applies to Telegram when its block has none (#3979).
        if let Some(rm) = root.get("require_mention") {
            let block = blocks.entry("telegram".into()).or_default();
            if let Some(extra) = block
                .entry("extra")
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
            {
                extra.entry("require_mention").or_insert_with(|| rm.clone());
            }
        }

        let global_dm = lookup(&root, gateway, "unauthorized_dm_behavior")
            .and_then(|v| v.as_str().and_then(UnauthorizedDm::parse))
            .unwrap_or_default();
        let access = GatewayAccess {
            allow_all: env_flag(env, "GATEWAY_ALLOW_ALL_USERS"),
            allowed_users: env
                .var("GATEWAY_ALLOWED_USERS")
                .map(|v| split_csv(&v))
                .unwrap_or_default(),
            unauthorized_dm: global_dm,
        };

        let mut platforms = Vec::new();
        for name in KNOWN {
            let block = blocks.remove(*name);
            let from_env = env_enables(name, env);
            if block.is_none() && !from_env {
                continue;
            }
            let block = block.unwrap_or_default();
            let explicit = explicit_enabled.contains(*name);
            platforms.push(PlatformSettings::from_block(
                name,
                &block,
                explicit,
                env,
                &access,
                &mut warnings,
            ));
        }
        // The API server's block is the gateway's own (`gateway_cmd` reads it), not a chat.
        blocks.remove("api_server");
        for name in blocks.keys() {
            warnings.push(format!(
                "platforms.{name}: not a platform the Hermes gateway knows; ignored"
            ));
        }
        PlatformsConfig {
            platforms,
            access,
            warnings,
        }
    }

    pub fn get(&self, name: &str) -> Option<&PlatformSettings> {
        self.platforms.iter().find(|p| p.name == name)
    }

    /// The platforms to start: enabled and configured.
    pub fn enabled(&self) -> impl Iterator<Item = &PlatformSettings> {
        self.platforms.iter().filter(|p| p.enabled)
    }
}

/// A key at the top level, else under `gateway:`.
fn lookup<'a>(
    root: &'a Map<String, Value>,
    gateway: Option<&'a Map<String, Value>>,
    key: &str,
) -> Option<&'a Value> {
    root.get(key).or_else(|| gateway.and_then(|g| g.get(key)))
}

/// Whether a variable alone turns the platform on (Python's `_apply_env_overrides`).
fn env_enables(name: &str, env: &Environment) -> bool {
    match name {
        "telegram" => env.var("TELEGRAM_BOT_TOKEN").is_some(),
        "discord" => env.var("DISCORD_BOT_TOKEN").is_some(),
        "slack" => env.var("SLACK_BOT_TOKEN").is_some(),
        "webhook" => env_flag(env, "WEBHOOK_ENABLED"),
        // Python's `_apply_env_overrides`: a token or a password turns Matrix on.
        "matrix" => {
            env.var("MATRIX_ACCESS_TOKEN").is_some() || env.var("MATRIX_PASSWORD").is_some()
        }
        // The IRC plugin's `_env_enablement`: a server and a channel.
        "irc" => env.var("IRC_SERVER").is_some() && env.var("IRC_CHANNEL").is_some(),
        // The Mattermost plugin's `_is_connected`: a token and a server.
        "mattermost" => {
            env.var("MATTERMOST_TOKEN").is_some() && env.var("MATTERMOST_URL").is_some()
        }
        // Python's `_apply_env_overrides`: the daemon's URL and the account.
        "signal" => env.var("SIGNAL_HTTP_URL").is_some() && env.var("SIGNAL_ACCOUNT").is_some(),
        // The email plugin's `check_email_requirements`: all four, none blank.
        "email" => [
            "EMAIL_ADDRESS",
            "EMAIL_PASSWORD",
            "EMAIL_IMAP_HOST",
            "EMAIL_SMTP_HOST",
        ]
        .iter()
        .all(|v| env.var(v).is_some_and(|x| !x.trim().is_empty())),
        // Ours (the Python Hermes has no XMPP): an account and its password.
        "xmpp" => ["XMPP_JID", "XMPP_PASSWORD"]
            .iter()
            .all(|v| env.var(v).is_some_and(|x| !x.trim().is_empty())),
        // Python's `_apply_env_overrides`: the phone number id and the token.
        "whatsapp_cloud" => [
            "WHATSAPP_CLOUD_PHONE_NUMBER_ID",
            "WHATSAPP_CLOUD_ACCESS_TOKEN",
        ]
        .iter()
        .all(|v| env.var(v).is_some_and(|x| !x.trim().is_empty())),
        // Python's `_apply_env_overrides`: the token.
        "homeassistant" => env.var("HASS_TOKEN").is_some_and(|x| !x.trim().is_empty()),
        // Python's `_apply_env_overrides`: the app id and the app secret.
        "feishu" => ["FEISHU_APP_ID", "FEISHU_APP_SECRET"]
            .iter()
            .all(|v| env.var(v).is_some_and(|x| !x.trim().is_empty())),
        // The DingTalk plugin's `_is_connected`: the client id and the client secret.
        "dingtalk" => ["DINGTALK_CLIENT_ID", "DINGTALK_CLIENT_SECRET"]
            .iter()
            .all(|v| env.var(v).is_some_and(|x| !x.trim().is_empty())),
        // The WeCom plugin's required variables: the Smart Robot's id and secret.
        "wecom" => ["WECOM_BOT_ID", "WECOM_SECRET"]
            .iter()
            .all(|v| env.var(v).is_some_and(|x| !x.trim().is_empty())),
        // Python's `_apply_env_overrides`: the corp id and the corp secret.
        "wecom_callback" => ["WECOM_CALLBACK_CORP_ID", "WECOM_CALLBACK_CORP_SECRET"]
            .iter()
            .all(|v| env.var(v).is_some_and(|x| !x.trim().is_empty())),
        // The SMS plugin's `_is_connected`: the account SID.
        "sms" => env
            .var("TWILIO_ACCOUNT_SID")
            .is_some_and(|x| !x.trim().is_empty()),
        _ => false,
    }
}

/// A WhatsApp id as the Cloud API sends it: the digits before any `@`; `*` and entries
/// without digits stay as written.
pub(crate) fn normalize_wa_id(entry: &str) -> String {
    let bare = entry.split('@').next().unwrap_or_default();
    let digits: String = bare.chars().filter(char::is_ascii_digit).collect();
    if digits.is_empty() {
        entry.trim().to_string()
    } else {
        digits
    }
}

/// `PLATFORM` as it prefixes its variables.
fn env_prefix(name: &str) -> String {
    name.to_ascii_uppercase()
}

impl PlatformSettings {
    fn from_block(
        name: &str,
        block: &Map<String, Value>,
        explicit_enabled: bool,
        env: &Environment,
        gateway: &GatewayAccess,
        warnings: &mut Vec<String>,
    ) -> PlatformSettings {
        let prefix = env_prefix(name);
        let mut extra = block
            .get("extra")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let key = |k: &str| format!("platforms.{name}.{k}");

        let mut enabled = match block.get("enabled") {
            None | Some(Value::Null) => false,
            Some(v) => coerce_bool(v).unwrap_or_else(|| {
                warnings.push(format!("{}: expected true or false", key("enabled")));
                false
            }),
        };
        let mut token = block.get("token").and_then(scalar_string);
        let api_key = block.get("api_key").and_then(scalar_string);

        // Credentials from the environment: a token turns the platform on unless the config
        // explicitly says `enabled: false`.
        let token_var = match name {
            "telegram" => Some("TELEGRAM_BOT_TOKEN"),
            "discord" => Some("DISCORD_BOT_TOKEN"),
            "slack" => Some("SLACK_BOT_TOKEN"),
            "matrix" => Some("MATRIX_ACCESS_TOKEN"),
            "mattermost" => Some("MATTERMOST_TOKEN"),
            _ => None,
        };
        if let Some(var) = token_var
            && let Some(value) = env.var(var)
        {
            token = Some(value);
            if !enabled && !explicit_enabled {
                enabled = true;
            }
        }
        if name == "webhook" {
            if env_flag(env, "WEBHOOK_ENABLED") {
                enabled = true;
            }
            if let Some(port) = env.var("WEBHOOK_PORT") {
                match port.trim().parse::<u16>() {
                    Ok(p) => {
                        extra.insert("port".into(), Value::from(p));
                    }
                    Err(_) => {
                        warnings.push(format!("WEBHOOK_PORT={port:?} is not a port; ignored"))
                    }
                }
            }
            if let Some(secret) = env.var("WEBHOOK_SECRET") {
                extra.insert("secret".into(), Value::String(secret));
            }
        }
        if env_enables(name, env)
            && !explicit_enabled
            && matches!(
                name,
                "matrix"
                    | "irc"
                    | "mattermost"
                    | "email"
                    | "xmpp"
                    | "signal"
                    | "whatsapp_cloud"
                    | "sms"
                    | "homeassistant"
                    | "feishu"
                    | "dingtalk"
                    | "wecom"
                    | "wecom_callback"
            )
        {
            enabled = true;
        }
        if name == "mattermost" {
            for (var, key) in [
                ("MATTERMOST_URL", "url"),
                ("MATTERMOST_REPLY_MODE", "reply_mode"),
            ] {
                if let Some(value) = env.var(var) {
                    extra.insert(key.into(), Value::String(value));
                }
            }
        }
        if name == "signal" {
            for (var, key) in [
                ("SIGNAL_HTTP_URL", "http_url"),
                ("SIGNAL_ACCOUNT", "account"),
                ("SIGNAL_IGNORE_STORIES", "ignore_stories"),
            ] {
                if let Some(value) = env.var(var) {
                    extra.insert(key.into(), Value::String(value));
                }
            }
        }
        if name == "whatsapp_cloud" {
            // Python copies each variable into `extra` only when the platform is enabled by
            // the two required ones; here a set variable always counts, so a config.yaml
            // block plus a secret in `.env` works too.
            for (var, key) in [
                ("WHATSAPP_CLOUD_PHONE_NUMBER_ID", "phone_number_id"),
                ("WHATSAPP_CLOUD_ACCESS_TOKEN", "access_token"),
                ("WHATSAPP_CLOUD_APP_ID", "app_id"),
                ("WHATSAPP_CLOUD_APP_SECRET", "app_secret"),
                ("WHATSAPP_CLOUD_WABA_ID", "waba_id"),
                ("WHATSAPP_CLOUD_VERIFY_TOKEN", "verify_token"),
                ("WHATSAPP_CLOUD_WEBHOOK_HOST", "webhook_host"),
                ("WHATSAPP_CLOUD_WEBHOOK_PORT", "webhook_port"),
                ("WHATSAPP_CLOUD_WEBHOOK_PATH", "webhook_path"),
                ("WHATSAPP_CLOUD_API_VERSION", "api_version"),
            ] {
                if let Some(value) = env.var(var).filter(|v| !v.trim().is_empty()) {
                    extra.insert(key.into(), Value::String(value));
                }
            }
        }
        if name == "feishu" {
            // Python's `_apply_env_overrides` and the adapter's own reads; a set variable
            // always counts, so a config.yaml block plus a secret in `.env` works too.
            for (var, key) in [
                ("FEISHU_APP_ID", "app_id"),
                ("FEISHU_APP_SECRET", "app_secret"),
                ("FEISHU_DOMAIN", "domain"),
                ("FEISHU_CONNECTION_MODE", "connection_mode"),
                ("FEISHU_ENCRYPT_KEY", "encrypt_key"),
                ("FEISHU_VERIFICATION_TOKEN", "verification_token"),
                ("FEISHU_WEBHOOK_HOST", "webhook_host"),
                ("FEISHU_WEBHOOK_PORT", "webhook_port"),
                ("FEISHU_WEBHOOK_PATH", "webhook_path"),
                ("FEISHU_BOT_OPEN_ID", "bot_open_id"),
                ("FEISHU_BOT_USER_ID", "bot_user_id"),
                ("FEISHU_BOT_NAME", "bot_name"),
            ] {
                if let Some(value) = env.var(var).filter(|v| !v.trim().is_empty()) {
                    extra.insert(key.into(), Value::String(value));
                }
            }
        }
        // DingTalk (the plugin's reads), WeCom's Smart Robot (the plugin's) and WeCom's callback
        // mode (Python's `_apply_env_overrides`); a set variable always counts.
        let copied: &[(&str, &str)] = match name {
            "dingtalk" => &[
                ("DINGTALK_CLIENT_ID", "client_id"),
                ("DINGTALK_CLIENT_SECRET", "client_secret"),
                ("DINGTALK_WEBHOOK_URL", "webhook_url"),
            ],
            "wecom" => &[
                ("WECOM_BOT_ID", "bot_id"),
                ("WECOM_SECRET", "secret"),
                ("WECOM_WEBSOCKET_URL", "websocket_url"),
            ],
            "wecom_callback" => &[
                ("WECOM_CALLBACK_CORP_ID", "corp_id"),
                ("WECOM_CALLBACK_CORP_SECRET", "corp_secret"),
                ("WECOM_CALLBACK_AGENT_ID", "agent_id"),
                ("WECOM_CALLBACK_TOKEN", "token"),
                ("WECOM_CALLBACK_ENCODING_AES_KEY", "encoding_aes_key"),
                ("WECOM_CALLBACK_HOST", "host"),
                ("WECOM_CALLBACK_PORT", "port"),
            ],
            _ => &[],
        };
        for (var, key) in copied {
            if let Some(value) = env.var(var).filter(|v| !v.trim().is_empty()) {
                extra.insert((*key).into(), Value::String(value));
            }
        }
        if name == "slack"
            && let Some(app) = env.var("SLACK_APP_TOKEN")
        {
            extra.insert("app_token".into(), Value::String(app));
        }

        let mut reply_to_mode = match block
            .get("reply_to_mode")
            .or_else(|| extra.get("reply_to_mode"))
        {
            None | Some(Value::Null) => ReplyToMode::First,
            Some(Value::Bool(false)) => ReplyToMode::Off,
            Some(v) => scalar_string(v)
                .and_then(|s| ReplyToMode::parse(&s))
                .unwrap_or_else(|| {
                    warnings.push(format!(
                        "{}: expected off, first or all",
                        key("reply_to_mode")
                    ));
                    ReplyToMode::First
                }),
        };
        if let Some(mode) = env.var(&format!("{prefix}_REPLY_TO_MODE"))
            && let Some(mode) = ReplyToMode::parse(&mode)
        {
            reply_to_mode = mode;
        }

        let mut home_channel = block
            .get("home_channel")
            .and_then(Value::as_object)
            .and_then(|h| {
                Some(HomeChannel {
                    chat_id: h.get("chat_id").and_then(scalar_string)?,
                    name: h
                        .get("name")
                        .and_then(scalar_string)
                        .unwrap_or_else(|| "Home".into()),
                    thread_id: h.get("thread_id").and_then(scalar_string),
                })
            });
        if let Some(chat_id) = env.var(&format!("{prefix}_HOME_CHANNEL")) {
            let default_name = if name == "slack" { "" } else { "Home" };
            home_channel = Some(HomeChannel {
                chat_id,
                name: env
                    .var(&format!("{prefix}_HOME_CHANNEL_NAME"))
                    .unwrap_or_else(|| default_name.into()),
                thread_id: env.var(&format!("{prefix}_HOME_CHANNEL_THREAD_ID")),
            });
        }

        // Matrix names its home a room (`MATRIX_HOME_ROOM`, Python's gateway config); IRC's
        // home defaults to its channel (the plugin's `_env_enablement`).
        if name == "matrix"
            && let Some(chat_id) = env.var("MATRIX_HOME_ROOM")
        {
            home_channel = Some(HomeChannel {
                chat_id,
                name: env
                    .var("MATRIX_HOME_ROOM_NAME")
                    .unwrap_or_else(|| "Home".into()),
                thread_id: env.var("MATRIX_HOME_ROOM_THREAD_ID"),
            });
        }
        if name == "irc"
            && home_channel.is_none()
            && let Some(channel) = env
                .var("IRC_CHANNEL")
                .or_else(|| extra.get("channel").and_then(scalar_string))
        {
            let first = split_csv(&channel).into_iter().next().unwrap_or(channel);
            home_channel = Some(HomeChannel {
                name: env
                    .var("IRC_HOME_CHANNEL_NAME")
                    .unwrap_or_else(|| first.clone()),
                chat_id: first,
                thread_id: None,
            });
        }

        // Email's home is an address (`EMAIL_HOME_ADDRESS`, the plugin's cron delivery target).
        if name == "email"
            && let Some(address) = env
                .var("EMAIL_HOME_ADDRESS")
                .filter(|a| !a.trim().is_empty())
        {
            home_channel = Some(HomeChannel {
                chat_id: address.trim().to_ascii_lowercase(),
                name: "Home".into(),
                thread_id: None,
            });
        }

        let typing_indicator = block
            .get("typing_indicator")
            .or_else(|| extra.get("typing_indicator"))
            .and_then(coerce_bool)
            .unwrap_or(true);

        let setting = Setting { extra: &extra, env };
        let mut access = AccessSettings {
            allowed_users: setting.env_first_list("allow_from", &format!("{prefix}_ALLOWED_USERS")),
            allow_all: env_flag(env, &format!("{prefix}_ALLOW_ALL_USERS")),
            group_allowed_users: setting
                .env_first_list("group_allow_from", &format!("{prefix}_GROUP_ALLOWED_USERS")),
            group_allowed_chats: setting.env_first_list(
                "group_allowed_chats",
                &format!("{prefix}_GROUP_ALLOWED_CHATS"),
            ),
            allow_bots: match setting
                .config_first_str("allow_bots", &format!("{prefix}_ALLOW_BOTS"))
                .map(|s| s.trim().to_ascii_lowercase())
                .as_deref()
            {
                Some("mentions") => AllowBots::Mentions,
                Some("all") => AllowBots::All,
                _ => AllowBots::None,
            },
            unauthorized_dm: extra
                .get("unauthorized_dm_behavior")
                .and_then(Value::as_str)
                .and_then(UnauthorizedDm::parse)
                .unwrap_or(gateway.unauthorized_dm),
        };
        if name == "whatsapp_cloud" {
            // The adapter's older variable, read when the documented one is unset.
            if access.allowed_users.is_empty()
                && env.var("WHATSAPP_CLOUD_ALLOWED_USERS").is_none()
                && let Some(v) = env.var("WHATSAPP_CLOUD_ALLOW_FROM")
            {
                access.allowed_users = split_csv(&v);
            }
            // Senders are bare wa_ids (digits); `+44 7700 900123` or a Baileys JID
            // `447700900123@s.whatsapp.net` in the list still match, as in Python.
            for list in [&mut access.allowed_users, &mut access.group_allowed_users] {
                for user in list.iter_mut() {
                    *user = normalize_wa_id(user);
                }
            }
        }
        if name == "dingtalk" {
            // The plugin's own key, read when neither the variable nor `allow_from` is set.
            if access.allowed_users.is_empty()
                && env.var("DINGTALK_ALLOWED_USERS").is_none()
                && let Some(list) = extra.get("allowed_users").filter(|v| !v.is_null())
            {
                access.allowed_users = value_list(list);
            }
        }
        if name == "email" || name == "xmpp" || name == "dingtalk" {
            // Addresses and JIDs compare case-insensitively; the adapters lower-case senders.
            for list in [&mut access.allowed_users, &mut access.group_allowed_users] {
                for user in list.iter_mut() {
                    *user = user.to_ascii_lowercase();
                }
            }
        }

        // Telegram answers every group message it receives by default (the bot's privacy
        // mode already filters); Discord and Slack gate on mentions.
        // Signal too answers every message of an allowed group unless told otherwise, and so
        // does DingTalk (its plugin's DINGTALK_REQUIRE_MENTION defaults to false).
        let default_require_mention = !matches!(name, "telegram" | "signal" | "dingtalk");
        // Telegram and DingTalk name their lists "chats" (`free_response_chats`,
        // `allowed_chats`), the others "channels".
        let chats = matches!(name, "telegram" | "dingtalk");
        let free_key = if chats {
            "free_response_chats"
        } else {
            "free_response_channels"
        };
        let free_var = if chats {
            format!("{prefix}_FREE_RESPONSE_CHATS")
        } else {
            format!("{prefix}_FREE_RESPONSE_CHANNELS")
        };
        let mut free = setting.config_first_set(free_key, &free_var);
        if name == "telegram" {
            free.extend(setting.config_first_set("free_response_channels", ""));
        }
        let allowed_channels_var = if chats {
            format!("{prefix}_ALLOWED_CHATS")
        } else {
            format!("{prefix}_ALLOWED_CHANNELS")
        };
        let allowed_key = if chats {
            "allowed_chats"
        } else {
            "allowed_channels"
        };
        let mention_patterns = setting
            .config_first_patterns(&format!("{prefix}_MENTION_PATTERNS"))
            .into_iter()
            .filter_map(|p| match Regex::new(&format!("(?i){p}")) {
                Ok(re) => Some(re),
                Err(e) => {
                    warnings.push(format!(
                        "{}: pattern {p:?} is invalid: {e}",
                        key("mention_patterns")
                    ));
                    None
                }
            })
            .collect();
        let thread_key = if name == "slack" {
            "strict_mention"
        } else {
            "thread_require_mention"
        };
        let mentions = MentionSettings {
            require_mention: setting
                .config_first_bool("require_mention", &format!("{prefix}_REQUIRE_MENTION"))
                .unwrap_or(default_require_mention),
            free_response_channels: free,
            allowed_channels: setting.config_first_set(allowed_key, &allowed_channels_var),
            ignored_channels: setting
                .config_first_set("ignored_channels", &format!("{prefix}_IGNORED_CHANNELS")),
            mention_patterns,
            thread_require_mention: setting
                .config_first_bool(
                    thread_key,
                    &format!("{prefix}_{}", thread_key.to_ascii_uppercase()),
                )
                .unwrap_or(false),
        };

        if name == "signal" {
            // Python's Signal adapter reads SIGNAL_GROUP_ALLOWED_USERS as the groups it listens
            // in (ids or `*`), not as senders: senders in a group still need SIGNAL_ALLOWED_USERS
            // or pairing. The adapter takes the list from `extra`.
            let groups = std::mem::take(&mut access.group_allowed_users);
            extra.insert(
                "group_allowed_users".into(),
                Value::Array(groups.into_iter().map(Value::String).collect()),
            );
        }
        PlatformSettings {
            name: name.to_string(),
            enabled,
            token,
            api_key,
            home_channel,
            reply_to_mode,
            typing_indicator,
            access,
            mentions,
            extra,
        }
    }

    /// A behaviour setting: `extra.<key>` (config.yaml) first, then the variable.
    pub fn config_or_env(&self, key: &str, var: &str, env: &Environment) -> Option<String> {
        Setting {
            extra: &self.extra,
            env,
        }
        .config_first_str(key, var)
    }

    /// A boolean behaviour setting: `extra.<key>` first, then the variable.
    pub fn config_or_env_bool(&self, key: &str, var: &str, env: &Environment) -> Option<bool> {
        Setting {
            extra: &self.extra,
            env,
        }
        .config_first_bool(key, var)
    }

    /// A list behaviour setting: `extra.<key>` first, then the comma-separated variable.
    pub fn config_or_env_set(&self, key: &str, var: &str, env: &Environment) -> BTreeSet<String> {
        Setting {
            extra: &self.extra,
            env,
        }
        .config_first_set(key, var)
    }

    /// `extra.<key>` as a string.
    pub fn extra_str(&self, key: &str) -> Option<String> {
        self.extra.get(key).and_then(scalar_string)
    }

    /// `extra.<key>` as a boolean (`true`, `"yes"`, `1`, ...).
    pub fn extra_bool(&self, key: &str) -> Option<bool> {
        self.extra.get(key).and_then(coerce_bool)
    }

    /// `extra.<key>` as an unsigned number (a number or a numeric string).
    pub fn extra_u64(&self, key: &str) -> Option<u64> {
        match self.extra.get(key)? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

/// Reads one platform's settings with the module's precedence rules.
struct Setting<'a> {
    extra: &'a Map<String, Value>,
    env: &'a Environment,
}

impl Setting<'_> {
    fn config(&self, key: &str) -> Option<&Value> {
        self.extra.get(key).filter(|v| !v.is_null())
    }

    fn var(&self, var: &str) -> Option<String> {
        if var.is_empty() {
            None
        } else {
            self.env.var(var)
        }
    }

    /// Allowlists: the variable wins (Python only bridges `allow_from` when it is unset).
    fn env_first_list(&self, key: &str, var: &str) -> Vec<String> {
        match self.var(var) {
            Some(v) => split_csv(&v),
            None => self.config(key).map(value_list).unwrap_or_default(),
        }
    }

    fn config_first_str(&self, key: &str, var: &str) -> Option<String> {
        self.config(key)
            .and_then(scalar_string)
            .or_else(|| self.var(var))
    }

    fn config_first_bool(&self, key: &str, var: &str) -> Option<bool> {
        match self.config(key) {
            Some(v) => coerce_bool(v),
            None => self.var(var).and_then(|v| coerce_bool(&Value::String(v))),
        }
    }

    fn config_first_set(&self, key: &str, var: &str) -> BTreeSet<String> {
        match self.config(key) {
            Some(v) => value_list(v).into_iter().collect(),
            None => self
                .var(var)
                .map(|v| split_csv(&v).into_iter().collect())
                .unwrap_or_default(),
        }
    }

    /// `mention_patterns`: a list, or the variable as a JSON list or one pattern per line.
    fn config_first_patterns(&self, var: &str) -> Vec<String> {
        if let Some(v) = self.config("mention_patterns") {
            return match v {
                Value::Array(items) => items.iter().filter_map(scalar_string).collect(),
                other => scalar_string(other).into_iter().collect(),
            };
        }
        let Some(raw) = self.var(var) else {
            return Vec::new();
        };
        match serde_json::from_str::<Vec<String>>(&raw) {
            Ok(list) => list,
            Err(_) => raw
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
        }
    }
}

/// `true`/`yes`/`1`/`on` (case-insensitive) in a variable.
fn env_flag(env: &Environment, var: &str) -> bool {
    env.var(var).is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "true" | "1" | "yes" | "on"
        )
    })
}

/// Python's `_coerce_bool`: booleans, numbers and the usual words.
pub(crate) fn coerce_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => Some(n.as_f64().is_some_and(|f| f != 0.0)),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Some(true),
            "false" | "0" | "no" | "off" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// A string, number or boolean as text (YAML reads `12345` as a number).
pub(crate) fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A list, or a comma-separated string, or one scalar.
fn value_list(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().filter_map(scalar_string).collect(),
        other => scalar_string(other)
            .map(|s| split_csv(&s))
            .unwrap_or_default(),
    }
}

/// "a, b,,c" -> ["a", "b", "c"]
pub(crate) fn split_csv(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn load(yaml: &str, env: &[(&str, &str)]) -> PlatformsConfig {
        let env = Environment::isolated(env.iter().copied());
        let config = Config::from_yaml(Path::new("/h/config.yaml"), yaml, &env).unwrap();
        PlatformsConfig::load(&config, &env)
    }

    #[test]
    fn a_token_in_the_environment_enables_its_platform() {
        let cfg = load("", &[("TELEGRAM_BOT_TOKEN", "123:abc")]);
        let tg = cfg.get("telegram").unwrap();
        assert!(tg.enabled);
        assert_eq!(tg.token.as_deref(), Some("123:abc"));
        assert!(cfg.get("discord").is_none());
        assert_eq!(cfg.enabled().count(), 1);
    }

    #[test]
    fn explicit_enabled_false_wins_over_a_token() {
        let cfg = load(
            "platforms:\n  discord:\n    enabled: false\n",
            &[("DISCORD_BOT_TOKEN", "t")],
        );
        let d = cfg.get("discord").unwrap();
        assert!(!d.enabled);
        assert_eq!(d.token.as_deref(), Some("t"));
        let cfg = load(
            "discord:\n  enabled: false\n",
            &[("DISCORD_BOT_TOKEN", "t")],
        );
        assert!(!cfg.get("discord").unwrap().enabled);
    }

    #[test]
    fn platforms_override_gateway_platforms_and_extras_merge() {
        let cfg = load(
            "gateway:\n  platforms:\n    telegram:\n      enabled: true\n      extra: {base_url: 'http://old/bot', a: 1}\n\
             platforms:\n  telegram:\n    extra: {base_url: 'http://new/bot'}\n",
            &[],
        );
        let tg = cfg.get("telegram").unwrap();
        assert!(tg.enabled);
        assert_eq!(tg.extra_str("base_url").as_deref(), Some("http://new/bot"));
        assert_eq!(tg.extra_u64("a"), Some(1));
    }

    #[test]
    fn top_level_block_is_bridged_and_config_beats_the_variable_for_behaviour() {
        let cfg = load(
            "slack:\n  require_mention: false\n  free_response_channels: [C1, C2]\n  allow_from: [U9]\n",
            &[
                ("SLACK_BOT_TOKEN", "xoxb"),
                ("SLACK_REQUIRE_MENTION", "true"),
                ("SLACK_ALLOWED_USERS", "U1, U2"),
                ("SLACK_APP_TOKEN", "xapp"),
            ],
        );
        let s = cfg.get("slack").unwrap();
        assert!(!s.mentions.require_mention);
        assert_eq!(
            s.mentions
                .free_response_channels
                .iter()
                .cloned()
                .collect::<Vec<_>>(),
            vec!["C1", "C2"]
        );
        // The variable wins for allowlists.
        assert_eq!(s.access.allowed_users, vec!["U1", "U2"]);
        assert_eq!(s.extra_str("app_token").as_deref(), Some("xapp"));
    }

    #[test]
    fn defaults_follow_python() {
        let cfg = load(
            "",
            &[
                ("TELEGRAM_BOT_TOKEN", "t"),
                ("DISCORD_BOT_TOKEN", "d"),
                ("SLACK_BOT_TOKEN", "s"),
            ],
        );
        assert!(!cfg.get("telegram").unwrap().mentions.require_mention);
        assert!(cfg.get("discord").unwrap().mentions.require_mention);
        assert!(cfg.get("slack").unwrap().mentions.require_mention);
        let tg = cfg.get("telegram").unwrap();
        assert_eq!(tg.reply_to_mode, ReplyToMode::First);
        assert!(tg.typing_indicator);
        assert_eq!(tg.access.allow_bots, AllowBots::None);
        assert_eq!(tg.access.unauthorized_dm, UnauthorizedDm::Pair);
    }

    #[test]
    fn home_channel_reply_mode_and_access_variables() {
        let cfg = load(
            "unauthorized_dm_behavior: ignore\n",
            &[
                ("TELEGRAM_BOT_TOKEN", "t"),
                ("TELEGRAM_HOME_CHANNEL", "-100"),
                ("TELEGRAM_HOME_CHANNEL_THREAD_ID", "7"),
                ("TELEGRAM_REPLY_TO_MODE", "all"),
                ("TELEGRAM_ALLOW_ALL_USERS", "yes"),
                ("TELEGRAM_ALLOW_BOTS", "mentions"),
                ("TELEGRAM_GROUP_ALLOWED_CHATS", "-100,-200"),
                ("GATEWAY_ALLOW_ALL_USERS", "true"),
                ("GATEWAY_ALLOWED_USERS", "a,b"),
            ],
        );
        let tg = cfg.get("telegram").unwrap();
        assert_eq!(
            tg.home_channel,
            Some(HomeChannel {
                chat_id: "-100".into(),
                name: "Home".into(),
                thread_id: Some("7".into())
            })
        );
        assert_eq!(tg.reply_to_mode, ReplyToMode::All);
        assert!(tg.access.allow_all);
        assert_eq!(tg.access.allow_bots, AllowBots::Mentions);
        assert_eq!(tg.access.group_allowed_chats, vec!["-100", "-200"]);
        assert_eq!(tg.access.unauthorized_dm, UnauthorizedDm::Ignore);
        assert!(cfg.access.allow_all);
        assert_eq!(cfg.access.allowed_users, vec!["a", "b"]);
    }

    #[test]
    fn webhook_variables_and_top_level_require_mention() {
        let cfg = load(
            "require_mention: true\n",
            &[
                ("WEBHOOK_ENABLED", "true"),
                ("WEBHOOK_PORT", "9000"),
                ("WEBHOOK_SECRET", "s3"),
            ],
        );
        let wh = cfg.get("webhook").unwrap();
        assert!(wh.enabled);
        assert_eq!(wh.extra_u64("port"), Some(9000));
        assert_eq!(wh.extra_str("secret").as_deref(), Some("s3"));
        // The top-level require_mention lands on Telegram's block.
        assert!(cfg.get("telegram").unwrap().mentions.require_mention);
    }

    #[test]
    fn bad_values_are_warnings_not_failures() {
        let cfg = load(
            "platforms:\n  telegram:\n    enabled: maybe\n    reply_to_mode: sometimes\n    extra:\n      mention_patterns: ['(unclosed']\n  nonsense: {enabled: true}\n",
            &[],
        );
        let tg = cfg.get("telegram").unwrap();
        assert!(!tg.enabled);
        assert_eq!(tg.reply_to_mode, ReplyToMode::First);
        assert!(tg.mentions.mention_patterns.is_empty());
        let joined = cfg.warnings.join("\n");
        assert!(joined.contains("platforms.telegram.enabled"), "{joined}");
        assert!(joined.contains("reply_to_mode"), "{joined}");
        assert!(joined.contains("mention_patterns"), "{joined}");
        assert!(joined.contains("platforms.nonsense"), "{joined}");
    }

    #[test]
    fn numbers_in_lists_and_tokens_are_text() {
        let cfg = load(
            "platforms:\n  discord:\n    token: 12345\n    extra:\n      free_response_channels: [111, 222]\n",
            &[],
        );
        let d = cfg.get("discord").unwrap();
        assert_eq!(d.token.as_deref(), Some("12345"));
        assert!(d.mentions.free_response_channels.contains("111"));
    }
}
