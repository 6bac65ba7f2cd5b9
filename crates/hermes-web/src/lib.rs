//! The agent reaches the world. Everything that leaves the machine on the model's behalf goes
//! through one SSRF-safe fetcher ([`net`]); the tools built on it and on the user's configured
//! services are `web_search` ([`search`]), `web_extract` ([`extract`]) and the browser tools
//! ([`browser`], cargo feature `browser`); `image_generate`, `text_to_speech` and the
//! transcription the gateway uses for voice messages are in [`media`].
//!
//! [`WebTools`] is what the runtime registers: every tool of this crate for a home's
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

/// The tools of this crate for one home, configured from `config` (`web.*`, `security.*`,
/// `browser.*`, ...), `env` (service keys and base URLs) and `home` (the cache). The tools that
/// hold no session state are built once and shared; the browser belongs to one session, so
/// each [`WebTools::session_tools`] gets its own (started on first use, closed when the
/// session's tools are dropped).
pub struct WebTools {
    shared: Vec<Arc<dyn Tool>>,
    #[cfg(feature = "browser")]
    browser: (browser::BrowserSettings, net::Fetcher, std::path::PathBuf),
}

impl WebTools {
    pub fn new(config: &Config, env: &Environment, home: &HermesHome) -> WebTools {
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
        let shared: Vec<Arc<dyn Tool>> = vec![
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
            Arc::new(media::ImageGenerateTool::new(
                api.clone(),
                fetcher.clone(),
                env.clone(),
                media::image::ImageSettings::from_config(config, env),
                home.join("cache/images"),
            )),
            Arc::new(media::TextToSpeechTool::new(
                api,
                env.clone(),
                media::tts::TtsSettings::from_config(config),
                home.join("cache/audio"),
            )),
        ];
        WebTools {
            shared,
            #[cfg(feature = "browser")]
            browser: (
                browser::BrowserSettings::from_config(config, env),
                fetcher,
                home.join("cache/screenshots"),
            ),
        }
    }

    /// The tools of one session: the shared ones and, with the `browser` feature, browser
    /// tools over a browser of its own.
    pub fn session_tools(&self) -> Vec<Arc<dyn Tool>> {
        #[allow(unused_mut)]
        let mut tools = self.shared.clone();
        #[cfg(feature = "browser")]
        {
            let (settings, fetcher, shots) = &self.browser;
            tools.extend(browser::tools(Arc::new(browser::BrowserManager::new(
                settings.clone(),
                fetcher.clone(),
                shots.clone(),
            ))));
        }
        tools
    }
}

/// Every tool of this crate for one session (see [`WebTools`]).
pub fn tools(config: &Config, env: &Environment, home: &HermesHome) -> Vec<Arc<dyn Tool>> {
    WebTools::new(config, env, home).session_tools()
}

impl WebTools {
    /// [`WebTools::new`] for a home, reading its config.yaml and .env (defaults when they
    /// cannot be read: the caller reports configuration errors where it loads the same files).
    pub fn for_home(home: &HermesHome) -> WebTools {
        // A broken .env still leaves the process environment (a path that does not exist loads
        // just that); a broken config.yaml leaves the defaults.
        let env = Environment::load(&home.env_path())
            .or_else(|_| Environment::load(std::path::Path::new("")))
            .unwrap_or_default();
        let config = Config::load(&home.config_path(), &env).unwrap_or_default();
        WebTools::new(&config, &env, home)
    }
}
