//! Browser tools on a real Chromium over the DevTools protocol (cargo feature `browser`):
//! `browser_navigate`, `browser_snapshot` (the accessibility tree with `@e1`-style refs),
//! `browser_click`, `browser_type`, `browser_scroll`, `browser_press`, `browser_back`,
//! `browser_get_images`, `browser_console`, `browser_screenshot` and `browser_close`.
//!
//! One [`BrowserManager`] per session starts the browser on the first call ([`session`]): a
//! headless Chromium found on PATH (or `CHROME_PATH` / `browser.executable`) with a temporary
//! profile, or a tab in the browser at `browser.cdp_url` (`BROWSER_CDP_URL` wins); it is closed
//! by `browser_close` and when the session ends. Every request of the page passes the SSRF
//! checks of the session's fetcher. The page as text is [`snapshot`]'s.

mod proxy;
pub mod session;
pub mod snapshot;
mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use hermes_config::{Config, Environment};
use hermes_tools::Tool;
use serde_json::Value;

use crate::net::Fetcher;
pub use session::{Launch, Session};
pub use tools::BrowserTool;

/// Executable names tried on PATH, in order.
const CHROMIUM_NAMES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrowserError {
    #[error(
        "no browser: install Chromium (Debian/Ubuntu: apt-get install chromium) or set browser.cdp_url to a running Chrome's DevTools URL"
    )]
    NotFound,
    #[error("cannot start the browser: {0}")]
    Launch(String),
    #[error("browser protocol error: {0}")]
    Protocol(String),
    #[error("{0}")]
    Refused(String),
    #[error("navigation failed: {0}")]
    Navigation(String),
    #[error("{0}")]
    Timeout(String),
    #[error("unknown element ref {0:?}: take a browser_snapshot and use one of its refs")]
    UnknownRef(String),
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Io(String),
    #[error("no page is open: call browser_navigate first")]
    NotStarted,
}

/// Where the browser comes from: `BROWSER_CDP_URL` / `browser.cdp_url` to attach, else an
/// executable from `CHROME_PATH` / `browser.executable`, else Chromium on PATH.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrowserSettings {
    pub cdp_url: Option<String>,
    pub executable: Option<PathBuf>,
    /// PATH to search (the process's by default).
    pub path: Option<String>,
}

impl BrowserSettings {
    pub fn from_config(config: &Config, env: &Environment) -> BrowserSettings {
        let cfg = |key: &str| {
            config
                .raw
                .pointer(&format!("/browser/{key}"))
                .and_then(Value::as_str)
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        };
        BrowserSettings {
            cdp_url: env.var("BROWSER_CDP_URL").or_else(|| cfg("cdp_url")),
            executable: env
                .var("CHROME_PATH")
                .or_else(|| cfg("executable"))
                .map(PathBuf::from),
            path: env.var("PATH"),
        }
    }

    /// How a session would start now, if it can.
    pub fn launch(&self) -> Option<Launch> {
        if let Some(url) = &self.cdp_url {
            return Some(Launch::Attach(url.clone()));
        }
        if let Some(exe) = &self.executable {
            return exe.is_file().then(|| Launch::Executable(exe.clone()));
        }
        find_chromium(self.path.as_deref()).map(Launch::Executable)
    }
}

/// The first Chromium-family executable on `path`.
pub fn find_chromium(path: Option<&str>) -> Option<PathBuf> {
    let path = path?;
    CHROMIUM_NAMES.iter().find_map(|name| {
        std::env::split_paths(path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// The browser of one session, started on first use.
pub struct BrowserManager {
    settings: BrowserSettings,
    fetcher: Fetcher,
    /// Where screenshots go (`$HERMES_HOME/cache/screenshots`).
    shots: PathBuf,
    session: tokio::sync::Mutex<Option<Session>>,
}

impl BrowserManager {
    pub fn new(settings: BrowserSettings, fetcher: Fetcher, shots: PathBuf) -> BrowserManager {
        BrowserManager {
            settings,
            fetcher,
            shots,
            session: tokio::sync::Mutex::new(None),
        }
    }

    pub fn settings(&self) -> &BrowserSettings {
        &self.settings
    }

    pub fn fetcher(&self) -> &Fetcher {
        &self.fetcher
    }

    pub fn screenshot_dir(&self) -> &std::path::Path {
        &self.shots
    }

    /// The session, started now if there is none (`start`), else `None` when not started.
    pub async fn lock(&self) -> tokio::sync::MutexGuard<'_, Option<Session>> {
        self.session.lock().await
    }

    pub async fn start(&self, slot: &mut Option<Session>) -> Result<(), BrowserError> {
        if slot.is_none() {
            let launch = self.settings.launch().ok_or(BrowserError::NotFound)?;
            *slot = Some(Session::start(&launch, self.fetcher.clone()).await?);
        }
        Ok(())
    }

    /// Closes the session's browser; true when one was open.
    pub async fn close(&self) -> bool {
        let session = self.session.lock().await.take();
        match session {
            Some(s) => {
                s.close().await;
                true
            }
            None => false,
        }
    }
}

/// The browser tools sharing one manager.
pub fn tools(manager: Arc<BrowserManager>) -> Vec<Arc<dyn Tool>> {
    tools::ALL
        .iter()
        .map(|kind| Arc::new(BrowserTool::new(*kind, manager.clone())) as Arc<dyn Tool>)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chromium_is_found_on_path_and_cdp_url_wins() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("chromium");
        std::fs::write(&exe, "").unwrap();
        let path = dir.path().display().to_string();
        assert_eq!(find_chromium(Some(&path)), Some(exe.clone()));
        let s = BrowserSettings {
            path: Some(path.clone()),
            ..BrowserSettings::default()
        };
        assert_eq!(s.launch(), Some(Launch::Executable(exe)));
        let s = BrowserSettings {
            cdp_url: Some("http://127.0.0.1:9222".into()),
            path: Some(path),
            ..BrowserSettings::default()
        };
        assert_eq!(
            s.launch(),
            Some(Launch::Attach("http://127.0.0.1:9222".into()))
        );
        assert_eq!(BrowserSettings::default().launch(), None);
    }
}
