//! The adapters `hermes gateway` starts: one per enabled platform this build has (Telegram,
//! Discord, Slack, webhooks), each from its settings; an enabled platform that cannot start
//! (a missing token, a bad setting) or that this build lacks is a warning naming the fix, and
//! the others run.

use std::path::Path;
use std::sync::Arc;

use hermes_config::Environment;

use crate::platform::settings::{PlatformsConfig, SUPPORTED};
use crate::platform::{PlatformAdapter, discord, slack, telegram, webhook};

/// The running adapters of the enabled platforms, and what was left off and why.
pub fn build(
    platforms: &PlatformsConfig,
    env: &Environment,
    home: &Path,
) -> (Vec<Arc<dyn PlatformAdapter>>, Vec<String>) {
    let mut adapters: Vec<Arc<dyn PlatformAdapter>> = Vec::new();
    let mut problems = platforms.warnings.clone();
    for p in platforms.enabled() {
        let name = p.name.as_str();
        let built: Result<Arc<dyn PlatformAdapter>, String> = match name {
            "telegram" => telegram::TelegramSettings::from_platform(p, env)
                .and_then(telegram::TelegramAdapter::new)
                .map(|a| Arc::new(a) as Arc<dyn PlatformAdapter>)
                .map_err(|e| e.to_string()),
            "discord" => discord::DiscordSettings::from_platform(p, env)
                .and_then(discord::DiscordAdapter::new)
                .map(|a| Arc::new(a) as Arc<dyn PlatformAdapter>)
                .map_err(|e| e.to_string()),
            "slack" => slack::SlackSettings::from_platform(p)
                .and_then(slack::SlackAdapter::new)
                .map(|a| Arc::new(a) as Arc<dyn PlatformAdapter>)
                .map_err(|e| e.to_string()),
            "webhook" => match webhook::WebhookSettings::from_platform(p, Some(home)) {
                Ok((settings, route_problems)) => {
                    problems.extend(route_problems.into_iter().map(|w| format!("webhook: {w}")));
                    webhook::WebhookAdapter::new(settings)
                        .map(|a| Arc::new(a) as Arc<dyn PlatformAdapter>)
                        .map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            },
            "api_server" => continue,
            other if !SUPPORTED.contains(&other) => {
                Err("this build has no adapter for it yet".to_string())
            }
            _ => continue,
        };
        match built {
            Ok(adapter) => adapters.push(adapter),
            Err(why) => problems.push(format!("gateway platform `{name}` is not started: {why}")),
        }
    }
    (adapters, problems)
}
