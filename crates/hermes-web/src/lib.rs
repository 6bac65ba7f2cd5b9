//! The agent reaches the world. Everything that leaves the machine on the model's behalf goes
//! through one SSRF-safe fetcher ([`net`]); the tools built on it and on the user's configured
//! services are `web_search` ([`search`]), `web_extract` ([`extract`]) and the browser tools
//! ([`browser`], cargo feature `browser`); `image_generate`, `text_to_speech` and the
//! transcription the gateway uses for voice messages are in [`media`].
//!
//! [`tools`] is what the `hermes` binary registers: every tool of this crate for a home's
//! config and environment.

pub mod api;
#[cfg(feature = "browser")]
pub mod browser;
pub mod extract;
pub mod media;
pub mod net;
pub mod search;

use std::sync::Arc;
use std::time::Duration;

use hermes_config::{Config, Environment, HermesHome};
use hermes_tools::Tool;
use serde_json::Value;

/// Every tool of this crate, configured from `config` (`web.*`, `security.*`), `env` (service
/// keys and base URLs) and `home` (the cache).
pub fn tools(config: &Config, env: &Environment, home: &HermesHome) -> Vec<Arc<dyn Tool>> {
    let policy = net::UrlPolicy::from_config(config, env, home);
    let fetcher = net::Fetcher::new(policy);
    let api = api::ApiClient::new(Duration::from_secs(60));
    let char_limit = config
        .raw
        .pointer("/web/extract_char_limit")
        .and_then(Value::as_u64)
        .map_or(extract::limit::DEFAULT_CHAR_LIMIT, |n| {
            usize::try_from(n).unwrap_or(extract::limit::MAX_CHAR_LIMIT)
        });
    #[allow(unused_mut)]
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(search::WebSearchTool::new(
            api.clone(),
            env.clone(),
            search::SearchSettings::from_config(config),
        )),
        Arc::new(extract::WebExtractTool::new(
            fetcher.clone(),
            home.join("cache/web"),
            char_limit,
        )),
    ];
    let images = media::image::ImageSettings::from_config(config, env);
    tools.push(Arc::new(media::ImageGenerateTool::new(
        api.clone(),
        fetcher.clone(),
        env.clone(),
        images,
        home.join("cache/images"),
    )));
    tools.push(Arc::new(media::TextToSpeechTool::new(
        api.clone(),
        env.clone(),
        media::tts::TtsSettings::from_config(config),
        home.join("cache/audio"),
    )));
    #[cfg(feature = "browser")]
    tools.extend(browser::tools(Arc::new(browser::BrowserManager::new(
        browser::BrowserSettings::from_config(config, env),
        fetcher,
        home.join("cache/screenshots"),
    ))));
    tools
}

/// [`tools`] for a home, reading its config.yaml and .env (defaults when they cannot be read:
/// the caller reports configuration errors where it loads the same files).
pub fn tools_for_home(home: &HermesHome) -> Vec<Arc<dyn Tool>> {
    // A broken .env still leaves the process environment (a path that does not exist loads
    // just that); a broken config.yaml leaves the defaults.
    let env = Environment::load(&home.env_path())
        .or_else(|_| Environment::load(std::path::Path::new("")))
        .unwrap_or_default();
    let config = Config::load(&home.config_path(), &env).unwrap_or_default();
    tools(&config, &env, home)
}
